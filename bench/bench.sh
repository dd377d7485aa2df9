# bench/bench.sh -- `tools/dev bench`: throughput, latency, CPU and
# memory of idemorders against the ceilings that bound it, in one run.
# shellcheck shell=bash
#
#   tools/dev bench [--quick] [--keep] [--out DIR]
#
# Always on its own stack 'bench' (ports 28080-28082, MariaDB 23307, plus
# IDEMORDERS_PORT_OFFSET; var/bench, /run/idemorders-bench-*), so it never
# disturbs the dev stack or a running `tools/dev test`.  Every run:
#
#  1. builds var/bench/build WITHOUT fault injection or sanitizers (plus
#     bench/hello-fcgi and bench/dbtx), starts the stack on a fresh
#     database and adds the SKUs BENCH-00..BENCH-63 (unit price
#     100 x (NN+1) KRW) and BENCH-HOT, each with 10^9 in stock;
#  2. H, the HTTP + FastCGI ceiling: hello-fcgi (the same supervisor and
#     worker loop, a constant answer) takes the responder's socket, with
#     the same workers, behind the same lighttpd/Apache config and auth,
#     loaded with the same create requests;
#  3. D, the transaction ceiling: bench/dbtx at the same concurrency and
#     at the pool's size (random BENCH SKU), and D-hot (every transaction
#     on BENCH-HOT); C = 1 / (1/H(c) + 1/D(min(c, workers))), everything
#     sharing the same cores;
#  4. idemorders behind lighttpd and Apache (mod_proxy_fcgi, as deployed:
#     enablereuse=off): create with unique keys at each concurrency,
#     replay of one key, same-key conflict (409), GET /orders/{id}, hot
#     SKU, cancel (orders made before, a key each) and a cancel replayed;
#     the full run adds create at the default log_level (info) and
#     with other pool sizes;
#  5. the round trips (the pool through a proxy that delays every
#     chunk); the full run (or BENCH_PROFILE=1) adds where the CPU goes:
#     a create, a replay and the bare transactions again under `perf
#     record -a`, split by process and by part of mariadbd and of the
#     responder.
#
# wrk (bench/orders.lua) counts every status itself: "unexpected" is any
# answer but the expected one, "socket errors" the requests that got no
# answer; the time not spent in the measured process groups shows as
# "other CPU" (a busy machine makes it grow).  CPU per request
# comes from /proc/<pid>/stat (utime+stime of each process group and its
# reaped children, before and after each run); peak RSS per worker is the
# largest VmHWM among the responder's workers after the run.
#
# Full run (~11 minutes): bench/results/latest.{md,tsv,png}.  --quick
# (~1 minute, concurrency 16 only, 3 s a run; the smoke check of `tools/dev
# test`): var/bench/results/quick.{md,tsv,png}.  --keep leaves the stack
# up afterwards (e.g. for profiling).  Knobs: BENCH_SECONDS (per run),
# BENCH_LEVELS ("4 16 64"), BENCH_WORKERS (responder workers, 4, the
# shipped default; the full run adds create rows with 8, 16 and 24),
# BENCH_WRK_THREADS (2), BENCH_PROFILE (1: profile, 0: not; the full run
# profiles).  Nothing asserts a speed: the targets are reported.

BENCH_SKUS=64
BENCH_STOCK=1000000000
BENCH_BUFFER_POOL=1073741824	# 1G: see bench_stack_up
BENCH_HOT_C=16		# concurrency of the single-level runs
BENCH_USER=alice
BENCH_PASSWORD=alice-secret
# The body bench/orders.lua replays, and its conflicting variant.
BENCH_REPLAY_BODY='{"currency":"KRW","items":[{"sku":"BENCH-00","qty":1}],"amount":100}'

# tools/dev bench [--quick] [--keep] [--out DIR]
run_bench() {
	BENCH_QUICK=0 BENCH_KEEP=0 BENCH_OUT=
	if [[ ${1:-} == --auth ]]; then
		shift
		run_bench_auth "$@"	# bench/bench-auth.sh
		return
	fi
	if [[ ${1:-} == --scale ]]; then
		shift
		run_bench_scale "$@"	# bench/bench-scale.sh
		return
	fi
	if [[ ${1:-} == --work ]]; then
		shift
		run_bench_work "$@"	# bench/bench-work.sh
		return
	fi
	if [[ ${1:-} == --events ]]; then
		shift
		run_bench_events "$@"	# bench/bench-events.sh
		return
	fi
	while [[ $# -gt 0 ]]; do
		case $1 in
		--quick)	BENCH_QUICK=1 ;;
		--keep)		BENCH_KEEP=1 ;;
		--out)		[[ $# -ge 2 ]] || die "--out needs a directory"
				BENCH_OUT=$2; shift ;;
		*)		die "usage: $PROG bench [--quick] [--keep] [--out DIR] | --auth [SECONDS] | --scale N[,N...] [--keep] [--out DIR] | --work N[,N...] [--keep] [--out DIR] | --events [--quick] [--keep] [--out DIR]" ;;
		esac
		shift
	done
	# Never the dev or test stack: the bench wipes its database.
	export IDEMORDERS_STACK=bench
	stack_vars
	PACKAGES+=(wrk gnuplot-nox jq socat)
	# The full run adds Apache with enablereuse=on (bench_reuse_start).
	BENCH_SERVERS="lighttpd apache apache-reuse"
	if [[ $BENCH_QUICK == 1 ]]; then
		BENCH_SERVERS="lighttpd apache"
		BENCH_SECONDS=${BENCH_SECONDS:-3}
		BENCH_LEVELS=${BENCH_LEVELS:-$BENCH_HOT_C}
		BENCH_NAME=quick
		: "${BENCH_OUT:=$VAR/results}"
	else
		BENCH_SECONDS=${BENCH_SECONDS:-15}
		BENCH_LEVELS=${BENCH_LEVELS:-4 16 64}
		BENCH_NAME=latest
		: "${BENCH_OUT:=$REPO/bench/results}"
	fi
	# Where the CPU goes: the full run's, or the quick one's with
	# BENCH_PROFILE=1.
	BENCH_PROFILE=${BENCH_PROFILE:-$((1 - BENCH_QUICK))}
	[[ $BENCH_PROFILE == 0 ]] || PACKAGES+=(linux-perf)
	BENCH_WORKERS=${BENCH_WORKERS:-4}
	BENCH_WRK_THREADS=${BENCH_WRK_THREADS:-2}
	[[ $BENCH_SECONDS =~ ^[0-9]+$ && $BENCH_SECONDS -gt 0 ]] ||
	    die "BENCH_SECONDS must be a positive number of seconds"
	[[ $BENCH_WORKERS =~ ^[0-9]+$ && $BENCH_WORKERS -gt 0 ]] ||
	    die "BENCH_WORKERS must be a positive number"
	with_lock bench_main
}

# ------------------------------------------------------------ measuring

