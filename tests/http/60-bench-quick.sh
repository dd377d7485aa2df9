#!/usr/bin/env bash
# `tools/dev bench --quick` runs end to end: on its own stack 'bench'
# (its own ports, var/bench, its own build without fault injection, fresh
# database), never the test stack the other scripts use; it writes a
# results table with every row (a cancel of orders made before, each with
# its own key, and a cancel replayed, beside the create), a TSV and a
# chart, and no run got an unexpected status.  Then `tools/dev bench
# --events --quick`: creates without the outbox row, with it and no
# relay, with the relay delivering; the relay's backlog drained, every
# event of the relay-on run delivered and timed, the idle rows, no
# unexpected status.  A smoke check only: no speed is asserted.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

out=${BENCH_TEST_OUT:-$T_TMP/bench}
log=$T_TMP/bench.log
# The test stack (when up: under `tools/dev test`) must serve throughout.
bench_test_begin
start=$(date +%s)
# Runs of one second: a smoke check of every row, not a measurement;
# with the profile the full run makes.
if BENCH_SECONDS=${BENCH_SECONDS:-1} BENCH_PROFILE=1 "$DEV" bench --quick \
    --out "$out" >"$log" 2>&1; then
	ok "tools/dev bench --quick exits 0 ($(($(date +%s) - start)) s)"
else
	fail "tools/dev bench --quick" "status $?: $(tail -n 15 "$log" | tr '\n' ' ')"
fi

