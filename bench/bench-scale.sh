# bench/bench-scale.sh -- `tools/dev bench --scale N[,N...]`: create,
# replay and GET on a database that already holds a history of N ledger
# rows, with a buffer pool smaller than the data.
# shellcheck shell=bash
#
#   tools/dev bench --scale N[,N...] [--keep] [--out DIR]
#
# On the bench stack (bench/bench.sh: its own ports, var/bench, a build
# without fault injection), for each N in turn, ascending:
#
#  1. a fresh database with the BENCH SKUs (bench_stack_up), filled with
#     bulk SQL (INSERT ... SELECT from MariaDB's seq_A_to_B tables, in
#     batches of BENCH_SCALE_BATCH rows; no HTTP) with N ledger rows:
#       - by id (the oldest first), their ages spread so that the newest
#         60 % are live (created within key_retention, 24 h), the next
#         10 % are a backlog due to expire (24-28 h old, still SUCCEEDED or
#         FAILED_FINAL) and the oldest 30 % are EXPIRED tombstones (28 h to
#         8 days old; response dropped, fingerprint and resource kept);
#       - per hundred ids: 93 creates (SUCCEEDED, their order with one
#         item, or two for every fourth id, of the BENCH SKUs), 5 final
#         rejections (FAILED_FINAL, 409 OUT_OF_STOCK, no order) and 2
#         cancels (cancel-order, SUCCEEDED, each cancelling the order of
#         the id 50 before it: its status CANCELLED, cancel key and time);
#       - keys are UUID-shaped (random order: what clients send); a
#         third of the rows are the bench's own principal's (so that a
#         random key it creates with lands in a random leaf of the unique
#         indexes, as a key of one of many customers does), the rest over
#         N / 20 principals scale-NNNNNN (about 13 keys each);
#       - stock: available = 10^9 - sold + restocked, restocked = the
#         items of cancelled orders (`idemorders audit` holds the fill
#         to the same invariants as real traffic: it runs right after;
#         a breach stops the bench, an audit that cannot finish, exit 2,
#         is reported in the table);
#  2. the table sizes (information_schema.TABLES after ANALYZE TABLE:
#     data_length, index_length) of the ledger, orders and order_items;
#  3. innodb_buffer_pool_size set to BENCH_SCALE_POOL (256M; the fill ran
#     with the bench's 1G), innodb_flush_log_at_trx_commit = 1 as shipped,
#     and (BENCH_SCALE_BINLOG=1, the default) the binary log as a replica
#     source or an async-replicated host runs it: log_bin, binlog_format =
#     ROW, sync_binlog = 1 (the fill itself is not logged: sql_log_bin = 0);
#  4. through lighttpd at c16 (BENCH_HOT_C), BENCH_SECONDS (5) each:
#     create (unique keys counting up, random BENCH SKU), create-uuid
#     (random UUID v4 keys), replay of one key, conflict
#     (that key, another body: 409), GET of one order (bench/orders.lua),
#     GET /orders?limit=20 as the list principal (bob, about
#     BENCH_SCALE_LIST_ROWS ledger rows of the fill: ~10 000 orders at
#     N = 1M): its newest page (list) and the page after its middle
#     order (list-deep),
#     and the bare transaction at the pool's size (bench/dbtx naive and
#     batched), with mariadbd's CPU, the redo (Innodb_os_log_written) and
#     the binary log (Binlog_bytes_written) per request;
#  5. create again (create-expire) with `idemorders expire` started
#     beside it (the bench stack runs tombstone_retention =
#     BENCH_SCALE_TOMBSTONES, 2d, so that the job purges as well as
#     expires and the audit agrees; log_level = debug: one line a batch,
#     with its time), stopped when the run ends if it has not finished:
#     the rows it expired and purged per second, each batch's time (an
#     upper bound of how long it held its locks), and the creates' rate
#     and p99 beside it against create's.
#
# Report: DIR/scale-N1-N2....md, .tsv and .png (bench/plot-scale.gp: req/s
# and p99 against N), DIR: var/bench/results, or --out DIR; the targets of
# the largest N against the smallest (0) in a table.  Nothing asserts a
# speed.  Knobs: BENCH_SECONDS, BENCH_SCALE_POOL, BENCH_SCALE_BATCH,
# BENCH_WORKERS, BENCH_SCALE_BINLOG, BENCH_SCALE_TOMBSTONES,
# BENCH_SCALE_EXPIRE_PAUSE (the job's expire_pause; empty: its default),
# BENCH_SCALE_LIST_ROWS (10750: the list principal's ledger rows),
# BENCH_SCALE_RUNS (the runs to make, e.g. "get list": a question that
# needs only those; empty: every run; the fill and its audit always).

BENCH_SCALE_RETENTION=86400	# key_retention the bench stack runs with (24h)
BENCH_LIST_USER=bob		# the list runs' principal (bench_stack_up's htpasswd)
BENCH_LIST_PASSWORD=bob-secret
# The fill's list principal share (bench --work fills with scale_fill too).
BENCH_SCALE_LIST_ROWS=${BENCH_SCALE_LIST_ROWS:-10750}

