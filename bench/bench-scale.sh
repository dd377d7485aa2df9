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
#       - keys are UUID-shaped (random order: what clients send), over
#         N / 20 principals scale-NNNNNN (about 20 keys each);
#       - stock: available = 10^9 - sold + restocked, restocked = the
#         items of cancelled orders (`idemorders audit` holds the fill
#         to the same invariants as real traffic: it runs right after;
#         a breach stops the bench, an audit that cannot finish, exit 2,
#         is reported in the table);
#  2. the table sizes (information_schema.TABLES after ANALYZE TABLE:
#     data_length, index_length) of the ledger, orders and order_items;
#  3. innodb_buffer_pool_size set to BENCH_SCALE_POOL (256M; the fill ran
#     with the bench's 1G), innodb_flush_log_at_trx_commit = 1 as shipped;
#  4. through lighttpd at c16 (BENCH_HOT_C), BENCH_SECONDS (5) each:
#     create (unique keys, random BENCH SKU), replay of one key, GET of one
#     order (bench/orders.lua), and the bare transaction at the pool's
#     size (bench/dbtx naive and batched), with mariadbd's CPU per request.
#
# Report: DIR/scale-N1-N2....md and .tsv (DIR: var/bench/results, or
# --out DIR); one column per N, side by side.  Nothing asserts a speed.
# Knobs: BENCH_SECONDS, BENCH_SCALE_POOL, BENCH_SCALE_BATCH, BENCH_WORKERS.

BENCH_SCALE_RETENTION=86400	# key_retention the bench stack runs with (24h)

