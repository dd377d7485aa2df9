#!/usr/bin/env bash
# `tools/dev bench --scale 0,20000` runs end to end on its own stack
# 'bench' (never the test stack): the fill puts exactly the ledger rows,
# orders, cancels, items and tombstones asked for into a fresh database,
# `idemorders audit` finds it clean (before the runs, as the bench checks
# it, and after them, here), the buffer pool is the small one, and the
# report has every row of both sizes with answers and no unexpected
# status (the list runs too: GET /orders pages of the list principal,
# each with orders).  A smoke check only: no speed is asserted.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

N=${BENCH_SCALE_TEST_N:-20000}	# a multiple of 100: the fill deals ids per hundred
out=${BENCH_TEST_OUT:-$T_TMP/bench-scale}
log=$T_TMP/bench-scale.log
bench_test_begin

bsql() { IDEMORDERS_STACK=bench "$DEV" sql "$1"; }

# Bad sizes are refused with a clear error, before anything starts.
if msg=$(IDEMORDERS_STACK=bench "$DEV" bench --scale 12x 2>&1); then
	fail "bench --scale 12x" "accepted"
elif [[ $msg == *"'12x' is not a number of ledger rows"* ]]; then
	ok "bench --scale 12x refused: ${msg##*: }"
else
	fail "bench --scale 12x" "unclear error: $msg"
fi

start=$(date +%s)
if BENCH_SECONDS=${BENCH_SECONDS:-1} "$DEV" bench --scale "0,$N" --keep \
    --out "$out" >"$log" 2>&1; then
	ok "tools/dev bench --scale 0,$N exits 0 ($(($(date +%s) - start)) s)"
else
	fail "tools/dev bench --scale 0,$N" "status $?: $(tail -n 15 "$log" | tr '\n' ' ')"
fi

# The filled database, as the bench counted it before the runs (the
# expiry job of the last run changes the ledger): exactly the rows asked
# for.  The orders are kept up with --keep; the runs added the bench
# user's own orders after the fill's, whose ids are 1 to N.
facts=$out/scale-0-$N.facts.tsv
fact() { awk -F'\t' -v n="$N" -v k="$1" '$1 == n && $2 == k { s += $3 } END { print s + 0 }' "$facts" 2>/dev/null; }
f=" AND id <= $N"
expect_eq() {	# WHAT WANT GOT
	if [[ $3 == "$2" ]]; then ok "$1: $3"; else fail "$1" "want $2, got '$3'"; fi
}
expect_eq "filled ledger rows" "$N" "$(fact count:ledger)"
# Per hundred ids: 93 creates, 5 final rejections, 2 cancels.
# (live or expired: a tombstone keeps its status code, drops its body)
expect_eq "final rejections" $((N * 5 / 100)) "$(fact count:rejections)"
expect_eq "cancel ledger rows" $((N * 2 / 100)) \
    $(($(fact count:cancel-order:SUCCEEDED) + $(fact count:cancel-order:EXPIRED)))
expect_eq "filled orders" $((N * 93 / 100)) "$(bsql "SELECT COUNT(*) FROM orders WHERE 1$f")"
expect_eq "cancelled orders" $((N * 2 / 100)) \
    "$(bsql "SELECT COUNT(*) FROM orders WHERE status = 'CANCELLED'$f")"
expect_eq "items of filled orders (two for every fourth id)" \
    "$(bsql "SELECT COUNT(*) + SUM(id MOD 4 = 0) FROM orders WHERE 1$f")" \
    "$(bsql "SELECT COUNT(*) FROM order_items i JOIN orders o ON o.id = i.order_id WHERE 1${f/id/o.id}")"
expect_eq "EXPIRED tombstones (the oldest 30 %)" $((N * 3 / 10)) "$(fact count:tombstones_dropped)"
# (a few more every minute: the live rows age while the bench fills)
d=$(fact count:due)
if [[ $d =~ ^[0-9]+$ && $d -ge $((N / 10)) && $d -le $((N / 10 + N / 50)) ]]; then
	ok "rows due to expire (the next 10 %): $d"
else
	fail "rows due to expire" "want $((N / 10)) (a few more as time passes), got '$d'"
fi
p=$(fact count:principals)
if [[ $p =~ ^[0-9]+$ && $p -ge $((N / 40)) ]]; then
	ok "keys spread over $p principals"
else
	fail "principals" "only '$p' for $N rows"
fi
# A third of the history is the bench principal's (random keys it creates
# with land among them), the rest the scale-NNNNNN principals'.
mine=$(bsql "SELECT COUNT(*) FROM orders WHERE id <= $N AND principal_id = 'alice'")
expect_eq "the bench principal's filled orders (a third)" \
    "$(bsql "SELECT COUNT(*) FROM orders WHERE id <= $N AND id MOD 3 = 1")" "$mine"