# bench_size_args KIND ARGS...: the arguments of bench --KIND,
# N[,N...] [--keep] [--out DIR]; the sizes, sorted and unique, are left in
# BENCH_SIZES (BENCH_QUICK, BENCH_KEEP, BENCH_OUT: read by bench/bench.sh).
bench_size_args() {
	local kind=$1 sizes=() parts n
	shift
	# shellcheck disable=SC2034
	BENCH_QUICK=1 BENCH_KEEP=0 BENCH_OUT=
	while [[ $# -gt 0 ]]; do
		case $1 in
		--keep)		BENCH_KEEP=1 ;;
		--out)		[[ $# -ge 2 ]] || die "--out needs a directory"
				BENCH_OUT=$2; shift ;;
		*)		IFS=, read -r -a parts <<<"$1"
				for n in "${parts[@]}"; do
					[[ $n =~ ^(0|[1-9][0-9]{0,8})$ ]] ||
					    die "bench --$kind: '$n' is not a number of ledger rows (0 to 999999999)"
					sizes+=("$n")
				done ;;
		esac
		shift
	done
	[[ ${#sizes[@]} -gt 0 ]] ||
	    die "usage: $PROG bench --$kind N[,N...] [--keep] [--out DIR]"
	mapfile -t BENCH_SIZES < <(printf '%s\n' "${sizes[@]}" | sort -nu)
}

run_bench_scale() {
	# (BENCH_SERVERS, BENCH_PROFILE: read by bench/bench.sh)
	bench_size_args scale "$@"
	BENCH_SCALE_SIZES=("${BENCH_SIZES[@]}")
	export IDEMORDERS_STACK=bench
	stack_vars
	PACKAGES+=(wrk jq gnuplot-nox)
	# shellcheck disable=SC2034
	BENCH_SERVERS=lighttpd
	BENCH_SECONDS=${BENCH_SECONDS:-5}
	BENCH_WORKERS=${BENCH_WORKERS:-4}
	BENCH_WRK_THREADS=${BENCH_WRK_THREADS:-2}
	# shellcheck disable=SC2034
	BENCH_PROFILE=0
	BENCH_SCALE_POOL=${BENCH_SCALE_POOL:-268435456}
	BENCH_SCALE_BATCH=${BENCH_SCALE_BATCH:-100000}
	BENCH_SCALE_BINLOG=${BENCH_SCALE_BINLOG:-1}
	BENCH_SCALE_TOMBSTONES=${BENCH_SCALE_TOMBSTONES:-2d}
	BENCH_SCALE_EXPIRE_PAUSE=${BENCH_SCALE_EXPIRE_PAUSE:-}
	BENCH_SCALE_RUNS=${BENCH_SCALE_RUNS:-}
	: "${BENCH_OUT:=$VAR/results}"
	[[ $BENCH_SECONDS =~ ^[0-9]+$ && $BENCH_SECONDS -gt 0 ]] ||
	    die "BENCH_SECONDS must be a positive number of seconds"
	[[ $BENCH_WORKERS =~ ^[0-9]+$ && $BENCH_WORKERS -gt 0 ]] ||
	    die "BENCH_WORKERS must be a positive number"
	[[ $BENCH_SCALE_POOL =~ ^[0-9]+$ && $BENCH_SCALE_POOL -ge 33554432 ]] ||
	    die "BENCH_SCALE_POOL must be a number of bytes, at least 32M (33554432)"
	[[ $BENCH_SCALE_BATCH =~ ^[0-9]+$ && $BENCH_SCALE_BATCH -gt 0 ]] ||
	    die "BENCH_SCALE_BATCH must be a positive number of rows"
	[[ $BENCH_SCALE_LIST_ROWS =~ ^[1-9][0-9]*$ ]] ||
	    die "BENCH_SCALE_LIST_ROWS must be a positive number of rows"
	[[ $BENCH_SCALE_BINLOG == [01] ]] ||
	    die "BENCH_SCALE_BINLOG must be 0 or 1"
	[[ $BENCH_SCALE_TOMBSTONES =~ ^[1-9][0-9]*[smhd]$ ]] ||
	    die "BENCH_SCALE_TOMBSTONES must be a duration such as 2d or 36h"
	# The binary log of a host that replicates (db_write_cnf adds it).
	# The stack's own retention, so that the audit agrees with the job.
	# shellcheck disable=SC2034
	BENCH_CONF_EXTRA="tombstone_retention = $BENCH_SCALE_TOMBSTONES"
	[[ $BENCH_SCALE_BINLOG == 0 ]] || export DB_CNF_EXTRA="server_id = 1
log_bin = binlog
binlog_format = ROW
sync_binlog = 1"
	with_lock bench_scale_main
}

# ------------------------------------------------------------ the fill

# The filled orders the outbox still holds (event_retention's default,
# 7 d): each has its order.created and, cancelled, its order.cancelled
# event, delivered, as the audit expects of orders that young.
SCALE_EVENT_RETENTION=604800

# SQL expressions of a filled row, from the expression S (its id) and the
# fill's size N: the age in seconds, the principal, the key, the items.
scale_age() {	# S N
	local s=$1 n=$2
	printf '(CASE WHEN (%s - (%s)) < 0.6 * %s THEN (%s - (%s)) * 86400 / (0.6 * %s)
	    WHEN (%s - (%s)) < 0.7 * %s THEN 86400 + ((%s - (%s)) - 0.6 * %s) * 14400 / (0.1 * %s)
	    ELSE 100800 + ((%s - (%s)) - 0.7 * %s) * 604800 / (0.3 * %s) END)' \
	    "$n" "$s" "$n" "$n" "$s" "$n" "$n" "$s" "$n" "$n" "$s" "$n" "$n" \
	    "$n" "$s" "$n" "$n"
}
scale_created() {	# S N: created_at
	printf '(@scale_now - INTERVAL ROUND(%s * 1000000) MICROSECOND)' "$(scale_age "$1" "$2")"
}
scale_tomb() {	# S N: is the row an EXPIRED tombstone
	printf '((%s - (%s)) >= 0.7 * %s)' "$2" "$1" "$2"
}
# A third of the rows the bench's own principal's; of the others, every
# step-th row the list principal's (step: N div BENCH_SCALE_LIST_ROWS
# rounded down to a multiple of 3, at least 3, so that id MOD step = 2
# is never the bench principal's id MOD 3 = 1: bob has about
# BENCH_SCALE_LIST_ROWS ledger rows, 93 % of them orders, spread over the
# whole history; a third of the rows when N is smaller), the rest over
# N / 20 principals.
scale_list_step() {	# N
	local k=$(($1 / BENCH_SCALE_LIST_ROWS / 3))
	echo $((3 * (k > 1 ? k : 1)))
}
scale_principal() {	# S N
	printf "IF((%s) MOD 3 = 1, '%s', IF((%s) MOD %s = 2, '%s', CONCAT('scale-', LPAD(((%s) * 7919) MOD GREATEST(1, %s DIV 20), 6, '0'))))" \
	    "$1" "$BENCH_USER" "$1" "$(scale_list_step "$2")" "$BENCH_LIST_USER" "$1" "$2"
}
scale_key() {	# S: UUID-shaped, random order
	printf "INSERT(INSERT(INSERT(INSERT(MD5(CONCAT('scale-', %s)), 21, 0, '-'), 17, 0, '-'), 13, 0, '-'), 9, 0, '-')" "$1"
}
# The kind of id S: 0..89 and 97..99 of a hundred a create, 90..94 a
# final rejection, 95..96 a cancel of the order S - 50.
scale_failed() { printf '((%s) MOD 100 BETWEEN 90 AND 94)' "$1"; }
scale_cancel() { printf '((%s) MOD 100 IN (95, 96))' "$1"; }
# Order S (a create) is cancelled by S + 50 when that id exists.
scale_cancelled() { printf '((%s) MOD 100 IN (45, 46) AND (%s) + 50 <= %s)' "$1" "$1" "$2"; }
scale_sku1() { printf "CONCAT('BENCH-', LPAD((%s) MOD 64, 2, '0'))" "$1"; }
scale_qty1() { printf '(1 + (%s) MOD 3)' "$1"; }
scale_price1() { printf '(100 * ((%s) MOD 64 + 1))' "$1"; }
scale_two() { printf '((%s) MOD 4 = 0)' "$1"; }
scale_sku2() { printf "CONCAT('BENCH-', LPAD(((%s) + 32) MOD 64, 2, '0'))" "$1"; }
scale_price2() { printf '(100 * (((%s) + 32) MOD 64 + 1))' "$1"; }
scale_amount() {
	printf '(%s * %s + IF(%s, %s, 0))' "$(scale_qty1 "$1")" "$(scale_price1 "$1")" \
	    "$(scale_two "$1")" "$(scale_price2 "$1")"
}
scale_iso() { printf "DATE_FORMAT(%s, '%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ')" "$1"; }

# The statements that fill ids A..B of a fill of size N.
scale_batch_sql() {
	local a=$1 b=$2 n=$3 s=seq ca cc
	ca=$(scale_created "$s" "$n")
	cc=$(scale_created "$s + 50" "$n")
	cat <<EOF
SET SESSION foreign_key_checks = 0, unique_checks = 0, sql_log_bin = 0;
INSERT INTO idempotency_records (id, principal_id, operation, idem_key,
    request_fingerprint, status, response_status, response_headers,
    response_body, resource_id, created_at, updated_at, expires_at)
SELECT id, principal_id, op, k, fp,
    IF(tomb, 'EXPIRED', IF(failed, 'FAILED_FINAL', 'SUCCEEDED')),
    IF(failed, 409, IF(cancel, 200, 201)),
    IF(tomb, NULL, IF(failed, 'Content-Type: application/json\r\n',
	IF(cancel, 'Content-Type: application/json\r\n',
	CONCAT('Content-Type: application/json\r\nLocation: /orders/o-', id, '\r\n')))),
    IF(tomb, NULL, IF(failed,
	CONCAT('{"error":{"code":"OUT_OF_STOCK","message":"not enough stock for ', sku1, '"}}'),
	IF(cancel,
	CONCAT('{"orderId":"o-', id - 50, '","status":"CANCELLED","cancelledAt":"', $(scale_iso ca), '"}'),
	CONCAT('{"orderId":"o-', id, '","status":"CREATED","currency":"KRW","amount":', amount,
	    ',"items":[{"sku":"', sku1, '","qty":', qty1, ',"unitPrice":', price1, '}',
	    IF(two, CONCAT(',{"sku":"', sku2, '","qty":1,"unitPrice":', price2, '}'), ''),
	    '],"shipping":"standard","note":"","createdAt":"', $(scale_iso ca), '"}')))),
    IF(failed, NULL, CONCAT('o-', IF(cancel, id - 50, id))),
    ca, IF(tomb, ca + INTERVAL $((BENCH_SCALE_RETENTION + 600)) SECOND, ca),
    ca + INTERVAL $BENCH_SCALE_RETENTION SECOND
FROM (SELECT $s AS id,
	IF($(scale_cancel $s), 'cancel-order', 'create-order') AS op,
	IF($(scale_cancel $s), $(scale_principal "$s - 50" "$n"), $(scale_principal $s "$n")) AS principal_id,
	$(scale_key $s) AS k, SHA2(CONCAT('fp-', $s), 256) AS fp,
	$(scale_tomb $s "$n") AS tomb, $(scale_failed $s) AS failed,
	$(scale_cancel $s) AS cancel, $ca AS ca,
	$(scale_sku1 $s) AS sku1, $(scale_qty1 $s) AS qty1, $(scale_price1 $s) AS price1,
	$(scale_two $s) AS two, $(scale_sku2 $s) AS sku2, $(scale_price2 $s) AS price2,
	$(scale_amount $s) AS amount
    FROM seq_${a}_to_${b}) t;
INSERT INTO orders (id, principal_id, idempotency_key, currency, amount,
    shipping, note, status, created_at, cancelled_at, cancel_reason, cancel_key)
SELECT $s, $(scale_principal $s "$n"), $(scale_key $s), 'KRW', $(scale_amount $s),
    'standard', '', IF($(scale_cancelled $s "$n"), 'CANCELLED', 'CREATED'), $ca,
    IF($(scale_cancelled $s "$n"), $(scale_created "$s + 50" "$n"), NULL),
    IF($(scale_cancelled $s "$n"), 'changed my mind', NULL),
    IF($(scale_cancelled $s "$n"), $(scale_key "$s + 50"), NULL)
FROM seq_${a}_to_${b} WHERE NOT $(scale_failed $s) AND NOT $(scale_cancel $s);
INSERT INTO order_items (order_id, sku, qty, unit_price)
SELECT $s, $(scale_sku1 $s), $(scale_qty1 $s), $(scale_price1 $s)
FROM seq_${a}_to_${b} WHERE NOT $(scale_failed $s) AND NOT $(scale_cancel $s);
INSERT INTO order_items (order_id, sku, qty, unit_price)
SELECT $s, $(scale_sku2 $s), 1, $(scale_price2 $s)
FROM seq_${a}_to_${b} WHERE NOT $(scale_failed $s) AND NOT $(scale_cancel $s)
    AND $(scale_two $s);
INSERT INTO events (id, webhook_id, type, order_id, seq, principal_id, payload,
    created_at, state, attempts, next_attempt_at, delivered_at)
SELECT $s, CONCAT('msg_', MD5(CONCAT('scale-event-', $s))), 'order.created', $s, 1,
    $(scale_principal $s "$n"), '{}', $ca, 'delivered', 1, $ca, $ca
FROM seq_${a}_to_${b} WHERE NOT $(scale_failed $s) AND NOT $(scale_cancel $s)
    AND $ca > @scale_now - INTERVAL $SCALE_EVENT_RETENTION SECOND;
INSERT INTO events (id, webhook_id, type, order_id, seq, principal_id, payload,
    created_at, state, attempts, next_attempt_at, delivered_at)
SELECT $s + 50, CONCAT('msg_', MD5(CONCAT('scale-event-', $s + 50))), 'order.cancelled', $s, 2,
    $(scale_principal $s "$n"), '{}', $cc, 'delivered', 1, $cc, $cc
FROM seq_${a}_to_${b} WHERE NOT $(scale_failed $s) AND NOT $(scale_cancel $s)
    AND $(scale_cancelled $s "$n")
    AND $ca > @scale_now - INTERVAL $SCALE_EVENT_RETENTION SECOND;
EOF
}

# scale_fill N: fill the fresh bench database with N ledger rows.
scale_fill() {
	local n=$1 a b t0
	t0=$(date +%s)
	db_root "$DB_NAME" -e "SELECT 1 FROM seq_1_to_1" >/dev/null 2>&1 ||
	    die "bench --scale: MariaDB has no Sequence engine (seq_1_to_N)"
	# One moment for every batch: ages count back from it.
	SCALE_NOW=$(db_root -N -B -e "SELECT UTC_TIMESTAMP(6)")
	for ((a = 1; a <= n; a += BENCH_SCALE_BATCH)); do
		b=$((a + BENCH_SCALE_BATCH - 1))
		[[ $b -le $n ]] || b=$n
		{ echo "SET @scale_now = '$SCALE_NOW';"; scale_batch_sql "$a" "$b" "$n"; } |
		    db_root "$DB_NAME" >>"$BENCH_LOG/fill.out" 2>&1 ||
		    { show_log "$BENCH_LOG/fill.out" 20; die "bench --scale: filling ids $a..$b of $n failed"; }
		printf '  filled %s of %s ledger rows (%s s)\n' "$b" "$n" $(($(date +%s) - t0))
	done
	# Stock: what the filled orders sold, and gave back when cancelled.
	db_root "$DB_NAME" -e "SET SESSION sql_log_bin = 0; UPDATE stock s LEFT JOIN (SELECT i.sku,
	    SUM(i.qty) AS sold, SUM(IF(o.status = 'CANCELLED', i.qty, 0)) AS back
	    FROM order_items i JOIN orders o ON o.id = i.order_id GROUP BY i.sku) t
	    ON t.sku = s.sku
	    SET s.available = $BENCH_STOCK - IFNULL(t.sold, 0) + IFNULL(t.back, 0),
		s.restocked = IFNULL(t.back, 0)
	    WHERE s.sku LIKE 'BENCH-%'" >>"$BENCH_LOG/fill.out" 2>&1 ||
	    { show_log "$BENCH_LOG/fill.out" 20; die "bench --scale: the stock update failed"; }
	SCALE_FILL_S=$(($(date +%s) - t0))
}

# scale_sizes: "ROWS DATA INDEX" of each of the three tables, one a line.
scale_sizes() {
	db_root "$DB_NAME" -e "ANALYZE TABLE idempotency_records, orders, order_items" >/dev/null
	db_root -N -B -e "SELECT table_name, table_rows, data_length, index_length
	    FROM information_schema.TABLES WHERE table_schema = '$DB_NAME'
	    AND table_name IN ('idempotency_records', 'orders', 'order_items')"
}

# ------------------------------------------------------------ the runs

# "REDO BINLOG": the bytes InnoDB wrote to its redo log and the server to
# its binary log so far.
scale_logbytes() {
	db_root -N -B -e "SELECT
	    (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
		WHERE VARIABLE_NAME = 'INNODB_OS_LOG_WRITTEN'),
	    IFNULL((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
		WHERE VARIABLE_NAME = 'BINLOG_BYTES_WRITTEN'), 0)"
}

# scale_run TEST CMD...: run CMD (bench_wrk or bench_dbtx, which append
# one row to BENCH_TSV) and record the redo and binary log bytes per
# request of that row.
scale_run() {
	local test=$1 r0 b0 r1 b1 n
	shift
	read -r r0 b0 < <(scale_logbytes)
	"$@"
	read -r r1 b1 < <(scale_logbytes)
	n=$(tail -n 1 "$BENCH_TSV" | cut -f8)
	awk -v n="$n" -v r=$((r1 - r0)) -v b=$((b1 - b0)) -v N="$SCALE_N" -v t="$test" \
	    'BEGIN { if (n > 0) printf "%s\tredo:%s\t%.0f\n%s\tbinlog:%s\t%.0f\n", N, t, r / n, N, t, b / n }' \
	    >>"$SCALE_FACTS"
}

# scale_expire_run C: create again at c C with `idemorders expire`
# running beside it from the start; the job is stopped when the run ends
# if it has not finished.  Records what it did from its per-batch lines.
scale_expire_run() {
	local c=$1 jconf=$BENCH_LOG/expire-$SCALE_N.conf log=$BENCH_LOG/expire-$SCALE_N.log
	local pid t0 t1 stopped=0 due purgeable
	{
		cat "$CONF"
		printf 'log = stderr\nlog_level = debug\n'
		[[ -z $BENCH_SCALE_EXPIRE_PAUSE ]] ||
		    printf 'expire_pause = %s\n' "$BENCH_SCALE_EXPIRE_PAUSE"
	} >"$jconf"
	"$BIN" check-config -c "$jconf" >"$log.check" 2>&1 ||
	    { show_log "$log.check" 10; die "bench --scale: the expire job's config is refused"; }
	read -r due purgeable < <("$BIN" expire -c "$jconf" --dry-run 2>/dev/null |
	    sed -n 's/^dry-run: expired=\([0-9]*\) purged=\([0-9]*\).*/\1 \2/p')
	t0=$(date +%s%N)
	"$BIN" expire -c "$jconf" >"$log.out" 2>"$log" &
	pid=$!
	scale_run create-expire bench_wrk app create-expire lighttpd "$c" create 201
	if kill -0 "$pid" 2>/dev/null; then
		stopped=1
		kill -TERM "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	t1=$(date +%s%N)
	awk -v N="$SCALE_N" -v secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" \
	    -v stopped="$stopped" -v due="${due:-0}" -v purgeable="${purgeable:-0}" '
	match($0, /batch of [0-9]+ (expired|purged) in [0-9]+ ms/) {
		split(substr($0, RSTART, RLENGTH), w, " ")
		rows[w[4]] += w[3]; busy[w[4]] += w[6]; ms[++nb] = w[6]
		# The time of the line (UTC, the end of the batch): the span of
		# each phase, from the start of its first batch to the end of its last.
		split(substr($1, 12, 12), hms, ":")
		t = hms[1] * 3600 + hms[2] * 60 + hms[3]
		if (t0 == "") t0 = t
		if (t < t0) t += 86400
		if (!(w[4] in first)) first[w[4]] = t - w[6] / 1000
		last[w[4]] = t
	}
	END {
		for (i = 2; i <= nb; i++) { v = ms[i]; for (j = i - 1; j >= 1 && ms[j] > v; j--) ms[j + 1] = ms[j]; ms[j + 1] = v }
		printf "%s\texpire:secs\t%s\n", N, secs
		printf "%s\texpire:stopped\t%s\n", N, stopped
		printf "%s\texpire:due\t%s\n%s\texpire:purgeable\t%s\n", N, due, N, purgeable
		printf "%s\texpire:expired\t%d\n%s\texpire:purged\t%d\n", N, rows["expired"], N, rows["purged"]
		printf "%s\texpire:batches\t%d\n", N, nb
		# Rows a second of each phase over its span, the pauses between
		# its batches included.
		for (k in first) span[k] = last[k] - first[k]
		printf "%s\texpire:expired_ps\t%.0f\n", N, (span["expired"] > 0 ? rows["expired"] / span["expired"] : 0)
		printf "%s\texpire:purged_ps\t%.0f\n", N, (span["purged"] > 0 ? rows["purged"] / span["purged"] : 0)
		printf "%s\texpire:busy_s\t%.3f\n", N, (busy["expired"] + busy["purged"]) / 1000
		if (nb > 0) printf "%s\texpire:ms_p50\t%s\n%s\texpire:ms_p99\t%s\n%s\texpire:ms_max\t%s\n",
		    N, ms[int((nb - 1) * 0.5) + 1], N, ms[int((nb - 1) * 0.99) + 1], N, ms[nb]
	}' "$log" >>"$SCALE_FACTS"
	printf '  expire   %s expired, %s purged in %s batches beside the creates%s\n' \
	    "$(grep -c 'expired in' "$log" || true)" "$(grep -c 'purged in' "$log" || true)" \
	    "$(grep -c 'batch of' "$log" || true)" "$([[ $stopped == 0 ]] || echo ' (stopped at the end of the run)')"
}

# scale_wants RUN: whether BENCH_SCALE_RUNS (empty: every run) names RUN
# (list: both list runs).
scale_wants() {
	[[ -z $BENCH_SCALE_RUNS || " $BENCH_SCALE_RUNS " == *" $1 "* ]]
}

# The list principal's orders (bob, BENCH_LIST_USER): at least 41, made
# through the service when the fill gave it fewer (N = 0).
scale_list_seed() {
	local have i out auth
	have=$(db_root -N -B "$DB_NAME" -e "SELECT COUNT(*) FROM orders
	    WHERE principal_id = '$BENCH_LIST_USER'")
	auth="$BENCH_LIST_USER:$BENCH_LIST_PASSWORD"
	for ((i = have; i < 41; i++)); do
		out=$(curl -s -m 30 -u "$auth" \
		    -H "Idempotency-Key: bench-$BENCH_RUN-list-$i" \
		    -H 'Content-Type: application/json' \
		    --data "$BENCH_REPLAY_BODY" -w '\n%{http_code}' \
		    "$(bench_url lighttpd)$MOUNT")
		[[ ${out##*$'\n'} == 201 ]] ||
		    die "bench --scale: seeding an order of $BENCH_LIST_USER answered: $out"
	done
}

# scale_list_runs C: GET /orders as the list principal at c C: its
# newest page (list) and the page after its middle order (list-deep),
# limit 20, each page read from the index on (principal_id, id).
scale_list_runs() {
	local c=$1 auth n mid
	scale_list_seed
	auth=$(printf '%s:%s' "$BENCH_LIST_USER" "$BENCH_LIST_PASSWORD" | base64 -w0)
	n=$(db_root -N -B "$DB_NAME" -e "SELECT COUNT(*) FROM orders
	    WHERE principal_id = '$BENCH_LIST_USER'")
	mid=$(db_root -N -B "$DB_NAME" -e "SELECT id FROM orders
	    WHERE principal_id = '$BENCH_LIST_USER' ORDER BY id
	    LIMIT 1 OFFSET $((n / 2))")
	printf '%s\tcount:list_orders\t%s\n' "$SCALE_N" "$n" >>"$SCALE_FACTS"
	scale_run list bench_wrk app list lighttpd "$c" list 200 \
	    "$MOUNT?limit=20 $auth"
	scale_run list-deep bench_wrk app list-deep lighttpd "$c" list 200 \
	    "$MOUNT?limit=20&starting_after=o-$mid $auth"
}

bench_scale_main() {
	local n start load key path t0 audit_rc tsv md name c w png
	start=$(date +%s)
	load=$(cut -d' ' -f1 /proc/loadavg)
	bench_begin
	SCALE_TSV=$BENCH_LOG/scale.tsv
	SCALE_FACTS=$BENCH_LOG/facts.tsv
	: >"$SCALE_TSV"
	: >"$SCALE_FACTS"
	c=$BENCH_HOT_C
	w=$((c < BENCH_WORKERS ? c : BENCH_WORKERS))
	say "bench --scale: load average $load; sizes ${BENCH_SCALE_SIZES[*]}; ${BENCH_SECONDS}s a run; $BENCH_WORKERS workers"

	ensure_packages
	bench_build
	for n in "${BENCH_SCALE_SIZES[@]}"; do
		SCALE_N=$n
		echo "N = $n ledger rows"
		: >"$BENCH_TSV"
		bench_stack_up
		[[ $n -eq 0 ]] || scale_fill "$n"
		[[ $n -ne 0 ]] || SCALE_FILL_S=0
		# The fill against the service's own invariants.
		t0=$(date +%s)
		audit_rc=0
		"$BIN" audit -c "$CONF" >"$BENCH_LOG/audit-$n.out" 2>&1 || audit_rc=$?
		printf '%s\t%s\t%s\n' "$n" audit "$(tail -n 1 "$BENCH_LOG/audit-$n.out" | tr '|' '/') (exit $audit_rc, $(($(date +%s) - t0)) s)" >>"$SCALE_FACTS"
		# Breaches stop the bench; an audit that could not finish (exit
		# 2: e.g. a scan of a large ledger losing its connection) is
		# reported in the table and the runs go on.
		[[ $audit_rc != 1 ]] || { show_log "$BENCH_LOG/audit-$n.out" 30; die "bench --scale: idemorders audit found breaches in the filled database (N = $n)"; }
		[[ $audit_rc == 0 ]] || say "bench --scale: idemorders audit did not finish (N = $n): $(tail -n 1 "$BENCH_LOG/audit-$n.out")"
		printf '%s\tfill_s\t%s\n' "$n" "$SCALE_FILL_S" >>"$SCALE_FACTS"
		db_root -N -B "$DB_NAME" -e "SELECT CONCAT(operation, ':', status), COUNT(*)
		    FROM idempotency_records GROUP BY operation, status
		    UNION ALL SELECT 'ledger', COUNT(*) FROM idempotency_records
		    UNION ALL SELECT 'orders', COUNT(*) FROM orders
		    UNION ALL SELECT CONCAT('orders:', status), COUNT(*) FROM orders GROUP BY status
		    UNION ALL SELECT 'order_items', COUNT(*) FROM order_items
		    UNION ALL SELECT 'principals', COUNT(DISTINCT principal_id) FROM idempotency_records
		    UNION ALL SELECT 'rejections', COUNT(*) FROM idempotency_records
			WHERE operation = 'create-order' AND resource_id IS NULL AND response_status = 409
		    UNION ALL SELECT 'tombstones_dropped', COUNT(*) FROM idempotency_records
			WHERE status = 'EXPIRED' AND response_body IS NULL AND response_headers IS NULL
		    UNION ALL SELECT 'due', COUNT(*) FROM idempotency_records
			WHERE live_expires_at <= UTC_TIMESTAMP(6)" |
		    awk -v n="$n" -F'\t' '{ printf "%s\tcount:%s\t%s\n", n, $1, $2 }' >>"$SCALE_FACTS"
		scale_sizes | awk -v n="$n" -F'\t' '{ printf "%s\tsize:%s\t%s %s %s\n", n, $1, $2, $3, $4 }' >>"$SCALE_FACTS"
		# The buffer pool well below the data from here on.
		db_root -e "SET GLOBAL innodb_buffer_pool_size = $BENCH_SCALE_POOL" ||
		    die "bench --scale: resizing the buffer pool failed"
		for ((t0 = 0; t0 < 100; t0++)); do
			[[ $(db_root -N -B -e "SELECT @@innodb_buffer_pool_size") == "$BENCH_SCALE_POOL" ]] && break
			sleep 0.2
		done
		printf '%s\tpool\t%s\n' "$n" "$(db_root -N -B -e "SELECT @@innodb_buffer_pool_size")" >>"$SCALE_FACTS"

		bench_warmup app 201
		! scale_wants create || scale_run create bench_wrk app create lighttpd "$c" create 201
		! scale_wants create-uuid ||
		    scale_run create-uuid bench_wrk app create-uuid lighttpd "$c" create-uuid 201
		key=bench-$BENCH_RUN-replay-$n
		path=$(bench_seed_order lighttpd "$key")
		! scale_wants replay || scale_run replay bench_wrk app replay lighttpd "$c" replay 201 "$key"
		! scale_wants conflict ||
		    scale_run conflict bench_wrk app conflict lighttpd "$c" conflict 409 "$key"
		! scale_wants get || scale_run get bench_wrk app get lighttpd "$c" get 200 "$path"
		! scale_wants list || scale_list_runs "$c"
		! scale_wants D || scale_run D bench_dbtx D "$w" -m naive -k BENCH -n "$BENCH_SKUS"
		! scale_wants D-batched ||
		    scale_run D-batched bench_dbtx D-batched "$w" -m batched -k BENCH -n "$BENCH_SKUS"
		# Last: the job changes the filled rows.
		! scale_wants create-expire || scale_expire_run "$c"
		awk -v n="$n" '{ print n "\t" $0 }' "$BENCH_TSV" >>"$SCALE_TSV"
		# --keep: the last size's stack stays up, as the runs left it.
		[[ $BENCH_KEEP == 1 && $n == "${BENCH_SCALE_SIZES[-1]}" ]] ||
		    stack_down >/dev/null
	done
	name=scale-$(IFS=-; echo "${BENCH_SCALE_SIZES[*]}")
	md=$BENCH_OUT/$name.md
	tsv=$BENCH_OUT/$name.tsv
	bench_scale_report "$load" $(($(date +%s) - start)) >"$md.tmp"
	mv -f "$md.tmp" "$md"
	cp "$SCALE_TSV" "$tsv.tmp" && mv -f "$tsv.tmp" "$tsv"
	cp "$SCALE_FACTS" "$BENCH_OUT/$name.facts.tsv"
	png=$BENCH_OUT/$name.png
	scale_chart "$png" || say "bench --scale: gnuplot failed; no chart (see $BENCH_LOG/gnuplot.out)"
	cat "$md"
	say "bench --scale: wrote $md, $tsv and $png (raw output: ${BENCH_LOG#"$REPO"/})"
}

bench_scale_report() {
	local load=$1 secs=$2 binlog
	binlog="no binary log (BENCH_SCALE_BINLOG=0)"
	[[ $BENCH_SCALE_BINLOG == 0 ]] ||
	    binlog="the binary log as a replicating host runs it: \`log_bin\`, \`binlog_format = ROW\`, \`sync_binlog = 1\`"
	cat <<EOF
# idemorders at scale: create, replay, conflict and GET on a filled database

\`tools/dev bench --scale $(IFS=,; echo "${BENCH_SCALE_SIZES[*]}")\` on $(date -u '+%Y-%m-%d %H:%M UTC'), ${secs} s in all; load average before the run: $load; $(nproc) cores.

$(bench_versions)
- each size: a fresh database filled with bulk SQL (bench/bench-scale.sh):
  N ledger rows, per hundred 93 creates with their orders (one item, two
  for every fourth), 5 final rejections (FAILED_FINAL), 2 cancels; the
  newest 60 % live (within 24 h), 10 % due to expire (24-28 h old), the
  oldest 30 % EXPIRED tombstones (28 h to 8 days old); UUID-shaped keys,
  a third of them the bench principal's (\`$BENCH_USER\`), the rest
  over N/20 principals. \`idemorders audit\` runs on the filled database
  before the runs.
- then \`innodb_buffer_pool_size\` = $((BENCH_SCALE_POOL / 1048576)) MiB, \`innodb_flush_log_at_trx_commit = 1\`,
  $binlog (the fill itself is not logged);
  $BENCH_WORKERS workers, \`log_level = warning\`.
- load: \`wrk -t$BENCH_WRK_THREADS -c$BENCH_HOT_C\` through lighttpd with \`bench/orders.lua\`, ${BENCH_SECONDS} s a run:
  create (a new key each, counting up, random BENCH SKU), create-uuid
  (the same with random UUID v4 keys: each lands in a random leaf of the
  unique indexes among the principal's third of the history, as a new
  customer's key lands among everybody's), replay of one key, conflict
  (that key, another body: 409), GET of one order (hot in the cache);
  list and list-deep: GET /orders?limit=20 as \`$BENCH_LIST_USER\` (its
  newest page, and the page after its middle order; about
  $BENCH_SCALE_LIST_ROWS of the filled ledger rows are its, 93 % of them orders);
  D: \`bench/dbtx\` naive and batched at
  the pool's size (c$((BENCH_HOT_C < BENCH_WORKERS ? BENCH_HOT_C : BENCH_WORKERS))); last, create-expire: create again with
  \`idemorders expire\` started beside it (\`tombstone_retention = $BENCH_SCALE_TOMBSTONES\` so
  that it purges too, default \`expire_batch\`, \`expire_pause = ${BENCH_SCALE_EXPIRE_PAUSE:-200ms (default)}\`), stopped when the run ends.
  MariaDB µs/req: mariadbd's CPU (\`/proc/<pid>/stat\`) per request (in
  create-expire, the job's share included); redo and binlog B/req:
  \`Innodb_os_log_written\` and \`Binlog_bytes_written\` per request
  (both server-wide: in create-expire, the job's included). Other CPU:
  the share of both cores busy outside lighttpd, the responders,
  mariadbd and wrk during the run (other work on the machine; the
  expiry job in create-expire). Nothing asserts a speed.

EOF
	awk -F'\t' -v sizes="${BENCH_SCALE_SIZES[*]}" '
	function ms(v) { return v == "" ? "-" : sprintf("%.2f", v) }
	function ratio(a, b) { return (b > 0 && a != "") ? a / b : -1 }
	function x(v) { return v < 0 ? "-" : sprintf("%.2f ×", v) }
	function met(ok, v) { return v < 0 ? "not measured" : ok ? "met" : "**not met**" }
	function f(k) { return (k in F) ? F[k] : "-" }
	FILENAME ~ /facts/ { F[$1, $2] = $3; next }
	{ k = $2 "\t" $3; if (!(k in seen)) { seen[k] = 1; runs[++nr] = k }
	  R[$1, $3] = $6; P50[$1, $3] = $7; P99[$1, $3] = $8; U[$1, $3] = $11; DB[$1, $3] = $15; O[$1, $3] = $19
	  RK[$1, k] = $3 }
	END {
		ns = split(sizes, S, " ")
		printf "## Runs\n\n| run | N | req/s | p50 ms | p99 ms | unexpected | MariaDB µs/req | redo B/req | binlog B/req | other CPU %% |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
		for (i = 1; i <= nr; i++) {
			split(runs[i], kt, "\t"); t = kt[2]
			for (j = 1; j <= ns; j++) {
				n = S[j]
				if (!((n, t) in R)) continue
				printf "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", t, n,
				    R[n, t], ms(P50[n, t]), ms(P99[n, t]), U[n, t], DB[n, t],
				    f(n SUBSEP "redo:" t), f(n SUBSEP "binlog:" t), O[n, t]
			}
		}
		printf "\n## The expiry job beside the creates\n\n"
		printf "create-expire against create at the same N. Rows due: what expire --dry-run counted just before (to expire; tombstones to purge). Ran: from its start to its end, or to the end of the creates (stopped); in batches: the sum of its batches. Rows a second: of each phase, from the start of its first batch to the end of its last (the pause of the job after each full batch, expire_pause, included). A batch is one transaction (statement and COMMIT): its time bounds how long it held its row locks.\n\n"
		printf "| N | rows due | ran s | in batches s | expired | purged | expired/s | purged/s | batches | batch ms p50 / p99 / max | create req/s without / with | p99 ms without / with |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
		for (j = 1; j <= ns; j++) {
			n = S[j]; s = F[n, "expire:secs"]
			if (s == "") continue
			printf "| %s | %d; %d | %.1f%s | %.1f | %d | %d | %.0f | %.0f | %d | %s / %s / %s | %.0f / %.0f | %s / %s |\n", n,
			    F[n, "expire:due"], F[n, "expire:purgeable"], s, F[n, "expire:stopped"] ? " (stopped)" : "",
			    F[n, "expire:busy_s"], F[n, "expire:expired"], F[n, "expire:purged"],
			    F[n, "expire:expired_ps"], F[n, "expire:purged_ps"], F[n, "expire:batches"],
			    f(n SUBSEP "expire:ms_p50"), f(n SUBSEP "expire:ms_p99"), f(n SUBSEP "expire:ms_max"),
			    R[n, "create"], R[n, "create-expire"], ms(P99[n, "create"]), ms(P99[n, "create-expire"])
		}
		printf "\n## The filled database\n\n| N | fill s | ledger | orders | cancelled | items | principals | due to expire | tombstones | buffer pool MiB | audit |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n"
		for (j = 1; j <= ns; j++) {
			n = S[j]
			tomb = F[n, "count:create-order:EXPIRED"] + F[n, "count:cancel-order:EXPIRED"]
			printf "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %.0f | %s |\n", n, F[n, "fill_s"],
			    F[n, "count:ledger"], F[n, "count:orders"], F[n, "count:orders:CANCELLED"],
			    F[n, "count:order_items"], F[n, "count:principals"], F[n, "count:due"], tomb,
			    F[n, "pool"] / 1048576, F[n, "audit"]
		}
		printf "\n## Bytes on disk (information_schema.TABLES after ANALYZE TABLE)\n\n| N | table | rows (estimate) | data MiB | index MiB | data + index bytes per order |\n|--:|---|--:|--:|--:|--:|\n"
		for (j = 1; j <= ns; j++) {
			n = S[j]; o = F[n, "count:orders"]; tot = 0
			split("idempotency_records orders order_items", T, " ")
			for (t = 1; t <= 3; t++) {
				split(F[n, "size:" T[t]], z, " "); tot += z[2] + z[3]
				printf "| %s | %s | %d | %.1f | %.1f | %s |\n", n, T[t], z[1], z[2] / 1048576, z[3] / 1048576,
				    (o > 0 ? sprintf("%.0f", (z[2] + z[3]) / o) : "-")
			}
			printf "| %s | **all three** | | | | %s |\n", n, (o > 0 ? sprintf("**%.0f**", tot / o) : "-")
		}
		# The targets (issue: performance as the ledger grows): the
		# largest N against the smallest, ratios within this run.
		L = S[ns]; Z = S[1]
		printf "\n## Targets (N = %s against N = %s)\n\n| target | measured | |\n|---|--:|---|\n", L, Z
		v = ratio(R[L, "create"], R[Z, "create"])
		printf "| creates at N = %s ≥ 0.8 × at N = %s | %s (%.0f / %.0f req/s) | %s |\n", L, Z, x(v), R[L, "create"], R[Z, "create"], met(v >= 0.8, v)
		v = ratio(P99[L, "create"], P99[Z, "create"])
		printf "| create p99 at N = %s ≤ 2 × at N = %s | %s (%s / %s ms) | %s |\n", L, Z, x(v), ms(P99[L, "create"]), ms(P99[Z, "create"]), met(v <= 2 && v >= 0, v)
		v = ratio(R[L, "create-uuid"], R[Z, "create-uuid"])
		printf "| creates with random UUID keys at N = %s ≥ 0.8 × at N = %s | %s (%.0f / %.0f req/s) | %s |\n", L, Z, x(v), R[L, "create-uuid"], R[Z, "create-uuid"], met(v >= 0.8, v)
		v = ratio(P99[L, "create-uuid"], P99[Z, "create-uuid"])
		printf "| their p99 at N = %s ≤ 2 × at N = %s | %s (%s / %s ms) | %s |\n", L, Z, x(v), ms(P99[L, "create-uuid"]), ms(P99[Z, "create-uuid"]), met(v <= 2 && v >= 0, v)
		v = ratio(R[L, "create-expire"], R[L, "create"])
		printf "| expiry beside creates costs ≤ 15 %% of their rate (N = %s) | %s | %s |\n", L, v < 0 ? "-" : sprintf("%.0f %% (%.0f / %.0f req/s)", 100 * (1 - v), R[L, "create-expire"], R[L, "create"]), met(v >= 0.85, v)
		v = ratio(P99[L, "create-expire"], P99[L, "create"])
		printf "| create p99 with expiry ≤ 2 × without (N = %s) | %s (%s / %s ms) | %s |\n", L, x(v), ms(P99[L, "create-expire"]), ms(P99[L, "create"]), met(v <= 2 && v >= 0, v)
		s = F[L, "expire:secs"]; ce = R[L, "create-expire"]
		if (s > 0 && ce > 0) {
			e = F[L, "expire:expired_ps"]; p = F[L, "expire:purged_ps"]; pn = L
			# The purge comes after the backlog of expiries: when the
			# run ended first, its rate at the largest N that reached it.
			for (j = ns; p == 0 && j >= 1; j--)
				if (F[S[j], "expire:purged_ps"] > 0) { pn = S[j]; p = F[pn, "expire:purged_ps"]; pc = R[pn, "create-expire"] }
			if (pn == L) pc = ce
			printf "| expiry keeps up: expires and purges ≥ the ledger rows creates write (N = %s, creates beside it %.0f/s, 1 ledger row each) | expired %.0f/s (%s)%s | %s |\n",
			    L, ce, e, x(e / ce),
			    (p > 0 ? sprintf(", purged %.0f/s (%s%s)", p, x(p / pc), pn == L ? "" : sprintf(" at N = %s, not reached at N = %s", pn, L)) : ", purge not reached"),
			    (p > 0 ? met(e >= ce && p >= pc, 1) : met(e >= ce, 1) " (expiry; purge not measured)")
		} else
			printf "| expiry keeps up (N = %s) | - | not measured |\n", L
		for (j = 1; j <= ns; j++) {
			n = S[j]
			if (!((n, "list") in R)) continue
			printf "| GET /orders pages (limit 20) of a principal with %s orders against GET /orders/{id} (N = %s) | newest page %.0f, a middle page %.0f, GET %.0f req/s (%s, %s) | measured |\n", f(n SUBSEP "count:list_orders"), n, R[n, "list"], R[n, "list-deep"], R[n, "get"], x(ratio(R[n, "list"], R[n, "get"])), x(ratio(R[n, "list-deep"], R[n, "get"]))
		}
		# The rest needs the create and D runs (BENCH_SCALE_RUNS may leave them out).
		if (!(("app" "\t" "create") in seen && ("D" "\t" "D") in seen)) exit
		v = ratio(DB[L, "create"], DB[Z, "create"])
		printf "| mariadbd per create at N = %s ≤ 1.2 × at N = %s | %s (%s / %s µs) | %s |\n", L, Z, x(v), DB[L, "create"], DB[Z, "create"], met(v <= 1.2 && v >= 0, v)
		for (j = 1; j <= ns; j++) {
			n = S[j]
			v = ratio(DB[n, "create"], DB[n, "D"])
			printf "| mariadbd per create ≤ 0.75 × D naive (N = %s) | %s (%s / %s µs) | %s |\n", n, x(v), DB[n, "create"], DB[n, "D"], met(v <= 0.75 && v >= 0, v)
		}
		for (j = 1; j <= ns; j++) {
			n = S[j]
			v = ratio(F[n, "redo:create"], F[n, "redo:D"])
			printf "| redo bytes per create ≤ D naive (N = %s) | %s (%s / %s B) | %s |\n", n, x(v), f(n SUBSEP "redo:create"), f(n SUBSEP "redo:D"), met(v <= 1 && v >= 0, v)
		}
	}' "$SCALE_FACTS" "$SCALE_TSV"
}

# scale_chart PNG: req/s and p99 against N (bench/plot-scale.gp).
scale_chart() {
	local dat=$BENCH_LOG/scale-chart.dat
	awk -F'\t' -v sizes="${BENCH_SCALE_SIZES[*]}" '
	$2 == "app" { R[$1, $3] = $6; P[$1, $3] = $8 }
	END {
		ns = split(sizes, S, " ")
		nt = split("create replay get conflict create-expire create-uuid", T, " ")
		printf "#N_millions"
		for (t = 1; t <= nt; t++) printf " rps-%s", T[t]
		for (t = 1; t <= nt; t++) printf " p99-%s", T[t]
		printf "\n"
		for (j = 1; j <= ns; j++) {
			n = S[j]; printf "%g", n / 1e6
			for (t = 1; t <= nt; t++) printf " %s", ((n, T[t]) in R) ? R[n, T[t]] : "?"
			for (t = 1; t <= nt; t++) printf " %s", ((n, T[t]) in P) ? P[n, T[t]] : "?"
			printf "\n"
		}
	}' "$SCALE_TSV" >"$dat"
	gnuplot -e "datafile='$dat'; outfile='$1.tmp'; subtitle='$(date -u '+%Y-%m-%d'), $(nproc) cores, buffer pool $((BENCH_SCALE_POOL / 1048576)) MiB, c$BENCH_HOT_C through lighttpd, ${BENCH_SECONDS} s a run'" \
	    "$REPO/bench/plot-scale.gp" >"$BENCH_LOG/gnuplot.out" 2>&1 &&
	    mv -f "$1.tmp" "$1"
}