# Clock ticks of CPU used so far by the processes PID... and their
# children, counting children already reaped (cutime, cstime).
bench_ticks() {
	local p files=()
	for p in "$@"; do
		[[ -n $p ]] || continue
		files+=("/proc/$p/stat")
		for p in $(pgrep -P "$p" || true); do
			files+=("/proc/$p/stat")
		done
	done
	[[ ${#files[@]} -gt 0 ]] || { echo 0; return; }
	# A worker may exit between pgrep and cat (pipefail is on).
	{ cat "${files[@]}" 2>/dev/null || true; } |
	    awk '{ sub(/^.*\) /, ""); t += $12 + $13 + $14 + $15 } END { print t + 0 }'
}

# The largest VmHWM (KiB) among the children of PID (the workers).
bench_hwm() {
	local p files=()
	for p in $(pgrep -P "$1" || true); do
		files+=("/proc/$p/status")
	done
	[[ ${#files[@]} -gt 0 ]] || { echo 0; return; }
	{ cat "${files[@]}" 2>/dev/null || true; } |
	    awk '$1 == "VmHWM:" && $2 > m { m = $2 } END { print m + 0 }'
}

# Pids of the process groups: the web server WHICH, the responder pool (or
# hello-fcgi while it holds the socket), MariaDB.
bench_pids() {
	case $1 in
	lighttpd)	B_WEB=$(pid_alive "$LIGHTTPD_PIDFILE" lighttpd || true) ;;
	apache)		B_WEB=$(pid_alive "$APACHE_PIDFILE" apache2 || true) ;;
	apache-reuse)	B_WEB=$(pid_alive "$BENCH_REUSE_PIDFILE" apache2 || true) ;;
	*)		B_WEB= ;;
	esac
	if [[ -n ${HELLO_PID:-} ]]; then
		B_RESP=$HELLO_PID
	else
		B_RESP=$(pid_alive "$SERVE_PIDFILE" idemorders || true)
	fi
	B_DB=$(pid_alive "$DB_PIDFILE" mariadbd || true)
}

# Busy clock ticks of the whole machine, all cores (/proc/stat), and the
# ticks stolen by the hypervisor.
bench_busy() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat
}
bench_steal() {
	awk '$1 == "cpu" { print $9; exit }' /proc/stat
}

bench_cpu_before() {
	T_WEB=$(bench_ticks "$B_WEB") T_RESP=$(bench_ticks "$B_RESP")
	T_DB=$(bench_ticks "$B_DB") T_BUSY=$(bench_busy) T_STEAL=$(bench_steal)
	T_START=$(date +%s%N)
}

# Microseconds of CPU per request of each group since bench_cpu_before,
# for N requests: sets U_WEB U_RESP U_DB.
bench_cpu_after() {
	local n=$1 hz
	hz=$(getconf CLK_TCK)
	U_WEB=$(bench_us $(( $(bench_ticks "$B_WEB") - T_WEB )) "$hz" "$n")
	U_RESP=$(bench_us $(( $(bench_ticks "$B_RESP") - T_RESP )) "$hz" "$n")
	U_DB=$(bench_us $(( $(bench_ticks "$B_DB") - T_DB )) "$hz" "$n")
	D_WEB=$(( $(bench_ticks "$B_WEB") - T_WEB ))
	D_RESP=$(( $(bench_ticks "$B_RESP") - T_RESP ))
	D_DB=$(( $(bench_ticks "$B_DB") - T_DB ))
	D_BUSY=$(( $(bench_busy) - T_BUSY ))
	D_STEAL=$(( $(bench_steal) - T_STEAL ))
	D_NS=$(( $(date +%s%N) - T_START ))
}

# bench_other TIMEFILE: the share (%) of all cores that was busy outside
# the measured groups and the client during the run: softirq work of the
# loopback, kernel threads -- and anything else running on the machine,
# which makes the run suspect.
bench_other() {
	awk -v busy="$D_BUSY" -v g=$((D_WEB + D_RESP + D_DB)) -v hz="$(getconf CLK_TCK)" \
	    -v ns="$D_NS" -v cores="$(nproc)" '{ c = ($1 + $2) * hz } END {
		o = (busy - g - c) / hz / (ns / 1e9) / cores * 100
		printf "%.0f", o < 0 ? 0 : o }' "$1"
}

# The share (%) of all cores the hypervisor stole during the run.
bench_steal_pct() {
	awk -v st="$D_STEAL" -v hz="$(getconf CLK_TCK)" -v ns="$D_NS" \
	    -v cores="$(nproc)" 'BEGIN { printf "%.0f", st / hz / (ns / 1e9) / cores * 100 }'
}

# bench_us TICKS HZ N: microseconds per item.
bench_us() {
	awk -v t="$1" -v hz="$2" -v n="$3" \
	    'BEGIN { if (n > 0) printf "%.0f", t / hz * 1e6 / n; else print "-" }'
}

# bench_client_us TIMEFILE N: the client's user+sys (bash `time`) per item.
bench_client_us() {
	awk -v n="$2" '{ s = $1 + $2 } END {
		if (n > 0) printf "%.0f", s * 1e6 / n; else print "-" }' "$1"
}

# One row of the results: KIND TEST SERVER C RPS P50 P99 ANSWERS EXPECTED
# UNEXPECTED STATUSES WEB_US RESP_US DB_US CLIENT_US HWM_KIB SOCKET_ERRORS
# OTHER_CPU_PCT STEAL_PCT.
bench_row() {
	local IFS=$'\t'
	printf '%s\n' "$*" >>"$BENCH_TSV"
}

# bench_wrk KIND TEST SERVER C MODE EXPECT [ARG]: one wrk run through
# SERVER, recorded as a row; also prints a one-line summary.
bench_wrk() {
	local kind=$1 test=$2 server=$3 c=$4 mode=$5 expect=$6 arg=${7:-}
	local url out tfile line t hwm v sampler
	url=$(bench_url "$server")
	BENCH_N=$((BENCH_N + 1))
	out=$BENCH_LOG/$(printf '%02d' "$BENCH_N")-$test-$server-c$c.txt
	tfile=$out.time
	t=$BENCH_WRK_THREADS
	[[ $c -lt $t ]] && t=$c
	bench_pids "$server"
	# Workers are recycled (max_requests) during a run: sample their
	# VmHWM every second, not only at the end.
	( while kill -0 $$ 2>/dev/null; do bench_hwm "$B_RESP"; sleep 1; done ) \
	    >"$out.hwm" 2>/dev/null 9>&- &
	sampler=$! BENCH_SAMPLER=$!
	bench_cpu_before
	TIMEFORMAT='%3U %3S'
	{ time timeout -k 5 $((BENCH_SECONDS + 60)) wrk -t"$t" -c"$c" \
	    -d"${BENCH_SECONDS}s" --timeout 10s \
	    -H "Authorization: Basic $BENCH_AUTH" \
	    -s "$REPO/bench/orders.lua" "$url$MOUNT" -- \
	    "$mode" "$expect" "b$BENCH_RUN-$BENCH_N" $arg \
	    >"$out" 2>&1 9>&- ; } 2>"$tfile" || true
	bench_result "$out" BENCH "wrk printed no BENCH line for $test $server c$c" \
	    "requests=0 rps=0 p50_ms=0 p99_ms=0 expected=0 unexpected=0 socket_errors=1 statuses=none"
	local n rps p50 p99 exp unexp st sockerr other
	n=$(bench_field requests) rps=$(bench_field rps)
	p50=$(bench_field p50_ms) p99=$(bench_field p99_ms)
	exp=$(bench_field expected) unexp=$(bench_field unexpected)
	st=$(bench_field statuses) sockerr=$(bench_field socket_errors)
	bench_cpu_after "$n"
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	BENCH_SAMPLER=
	hwm=$( (cat "$out.hwm"; bench_hwm "$B_RESP") | sort -n | tail -n 1)
	v=$(bench_client_us "$tfile" "$n")
	other=$(bench_other "$tfile") steal=$(bench_steal_pct)
	bench_row "$kind" "$test" "$server" "$c" "$rps" "$p50" "$p99" "$n" \
	    "$exp" "$unexp" "$st" "$U_WEB" "$U_RESP" "$U_DB" "$v" "$hwm" \
	    "${sockerr:-0}" "$other" "$steal"
	printf '  %-8s %-8s c%-3s %8s req/s  p50 %7s ms  p99 %7s ms  unexpected %s  socket errors %s  other CPU %s %%  steal %s %%  (%s)\n' \
	    "$test" "$server" "$c" "$rps" "$p50" "$p99" "$unexp" "${sockerr:-0}" "$other" "$steal" "$st"
}

# bench_result FILE WORD WHY FALLBACK: set line to FILE's last line that
# starts with WORD; without one, show FILE, say WHY and use "WORD
# FALLBACK" (a run that measured nothing).
bench_result() {
	line=$(grep "^$2 " "$1" | tail -n 1)
	if [[ -z $line ]]; then
		show_log "$1" 20
		say "bench: $3"
		line="$2 $4"
	fi
}

# bench_field NAME: the value of NAME=... in the line bench_result set.
bench_field() { printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# bench_dbtx TEST C ARGS...: one dbtx run, recorded as a row.
bench_dbtx() {
	local test=$1 c=$2 out tfile line v
	shift 2
	BENCH_N=$((BENCH_N + 1))
	out=$BENCH_LOG/$(printf '%02d' "$BENCH_N")-$test-c$c.txt
	tfile=$out.time
	bench_pids -
	bench_cpu_before
	TIMEFORMAT='%3U %3S'
	{ time timeout -k 5 $((BENCH_SECONDS + 60)) "$BUILD/bench/dbtx" \
	    -c "$CONF" -t "$c" -s "$BENCH_SECONDS" "$@" >"$out" 2>&1 9>&- ; } \
	    2>"$tfile" || true
	bench_result "$out" dbtx "dbtx printed nothing for $test c$c" \
	    "tx=0 tps=0 p50_ms=0 p99_ms=0 errors=1"
	local n tps p50 p99 err other retried
	n=$(bench_field tx) tps=$(bench_field tps) err=$(bench_field errors)
	retried=$(bench_field retries)
	p50=$(bench_field p50_ms) p99=$(bench_field p99_ms)
	bench_cpu_after "$n"
	v=$(bench_client_us "$tfile" "$n")
	other=$(bench_other "$tfile") steal=$(bench_steal_pct)
	bench_row D "$test" - "$c" "$tps" "$p50" "$p99" "$n" "$n" "$err" \
	    "tx:$n,retried:${retried:-0}" - - "$U_DB" "$v" - 0 "$other" "$steal"
	printf '  %-8s %-8s c%-3s %8s tx/s   p50 %7s ms  p99 %7s ms  errors %s  other CPU %s %%  steal %s %%\n' \
	    "$test" dbtx "$c" "$tps" "$p50" "$p99" "$err" "$other" "$steal"
}

bench_url() {
	case $1 in
	lighttpd)	echo "$LIGHTTPD_URL" ;;
	apache)		echo "$APACHE_URL" ;;
	apache-reuse)	echo "http://127.0.0.1:$BENCH_REUSE_PORT" ;;
	esac
}

