#!/usr/bin/env bash
# The retention job, `idemorders expire` (contract section 6), on rows
# created through HTTP and then moved into the past with SQL:
#  - due terminal rows (SUCCEEDED, FAILED_FINAL) become EXPIRED tombstones:
#    response dropped, fingerprint and resource_id kept; rows not yet due
#    and PROCESSING rows (even past expires_at) are left alone;
#  - --dry-run changes nothing and reports what would change;
#  - --batch N works through more than N rows in several batches;
#  - --pause D waits D after each full batch (at least that long in all);
#  - two runs at once expire each row once;
#  - tombstones older than tombstone_retention are deleted, newer ones
#    kept; tombstone_retention = 0 keeps them all;
#  - a failure (no database) exits non-zero.
# The counts the job prints cover the whole database, so every expected
# count is read from the database just before the run; only this script's
# rows are moved into the past.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

URL=$LIGHTTPD_URL
SKU=T50-EXP		# a SKU of our own: the demo stock stays untouched
PRICE=100
P=alice			# the principal of every row below

sql "INSERT INTO stock (sku, currency, unit_price, available)
    VALUES ('$SKU', 'KRW', $PRICE, 1000000)
    ON DUPLICATE KEY UPDATE currency = 'KRW', unit_price = $PRICE,
    available = 1000000" || { fail "fixture" "cannot insert stock $SKU"; finish; }

# create KEY QTY [AMOUNT]: POST an order; a wrong AMOUNT makes a final
# rejection (422 AMOUNT_MISMATCH, FAILED_FINAL).
create() {
	local key=$1 qty=$2 amount=${3:-$(($2 * PRICE))}
	req POST "$URL$MOUNT" -u "$ALICE" -H 'Content-Type: application/json' \
	    -H "Idempotency-Key: $key" --data-binary \
	    "{\"currency\":\"KRW\",\"items\":[{\"sku\":\"$SKU\",\"qty\":$qty}],\"amount\":$amount}"
}

# new_rows PREFIX N_SUCCEEDED N_FAILED: create rows through HTTP; their
# keys are left in ROWS (SUCCEEDED ones first).
new_rows() {
	local prefix=$1 ns=$2 nf=$3 i k bad=0
	ROWS=()
	for ((i = 1; i <= ns + nf; i++)); do
		k=$(unique_key "$prefix$i")
		if ((i <= ns)); then
			create "$k" 1
			[[ $STATUS == 201 ]] || { bad=1; fail "create $k" "expected 201"; }
		else
			create "$k" 1 1
			[[ $STATUS == 422 ]] || { bad=1; fail "create $k" "expected 422"; }
		fi
		ROWS+=("$k")
	done
	[[ $bad == 0 ]] && ok "$prefix: $ns orders created, $nf final rejections recorded"
}

# in_list KEY...: 'k1','k2',... for SQL (keys are [A-Za-z0-9-]).
in_list() {
	local k out=
	for k in "$@"; do out+=${out:+,}"'$k'"; done
	printf '%s' "$out"
}

# make_due KEY...: move the rows' expires_at an hour into the past.
make_due() {
	sql "UPDATE idempotency_records SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR
	    WHERE principal_id = '$P' AND idem_key IN ($(in_list "$@"))"
}

# What the job would find right now, over the whole database.
due_count() {
	sql "SELECT COUNT(*) FROM idempotency_records
	    WHERE status IN ('SUCCEEDED','FAILED_FINAL') AND expires_at <= UTC_TIMESTAMP(6)"
}
purgeable_count() {
	sql "SELECT COUNT(*) FROM idempotency_records
	    WHERE status = 'EXPIRED' AND updated_at <= UTC_TIMESTAMP(6) - INTERVAL 30 DAY"
}

# A fingerprint of the rows' state: key, status, fingerprint, resource,
# response status, whether body and headers are there, expires_at.
state_of() {
	sql "SELECT idem_key, status, request_fingerprint, IFNULL(resource_id,'-'),
	    IFNULL(response_status,'-'), response_body IS NULL,
	    response_headers IS NULL, expires_at, updated_at
	    FROM idempotency_records WHERE principal_id = '$P'
	    AND idem_key IN ($(in_list "$@")) ORDER BY idem_key"
}

# count_where COND KEY...: how many of the keys' rows satisfy COND.
count_where() {
	local cond=$1
	shift
	sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = '$P'
	    AND idem_key IN ($(in_list "$@")) AND ($cond)"
}

