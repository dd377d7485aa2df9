#!/usr/bin/env bash
# The retention job at scale, with live traffic: 100 000 due SUCCEEDED
# rows (inserted with SQL) are expired by `idemorders expire --batch 1000`
# while creates arrive through lighttpd every ~100 ms.  Asserted: the job
# succeeds and expires every due row, in bounded batches; every create
# during the run answers 201.  Measured and printed, never asserted: the
# job's wall time and the create latency (median, max) during the run and
# without it.
#
# EXPIRE_SCALE_ROWS overrides the number of rows (default 100000).
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

ROWS=${EXPIRE_SCALE_ROWS:-100000}
BATCH=1000
SKU=T52-EXP
PRICE=100
SP=t52-scale			# principal of the bulk rows (no web user has it)
RUN_TAG=$(date +%s%N)-$$

sql "INSERT INTO stock (sku, currency, unit_price, available)
    VALUES ('$SKU', 'KRW', $PRICE, 1000000)
    ON DUPLICATE KEY UPDATE currency = 'KRW', unit_price = $PRICE,
    available = 1000000" || { fail "fixture" "cannot insert stock $SKU"; finish; }
# Rows an interrupted earlier run may have left.
sql "DELETE FROM idempotency_records WHERE principal_id = '$SP'"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# One create through lighttpd; appends "HTTP_CODE SECONDS" to file $1.
create_timed() {
	curl -s -o /dev/null -m 30 -u "$ALICE" -X POST \
	    -H 'Content-Type: application/json' \
	    -H "Idempotency-Key: $(unique_key t52-live)" \
	    --data-binary "{\"currency\":\"KRW\",\"items\":[{\"sku\":\"$SKU\",\"qty\":1}],\"amount\":$PRICE}" \
	    -w '%{http_code} %{time_total}\n' "$LIGHTTPD_URL$MOUNT" >>"$1" 2>/dev/null ||
	    echo "000 0" >>"$1"
}

# stats FILE: "n=N median=X ms max=Y ms" of the latencies in FILE.
stats() {
	sort -n -k2 "$1" | awk '{ t[NR] = $2 * 1000 }
	    END {
		if (NR == 0) { print "n=0"; exit }
		m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
		printf "n=%d median=%.1f ms max=%.1f ms\n", NR, m, t[NR]
	    }'
}

# expect_all_201 WHAT FILE
expect_all_201() {
	local n bad
	n=$(wc -l <"$2")
	bad=$(awk '$1 != 201' "$2" | wc -l)
	if [[ $n -gt 0 && $bad -eq 0 ]]; then
		ok "$1: all $n creates answered 201"
	else
		fail "$1" "$bad of $n creates did not answer 201: $(awk '$1 != 201 { print $1 }' "$2" | sort | uniq -c | tr '\n' ' ')"
	fi
}

# --- without the job: the baseline -----------------------------------------
base=$T_TMP/base.lat
: >"$base"
for ((i = 0; i < 30; i++)); do
	create_timed "$base"
	sleep 0.1
done
expect_all_201 "baseline (no job)" "$base"

# --- 100 000 due rows --------------------------------------------------------
t0=$(now_ms)
# A realistic stored answer: the Location header and a ~300-byte body.
if sql "INSERT INTO idempotency_records (principal_id, operation, idem_key,
    request_fingerprint, status, response_status, response_headers,
    response_body, resource_id, created_at, updated_at, expires_at)
    SELECT '$SP', 'create-order', CONCAT('t52-$RUN_TAG-', seq),
    SHA2(CONCAT('$RUN_TAG', seq), 256), 'SUCCEEDED', 201,
    CONCAT('Content-Type: application/json\r\nLocation: /orders/o-', seq, '\r\n'),
    CONCAT('{\"orderId\":\"o-', seq, '\",\"status\":\"CREATED\",\"currency\":\"KRW\",',
    '\"amount\":100,\"items\":[{\"sku\":\"$SKU\",\"qty\":1,\"unitPrice\":100}],',
    '\"shipping\":\"standard\",\"note\":\"', REPEAT('n', 120), '\",',
    '\"createdAt\":\"2020-01-01T00:00:00Z\"}'),
    CONCAT('o-', seq),
    UTC_TIMESTAMP(6) - INTERVAL 2 DAY, UTC_TIMESTAMP(6) - INTERVAL 2 DAY,
    UTC_TIMESTAMP(6) - INTERVAL 1 DAY - INTERVAL seq SECOND
    FROM seq_1_to_$ROWS"; then
	ok "inserted $ROWS due SUCCEEDED rows in $(($(now_ms) - t0)) ms"
else
	fail "bulk insert" "INSERT ... SELECT FROM seq_1_to_$ROWS failed"
	finish
fi
expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = '$SP'
    AND status = 'SUCCEEDED'" "$ROWS" "bulk rows present"