# A second Apache: the stack's proxy_fcgi config with enablereuse=on (kept
# FastCGI connections), on its own port and directory.  Its connection pool
# is sized to the responder's workers (max per process = workers / the 4
# processes): with more kept connections than workers, a worker must drop
# an idle one to take a new one, and a request Apache sends on it at that
# moment fails (AH01067/AH01075 "Connection reset by peer", a 503).
bench_reuse_start() {
	local dir=$RUN/apache-reuse i
	# (the shop's servers and php-fpm take LIGHTTPD_PORT + 3..7,
	# tests/http/14 + 8)
	BENCH_REUSE_PORT=$((LIGHTTPD_PORT + 9))
	need_free_port "$BENCH_REUSE_PORT" "Apache enablereuse=on"
	rm -rf "$dir"
	install -d -m 0755 "$dir"
	sed -e "s|^Listen 127.0.0.1:.*|Listen 127.0.0.1:$BENCH_REUSE_PORT|" \
	    -e "s|<VirtualHost 127.0.0.1:[0-9]*>|<VirtualHost 127.0.0.1:$BENCH_REUSE_PORT>|" \
	    -e "s|$APACHE_DIR\"|$dir\"|g" -e "s|$APACHE_DIR/|$dir/|g" \
	    -e "s|Mutex file:$APACHE_DIR |Mutex file:$dir |" \
	    -e "s|apache-error.log|apache-reuse-error.log|" \
	    -e "s|apache-access.log|apache-reuse-access.log|" \
	    -e "s|enablereuse=off|enablereuse=on max=$(( BENCH_WORKERS / 4 > 0 ? BENCH_WORKERS / 4 : 1 ))|" \
	    -e '/^Include .*apache-fcgid.conf/d' "$APACHE_CONF" >"$dir/apache2.conf"
	grep -q 'enablereuse=on' "$dir/apache2.conf" ||
	    die "bench: no enablereuse=on in $dir/apache2.conf"
	apache2 -d "$dir" -f "$dir/apache2.conf" -k start </dev/null \
	    >>"$LOGDIR/apache-reuse.out" 2>&1 9>&- ||
	    die "bench: Apache (enablereuse=on) did not start"
	for ((i = 0; i < 100; i++)); do
		[[ -s $dir/apache2.pid ]] && break
		sleep 0.1
	done
	BENCH_REUSE_PIDFILE=$dir/apache2.pid
}


# ------------------------------------------------------------ the stack

# The build of the bench: no fault injection, no sanitizers.
bench_build() {
	ensure_configure
	build_tree "$BUILD" || die "build failed"
	local p
	for p in "$BIN" "$BUILD/bench/hello-fcgi" "$BUILD/bench/dbtx"; do
		[[ -x $p ]] || die "the build produced no $p"
	done
	if grep -q '^#define ENABLE_FAULT_INJECTION' "$BUILD/config.h"; then
		die "$BUILD is configured with fault injection"
	fi
	BUILT_MAIN=1
}

# A fresh stack: new database, cheap auth hash, quiet responders.
bench_stack_up() {
	say "bench: stopping anything left from an earlier run"
	stack_down
	hello_stop
	rm -rf "$DB_DATADIR"
	prepare_dirs
	# Appended to every responder config by write_responder_confs: a
	# request log line would be one write(2) per request for nothing.
	cat >"$VAR/idemorders.local.conf" <<EOF
# Written by $PROG bench (bench/bench.sh) at every run.
log_level = warning
${BENCH_CONF_EXTRA:-}
EOF
	# {SHA} (one SHA-1) instead of bcrypt: lighttpd (auth.cache) and
	# Apache (no cache) then spend about nothing on the password, so
	# the bench measures the service, not the hash.  make_htpasswd keeps
	# a file that has both users.
	rm -f "$HTPASSWD"
	htpasswd -cbs "$HTPASSWD" alice alice-secret 2>/dev/null
	htpasswd -bs "$HTPASSWD" bob bob-secret 2>/dev/null
	chmod 0644 "$HTPASSWD"
	stack_up >"$BENCH_LOG/stack-up.out"
	grep -q '^alice:{SHA}' "$HTPASSWD" || die "bench: $HTPASSWD is not {SHA}"
	# The pool behind lighttpd and Apache gets the bench's workers (not
	# the mod_fcgid config, which must keep one).
	bench_pool "$BENCH_WORKERS" warning
	# A full run adds ~400k orders, ~0.8 KB each with ledger row and
	# item: more than the stack's 256M buffer pool, which would slow
	# the later runs down with reads and evictions.  The whole run
	# stays in memory with 1G (resized online).
	db_root -e "SET GLOBAL innodb_buffer_pool_size = $BENCH_BUFFER_POOL" ||
	    die "bench: resizing the InnoDB buffer pool failed"
	bench_stock
	wait_http "$LIGHTTPD_URL$MOUNT/_health" || die "bench: lighttpd health"
	wait_http "$APACHE_URL$MOUNT/_health" || die "bench: Apache health"
	[[ $BENCH_SERVERS == *apache-reuse* ]] || return 0
	bench_reuse_start
	wait_http "$(bench_url apache-reuse)$MOUNT/_health" ||
	    die "bench: Apache (enablereuse=on) health"
}

# bench_pool WORKERS LOG_LEVEL: the settings of the responder pool (not
# of the mod_fcgid config, which must keep one worker), as the last lines
# of its config; serve_start restarts the pool when they change.
bench_pool() {
	sed -i '/^# Added by .* bench:$/,$d' "$CONF"
	printf '# Added by %s bench:\nworkers = %s\nlog_level = %s\n' \
	    "$PROG" "$1" "$2" >>"$CONF"
}

# Print the statement that gives the BENCH SKUs stock no run can exhaust
# (BENCH_STOCK each); also the cluster bench's.
bench_stock_sql() {
	local i sql="INSERT INTO stock (sku, currency, unit_price, available) VALUES "
	for ((i = 0; i < BENCH_SKUS; i++)); do
		sql+=$(printf "('BENCH-%02d', 'KRW', %d, %d), " "$i" $((100 * (i + 1))) "$BENCH_STOCK")
	done
	sql+="('BENCH-HOT', 'KRW', 500, $BENCH_STOCK) ON DUPLICATE KEY UPDATE "
	sql+="unit_price = VALUES(unit_price), available = VALUES(available)"
	printf '%s\n' "$sql"
}

bench_stock() {
	db_root "$DB_NAME" -e "$(bench_stock_sql)" ||
	    die "bench: inserting the BENCH SKUs failed"
}

# hello-fcgi on the responder's socket, with the responder's config.
hello_start() {
	local i
	serve_stop
	rm -f "$FCGI_SOCKET"
	install -m 0644 "$CONF" "$RUN/hello.conf"
	setsid "$BUILD/bench/hello-fcgi" -c "$RUN/hello.conf" </dev/null \
	    >>"$LOGDIR/hello-fcgi.log" 2>&1 9>&- &
	HELLO_PID=$!
	echo "$HELLO_PID" >"$RUN/hello.pid"
	for ((i = 0; i < 100; i++)); do
		[[ -S $FCGI_SOCKET ]] && return 0
		proc_running "$HELLO_PID" || break
		sleep 0.1
	done
	show_log "$LOGDIR/hello-fcgi.log"
	die "hello-fcgi did not open $FCGI_SOCKET"
}

hello_stop() {
	stop_pidfile "$RUN/hello.pid" hello-fcgi TERM
	HELLO_PID=
}

# bench_cancel_list FILE: the paths of up to 200000 of the bench user's
# orders still CREATED (made by the create runs, not a seeded one), dealt
# round robin into FILE.0 .. FILE.(threads - 1), one per wrk thread.
bench_cancel_list() {
	local file=$1 i
	for ((i = 0; i < BENCH_WRK_THREADS; i++)); do : >"$file.$i"; done
	db_root -N -B "$DB_NAME" -e "SELECT CONCAT('$MOUNT/o-', id) FROM orders
	    WHERE principal_id = '$BENCH_USER' AND status = 'CREATED' AND
	    idempotency_key NOT LIKE 'bench-%' ORDER BY id LIMIT 200000" |
	    awk -v f="$file" -v t="$BENCH_WRK_THREADS" '{ print > (f "." (NR - 1) % t) }'
	[[ -s $file.0 ]] || die "bench: no order left to cancel"
}

