# tests/lib/pool.sh -- the responder pool on the stack's socket, for the
# test scripts that stop it or put a pool of their own there.
# shellcheck shell=bash
#
# Source it after tests/lib/http.sh (tests/chaos/order-helpers.sh sources
# it).  Only tools/dev starts the stack's own pool (`tools/dev serve`,
# which knows it by its stamp); a script stops it, starts its own on the
# socket, and gets the stack's back with pool_restore, run again on EXIT:
#
#   pool_stop [SECONDS]          stop the pool serving the stack's socket
#                                (the master in SERVE_PIDFILE): SIGTERM,
#                                then SIGKILL to it and its workers after
#                                SECONDS (15), which makes it false
#   pool_start BIN CONF LOG      `BIN serve -c CONF` on the stack's socket
#                                (its pid in SERVE_PIDFILE and POOL_PID),
#                                stderr to LOG; false without a socket
#                                within 15 s
#   pool_swap [--proxy] [KEY=VALUE...]
#                                replace the stack's pool by one with the
#                                stack's config and these settings (to
#                                MariaDB through the fault proxy of
#                                tests/lib/dbfaults.sh with --proxy), run
#                                from the ASan build when it is there and
#                                fresh (IDEMORDERS_TEST_ASAN=1 builds it
#                                first); POOL_LOG is its log, POOL_BIN its
#                                binary, T_TMP/pool.conf its config
#   pool_restore                 the stack's own pool again, as tools/dev
#                                starts it (nothing when it was not stopped)
#   pool_workers                 the pids of the pool's workers
#   pool_wait_full [SECONDS]     wait until the pool has its configured
#                                workers again
#   expect_no_asan_reports WHAT  the swapped pool's log has no sanitizer
#                                report and no worker killed by a signal
#   pool_conf FILE [LINES...]    a config for a pool of a script's own:
#                                user idemorders, one worker, these
#                                lines, the stack's database and mount
#   fcgi_as_nobody SOCKET        what any local user can do: connect to
#                                SOCKET and claim alice (GET o-1); prints
#                                cgi-fcgi's output
#   private_cleanup              the EXIT trap of a script that sets priv
#                                (its temporary directory) and appends the
#                                pids it starts to PIDS: kills them, the
#                                stack's pool back, priv removed

PIDS=()
POOL_PID=
POOL_SWAPPED=0
POOL_ASAN=0
POOL_BIN=
POOL_LOG=$LOGDIR/swapped-pool-$TEST_NAME.log
DB_SOCKET=$RUNDIR/db/mysqld.sock
BUILD_DIR=$(dirname -- "$(dirname -- "$IDEMORDERS_BIN")")
ASAN_BUILD=${BUILD_DIR%/build}/build-asan

alive() { kill -0 "$1" 2>/dev/null; }

# pool_stop [SECONDS]: the master in SERVE_PIDFILE and its workers gone,
# the socket path free.
pool_stop() {
	local secs=${1:-15} m kids i rc=0
	POOL_SWAPPED=1
	m=$(cat "$SERVE_PIDFILE" 2>/dev/null)
	if [[ -n $m ]] && alive "$m"; then
		kids=$(pgrep -P "$m" 2>/dev/null)
		kill -TERM "$m" 2>/dev/null
		for ((i = 0; i < secs * 10; i++)); do
			alive "$m" || break
			sleep 0.1
		done
		if alive "$m"; then
			rc=1
			# shellcheck disable=SC2086
			kill -KILL "$m" $kids 2>/dev/null
			for ((i = 0; i < 50; i++)); do
				alive "$m" || break
				sleep 0.1
			done
		fi
	fi
	rm -f "$FCGI_SOCKET"
	return $rc
}

# pool_start BIN CONF LOG
pool_start() {
	local bin=$1 conf=$2 log=$3 i
	POOL_SWAPPED=1
	rm -f "$FCGI_SOCKET"
	# libmariadb is not instrumented: a use after free inside it is seen
	# only when freed memory is filled with garbage (then it crashes).
	ASAN_OPTIONS=${POOL_ASAN_OPTIONS:-detect_leaks=0:max_free_fill_size=65536:free_fill_byte=190} \
	    MALLOC_PERTURB_=190 \
	    UBSAN_OPTIONS=print_stacktrace=1 \
	    setsid "$bin" serve -c "$conf" </dev/null >>"$log" 2>&1 &
	POOL_PID=$!
	echo "$POOL_PID" >"$SERVE_PIDFILE"
	for ((i = 0; i < 150; i++)); do
		[[ -S $FCGI_SOCKET ]] && return 0
		alive "$POOL_PID" || break
		sleep 0.1
	done
	return 1
}

# Set POOL_BIN to the responder binary for a swapped pool: the ASan build
# when it is there and not older than the stack's build.
pool_bin() {
	local asan=$ASAN_BUILD/src/idemorders
	if [[ ${IDEMORDERS_TEST_ASAN:-} == 1 && -f $ASAN_BUILD/Makefile ]]; then
		make -C "$ASAN_BUILD" -j2 src/idemorders >"$T_TMP/asan-make.log" 2>&1 ||
		    fail "ASan build" "$(tail -n 5 "$T_TMP/asan-make.log")"
	fi
	if [[ -x $asan && ! $asan -ot $IDEMORDERS_BIN ]]; then
		POOL_ASAN=1
		POOL_BIN=$asan
	else
		POOL_ASAN=0
		POOL_BIN=$IDEMORDERS_BIN
	fi
}