# expect_count WHAT EXPECTED COND KEY...
expect_count() {
	local what=$1 want=$2 cond=$3 got
	shift 3
	got=$(count_where "$cond" "$@")
	if [[ $got == "$want" ]]; then
		ok "$what ($got rows)"
	else
		fail "$what" "expected $want rows with $cond, got $got"
	fi
}

# run_job ARGS...: tools/dev expire; sets JOB_OUT and JOB_RC.
run_job() {
	JOB_OUT=$("$DEV" expire "$@" 2>"$T_TMP/job.err")
	JOB_RC=$?
	printf '       expire %s -> %s (rc %s)\n' "$*" "$JOB_OUT" "$JOB_RC"
	[[ -s $T_TMP/job.err ]] && sed 's/^/       stderr: /' "$T_TMP/job.err"
	return 0
}

# expect_job WHAT EXPECTED_LINE
expect_job() {
	if [[ $JOB_RC -eq 0 ]]; then
		ok "$1: exit 0"
	else
		fail "$1: exit status" "expected 0, got $JOB_RC"
	fi
	if [[ $JOB_OUT == "$2" ]]; then
		ok "$1: prints '$2'"
	else
		fail "$1: output" "expected '$2', got '$JOB_OUT'"
	fi
}

ceil_div() { echo $((($1 + $2 - 1) / $2)); }

# due_by_status: the due SUCCEEDED and FAILED_FINAL rows, "S F".
due_by_status() {
	sql "SELECT SUM(status = 'SUCCEEDED'), SUM(status = 'FAILED_FINAL')
	    FROM idempotency_records WHERE expires_at <= UTC_TIMESTAMP(6)
	    AND status IN ('SUCCEEDED', 'FAILED_FINAL')" | tr '\t' ' ' | sed 's/NULL/0/g'
}

# Batches the job needs for the due rows with batch size $1: it walks one
# terminal status at a time, each in batches of at most $1 rows.
due_batches() {
	local s f
	read -r s f < <(due_by_status)
	echo $(($(ceil_div "$s" "$1") + $(ceil_div "$f" "$1")))
}

# --- a first run: exactly the due terminal rows ---------------------------

# Before anything of ours is due, clear whatever an interrupted earlier run
# may have left due, so that the counts below are ours.
run_job >/dev/null

new_rows t50-due 3 2
DUE=("${ROWS[@]}")		# 3 SUCCEEDED, 2 FAILED_FINAL
new_rows t50-fresh 2 1
FRESH=("${ROWS[@]}")	# not yet due
DUE_S=("${DUE[@]:0:3}")
DUE_F=("${DUE[@]:3:2}")
expect_count "due rows created: 3 SUCCEEDED, 2 FAILED_FINAL" 5 \
    "status = 'SUCCEEDED' AND resource_id IS NOT NULL OR status = 'FAILED_FINAL' AND resource_id IS NULL" \
    "${DUE[@]}"
expect_count "fresh rows created" 3 "status IN ('SUCCEEDED','FAILED_FINAL')" "${FRESH[@]}"

# A committed PROCESSING row whose expires_at has long passed (a request
# that died without rolling back would not leave one, but time alone must
# never decide about a row in flight).
PROC=$(unique_key t50-processing)
sql "INSERT INTO idempotency_records (principal_id, operation, idem_key,
    request_fingerprint, status, created_at, updated_at, expires_at)
    VALUES ('$P', 'create-order', '$PROC', REPEAT('a', 64), 'PROCESSING',
    UTC_TIMESTAMP(6) - INTERVAL 2 DAY, UTC_TIMESTAMP(6) - INTERVAL 2 DAY,
    UTC_TIMESTAMP(6) - INTERVAL 1 DAY)"
proc_before=$(state_of "$PROC")