md=$out/quick.md
tsv=$out/quick.tsv
check "results table $md written" test -s "$md"
check "raw results $tsv written" test -s "$tsv"
check "chart quick.png written" test -s "$out/quick.png"
if [[ -s $out/quick.png ]]; then
	if [[ $(head -c 8 "$out/quick.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; then
		ok "quick.png is a PNG"
	else
		fail "quick.png" "not a PNG file"
	fi
fi

# Every run of the quick set, each with answers and none unexpected
# (a conflict run expects its 409s; wrk's non-2xx is not used).
for row in "H H lighttpd" "H H apache" "D D -" \
    "D D-batched -" "D D-proc -" "D D-hot -" "D D-hot-batched -" \
    "D D-hot-proc -" \
    "app create lighttpd" "app create apache" "app replay lighttpd" \
    "app replay apache" "app conflict lighttpd" "app conflict apache" \
    "app get lighttpd" "app get apache" "app hot lighttpd" "app hot apache" \
    "app cancel lighttpd" "app cancel apache" "app cancel-replay lighttpd" \
    "app cancel-replay apache"; do
	read -r kind test server <<<"$row"
	line=$(awk -F'\t' -v k="$kind" -v t="$test" -v s="$server" \
	    '$1 == k && $2 == t && $3 == s' "$tsv" 2>/dev/null | head -n 1)
	if [[ -z $line ]]; then
		fail "row $test $server" "missing from $tsv"
		continue
	fi
	IFS=$'\t' read -r _ _ _ c rps _ _ n _ unexpected statuses _ <<<"$line"
	if [[ $n =~ ^[0-9]+$ && $n -gt 0 ]]; then
		ok "row $test $server c$c: $n answers ($rps/s)"
	else
		fail "row $test $server" "no answers: $line"
	fi
	if [[ $unexpected == 0 ]]; then
		ok "row $test $server: no unexpected status ($statuses)"
	else
		fail "row $test $server" "$unexpected unexpected ($statuses)"
	fi
done

# The table: every row and the targets section, with the ceilings.
for s in lighttpd apache; do
	if grep -qE "^\| C = 1/\(1/H\+1/D\*\) \| $s \| [0-9]+ \| [0-9]+ \|" "$md" 2>/dev/null; then
		ok "table has the combined ceiling C through $s"
	else
		fail "table" "no combined ceiling C row for $s in $md"
	fi
done
for name in '| H (hello-fcgi) | lighttpd |' '| H (hello-fcgi) | apache |' \
    '| D (dbtx naive: 8 round trips) |' '| D-batched (dbtx: 2 round trips) |' \
    '| D-proc (dbtx: 1 CALL) |' '| D-hot (dbtx naive, one SKU) |' \
    '| create | lighttpd |' '| create | apache |' \
    '| replay | lighttpd |' '| replay | apache |' '| conflict | lighttpd |' \
    '| conflict | apache |' '| get | lighttpd |' '| get | apache |' \
    '| hot | lighttpd |' '| hot | apache |' '| cancel | lighttpd |' \
    '| cancel | apache |' '| cancel-replay | lighttpd |' \
    '| cancel-replay | apache |' '| cancel c' '## Targets' \
    '| mariadbd per create c' '| CPU per create c16 via lighttpd ≤ 1.15 ×' \
    '## Where the CPU goes' '| kernel: sockets, scheduling, wake-ups |' \
    '| SQL parser' '| responder, µs per request | create | replay |' \
    '| libmariadb.so.3 |' "mariadbd's busiest symbols, create"; do
	if grep -qF -- "$name" "$md" 2>/dev/null; then
		ok "table has '$name'"
	else
		fail "table" "no '$name' in $md"
	fi
done
# The profile: mariadbd's CPU per order of each profiled run, split in
# parts that add up to it.
all=$(grep -F '| all (req/s or tx/s of the run) |' "$md" 2>/dev/null)
if [[ $all =~ ^\|\ all\ [^|]*\|\ ([0-9]+)\ \([0-9]+\)\ \|\ ([0-9]+)\ \([0-9]+\)\ \|\ ([0-9]+)\ \([0-9]+\)\ \|\ ([0-9]+)\ \([0-9]+\)\ \|$ ]]; then
	ok "profile: mariadbd µs per order of create, replay, D naive, D-batched: ${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]}"
	sum=$(sed -n '/^| mariadbd, µs per order |/,/^$/p' "$md" |
	    awk -F'|' 'NR > 3 && $3 ~ /^ *[0-9]+ *$/ { s += $3 } END { print s + 0 }')
	# Each part is rounded, and perf's samples are not /proc's ticks.
	if [[ $sum -gt 0 && $((sum * 10)) -ge $((BASH_REMATCH[1] * 8)) &&
	    $((sum * 10)) -le $((BASH_REMATCH[1] * 12)) ]]; then
		ok "profile: the create's parts add up to its total ($sum of ${BASH_REMATCH[1]} µs)"
	else
		fail "profile" "the create's parts add up to $sum µs, not about ${BASH_REMATCH[1]}"
	fi
else
	fail "profile" "no mariadbd row with four measured runs: ${all:-none}"
fi
if grep -qE '^\| zero unexpected statuses \| 0 \|' "$md" 2>/dev/null; then
	ok "table: zero unexpected statuses"
else
	fail "table" "$(grep -F 'zero unexpected' "$md" 2>/dev/null || echo 'no unexpected-status line')"
fi

# --- bench --events --quick -------------------------------------------------------
elog=$T_TMP/bench-events.log
start=$(date +%s)
if BENCH_SECONDS=1 BENCH_EVENTS_IDLE=2 "$DEV" bench --events --quick --out "$out" \
    >"$elog" 2>&1; then
	ok "tools/dev bench --events --quick exits 0 ($(($(date +%s) - start)) s)"
else
	fail "tools/dev bench --events --quick" "status $?: $(tail -n 15 "$elog" | tr '\n' ' ')"
fi
emd=$out/quick-events.md
check "events table $emd written" test -s "$emd"
# answers KIND: the 201s of that run (the "answers" column).
answers() { awk -F'|' -v k=" $1 " '$2 == k { gsub(/ /, "", $7); print $7; exit }' "$emd" 2>/dev/null; }
for k in no-outbox relay-stopped relay-on; do
	a=$(answers "$k")
	[[ $a =~ ^[0-9]+$ && $a -gt 0 ]] && ok "events: row $k with $a answers" ||
	    fail "events: row $k" "missing or no answers in $emd"
done
# The relay's backlog is every event relay-stopped wrote (its 201s, and
# the requests in flight when wrk stopped); every relay-on event timed.
line=$(grep -F '| relay throughput to the local receiver' "$emd" 2>/dev/null)
if [[ $line =~ \|\ ([0-9]+)\ events\ in ]] && [[ ${BASH_REMATCH[1]} -ge $(answers relay-stopped) ]]; then
	ok "events: the relay drained ${BASH_REMATCH[1]} events (relay-stopped answered $(answers relay-stopped))"
else
	fail "events: relay throughput" "${line:-no row}"
fi
line=$(grep -F '| delivery latency, COMMIT to' "$emd" 2>/dev/null)
if [[ $line =~ p50\ ([0-9.]+)\ ms,\ p99\ ([0-9.]+)\ ms\ \(([0-9]+)\ events\) ]] &&
    [[ ${BASH_REMATCH[3]} -ge $(answers relay-on) ]]; then
	ok "events: latency of ${BASH_REMATCH[3]} events (relay-on answered $(answers relay-on)): p50 ${BASH_REMATCH[1]} ms, p99 ${BASH_REMATCH[2]} ms"
else
	fail "events: latency" "${line:-no row}"
fi
grep -qE '^\| the relay idle does not poll hot: mariadbd CPU over [0-9]+ s, relay running vs stopped \| [0-9.]+ s vs [0-9.]+ s' "$emd" 2>/dev/null &&
    ok "events: the idle row" || fail "events: idle" "no idle row in $emd"
grep -qF '| creates with events on (relay-on) ≥ 0.9 × off (no-outbox) |' "$emd" 2>/dev/null &&
    ok "events: the on/off row" || fail "events: on/off" "no row in $emd"
if grep -qE '^\| zero unexpected statuses \| 0 \|' "$emd" 2>/dev/null; then
	ok "events: zero unexpected statuses"
else
	fail "events" "$(grep -F 'zero unexpected' "$emd" 2>/dev/null || tail -n 15 "$elog" | tr '\n' ' ')"
fi

# It cleaned up after itself and never touched the test stack.
bench_test_end "$log"