# pool_swap [--proxy|--tcp] [KEY=VALUE...]: the database through the
# fault proxy, or over TCP (DB_TCP_PORT, tests/lib/dbfaults.sh), or on
# the stack's socket.
pool_swap() {
	local via=0 conf=$T_TMP/pool.conf kv how=plain path="on the socket"
	case ${1:-} in
	--proxy)	via=1; shift ;;
	--tcp)		via=2; shift ;;
	esac
	pool_bin
	{
		grep -vE '^[[:space:]]*(db_socket|db_host|db_port)[[:space:]]*=' "$IDEMORDERS_CONF"
		echo
		echo "# swapped in by $TEST_NAME"
		if [[ $via == 1 ]]; then
			echo "db_host = 127.0.0.1"
			echo "db_port = $DBPROXY_PORT"
		elif [[ $via == 2 ]]; then
			echo "db_host = 127.0.0.1"
			echo "db_port = $DB_TCP_PORT"
		else
			echo "db_socket = $DB_SOCKET"
		fi
		for kv in "$@"; do
			echo "${kv%%=*} = ${kv#*=}"
		done
	} >"$conf"
	chmod 0644 "$conf"
	[[ $POOL_SWAPPED == 1 ]] || : >"$POOL_LOG"
	pool_stop
	printf '=== %s: %s serve, %s\n' "$(date -u +%FT%T)" "$POOL_BIN" "$*" >>"$POOL_LOG"
	if ! pool_start "$POOL_BIN" "$conf" "$POOL_LOG"; then
		fail "swapped pool" "no socket; log: $(tail -n 5 "$POOL_LOG" | tr '\n' ' ')"
		return 1
	fi
	pool_wait_full 20 || true
	[[ $POOL_ASAN == 1 ]] && how=ASan
	[[ $via == 1 ]] && path="through the proxy"
	[[ $via == 2 ]] && path="over TCP"
	ok "responder pool swapped ($how build, $path): $*"
}

# pool_restore: false if the stack's pool did not come back.
pool_restore() {
	local out
	[[ $POOL_SWAPPED == 1 ]] || return 0
	pool_stop
	POOL_SWAPPED=0
	if ! out=$("$DEV" serve 2>&1); then
		printf '%s\n' "$out" >&2
		echo "pool_restore: the stack's pool did not come back" >&2
		return 1
	fi
	pool_wait_full 20 || true
}

pool_workers() {
	local m p st
	m=$(cat "$SERVE_PIDFILE" 2>/dev/null) || return 0
	for p in $(pgrep -P "$m" 2>/dev/null); do
		st=$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null) || continue
		[[ $st != Z ]] && echo "$p"
	done
}

# pool_wait_full [SECONDS]: after crashes the master respawns its workers,
# with a delay after a quick death; wait for them, so that later scripts
# find the stack as it was.
pool_wait_full() {
	local want i
	want=$(sed -n 's/^[[:space:]]*workers[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' "$IDEMORDERS_CONF" | tail -n 1)
	want=${want:-4}
	for ((i = 0; i < ${1:-40} * 10; i++)); do
		[[ $(pool_workers | wc -l) -ge $want ]] && return 0
		sleep 0.1
	done
	return 1
}

# expect_no_asan_reports WHAT
expect_no_asan_reports() {
	local re='ERROR: (Address|Leak)Sanitizer|runtime error:|worker [0-9]+ killed by signal'
	if [[ ! -s $POOL_LOG ]]; then
		# A swapped pool writes its start line there at least.
		fail "$1: sanitizer reports" "no pool log $POOL_LOG to search"
	elif grep -qE "$re" "$POOL_LOG"; then
		fail "$1: sanitizer reports or crashed workers" "$(grep -cE "$re" "$POOL_LOG") in $POOL_LOG: $(grep -m1 -B2 -A14 -E "$re" "$POOL_LOG" | tr '\n' ' ' | head -c 2000)"
	else
		ok "$1: no sanitizer report in $(basename "$POOL_LOG")"
	fi
}

pool_conf() {
	local f=$1
	shift
	{
		echo "user = idemorders"
		echo "workers = 1"
		printf '%s\n' "$@"
		grep -E '^[[:space:]]*(db_[a-z_]*|mount)[[:space:]]*=' "$IDEMORDERS_CONF"
	} >"$f"
}

fcgi_as_nobody() {
	runuser -u nobody -- env -i REQUEST_METHOD=GET REQUEST_URI="$MOUNT/o-1" \
	    SCRIPT_NAME="$MOUNT" PATH_INFO=/o-1 SERVER_PROTOCOL=HTTP/1.1 \
	    REMOTE_USER=alice timeout 10 cgi-fcgi -bind -connect "$1" 2>&1
}

private_cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		pkill -KILL -P "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	pool_restore
	rm -rf "$priv" "$T_TMP"
}