# Cancel the order at PATH with KEY through SERVER (the body orders.lua
# replays).
bench_seed_cancel() {
	local server=$1 key=$2 path=$3 out
	out=$(curl -s -m 30 -u "$BENCH_USER:$BENCH_PASSWORD" \
	    -H "Idempotency-Key: $key" -H 'Content-Type: application/json' \
	    --data '{"reason":"bench"}' -w '\n%{http_code}' \
	    "$(bench_url "$server")$path/cancel")
	[[ ${out##*$'\n'} == 200 ]] || die "bench: cancelling $path through $server answered: $out"
}

# POST the replay body with KEY through SERVER; print the order's path.
bench_seed_order() {
	local server=$1 key=$2 out
	out=$(curl -s -m 30 -u "$BENCH_USER:$BENCH_PASSWORD" \
	    -H "Idempotency-Key: $key" -H 'Content-Type: application/json' \
	    --data "$BENCH_REPLAY_BODY" -w '\n%{http_code}' "$(bench_url "$server")$MOUNT")
	[[ ${out##*$'\n'} == 201 ]] || die "bench: seeding an order through $server answered: $out"
	printf '%s/%s\n' "$MOUNT" "$(printf '%s' "${out%$'\n'*}" | jq -r .orderId)"
}

bench_end() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	[[ -n ${BENCH_SAMPLER:-} ]] && kill "$BENCH_SAMPLER" 2>/dev/null
	hello_stop
	[[ $BENCH_KEEP == 1 ]] || apache_reuse_stop
	if [[ $BENCH_KEEP == 1 ]]; then
		say "bench: the stack stays up (--keep): IDEMORDERS_STACK=bench $PROG down"
	else
		say "bench: stopping the bench stack"
		stack_down >/dev/null
	fi
	exit "$rc"
}

# Remember how long the server logs are, so that the report shows only
# what this run added.
bench_log_marks() {
	local f
	BENCH_LOG_MARKS=()
	for f in "$LOGDIR/apache-error.log" "$LOGDIR/apache-reuse-error.log" \
	    "$LOGDIR/lighttpd-error.log" \
	    "$LOGDIR/idemorders.log" "$LOGDIR/hello-fcgi.log"; do
		BENCH_LOG_MARKS+=("$f:$(wc -l <"$f" 2>/dev/null || echo 0)")
	done
}

# The warnings and errors the servers logged during the run: one
# Markdown bullet per distinct message (the five most frequent per log).
bench_log_news() {
	local m f n
	for m in "${BENCH_LOG_MARKS[@]}"; do
		f=${m%:*} n=${m##*:}
		[[ -f $f ]] || continue
		tail -n +"$((n + 1))" "$f" |
		    grep -E 'error|warn|AH0[0-9]+|crit|alert|emerg|fatal' |
		    grep -vE ':notice\]|server (started|stopped)' |
		    sed -E 's/^\[[^]]*\] //; s/\[pid [0-9]+(:tid [0-9]+)?\] //;
			s/^[0-9T:.-]+Z? [a-z-]+\[[0-9]+\] //; s/^[0-9-]+ [0-9:]+: //;
			s/key [^ ]+/key K/g; s/[0-9]+(\.[0-9]+)?ms/Nms/g' |
		    sort | uniq -c | sort -rn | head -n 5 |
		    awk -v f="${f##*/}" '{ n = $1; $1 = ""; sub(/^ /, "")
			printf "- %s: %d × `%s`\n", f, n, substr($0, 1, 160) }'
	done
}

# bench_warmup KIND EXPECT: a short create run through lighttpd, not in
# the results; its answers are kept in $BENCH_LOG/warmup.tsv (the orders it
# made count in the exactly-once check of the report).
bench_warmup() {
	local BENCH_SECONDS=$((BENCH_SECONDS < 5 ? BENCH_SECONDS : 5))
	bench_wrk "$1" warmup lighttpd "$BENCH_HOT_C" create "$2" >/dev/null
	awk -F'\t' '$2 == "warmup"' "$BENCH_TSV" >>"$BENCH_LOG/warmup.tsv"
	sed -i '/\twarmup\t/d' "$BENCH_TSV"
}

# ------------------------------------------------------------ the run

# bench_begin: what every kind of bench run starts with: bench_end on
# exit, a fresh log directory and run table, the run's id and the
# Authorization of its requests.
bench_begin() {
	trap bench_end EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	BENCH_LOG=$VAR/log/bench
	rm -rf "$BENCH_LOG"
	mkdir -p "$BENCH_LOG" "$BENCH_OUT"
	BENCH_TSV=$BENCH_LOG/runs.tsv
	: >"$BENCH_TSV"
	BENCH_N=0
	BENCH_RUN=$(date +%s)-$$
	BENCH_AUTH=$(printf '%s:%s' "$BENCH_USER" "$BENCH_PASSWORD" | base64 -w0)
}

bench_main() {
	local s c levels start key path load
	start=$(date +%s)
	load=$(cut -d' ' -f1 /proc/loadavg)
	bench_begin
	read -r -a levels <<<"$BENCH_LEVELS"
	say "bench: load average $load; levels ${levels[*]}; ${BENCH_SECONDS}s a run; $BENCH_WORKERS workers"

	ensure_packages
	bench_build
	bench_stack_up
	bench_log_marks

	echo "H: hello-fcgi on the responder's socket ($BENCH_WORKERS workers)"
	hello_start
	bench_warmup H 200

	for s in $BENCH_SERVERS; do
		for c in "${levels[@]}"; do
			bench_wrk H H "$s" "$c" create 200
		done
	done
	hello_stop
	serve_start

	# D at each level, and at the pool's size: the responders never run
	# more transactions at once than there are workers, so C takes D at
	# min(c, workers).
	# D is the eight-statement reference (dbtx -m naive); D-batched the
	# service's two round trips; D-proc one CALL of a stored procedure.
	echo "D: the create transaction (bench/dbtx)"
	for c in $(printf '%s\n' "${levels[@]}" \
	    $(for c in "${levels[@]}"; do echo $((c < BENCH_WORKERS ? c : BENCH_WORKERS)); done) |
	    sort -nu); do
		bench_dbtx D "$c" -m naive -k BENCH -n "$BENCH_SKUS"
		bench_dbtx D-batched "$c" -m batched -k BENCH -n "$BENCH_SKUS"
		bench_dbtx D-proc "$c" -m proc -k BENCH -n "$BENCH_SKUS"
	done
	for c in $(printf '%s\n' "$BENCH_HOT_C" \
	    $((BENCH_HOT_C < BENCH_WORKERS ? BENCH_HOT_C : BENCH_WORKERS)) | sort -nu); do
		bench_dbtx D-hot "$c" -m naive -k BENCH-HOT
		bench_dbtx D-hot-batched "$c" -m batched -k BENCH-HOT
		bench_dbtx D-hot-proc "$c" -m proc -k BENCH-HOT
	done

	echo "idemorders ($BENCH_WORKERS workers)"
	bench_warmup app 201
	for s in $BENCH_SERVERS; do
		for c in "${levels[@]}"; do
			bench_wrk app create "$s" "$c" create 201
		done
		key=bench-$BENCH_RUN-replay-$s
		path=$(bench_seed_order "$s" "$key")
		for c in "${levels[@]}"; do
			bench_wrk app replay "$s" "$c" replay 201 "$key"
		done
		bench_wrk app conflict "$s" "$BENCH_HOT_C" conflict 409 "$key"
		bench_wrk app get "$s" "$BENCH_HOT_C" get 200 "$path"
		bench_wrk app hot "$s" "$BENCH_HOT_C" hot 201
		# Cancels of orders the runs above made, each with its own
		# key; then the seeded order cancelled and that cancel replayed.
		bench_cancel_list "$BENCH_LOG/cancel-$s"
		bench_wrk app cancel "$s" "$BENCH_HOT_C" cancel 200 "$BENCH_LOG/cancel-$s"
		bench_seed_cancel "$s" "$key-cancel" "$path"
		bench_wrk app cancel-replay "$s" "$BENCH_HOT_C" cancel-replay 200 \
		    "$key-cancel $path"
	done
	if [[ $BENCH_QUICK != 1 ]]; then
		# What the bench's log_level = warning leaves out: the default
		# info level writes one line per request.
		bench_pool "$BENCH_WORKERS" info
		serve_start
		bench_wrk app create-log-info lighttpd "$BENCH_HOT_C" create 201
		# Other pool sizes: on few cores, more workers mean more
		# concurrent transactions fighting inside MariaDB.
		for w in 8 16 24; do
			[[ $w != "$BENCH_WORKERS" ]] || continue
			bench_pool "$w" warning
			serve_start
			bench_wrk app "create-w$w" lighttpd "$BENCH_HOT_C" create 201
		done
		bench_pool "$BENCH_WORKERS" warning
		serve_start
	fi
	[[ $BENCH_PROFILE == 0 ]] || bench_profile
	bench_roundtrips

	bench_report "$load" $(($(date +%s) - start))
}

# ------------------------------------------------------ the round trips

# The mean milliseconds of N sequential requests (curl, one connection
# each) through lighttpd: KIND create (a new key each) or replay (KEY);
# as bob, so that the exactly-once count of alice's orders stays the
# runs' own.
bench_rt_mean() {
	local kind=$1 n=$2 key=${3:-} i t sum=0 out
	for ((i = 0; i < n; i++)); do
		[[ $kind == create ]] && key=bench-$BENCH_RUN-rt-$RANDOM-$i
		out=$(curl -s -o /dev/null -m 30 -u bob:bob-secret \
		    -H "Idempotency-Key: $key" -H 'Content-Type: application/json' \
		    --data "$BENCH_REPLAY_BODY" -w '%{http_code} %{time_total}' \
		    "$LIGHTTPD_URL$MOUNT")
		[[ ${out%% *} == 201 ]] || die "bench: round trips: $kind answered $out"
		t=${out#* }
		sum=$(awk -v a="$sum" -v b="$t" 'BEGIN { print a + b }')
	done
	awk -v s="$sum" -v n="$n" 'BEGIN { printf "%.2f", 1000 * s / n }'
}

# bench_net_rps MODE: req/s of a 5 s wrk run (bench/orders.lua MODE:
# create or hot) through lighttpd at the hot SKU's concurrency, as bob
# (its orders are not counted in the exactly-once check of alice's).
bench_net_rps() {
	# (In a command substitution: a tag of its own, not BENCH_N.)
	local tag=net-$1-$(date +%s%N)
	local out=$BENCH_LOG/$tag.txt
	timeout -k 5 60 wrk -t"$BENCH_WRK_THREADS" -c"$BENCH_HOT_C" -d5s \
	    --timeout 10s -H "Authorization: Basic $(printf bob:bob-secret | base64 -w0)" \
	    -s "$REPO/bench/orders.lua" "$LIGHTTPD_URL$MOUNT" -- \
	    "$1" 201 "b$BENCH_RUN-$tag" >"$out" 2>&1 9>&- || true
	sed -n 's/^BENCH .* rps=\([0-9.]*\) .*/\1/p' "$out" | tail -n 1 |
	    grep . || echo 0
}

# What a network between the responders and MariaDB costs: the pool
# through the fault proxy (tests/dbproxy), which forwards every chunk
# BENCH_NET_MS late in each direction, against the same proxy passing at
# once; round trips = the difference / (2 x the delay).  Writes
# $BENCH_LOG/roundtrips.md for the report.
bench_roundtrips() {
	local d=${BENCH_NET_MS:-20} n=${BENCH_RT_N:-20} key mode c0 r0 c1 r1
	local s0 h0 s1 h1
	local ctl=$DBPROXY_CONTROL_PORT
	echo "round trips: the pool through the fault proxy, ${d} ms each way"
	"$DBPROXY_BIN" -l "$DBPROXY_PORT" -u "$DB_SOCKET" -c "$ctl" \
	    -p "$DBPROXY_PIDFILE" </dev/null >>"$BENCH_LOG/dbproxy.log" 2>&1 &
	sleep 0.5
	sed -i '/^# Added by .* bench (round trips):$/,$d' "$CONF"
	printf '# Added by %s bench (round trips):\ndb_host = 127.0.0.1\ndb_port = %s\n' \
	    "$PROG" "$DBPROXY_PORT" >>"$CONF"
	sed -i 's/^db_socket = /# db_socket = /' "$CONF"
	serve_start
	key=bench-$BENCH_RUN-rt-replay
	bench_rt_mean replay 1 "$key" >/dev/null	# its first one creates
	for mode in pass "delay $d"; do
		printf '%s\n' "$mode" | socat -t 2 - "TCP:127.0.0.1:$ctl" >/dev/null
		bench_rt_mean create 3 >/dev/null	# warm the connections
		if [[ $mode == pass ]]; then
			c0=$(bench_rt_mean create "$n")
			r0=$(bench_rt_mean replay "$n" "$key")
			s0=$(bench_net_rps create) h0=$(bench_net_rps hot)
		else
			c1=$(bench_rt_mean create "$n")
			r1=$(bench_rt_mean replay "$n" "$key")
			s1=$(bench_net_rps create) h1=$(bench_net_rps hot)
		fi
	done
	dbproxy_stop
	sed -i '/^# Added by .* bench (round trips):$/,$d' "$CONF"
	sed -i 's/^# db_socket = /db_socket = /' "$CONF"
	serve_start
	awk -v d="$d" -v c0="$c0" -v c1="$c1" -v r0="$r0" -v r1="$r1" -v n="$n" \
	    -v s0="$s0" -v s1="$s1" -v h0="$h0" -v h1="$h1" -v c="$BENCH_HOT_C" 'BEGIN {
		printf "\n## Round trips between the responders and MariaDB\n\n"
		printf "The pool through the fault proxy, every chunk forwarded %d ms late each way, against the proxy passing at once; %d sequential requests through lighttpd each; round trips = (delayed - passing) / (2 x %d ms).\n\n", d, n, d
		printf "| request | passing, ms | delayed, ms | round trips |\n|---|--:|--:|--:|\n"
		printf "| create (a new key) | %.1f | %.1f | %.2f |\n", c0, c1, (c1 - c0) / (2 * d)
		printf "| replay | %.1f | %.1f | %.2f |\n", r0, r1, (r1 - r0) / (2 * d)
		printf "\nThrough the same proxy, c%d for %d s each (wrk, lighttpd): whatever a stock row lock spans, the network included, bounds every order on one SKU.\n\n", c, 5
		printf "| req/s | passing | delayed |\n|---|--:|--:|\n"
		printf "| create, SKUs spread | %.0f | %.0f |\n", s0, s1
		printf "| every order on one SKU | %.0f | %.0f |\n", h0, h1
		printf "| one SKU / spread | %.2f | %.2f |\n", (s0 > 0 ? h0 / s0 : 0), (s1 > 0 ? h1 / s1 : 0)
	}' >"$BENCH_LOG/roundtrips.md"
	cat "$BENCH_LOG/roundtrips.md"
}

# ------------------------------------------------------------ the profile

# bench_perf NAME COMMAND...: COMMAND (a bench_wrk or bench_dbtx run)
# under `perf record -a` (every process, 499 samples a second per core),
# into $BENCH_LOG/perf-NAME.data.
bench_perf() {
	local name=$1 data=$BENCH_LOG/perf-$1.data pid
	shift
	perf record -a -F 499 -o "$data" >"$data.log" 2>&1 9>&- &
	pid=$!
	sleep 1
	"$@"
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# bench_perf_parts DATA: per process group, the share (%) of its samples
# in each part: "COMM PART PCT" lines.  mariadbd's parts: the kernel
# (the disk: the redo log's flush; the rest: sockets, scheduling,
# wake-ups), the SQL parser, the rest of the SQL layer, code without a
# symbol (InnoDB, whose symbols the packaged binary does not export),
# libc and other libraries.  The responder's: the kernel, libc, each
# library, its own code.
bench_perf_parts() {
	perf report -i "$1" --sort comm,dso,sym --stdio -q 2>/dev/null |
	    awk '{ pct = $1; sub(/%$/, "", pct); comm = $2; dso = $3
		sym = $0; sub(/^.*\] /, "", sym)
		if (comm == "mariadbd") {
			if (dso == "[kernel.kallsyms]")
				part = sym ~ /^(iowrite|blk_|ext4|jbd2|virtblk|submit_bio|bio_|nvme)/ ?
				    "kernel-disk" : "kernel"
			else if (dso != "mariadbd")
				part = "libs"
			else if (sym ~ /^0x/)
				part = "nosym"
			else if (sym ~ /^(MYSQLparse|Lex_input_stream::|lex_|Lex_|LEX::|my_convert|THD::make_lex|THD::charset_collation_context)/)
				part = "parser"
			else
				part = "sql"
		} else if (comm == "idemorders") {
			part = dso == "[kernel.kallsyms]" ? "kernel" : dso
		} else
			next
		t[comm] += pct; p[comm, part] += pct }
	    END { for (k in p) { split(k, a, SUBSEP)
		printf "%s %s %.2f\n", a[1], a[2], (t[a[1]] > 0 ? 100 * p[k] / t[a[1]] : 0) } }'
}

# bench_perf_top DATA N: mariadbd's N busiest symbols, % of its samples.
bench_perf_top() {
	perf report -i "$1" --sort comm,dso,sym --stdio -q 2>/dev/null |
	    awk -v n="$2" '$2 == "mariadbd" { pct = $1; sub(/%$/, "", pct)
		sym = $0; sub(/^.*\] /, "", sym); dso = $3
		t += pct; k++; if (k <= n) { P[k] = pct; S[k] = sym; D[k] = dso } }
	    END { for (i = 1; i <= n && i <= k; i++)
		printf "%.1f %s %s\n", 100 * P[i] / t, D[i], S[i] }'
}

# Where the CPU goes, measured in the same run: four rows run again under
# perf (kept out of the results table): a create and a replay (c16,
# lighttpd) and the naive and batched transactions alone (dbtx c16).  The
# µs of each part = the group's CPU per request in that run (/proc) x the
# share of its samples.  Writes $BENCH_LOG/profile.md for the report.
bench_profile() {
	local tsv=$BENCH_TSV c=$BENCH_HOT_C key
	if ! command -v perf >/dev/null || ! perf record -a -o /dev/null true \
	    >/dev/null 2>&1; then
		say "bench: perf cannot record here; no profile"
		return 0
	fi
	echo "profile: four rows again under perf record -a"
	BENCH_TSV=$BENCH_LOG/profile.tsv
	: >"$BENCH_TSV"
	key=bench-$BENCH_RUN-replay-lighttpd
	bench_perf create bench_wrk app create lighttpd "$c" create 201
	bench_perf replay bench_wrk app replay lighttpd "$c" replay 201 "$key"
	bench_perf naive bench_dbtx D "$c" -m naive -k BENCH -n "$BENCH_SKUS"
	bench_perf batched bench_dbtx D-batched "$c" -m batched -k BENCH \
	    -n "$BENCH_SKUS"
	BENCH_TSV=$tsv
	bench_profile_report "$c"
}

# bench_profile_report C: $BENCH_LOG/profile.md from the perf data and
# the rows of bench_profile.
bench_profile_report() {
	local c=$1 name
	for name in create replay naive batched; do
		bench_perf_parts "$BENCH_LOG/perf-$name.data" |
		    sed "s/^/$name /"
	done >"$BENCH_LOG/profile.parts"
	{
		printf '
## Where the CPU goes (perf, this run)

'
		printf '`perf record -a -F 499` while four rows ran again (not in the results above): create and replay c%s via lighttpd, the naive and the batched transaction alone (dbtx c%s). µs of a part = the process group'"'"'s CPU per request or transaction in that run (`/proc`) × the share of its samples in that part.

' "$c" "$c"
		awk -F'\t' -v parts="$BENCH_LOG/profile.parts" -f - "$BENCH_LOG/profile.tsv" <<'AWK'
BEGIN {
	while ((getline l < parts) > 0) { split(l, a, " "); P[a[1], a[2], a[3]] = a[4] }
	split("create replay naive batched", run, " ")
}
{ n++; rps[run[n]] = $5; db[run[n]] = $14; resp[run[n]] = $13; web[run[n]] = $12 }
function us(r, comm, part, tot) { return tot == "-" || tot == "" ? "-" : sprintf("%.0f", tot * P[r, comm, part] / 100) }
END {
	printf "| mariadbd, µs per order | create | replay | D naive | D-batched |\n|---|--:|--:|--:|--:|\n"
	printf "| all (req/s or tx/s of the run) | %s (%.0f) | %s (%.0f) | %s (%.0f) | %s (%.0f) |\n",
	    db["create"], rps["create"], db["replay"], rps["replay"], db["naive"], rps["naive"], db["batched"], rps["batched"]
	split("kernel kernel-disk parser sql nosym libs", part, " ")
	name["kernel"] = "kernel: sockets, scheduling, wake-ups"
	name["kernel-disk"] = "kernel: the disk (redo log flush)"
	name["parser"] = "SQL parser (lexer, charset conversion)"
	name["sql"] = "rest of the SQL layer (resolve, optimize, execute, protocol)"
	name["nosym"] = "no symbol (InnoDB: not exported by the package)"
	name["libs"] = "libc and other libraries"
	for (i = 1; i <= 6; i++)
		printf "| %s | %s | %s | %s | %s |\n", name[part[i]],
		    us("create", "mariadbd", part[i], db["create"]), us("replay", "mariadbd", part[i], db["replay"]),
		    us("naive", "mariadbd", part[i], db["naive"]), us("batched", "mariadbd", part[i], db["batched"])
	printf "\n| responder, µs per request | create | replay |\n|---|--:|--:|\n"
	printf "| all | %s | %s |\n", resp["create"], resp["replay"]
	split("kernel libc.so.6 libmariadb.so.3 idemorders libjson-c.so.5.2.0 libcrypto.so.3 libfcgi.so.0.0.0", rp, " ")
	for (i = 1; i <= 7; i++)
		printf "| %s | %s | %s |\n", rp[i], us("create", "idemorders", rp[i], resp["create"]),
		    us("replay", "idemorders", rp[i], resp["replay"])
	printf "\n(web server: %s µs per create, %s per replay.)\n", web["create"], web["replay"]
}
AWK
		for name in create naive; do
			printf '
mariadbd'"'"'s busiest symbols, %s (%% of its samples):

' \
			    "$([[ $name == create ]] && echo "create c$c" || echo "D naive c$c")"
			bench_perf_top "$BENCH_LOG/perf-$name.data" 12 |
			    awk '{ pct = $1; dso = $2; $1 = $2 = ""; sub(/^ +/, "")
				printf "- %s %% `%s` (%s)\n", pct, $0, dso }'
		done
	} >"$BENCH_LOG/profile.md"
	cat "$BENCH_LOG/profile.md"
}

# ------------------------------------------------------------ the report

bench_versions() {
	printf -- '- machine: `nproc` = %s, %s, Linux %s\n' "$(nproc)" \
	    "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" \
	    "$(uname -r)"
	printf -- '- lighttpd %s; Apache %s; MariaDB %s; %s; %s; libfcgi %s\n' \
	    "$(lighttpd -v 2>&1 | head -n 1 | sed 's/^lighttpd\///; s/ .*//')" \
	    "$(apache2 -v 2>&1 | sed -n 's/^Server version: Apache\///p' | sed 's/ .*//')" \
	    "$(mariadbd --version 2>&1 | sed 's/.*Ver \([^ ]*\).*/\1/')" \
	    "$(wrk -v 2>&1 | head -n 1 | sed 's/ Copyright.*//; s/ \[.*//')" \
	    "$(gcc --version | head -n 1)" \
	    "$(dpkg-query -W -f='${Version}' libfcgi-bin 2>/dev/null || echo '?')"
	local rev
	rev=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null) || rev=unknown
	if [[ $rev != unknown ]] && [[ -n $(cd "$REPO" && GIT_OPTIONAL_LOCKS=0 \
	    git status --porcelain --untracked-files=no -- src bench 2>/dev/null) ]]; then
		rev="$rev with uncommitted changes in src/ or bench/"
	fi
	printf -- '- idemorders %s; CFLAGS %s\n' "$rev" \
	    "$(sed -n "s/^CFLAGS = //p" "$BUILD/Makefile" | head -n 1)"
}

