# bench/bench-work.sh -- `tools/dev bench --work N[,N...]`: what one create
# asks of MariaDB (rows, index entries, redo bytes, statements, CPU),
# against the bare transaction D on the same data, side by side.
# shellcheck shell=bash
#
#   tools/dev bench --work N[,N...] [--keep] [--out DIR]
#
# On the bench stack (bench/bench.sh), for each N in turn: a fresh
# database, filled with N ledger rows of history by bench/bench-scale.sh's
# scale_fill when N > 0 (then innodb_buffer_pool_size = BENCH_SCALE_POOL,
# 256M, as bench --scale runs), and BENCH_WORK_ROUNDS (2) rounds of, in
# turn:
#   create     wrk through lighttpd at c16 (bench/orders.lua create: a new
#              key each, one item of a random BENCH SKU), 4 workers;
#   D          bench/dbtx -m naive at c4 (the step-by-step transaction);
#   D-batched  bench/dbtx -m batched at c4 (the service's two round trips).
# Around every run: SHOW GLOBAL STATUS before and after, and mariadbd's
# CPU (utime + stime, /proc/<pid>/stat).  A kind's figure is the sum of
# its rounds' deltas divided by the sum of its transactions (201 answers,
# or dbtx's tx): Handler_*, Innodb_rows_*, Innodb_os_log_written (redo
# bytes), Com_* and Questions per create, and mariadbd µs per create.
# The counters hardly move with the machine's load; the CPU does, which
# is why the kinds alternate within one run and the ratio to D is taken
# there.
#
# Report: DIR/work-N1-N2....md and .tsv (DIR: var/bench/results, or --out
# DIR).  Nothing asserts a figure.  Knobs: BENCH_SECONDS (5),
# BENCH_WORK_ROUNDS (2), BENCH_SCALE_POOL, BENCH_SCALE_BATCH, BENCH_WORKERS.

run_bench_work() {
	bench_size_args work "$@"
	BENCH_WORK_SIZES=("${BENCH_SIZES[@]}")
	export IDEMORDERS_STACK=bench
	stack_vars
	PACKAGES+=(wrk jq)
	# shellcheck disable=SC2034
	BENCH_SERVERS=lighttpd
	BENCH_SECONDS=${BENCH_SECONDS:-5}
	BENCH_WORKERS=${BENCH_WORKERS:-4}
	BENCH_WRK_THREADS=${BENCH_WRK_THREADS:-2}
	BENCH_WORK_ROUNDS=${BENCH_WORK_ROUNDS:-2}
	# shellcheck disable=SC2034
	BENCH_PROFILE=0
	BENCH_SCALE_POOL=${BENCH_SCALE_POOL:-268435456}
	BENCH_SCALE_BATCH=${BENCH_SCALE_BATCH:-100000}
	: "${BENCH_OUT:=$VAR/results}"
	[[ $BENCH_SECONDS =~ ^[0-9]+$ && $BENCH_SECONDS -gt 0 ]] ||
	    die "BENCH_SECONDS must be a positive number of seconds"
	[[ $BENCH_WORK_ROUNDS =~ ^[0-9]+$ && $BENCH_WORK_ROUNDS -gt 0 ]] ||
	    die "BENCH_WORK_ROUNDS must be a positive number"
	[[ $BENCH_SCALE_POOL =~ ^[0-9]+$ && $BENCH_SCALE_POOL -ge 33554432 ]] ||
	    die "BENCH_SCALE_POOL must be a number of bytes, at least 32M (33554432)"
	with_lock bench_work_main
}

# The server's counters, "NAME VALUE" a line.
work_status() {
	db_root -N -B -e "SHOW GLOBAL STATUS" |
	    awk -F'\t' '$1 ~ /^(Handler_|Innodb_rows_|Innodb_os_log_written|Innodb_lsn_current|Innodb_buffer_pool_reads$|Innodb_buffer_pool_read_requests|Innodb_pages_written|Com_|Questions)/ { print $1 "\t" $2 }'
}