run_bench_scale() {
	local sizes=() parts n
	# (BENCH_QUICK, BENCH_SERVERS, BENCH_PROFILE: read by bench/bench.sh)
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
					    die "bench --scale: '$n' is not a number of ledger rows (0 to 999999999)"
					sizes+=("$n")
				done ;;
		esac
		shift
	done
	[[ ${#sizes[@]} -gt 0 ]] ||
	    die "usage: $PROG bench --scale N[,N...] [--keep] [--out DIR]"
	mapfile -t BENCH_SCALE_SIZES < <(printf '%s\n' "${sizes[@]}" | sort -nu)
	export IDEMORDERS_STACK=bench
	stack_vars
	PACKAGES+=(wrk jq)
	# shellcheck disable=SC2034
	BENCH_SERVERS=lighttpd
	BENCH_SECONDS=${BENCH_SECONDS:-5}
	BENCH_WORKERS=${BENCH_WORKERS:-4}
	BENCH_WRK_THREADS=${BENCH_WRK_THREADS:-2}
	# shellcheck disable=SC2034
	BENCH_PROFILE=0
	BENCH_SCALE_POOL=${BENCH_SCALE_POOL:-268435456}
	BENCH_SCALE_BATCH=${BENCH_SCALE_BATCH:-100000}
	: "${BENCH_OUT:=$VAR/results}"
	[[ $BENCH_SECONDS =~ ^[0-9]+$ && $BENCH_SECONDS -gt 0 ]] ||
	    die "BENCH_SECONDS must be a positive number of seconds"
	[[ $BENCH_WORKERS =~ ^[0-9]+$ && $BENCH_WORKERS -gt 0 ]] ||
	    die "BENCH_WORKERS must be a positive number"
	[[ $BENCH_SCALE_POOL =~ ^[0-9]+$ && $BENCH_SCALE_POOL -ge 33554432 ]] ||
	    die "BENCH_SCALE_POOL must be a number of bytes, at least 32M (33554432)"
	[[ $BENCH_SCALE_BATCH =~ ^[0-9]+$ && $BENCH_SCALE_BATCH -gt 0 ]] ||
	    die "BENCH_SCALE_BATCH must be a positive number of rows"
	with_lock bench_scale_main
}

# ------------------------------------------------------------ the fill

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
scale_principal() {	# S N
	printf "CONCAT('scale-', LPAD(((%s) * 7919) MOD GREATEST(1, %s DIV 20), 6, '0'))" "$1" "$2"
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
	local a=$1 b=$2 n=$3 s=seq ca
	ca=$(scale_created "$s" "$n")
	cat <<EOF
SET SESSION foreign_key_checks = 0, unique_checks = 0;
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
	db_root "$DB_NAME" -e "UPDATE stock s LEFT JOIN (SELECT i.sku,
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

# ------------------------------------------------------------ the run

bench_scale_main() {
	local n start load key path t0 audit_rc tsv md name c w
	start=$(date +%s)
	trap bench_end EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	load=$(cut -d' ' -f1 /proc/loadavg)
	BENCH_LOG=$VAR/log/bench
	rm -rf "$BENCH_LOG"
	mkdir -p "$BENCH_LOG" "$BENCH_OUT"
	BENCH_TSV=$BENCH_LOG/runs.tsv
	SCALE_TSV=$BENCH_LOG/scale.tsv
	SCALE_FACTS=$BENCH_LOG/facts.tsv
	: >"$SCALE_TSV"
	: >"$SCALE_FACTS"
	# shellcheck disable=SC2034
	BENCH_N=0
	BENCH_RUN=$(date +%s)-$$
	# shellcheck disable=SC2034
	BENCH_AUTH=$(printf '%s:%s' "$BENCH_USER" "$BENCH_PASSWORD" | base64 -w0)
	c=$BENCH_HOT_C
	w=$((c < BENCH_WORKERS ? c : BENCH_WORKERS))
	say "bench --scale: load average $load; sizes ${BENCH_SCALE_SIZES[*]}; ${BENCH_SECONDS}s a run; $BENCH_WORKERS workers"

	ensure_packages
	bench_build
	for n in "${BENCH_SCALE_SIZES[@]}"; do
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
		bench_wrk app create lighttpd "$c" create 201
		key=bench-$BENCH_RUN-replay-$n
		path=$(bench_seed_order lighttpd "$key")
		bench_wrk app replay lighttpd "$c" replay 201 "$key"
		bench_wrk app get lighttpd "$c" get 200 "$path"
		bench_dbtx D "$w" -m naive -k BENCH -n "$BENCH_SKUS"
		bench_dbtx D-batched "$w" -m batched -k BENCH -n "$BENCH_SKUS"
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
	cat "$md"
	say "bench --scale: wrote $md and $tsv (raw output: ${BENCH_LOG#"$REPO"/})"
}

bench_scale_report() {
	local load=$1 secs=$2
	cat <<EOF
# idemorders at scale: create, replay and GET on a filled database

\`tools/dev bench --scale $(IFS=,; echo "${BENCH_SCALE_SIZES[*]}")\` on $(date -u '+%Y-%m-%d %H:%M UTC'), ${secs} s in all; load average before the run: $load; $(nproc) cores.

$(bench_versions)
- each size: a fresh database filled with bulk SQL (bench/bench-scale.sh):
  N ledger rows, per hundred 93 creates with their orders (one item, two
  for every fourth), 5 final rejections (FAILED_FINAL), 2 cancels; the
  newest 60 % live (within 24 h), 10 % due to expire (24-28 h old), the
  oldest 30 % EXPIRED tombstones; UUID-shaped keys over N/20 principals.
  \`idemorders audit\` runs on the filled database before the runs.
- then \`innodb_buffer_pool_size\` = $((BENCH_SCALE_POOL / 1048576)) MiB, \`innodb_flush_log_at_trx_commit = 1\`
  (no binary log: the bench stack runs none); $BENCH_WORKERS workers, \`log_level = warning\`.
- load: \`wrk -t$BENCH_WRK_THREADS -c$BENCH_HOT_C\` through lighttpd with \`bench/orders.lua\`, ${BENCH_SECONDS} s a run:
  create (a new key each, random BENCH SKU), replay of one key, GET of one
  order (both hot in the cache: the history is another principal's);
  D: \`bench/dbtx\` naive and batched at the pool's size (c$((BENCH_HOT_C < BENCH_WORKERS ? BENCH_HOT_C : BENCH_WORKERS))).
  MariaDB µs/req: mariadbd's CPU (\`/proc/<pid>/stat\`) per request.
  Nothing asserts a speed.

EOF
	awk -F'\t' -v sizes="${BENCH_SCALE_SIZES[*]}" '
	function ms(v) { return v == "" ? "-" : sprintf("%.2f", v) }
	FILENAME ~ /facts/ { F[$1, $2] = $3; next }
	{ k = $2 "\t" $3; if (!(k in seen)) { seen[k] = 1; runs[++nr] = k }
	  R[$1, k] = $6; P50[$1, k] = $7; P99[$1, k] = $8; U[$1, k] = $11; DB[$1, k] = $15 }
	END {
		ns = split(sizes, S, " ")
		printf "## Runs\n\n| run | N | req/s | p50 ms | p99 ms | unexpected | MariaDB µs/req |\n|---|--:|--:|--:|--:|--:|--:|\n"
		for (i = 1; i <= nr; i++) {
			split(runs[i], kt, "\t")
			for (j = 1; j <= ns; j++) {
				n = S[j]
				if (!((n, runs[i]) in R)) continue
				printf "| %s | %s | %.0f | %s | %s | %s | %s |\n", kt[2], n,
				    R[n, runs[i]], ms(P50[n, runs[i]]), ms(P99[n, runs[i]]), U[n, runs[i]], DB[n, runs[i]]
			}
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
	}' "$SCALE_FACTS" "$SCALE_TSV"
}