# The list principal: every third row below BENCH_SCALE_LIST_ROWS x 3 rows.
expect_eq "the list principal's filled orders (a third at this N)" \
    "$(bsql "SELECT COUNT(*) FROM orders WHERE id <= $N AND id MOD 3 = 2")" \
    "$(bsql "SELECT COUNT(*) FROM orders WHERE id <= $N AND principal_id = 'bob'")"
expect_eq "buffer pool during the runs (256 MiB)" 268435456 \
    "$(bsql "SELECT @@innodb_buffer_pool_size")"
if a=$(IDEMORDERS_STACK=bench "$DEV" audit 2>&1); then
	ok "idemorders audit on the filled database after the runs: ${a##*$'\n'}"
else
	fail "idemorders audit after the runs" "$(printf '%s' "$a" | grep -v '^ok' | head -n 8 | tr '\n' ' ')"
fi

md=$out/scale-0-$N.md
tsv=$out/scale-0-$N.tsv
check "report $md written" test -s "$md"
check "raw results $tsv written" test -s "$tsv"
for n in 0 "$N"; do
	for row in "app create lighttpd" "app create-uuid lighttpd" "app replay lighttpd" "app conflict lighttpd" \
	    "app get lighttpd" "app list lighttpd" "app list-deep lighttpd" "D D -" "D D-batched -" "app create-expire lighttpd"; do
		read -r kind test server <<<"$row"
		line=$(awk -F'\t' -v n="$n" -v k="$kind" -v t="$test" -v s="$server" \
		    '$1 == n && $2 == k && $3 == t && $4 == s' "$tsv" 2>/dev/null | head -n 1)
		if [[ -z $line ]]; then
			fail "N=$n row $test" "missing from $tsv"
			continue
		fi
		IFS=$'\t' read -r _ _ _ _ c rps _ _ answers _ unexpected statuses _ <<<"$line"
		if [[ $answers =~ ^[0-9]+$ && $answers -gt 0 && $unexpected == 0 ]]; then
			ok "N=$n row $test c$c: $answers answers ($rps/s), none unexpected"
		else
			fail "N=$n row $test" "$answers answers, $unexpected unexpected ($statuses)"
		fi
		if grep -qE "^\| $test \| $n \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| 0 \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \|$" "$md"; then
			ok "table: $test at N=$n"
		else
			fail "table" "no '$test' row for N=$n in $md"
		fi
	done
	if grep -qE "^\| $n \| [0-9]+ \| $n \| $((n * 93 / 100)) \| .*audit: clean" "$md"; then
		ok "table: the filled database at N=$n, audit clean"
	else
		fail "table" "no filled-database row for N=$n (audit clean) in $md"
	fi
done
# The job beside the creates: at N it had the fill's backlog to work on.
line=$(grep -E "^\| $N \| [0-9]+; [0-9]+ \| " "$md" | head -n 1)
IFS='|' read -r _ _ due _ _ expired purged _ _ batches _ <<<"${line// /}"
if [[ ${due%%;*} -ge $((N / 10)) && $expired -gt 0 && $batches -gt 0 ]]; then
	ok "table: the expiry job beside the creates at N=$N expired $expired of $due due rows in $batches batches"
else
	fail "table" "no expiry row with expired rows at N=$N in $md: $line"
fi
# What the job purged is what the ledger lacks now.
expect_eq "the fill's ledger rows after the job purged $purged" $((N - purged)) \
    "$(bsql "SELECT COUNT(*) FROM idempotency_records WHERE 1$f")"
# The binary log was on (ROW, each create logged) and redo was counted.
redo=$(awk -F'|' -v n="$N" '$2 == " create " && $3 == " " n " " { print $9 + 0, $10 + 0 }' "$md")
if [[ $redo =~ ^[1-9][0-9]*\ [1-9][0-9]*$ ]]; then
	ok "redo and binlog bytes per create at N=$N: $redo"
else
	fail "redo/binlog per create" "got '$redo' from $md"
fi
for t in "GET /orders pages (limit 20) of a principal with" "creates at N = $N ≥ 0.8" "creates with random UUID keys at N = $N ≥ 0.8" "expiry keeps up" "redo bytes per create ≤ D naive (N = $N)"; do
	if grep -qF "| $t" "$md"; then
		ok "targets table: $t"
	else
		fail "targets table" "no '$t' row in $md"
	fi
done
check "chart $out/scale-0-$N.png written" test -s "$out/scale-0-$N.png"
if grep -qE "^\| $N \| \*\*all three\*\* \| \| \| \| \*\*[0-9]+\*\* \|$" "$md"; then
	ok "table: $(grep -E "^\| $N \| \*\*all three" "$md" | awk -F'|' '{ print $7 }') bytes per order at N=$N"
else
	fail "table" "no bytes-per-order row for N=$N in $md"
fi

IDEMORDERS_STACK=bench "$DEV" down >/dev/null 2>&1 || fail "bench stack" "down failed"

bench_test_end "$log"