# bench_chart TSV DAT PNG SUBTITLE: the chart of req/s against
# concurrency (bench/plot.gp) from the rows in TSV, its data in DAT.
bench_chart() {
	awk -F'\t' '
	{ k = $1 == "H" ? "H-" $3 : $1 == "D" ? $2 : $1 == "app" ? $2 "-" $3 : ""
	  if (k != "") { v[k, $4] = $5; if (!($4 in seen)) { seen[$4] = 1; lv[++n] = $4 } } }
	END {
		nc = split("create-lighttpd create-apache replay-lighttpd replay-apache " \
		    "H-lighttpd H-apache D hot-lighttpd hot-apache D-hot", cols, " ")
		printf "#c"; for (i = 1; i <= nc; i++) printf " %s", cols[i]; printf " C-lighttpd C-apache\n"
		for (j = 1; j <= n; j++) {
			c = lv[j]; printf "%s", c
			for (i = 1; i <= nc; i++) printf " %s", ((cols[i], c) in v) ? v[cols[i], c] : "?"
			# D*: the best D at a concurrency up to c, as in the table.
			d = 0
			for (k = 1; k <= n; k++)
				if (lv[k] + 0 <= c + 0 && (("D", lv[k]) in v) && v["D", lv[k]] + 0 > d)
					d = v["D", lv[k]] + 0
			for (s = 1; s <= 2; s++) {
				h = v["H-" (s == 1 ? "lighttpd" : "apache"), c]
				printf " %s", (h > 0 && d > 0) ? 1 / (1 / h + 1 / d) : "?"
			}
			printf "\n"
		}
	}' "$1" | sort -n >"$2"
	gnuplot -e "datafile='$2'; outfile='$3'; subtitle='$4'" "$REPO/bench/plot.gp"
}