make_due "${DUE[@]}"
fresh_before=$(state_of "${FRESH[@]}")
due_before=$(state_of "${DUE[@]}")
# fingerprint and resource of each due row, to compare with the tombstones
keep_before=$(sql "SELECT idem_key, request_fingerprint, IFNULL(resource_id,'-'),
    created_at, expires_at FROM idempotency_records WHERE principal_id = '$P'
    AND idem_key IN ($(in_list "${DUE[@]}")) ORDER BY idem_key")

n=$(due_count)
pg=$(purgeable_count)
if [[ $n -eq 5 ]]; then
	ok "exactly our 5 rows are due"
else
	fail "due rows" "expected only our 5 rows to be due, found $n (counts below use $n)"
fi

# --dry-run: reports, changes nothing.
run_job --dry-run
expect_job "dry run" "dry-run: expired=$n purged=$pg batches=0 events_purged=0"
if [[ $(state_of "${DUE[@]}") == "$due_before" ]]; then
	ok "dry run changed none of the due rows"
else
	fail "dry run" "due rows changed: $(state_of "${DUE[@]}" | tr '\n' ' ')"
fi
expect_count "dry run left the due rows terminal with their responses" 5 \
    "status IN ('SUCCEEDED','FAILED_FINAL') AND response_body IS NOT NULL AND response_headers IS NOT NULL" \
    "${DUE[@]}"
if [[ $(due_count) == "$n" ]]; then
	ok "dry run: still $n rows due"
else
	fail "dry run" "due rows now $(due_count), expected $n"
fi

# The real run.
nb=$(due_batches 1000)
run_job
expect_job "first run" "expired=$n purged=$pg batches=$((nb + $(ceil_div "$pg" 1000))) events_purged=0"
expect_count "due rows are EXPIRED tombstones" 5 "status = 'EXPIRED'" "${DUE[@]}"
expect_count "tombstones have no response body and no headers" 5 \
    "response_body IS NULL AND response_headers IS NULL" "${DUE[@]}"
keep_after=$(sql "SELECT idem_key, request_fingerprint, IFNULL(resource_id,'-'),
    created_at, expires_at FROM idempotency_records WHERE principal_id = '$P'
    AND idem_key IN ($(in_list "${DUE[@]}")) ORDER BY idem_key")
if [[ -n $keep_before && $keep_after == "$keep_before" ]]; then
	ok "tombstones keep fingerprint, resource_id, created_at and expires_at"
else
	fail "tombstone keeps" "before: $(echo "$keep_before" | tr '\n' '|') after: $(echo "$keep_after" | tr '\n' '|')"
fi
expect_count "SUCCEEDED tombstones still name their order" 3 \
    "resource_id IS NOT NULL AND resource_id = (SELECT CONCAT('o-', o.id) FROM orders o
     WHERE o.principal_id = idempotency_records.principal_id
     AND o.idempotency_key = idempotency_records.idem_key)" "${DUE_S[@]}"
expect_count "FAILED_FINAL tombstones name no order" 2 "resource_id IS NULL" "${DUE_F[@]}"
expect_count "tombstones' updated_at moved to the job's time" 5 \
    "updated_at >= UTC_TIMESTAMP(6) - INTERVAL 5 MINUTE" "${DUE[@]}"
if [[ $(state_of "${FRESH[@]}") == "$fresh_before" ]]; then
	ok "rows not yet due are untouched"
else
	fail "rows not due" "changed: $(state_of "${FRESH[@]}" | tr '\n' '|')"
fi
if [[ $(state_of "$PROC") == "$proc_before" ]]; then
	ok "a PROCESSING row past expires_at is untouched"
else
	fail "PROCESSING row" "before: $proc_before after: $(state_of "$PROC")"
fi
expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = '$P'
    AND idempotency_key IN ($(in_list "${DUE[@]}"))" 3 "the 3 orders are still there"

# Nothing left: a second run changes nothing.
run_job
expect_job "second run" "expired=0 purged=0 batches=0 events_purged=0"

# --- --batch 3 with more than 3 rows due ------------------------------------

new_rows t50-batch 5 3
B=("${ROWS[@]}")
make_due "${B[@]}"
n=$(due_count)
pg=$(purgeable_count)
[[ $n -eq 8 ]] && ok "exactly our 8 rows are due" ||
    fail "due rows" "expected 8, found $n"
nb=$(due_batches 3)
run_job --batch 3
expect_job "--batch 3 over $n rows" "expired=$n purged=$pg batches=$((nb + $(ceil_div "$pg" 3))) events_purged=0"
expect_count "--batch 3 expired all 8 rows" 8 \
    "status = 'EXPIRED' AND response_body IS NULL AND response_headers IS NULL" "${B[@]}"
[[ $(due_count) == 0 ]] && ok "--batch 3: nothing left due" ||
    fail "--batch 3" "$(due_count) rows still due"

# A multiple of the batch size: the last, empty batch is not counted.
new_rows t50-batch-even 4 2
B2=("${ROWS[@]}")
make_due "${B2[@]}"
n=$(due_count)
pg=$(purgeable_count)
nb=$(due_batches 3)
run_job --batch 3
expect_job "--batch 3 over $n rows" "expired=$n purged=$pg batches=$((nb + $(ceil_div "$pg" 3))) events_purged=0"
expect_count "--batch 3 expired all 6 rows" 6 "status = 'EXPIRED'" "${B2[@]}"

# --- --pause: a wait after each full batch ----------------------------------

# full_batches B: how many batches of the due and purgeable rows are full
# (each is followed by another batch, so by a pause).
full_batches() {
	local s f
	read -r s f < <(due_by_status)
	echo $((s / $1 + f / $1 + $(purgeable_count) / $1))
}

new_rows t50-pause 7 3
B3=("${ROWS[@]}")
make_due "${B3[@]}"
n=$(due_count)
pg=$(purgeable_count)
nb=$(due_batches 3)
nf=$(full_batches 3)
t0=$(date +%s%N)
run_job --batch 3 --pause 300ms
ms=$((($(date +%s%N) - t0) / 1000000))
expect_job "--batch 3 --pause 300ms over $n rows" "expired=$n purged=$pg batches=$((nb + $(ceil_div "$pg" 3))) events_purged=0"
expect_count "--pause: all 10 rows expired" 10 "status = 'EXPIRED'" "${B3[@]}"
# A lower bound only: the job sleeps at least 300 ms after each full batch.
if ((nf >= 3 && ms >= nf * 300)); then
	ok "--pause 300ms: $nf full batches, the run took $ms ms (>= $((nf * 300)))"
else
	fail "--pause 300ms" "$nf full batches (expected >= 3), the run took $ms ms, expected >= $((nf * 300))"
fi

# --- two runs at once ------------------------------------------------------

# concurrent_runs ARGS...: two jobs started together; checks that each due
# row was expired once (the two expired= counts add up to the due rows).
concurrent_runs() {
	local what="two concurrent runs${*:+ ($*)}" want out1 out2 rc1 rc2 e1 e2
	want=$(due_count)
	"$DEV" expire "$@" >"$T_TMP/c1.out" 2>"$T_TMP/c1.err" &
	local p1=$!
	"$DEV" expire "$@" >"$T_TMP/c2.out" 2>"$T_TMP/c2.err" &
	local p2=$!
	wait "$p1"; rc1=$?
	wait "$p2"; rc2=$?
	out1=$(cat "$T_TMP/c1.out") out2=$(cat "$T_TMP/c2.out")
	printf '       run 1: %s (rc %s)  run 2: %s (rc %s)\n' "$out1" "$rc1" "$out2" "$rc2"
	cat "$T_TMP/c1.err" "$T_TMP/c2.err" | sed 's/^/       stderr: /'
	[[ $rc1 -eq 0 && $rc2 -eq 0 ]] && ok "$what: both exit 0" ||
	    fail "$what: exit status" "got $rc1 and $rc2"
	e1=$(sed -n 's/^expired=\([0-9]*\) .*/\1/p' <<<"$out1")
	e2=$(sed -n 's/^expired=\([0-9]*\) .*/\1/p' <<<"$out2")
	if [[ -n $e1 && -n $e2 && $((e1 + e2)) -eq $want ]]; then
		ok "$what: expired=$e1 + expired=$e2 = $want due rows"
	else
		fail "$what: counts" "expired '$e1' + '$e2', expected a sum of $want"
	fi
}

new_rows t50-conc 14 6
C=("${ROWS[@]}")
make_due "${C[@]}"
[[ $(due_count) == 20 ]] && ok "exactly our 20 rows are due" ||
    fail "due rows" "expected 20, found $(due_count)"
concurrent_runs
expect_count "two runs: all 20 rows EXPIRED" 20 \
    "status = 'EXPIRED' AND response_body IS NULL AND response_headers IS NULL" "${C[@]}"

# One row per transaction: the two runs interleave row by row.
new_rows t50-conc1 14 6
C2=("${ROWS[@]}")
make_due "${C2[@]}"
concurrent_runs --batch 1
expect_count "two runs --batch 1: all 20 rows EXPIRED" 20 \
    "status = 'EXPIRED' AND response_body IS NULL AND response_headers IS NULL" "${C2[@]}"
expect_count "two runs kept the fingerprints and orders" 14 \
    "resource_id IS NOT NULL AND request_fingerprint <> ''" "${C2[@]:0:14}"

# --- purge: tombstones older than tombstone_retention (30 d) ----------------

OLD=("${DUE_S[0]}" "${DUE_F[0]}" "${B[0]}")	# 31 days old: purged
YOUNG=("${DUE_S[1]}" "${DUE_F[1]}")		# 29 days old: kept
sql "UPDATE idempotency_records SET updated_at = UTC_TIMESTAMP(6) - INTERVAL 31 DAY
    WHERE principal_id = '$P' AND idem_key IN ($(in_list "${OLD[@]}"))"
sql "UPDATE idempotency_records SET updated_at = UTC_TIMESTAMP(6) - INTERVAL 29 DAY
    WHERE principal_id = '$P' AND idem_key IN ($(in_list "${YOUNG[@]}"))"
n=$(due_count)
pg=$(purgeable_count)
[[ $pg -eq 3 ]] && ok "exactly our 3 tombstones are older than 30 d" ||
    fail "purgeable tombstones" "expected 3, found $pg"

# tombstone_retention = 0 keeps tombstones for ever.
keepconf=$T_TMP/keep.conf
{ cat "$IDEMORDERS_CONF"; echo "tombstone_retention = 0"; } >"$keepconf"
nb=$(due_batches 1000)
out=$("$IDEMORDERS_BIN" expire -c "$keepconf" 2>"$T_TMP/keep.err")
rc=$?
if [[ $rc -eq 0 && $out == "expired=$n purged=0 batches=$nb events_purged=0" ]]; then
	ok "tombstone_retention = 0: nothing purged ($out)"
else
	fail "tombstone_retention = 0" "rc $rc, output '$out' $(head -c 300 "$T_TMP/keep.err")"
fi
expect_count "tombstone_retention = 0 kept the old tombstones" 3 "status = 'EXPIRED'" "${OLD[@]}"

run_job --dry-run
expect_job "purge dry run" "dry-run: expired=0 purged=$pg batches=0 events_purged=0"
expect_count "purge dry run deleted nothing" 3 "status = 'EXPIRED'" "${OLD[@]}"

run_job
expect_job "purge run" "expired=0 purged=$pg batches=1 events_purged=0"
expect_count "tombstones older than 30 d are gone" 0 "1" "${OLD[@]}"
expect_count "tombstones of 29 d are kept" 2 "status = 'EXPIRED'" "${YOUNG[@]}"
expect_count "newer tombstones are kept" 5 "status = 'EXPIRED'" "${DUE_S[2]}" "${B[@]:1:4}"
expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = '$P'
    AND idempotency_key IN ($(in_list "${OLD[@]}"))" 2 \
    "purge leaves the orders of purged keys (2 of the 3 made one)"
if [[ $(state_of "$PROC") == "$proc_before" ]]; then
	ok "the PROCESSING row survived every run"
else
	fail "PROCESSING row" "before: $proc_before after: $(state_of "$PROC")"
fi

# Purge in batches too: 5 old tombstones, --batch 2 -> 3 batches.
OLD2=("${C[@]:0:5}")
sql "UPDATE idempotency_records SET updated_at = UTC_TIMESTAMP(6) - INTERVAL 40 DAY
    WHERE principal_id = '$P' AND idem_key IN ($(in_list "${OLD2[@]}"))"
pg=$(purgeable_count)
n=$(due_count)
nb=$(due_batches 2)
run_job --batch 2
expect_job "purge --batch 2 over $pg tombstones" \
    "expired=$n purged=$pg batches=$((nb + $(ceil_div "$pg" 2))) events_purged=0"
expect_count "purge --batch 2 deleted all 5" 0 "1" "${OLD2[@]}"

# --- failure exits non-zero -------------------------------------------------

badconf=$T_TMP/bad.conf
grep -v '^[[:space:]]*db_password' "$IDEMORDERS_CONF" >"$badconf"
echo "db_password = wrong-password" >>"$badconf"
out=$("$IDEMORDERS_BIN" expire -c "$badconf" 2>"$T_TMP/bad.err")
rc=$?
if [[ $rc -ne 0 ]]; then
	ok "wrong DB password: exit status $rc"
else
	fail "wrong DB password" "exit 0, output '$out'"
fi
if [[ -s $T_TMP/bad.err ]]; then
	ok "wrong DB password: a message on stderr ($(head -n 1 "$T_TMP/bad.err"))"
else
	fail "wrong DB password" "nothing on stderr"
fi
if [[ -z $out ]]; then
	ok "wrong DB password: no expired= line on stdout"
else
	fail "wrong DB password" "printed '$out'"
fi

# --- clean up the PROCESSING row (it would answer 409 for ever) ------------
sql "DELETE FROM idempotency_records WHERE principal_id = '$P' AND idem_key = '$PROC'"

finish