# work_delta N KIND BEFORE AFTER: one line per counter that moved,
# "N KIND NAME DELTA", appended to WORK_TSV.
work_delta() {
	awk -F'\t' -v n="$1" -v k="$2" 'FNR == NR { b[$1] = $2; next }
	    { d = $2 - b[$1]; if (d != 0) printf "%s\t%s\t%s\t%s\n", n, k, $1, d }' \
	    "$3" "$4" >>"$WORK_TSV"
}

# work_run N KIND COMMAND...: COMMAND (a bench_wrk or bench_dbtx run)
# between two snapshots of the counters; its transactions and mariadbd's
# ticks recorded as the pseudo-counters tx and cpu_ticks.
work_run() {
	local n=$1 kind=$2 before=$BENCH_LOG/status-before after=$BENCH_LOG/status-after
	local t0 t1 tx
	shift 2
	bench_pids -
	work_status >"$before"
	t0=$(bench_ticks "$B_DB")
	"$@"
	t1=$(bench_ticks "$B_DB")
	work_status >"$after"
	# The run's row: the 9th field is its expected answers (201s, tx).
	tx=$(tail -n 1 "$BENCH_TSV" | cut -f9)
	work_delta "$n" "$kind" "$before" "$after"
	printf '%s\t%s\ttx\t%s\n%s\t%s\tcpu_ticks\t%s\n' "$n" "$kind" "$tx" \
	    "$n" "$kind" $((t1 - t0)) >>"$WORK_TSV"
}

bench_work_main() {
	local n start load c w r t0
	start=$(date +%s)
	load=$(cut -d' ' -f1 /proc/loadavg)
	bench_begin
	WORK_TSV=$BENCH_LOG/work.tsv
	: >"$WORK_TSV"
	c=$BENCH_HOT_C
	w=$((c < BENCH_WORKERS ? c : BENCH_WORKERS))
	say "bench --work: load average $load; sizes ${BENCH_WORK_SIZES[*]}; $BENCH_WORK_ROUNDS rounds of ${BENCH_SECONDS}s runs"
	ensure_packages
	bench_build
	for n in "${BENCH_WORK_SIZES[@]}"; do
		echo "N = $n ledger rows"
		bench_stack_up
		if [[ $n -gt 0 ]]; then
			scale_fill "$n"	# bench/bench-scale.sh
			db_root -e "SET GLOBAL innodb_buffer_pool_size = $BENCH_SCALE_POOL" ||
			    die "bench --work: resizing the buffer pool failed"
			for ((t0 = 0; t0 < 100; t0++)); do
				[[ $(db_root -N -B -e "SELECT @@innodb_buffer_pool_size") == "$BENCH_SCALE_POOL" ]] && break
				sleep 0.2
			done
		fi
		bench_warmup app 201
		bench_dbtx D-warmup "$w" -m naive -k BENCH -n "$BENCH_SKUS" >/dev/null
		for ((r = 1; r <= BENCH_WORK_ROUNDS; r++)); do
			work_run "$n" create bench_wrk app create lighttpd "$c" create 201
			work_run "$n" D bench_dbtx D "$w" -m naive -k BENCH -n "$BENCH_SKUS"
			work_run "$n" D-batched bench_dbtx D-batched "$w" -m batched -k BENCH -n "$BENCH_SKUS"
		done
		[[ $BENCH_KEEP == 1 && $n == "${BENCH_WORK_SIZES[-1]}" ]] ||
		    stack_down >/dev/null
	done
	local name md tsv
	name=work-$(IFS=-; echo "${BENCH_WORK_SIZES[*]}")
	md=$BENCH_OUT/$name.md
	tsv=$BENCH_OUT/$name.tsv
	bench_work_report "$load" $(($(date +%s) - start)) >"$md.tmp"
	mv -f "$md.tmp" "$md"
	cp "$WORK_TSV" "$tsv.tmp" && mv -f "$tsv.tmp" "$tsv"
	cat "$md"
	say "bench --work: wrote $md and $tsv (raw output: ${BENCH_LOG#"$REPO"/})"
}