due=$(sql "SELECT COUNT(*) FROM idempotency_records
    WHERE status IN ('SUCCEEDED','FAILED_FINAL') AND expires_at <= UTC_TIMESTAMP(6)")
purgeable=$(sql "SELECT COUNT(*) FROM idempotency_records
    WHERE status = 'EXPIRED' AND updated_at <= UTC_TIMESTAMP(6) - INTERVAL 30 DAY")
echo "       due rows: $due (ours: $ROWS), purgeable tombstones: $purgeable"

# Rows the server reads (every Handler_read_* counter), all sessions.
handler_reads() {
	sql "SHOW GLOBAL STATUS LIKE 'Handler_read%'" | awk '{ t += $2 } END { print t + 0 }'
}

# --- the job, with creates every ~100 ms ------------------------------------
live=$T_TMP/live.lat
: >"$live"
reads0=$(handler_reads)
job_start=$(now_ms)
(
	"$DEV" expire --batch "$BATCH" >"$T_TMP/job.out" 2>"$T_TMP/job.err"
	echo $? >"$T_TMP/job.rc"
	now_ms >"$T_TMP/job.end"
) &
job=$!
while [[ ! -s $T_TMP/job.rc ]]; do
	create_timed "$live"
	# stop after 120 s whatever happens (the job is waited for below)
	(($(now_ms) - job_start > 120000)) && break
	sleep 0.1
done
wait "$job"
reads1=$(handler_reads)
job_end=$(cat "$T_TMP/job.end" 2>/dev/null || now_ms)
job_ms=$((job_end - job_start))
job_out=$(cat "$T_TMP/job.out")
job_rc=$(cat "$T_TMP/job.rc" 2>/dev/null || echo '?')
[[ -s $T_TMP/job.err ]] && sed 's/^/       job stderr: /' "$T_TMP/job.err"

if [[ $job_rc == 0 ]]; then
	ok "expire --batch $BATCH: exit 0"
else
	fail "expire --batch $BATCH: exit status" "got $job_rc"
fi
exp=$(sed -n 's/^expired=\([0-9]*\) purged=\([0-9]*\) batches=\([0-9]*\) events_purged=[0-9]*$/\1/p' <<<"$job_out")
pur=$(sed -n 's/^expired=\([0-9]*\) purged=\([0-9]*\) batches=\([0-9]*\) events_purged=[0-9]*$/\2/p' <<<"$job_out")
bat=$(sed -n 's/^expired=\([0-9]*\) purged=\([0-9]*\) batches=\([0-9]*\) events_purged=[0-9]*$/\3/p' <<<"$job_out")
# Each batch reads its own rows by the index, in its order: a batch
# that read and sorted every row still due would read about
# (due / batch) / 2 times as many in all.
if [[ $((reads1 - reads0)) -le $((5 * (due + purgeable) + 100000)) ]]; then
	ok "the job read $((reads1 - reads0)) rows for $due due and $purgeable purgeable (at most 5 a row)"
else
	fail "rows read by the job" "$((reads1 - reads0)) rows read (Handler_read_*) for $due due and $purgeable purgeable rows: more than 5 a row"
fi
if [[ $exp == "$due" ]]; then
	ok "job expired all $due due rows ($job_out)"
else
	fail "job expired count" "expected expired=$due, got '$job_out'"
fi
want_batches=$(((due + BATCH - 1) / BATCH + (purgeable + BATCH - 1) / BATCH))
if [[ $bat == "$want_batches" && $pur == "$purgeable" ]]; then
	ok "job worked in $bat batches of at most $BATCH rows"
else
	fail "job batches" "expected purged=$purgeable batches=$want_batches, got '$job_out'"
fi
expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = '$SP'
    AND status = 'EXPIRED' AND response_body IS NULL AND response_headers IS NULL
    AND resource_id IS NOT NULL" "$ROWS" "all $ROWS bulk rows are tombstones"
expect_all_201 "creates while the job ran" "$live"
# The creates' ledger rows are live (not due), so the job left them alone.
expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'
    AND idem_key LIKE 't52-live-%' AND status <> 'SUCCEEDED'" 0 \
    "the creates' own ledger rows stay SUCCEEDED"

echo "       --- figures (measured, not asserted) ---"
echo "       rows expired:            $exp in $bat batches of $BATCH"
echo "       job wall time:           $job_ms ms ($(awk -v n="$exp" -v ms="$job_ms" 'BEGIN { if (ms > 0) printf "%.0f rows/s", n * 1000 / ms }'))"
echo "       create latency, job:     $(stats "$live")"
echo "       create latency, no job:  $(stats "$base")"

# --- clean up: the bulk rows would slow every later run ---------------------
t0=$(now_ms)
sql "DELETE FROM idempotency_records WHERE principal_id = '$SP'"
echo "       cleanup: deleted the bulk rows in $(($(now_ms) - t0)) ms"

finish