bench_report() {
	local load=$1 secs=$2 md png dat tsv orders answered news
	md=$BENCH_OUT/$BENCH_NAME.md
	png=$BENCH_OUT/$BENCH_NAME.png
	dat=$BENCH_LOG/chart.dat
	tsv=$BENCH_OUT/$BENCH_NAME.tsv
	orders=$(db_root -N -B "$DB_NAME" -e \
	    "SELECT COUNT(*) FROM orders WHERE principal_id = '$BENCH_USER'")
	# Exactly once: every order row is a 201 wrk counted (the warm-up's
	# too), one of the seeded replay orders, or a request still in flight
	# when wrk stopped (at most its connections) or left without an
	# answer (a socket error).
	# profile.tsv is there only when the run profiled (pipefail is on).
	answered=$({ cat "$BENCH_TSV" "$BENCH_LOG/warmup.tsv" \
	    "$BENCH_LOG/profile.tsv" 2>/dev/null || true; } | awk -F'\t' '
	    $1 == "app" && ($2 ~ /^create/ || $2 == "hot" || $2 == "warmup") {
		n += $9; c += $4; e += $17 }
	    END { printf "%d %d %d", n, c, e }')
	news=$(bench_log_news || true)
	{
		cat <<EOF
# idemorders bench ($BENCH_NAME)

\`tools/dev bench$([[ $BENCH_QUICK == 1 ]] && echo ' --quick')\` on $(date -u '+%Y-%m-%d %H:%M UTC'), ${secs} s in all; load average before the run: $load.

$(bench_versions)
- bench stack: fresh database; build without fault injection or
  sanitizers; \`workers = $BENCH_WORKERS\`, \`max_requests\` default
  (10000), \`log_level = warning\` (no per-request log line); Apache
  mod_proxy_fcgi with \`enablereuse=off\` as deployed (\`apache-reuse\`:
  a second Apache, the same config with \`enablereuse=on\`); Basic auth from a
  \`{SHA}\` htpasswd (bench only; the shipped setup uses bcrypt) and
  lighttpd \`auth.cache\`; InnoDB \`innodb_flush_log_at_trx_commit=1\`,
  \`innodb_buffer_pool_size\` raised to $((BENCH_BUFFER_POOL / 1048576))M for the run (the
  stack's 256M does not hold the ~0.8 KB per order a full run adds).
- load: \`wrk -t$BENCH_WRK_THREADS\` with \`bench/orders.lua\`, ${BENCH_SECONDS} s a run,
  on the same cores; every create has its own Idempotency-Key and a
  random SKU of BENCH-00..BENCH-$(printf '%02d' $((BENCH_SKUS - 1))) (hot: all on BENCH-HOT).
- H: \`bench/hello-fcgi\` on the responder's socket, same workers, same
  web-server config and auth, same requests. D: \`bench/dbtx\` (no HTTP)
  at each concurrency and at the pool's size, in three shapes: naive (the
  eight round trips of the step-by-step transaction: the reference),
  batched (the service's two round trips), proc (one prepared CALL of a
  stored procedure).
  C = 1/(1/H(c) + 1/D*(c)), D*(c) the best D at a concurrency up to c
  (the pool never runs more transactions at once than it has workers, and
  on few cores more threads can be slower). C models H and D saturating
  the same cores: where they do not (low concurrency), or where MariaDB
  spends less per transaction inside the service than under dbtx, a run
  can exceed it; read over 100 % as "at the ceiling".
- statuses are counted by \`bench/orders.lua\`: "unexpected status" is
  any answer but the expected one (201 new, 201 with
  \`Idempotent-Replayed: true\` for replay, 409 for conflict, 200 for GET
  and H, 200 for cancel (each with its own key, of an order the runs
  before made; past the list, 409) and 200 with
  \`Idempotent-Replayed: true\` for cancel-replay); "socket errors" are requests that got no answer at all
  (wrk read/connect/write errors, timeouts).
- CPU: microseconds per request from \`/proc/<pid>/stat\` of each process
  group (web server, responder pool or hello-fcgi, mariadbd, each with
  its reaped children); client is wrk (or dbtx). "other CPU %": busy
  time of the machine (\`/proc/stat\`) outside those groups, in % of all
  cores: loopback softirq and kernel threads, or another load that
  makes the run suspect; "steal %": time the hypervisor gave to other
  guests. RSS: the largest \`VmHWM\` among the
  responder's workers, sampled every second (workers are recycled after
  \`max_requests\`).
- \`create-log-info\` (full run only): the create run again with the default
  \`log_level = info\` (one log line per request).
- exactly once: $orders order rows of $BENCH_USER after the run; new
  orders counted by wrk (warm-up included) $(set -- $answered; echo "$1"), plus 2 seeded for the
  replay runs; $(set -- $answered; echo "$((orders - $1 - 2)) more, where the requests in flight when
  wrk stopped (at most $2, its connections) and those that got no answer
  ($3 socket errors) allow at most $(($2 + $3)): $(m=$((orders - $1 - 2))
  if [[ $m -ge 0 && $m -le $(($2 + $3)) ]]; then echo consistent
  else echo "**INCONSISTENT: a 201 without its order, or duplicates**"; fi)").

## Server logs during the run (warnings and errors)

${news:-- none}

EOF
		awk -F'\t' -v W="$BENCH_WORKERS" -f - "$BENCH_TSV" "$BENCH_TSV" <<'AWK'
function ms(v) { return v == "" ? "-" : sprintf("%.2f", v) }
function rate(v) { return sprintf("%.0f", v) }
function ceil2(h, d) { return (h > 0 && d > 0) ? 1 / (1 / h + 1 / d) : 0 }
function pct(a, b) { return b > 0 ? sprintf("%.1f %%", 100 * a / b) : "-" }
function mib(k) { return (k == "-" || k == 0) ? "-" : sprintf("%.1f", k / 1024) }
function yes(ok) { return ok ? "**met**" : "**missed**" }
# D*(c): the best transaction rate dbtx reached at a concurrency up to c
# (the pool runs at most W transactions at once, and on few cores more
# threads can be slower); Dk(c) is that concurrency.
function dstar(c,   k, b) { b = 0; for (k in D) if (k + 0 <= c + 0 && D[k] + 0 > b + 0) b = D[k]; return b }
function dk(c,   k, b, bk) { b = 0; for (k in D) if (k + 0 <= c + 0 && D[k] + 0 > b + 0) { b = D[k]; bk = k }; return bk }
function cfor(s, c) { return ceil2(H[s, c], dstar(c)) }
NR == FNR {
	if ($1 == "H") H[$3, $4] = $5
	if ($2 == "D") D[$4] = $5
	if ($2 == "D-batched" && $5 + 0 > DB + 0) DB = $5
	if ($2 == "D-proc" && $5 + 0 > DP + 0) DP = $5
	if ($2 == "D-hot" && $5 + 0 > DH + 0) { DH = $5; DHC = $4 }
	if ($2 == "D-hot-batched" && $5 + 0 > DHB + 0) DHB = $5
	if ($2 == "D-hot-proc" && $5 + 0 > DHP + 0) DHP = $5
	if ($2 ~ /^D-hot/) nDH++
	if ($1 == "app") CPU[$2, $3, $4] = $12 + $13 + $14 + $15
	MDB[$2, $3, $4] = $14; CLI[$2, $3, $4] = $15; WEB[$2, $3, $4] = $12; RSP[$2, $3, $4] = $13
	if ($1 == "app") { R[$2, $3, $4] = $5; P50[$2, $3, $4] = $6; P99[$2, $3, $4] = $7 }
	if ($1 == "app" || $1 == "H") { if ($16 + 0 > hwm[$1]) hwm[$1] = $16 + 0 }
	unexp += $10; sockerr += $17
	if (!($4 in seenc)) { seenc[$4] = 1; levels[++nl] = $4 }
	next
}
FNR == 1 {
	print "## Results\n"
	print "| run | via | c | req/s | p50 ms | p99 ms | answers | expected | unexpected status | socket errors | statuses | ceiling | of ceiling | CPU µs/req web | responders | MariaDB | client | other CPU % | steal % | worker peak RSS MiB |"
	print "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
}
{
	ceil = "-"; ratio = "-"
	if ($1 == "app" && ($2 == "create" || $2 == "create-log-info")) {
		cv = cfor($3, $4); ceil = "C " rate(cv); ratio = pct($5, cv)
	} else if ($1 == "app" && $2 ~ /^create-w/) {
		ceil = "(other pool size)"
	} else if ($1 == "app" && $2 == "hot") {
		ceil = "D-hot " rate(DH); ratio = pct($5, DH)
	} else if ($1 == "app") {
		ceil = "H " rate(H[$3, $4]); ratio = pct($5, H[$3, $4])
	}
	name = $2
	if ($1 == "H") name = "H (hello-fcgi)"
	if ($2 == "D") name = "D (dbtx naive: 8 round trips)"
	if ($2 == "D-batched") name = "D-batched (dbtx: 2 round trips)"
	if ($2 == "D-proc") name = "D-proc (dbtx: 1 CALL)"
	if ($2 == "D-hot") name = "D-hot (dbtx naive, one SKU)"
	if ($2 == "D-hot-batched") name = "D-hot-batched (one SKU)"
	if ($2 == "D-hot-proc") name = "D-hot-proc (one SKU)"
	printf "| %s | %s | %s | %s | %s | %s | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
	    name, $3 == "-" ? "dbtx" : $3, $4, rate($5), ms($6), ms($7), $8, $9, $10, $17, $11,
	    ceil, ratio, $12, $13, $14, $15, $18, $19 == "" ? "-" : $19, mib($16)
	if ($2 ~ /^D-hot/ && ++nDHseen == nDH) {
		# The combined ceilings, after the last D row.
		for (i = 1; i <= nl; i++) for (s = 1; s <= 3; s++) {
			srv = s == 1 ? "lighttpd" : s == 2 ? "apache" : "apache-reuse"; c = levels[i]
			if (!((srv, c) in H) || dstar(c) == 0) continue
			printf "| C = 1/(1/H+1/D*) | %s | %s | %s | | | | | | | | H %s, D* = D(%s) %s | | | | | | | | |\n",
			    srv, c, rate(cfor(srv, c)), rate(H[srv, c]), dk(c), rate(dstar(c))
		}
	}
}
END {
	c = 16
	if (!(("lighttpd", c) in H)) c = levels[1]
	print "\n## Targets (reported, not asserted)\n"
	print "| target | measured | |"
	print "|---|---|---|"
	cl = cfor("lighttpd", c)
	printf "| create c%s via lighttpd ≥ 85 %% of C | %s of %s req/s = %s | %s |\n",
	    c, rate(R["create", "lighttpd", c]), rate(cl), pct(R["create", "lighttpd", c], cl),
	    yes(cl > 0 && R["create", "lighttpd", c] >= 0.85 * cl)
	dn = dstar(c)
	for (s = 1; s <= 3; s++) {
		srv = s == 1 ? "lighttpd" : s == 2 ? "apache" : "apache-reuse"
		if (!(("create", srv, c) in R)) continue
		printf "| create c%s via %s ≥ 1.3 × D(naive) | %s vs %s tx/s = %.2f × | %s |\n",
		    c, srv, rate(R["create", srv, c]), rate(dn), (dn > 0 ? R["create", srv, c] / dn : 0),
		    yes(dn > 0 && R["create", srv, c] >= 1.3 * dn)
	}
	printf "| (the shapes alone: D-batched, D-proc against D naive, best of c ≤ %s) | %s and %s vs %s tx/s = %.2f × and %.2f × | |\n",
	    c, rate(DB), rate(DP), rate(dn), (dn > 0 ? DB / dn : 0), (dn > 0 ? DP / dn : 0)
	for (s = 1; s <= 3; s++) {
		srv = s == 1 ? "lighttpd" : s == 2 ? "apache" : "apache-reuse"
		if (!(("replay", srv, c) in R)) continue
		printf "| replay c%s via %s ≥ 45 %% of H | %s of %s req/s = %s | %s |\n",
		    c, srv, rate(R["replay", srv, c]), rate(H[srv, c]), pct(R["replay", srv, c], H[srv, c]),
		    yes(H[srv, c] > 0 && R["replay", srv, c] >= 0.45 * H[srv, c])
		printf "| conflict c%s via %s ≥ 45 %% of H | %s of %s req/s = %s | %s |\n",
		    c, srv, rate(R["conflict", srv, c]), rate(H[srv, c]), pct(R["conflict", srv, c], H[srv, c]),
		    yes(H[srv, c] > 0 && R["conflict", srv, c] >= 0.45 * H[srv, c])
	}
	for (s = 1; s <= 3; s++) {
		srv = s == 1 ? "lighttpd" : s == 2 ? "apache" : "apache-reuse"
		if (!(("cancel", srv, c) in R)) continue
		printf "| cancel c%s via %s beside create (reported) | %s vs %s req/s = %.2f ×, p50 %s vs %s ms; cancel replayed %s req/s | |\n",
		    c, srv, rate(R["cancel", srv, c]), rate(R["create", srv, c]),
		    (R["create", srv, c] > 0 ? R["cancel", srv, c] / R["create", srv, c] : 0),
		    ms(P50["cancel", srv, c]), ms(P50["create", srv, c]), rate(R["cancel-replay", srv, c])
	}
	for (s = 1; s <= 3; s++) {
		srv = s == 1 ? "lighttpd" : s == 2 ? "apache" : "apache-reuse"
		hc = ("hot", srv, 16) in R ? 16 : levels[1]
		if (!(("hot", srv, hc) in R)) continue
		printf "| hot SKU c%s via %s ≥ 1.2 × D-hot(naive) (best: %s threads) | %s vs %s req/s = %.2f × | %s |\n",
		    hc, srv, DHC, rate(R["hot", srv, hc]), rate(DH), (DH > 0 ? R["hot", srv, hc] / DH : 0),
		    yes(DH > 0 && R["hot", srv, hc] >= 1.2 * DH)
	}
	printf "| (one SKU, the shapes alone: D-hot-batched, D-hot-proc against D-hot naive) | %s and %s vs %s tx/s = %.2f × and %.2f × | |\n",
	    rate(DHB), rate(DHP), rate(DH), (DH > 0 ? DHB / DH : 0), (DH > 0 ? DHP / DH : 0)
	m = MDB["create", "lighttpd", c]; mn = MDB["D", "-", c]
	printf "| mariadbd per create c%s via lighttpd ≤ D naive per transaction (c%s) | %s vs %s µs = %.2f × | %s |\n",
	    c, c, m, mn, (mn > 0 ? m / mn : 0), yes(mn > 0 && m > 0 && m <= mn)
	bound = 1.15 * (MDB["D-batched", "-", c] + CLI["D-batched", "-", c]) + WEB["H", "lighttpd", c] + RSP["H", "lighttpd", c]
	printf "| CPU per create c%s via lighttpd ≤ 1.15 × (D-batched mariadbd + client) + H web + responder | %s vs %.0f µs = %.2f × | %s |\n",
	    c, rate(CPU["create", "lighttpd", c]), bound, (bound > 0 ? CPU["create", "lighttpd", c] / bound : 0),
	    yes(bound > 0 && CPU["create", "lighttpd", c] > 0 && CPU["create", "lighttpd", c] <= bound)
	printf "| CPU per create c%s via lighttpd, all processes ≤ 0.75 × 690 µs (518 µs) | %s µs | %s |\n",
	    c, rate(CPU["create", "lighttpd", c]), yes(CPU["create", "lighttpd", c] > 0 && CPU["create", "lighttpd", c] <= 518)
	for (s = 1; s <= 3; s++) {
		srv = s == 1 ? "lighttpd" : s == 2 ? "apache" : "apache-reuse"
		if (!(("create", srv, c) in P50)) continue
		p50 = P50["create", srv, c]; p99 = P99["create", srv, c]
		printf "| create c%s via %s: p99 ≤ 4 × p50 | p99 %s ms, p50 %s ms = %.1f × | %s |\n",
		    c, srv, ms(p99), ms(p50), (p50 > 0 ? p99 / p50 : 0), yes(p50 > 0 && p99 <= 4 * p50)
	}
	printf "| responder peak RSS ≤ 8 MiB per worker | %s MiB (largest VmHWM of any worker in any idemorders run) | %s |\n",
	    mib(hwm["app"]), yes(hwm["app"] > 0 && hwm["app"] <= 8 * 1024)
	printf "| zero unexpected statuses | %d | %s |\n", unexp, yes(unexp == 0)
	printf "| (socket errors: no answer at all) | %d | %s |\n", sockerr, sockerr == 0 ? "none" : "**see the runs**"
}
AWK
		cat "$BENCH_LOG/roundtrips.md" "$BENCH_LOG/profile.md" 2>/dev/null || true
	} >"$md.tmp"
	mv -f "$md.tmp" "$md"
	cp "$BENCH_TSV" "$tsv.tmp" && mv -f "$tsv.tmp" "$tsv"

	if bench_chart "$BENCH_TSV" "$dat" "$png.tmp" \
	    "$(nproc) cores, ${BENCH_SECONDS} s a run, $(date -u +%Y-%m-%d)" \
	    >"$BENCH_LOG/gnuplot.out" 2>&1; then
		mv -f "$png.tmp" "$png"
		printf '\n![req/s against concurrency](%s)\n' "$(basename "$png")" >>"$md"
	else
		show_log "$BENCH_LOG/gnuplot.out"
		say "bench: gnuplot failed; no chart"
	fi
	echo
	cat "$md"
	echo
	say "bench: wrote $md, $tsv and $png (raw output: ${BENCH_LOG#"$REPO"/})"
}