# The per-create table of WORK_TSV: one row per counter, a column per
# kind, and create / D.
bench_work_report() {
	local load=$1 secs=$2
	cat <<EOF
# idemorders: database work per create, against the bare transaction

\`tools/dev bench --work $(IFS=,; echo "${BENCH_WORK_SIZES[*]}")\` on $(date -u '+%Y-%m-%d %H:%M UTC'), ${secs} s in all; load average before the run: $load; $(nproc) cores.

$(bench_versions)
- $BENCH_WORK_ROUNDS rounds of create (wrk c$BENCH_HOT_C through lighttpd, $BENCH_WORKERS workers),
  D (bench/dbtx -m naive, c$((BENCH_HOT_C < BENCH_WORKERS ? BENCH_HOT_C : BENCH_WORKERS))) and D-batched, ${BENCH_SECONDS} s each;
  SHOW GLOBAL STATUS and mariadbd's CPU around each run; figures per
  transaction (201 answers or dbtx transactions), summed over the rounds.
  N > 0: bench --scale's fill, then a ${BENCH_SCALE_POOL}-byte buffer pool.

EOF
	awk -F'\t' -v hz="$(getconf CLK_TCK)" '
	{ V[$1, $2, $3] += $4; if (!($1 in seen)) { seen[$1] = 1; ns[++nn] = $1 }
	  if (!($3 in seenc)) { seenc[$3] = 1; cs[++nc] = $3 } }
	function per(n, k, c) { t = V[n, k, "tx"]; return t > 0 ? V[n, k, c] / t : 0 }
	function f(v) { return v >= 100 ? sprintf("%.0f", v) : sprintf("%.2f", v) }
	END {
		for (i = 1; i <= nn; i++) {
			n = ns[i]
			printf "## N = %s ledger rows\n\n", n
			printf "| per transaction | create | D (naive) | D-batched | create / D |\n|---|--:|--:|--:|--:|\n"
			printf "| transactions counted | %d | %d | %d | |\n", V[n, "create", "tx"], V[n, "D", "tx"], V[n, "D-batched", "tx"]
			a = per(n, "create", "cpu_ticks") / hz * 1e6; b = per(n, "D", "cpu_ticks") / hz * 1e6
			printf "| **mariadbd CPU µs** | **%.0f** | **%.0f** | %.0f | **%.2f** |\n", a, b,
			    per(n, "D-batched", "cpu_ticks") / hz * 1e6, (b > 0 ? a / b : 0)
			a = per(n, "create", "Innodb_os_log_written"); b = per(n, "D", "Innodb_os_log_written")
			printf "| **redo bytes** (Innodb_os_log_written) | **%.0f** | **%.0f** | %.0f | **%.2f** |\n", a, b,
			    per(n, "D-batched", "Innodb_os_log_written"), (b > 0 ? a / b : 0)
			# Every other counter that moved, in a stable order.
			m = 0
			for (j = 1; j <= nc; j++) {
				c = cs[j]
				if (c == "tx" || c == "cpu_ticks" || c == "Innodb_os_log_written") continue
				if (per(n, "create", c) < 0.005 && per(n, "D", c) < 0.005 && per(n, "D-batched", c) < 0.005) continue
				L[++m] = c
			}
			for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (L[y] < L[x]) { t2 = L[x]; L[x] = L[y]; L[y] = t2 }
			for (x = 1; x <= m; x++) {
				c = L[x]; a = per(n, "create", c); b = per(n, "D", c)
				printf "| %s | %s | %s | %s | %s |\n", c, f(a), f(b), f(per(n, "D-batched", c)),
				    (b > 0 ? sprintf("%.2f", a / b) : "-")
			}
			printf "\n"
		}
	}' "$WORK_TSV"
}
