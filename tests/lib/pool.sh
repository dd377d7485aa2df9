# tests/lib/pool.sh -- private processes beside the stack's pool, for the
# HTTP test scripts that stop that pool or start their own.
# shellcheck shell=bash
#
# Source it after tests/lib/http.sh.  A script sets priv (its temporary
# directory) and appends the pids it starts to PIDS; it sets
# STACK_POOL_DOWN=1 while the stack's own pool is stopped.  Then
# `trap private_cleanup EXIT` kills what it started, brings the stack's
# pool back if needed and removes priv.

PIDS=()
STACK_POOL_DOWN=0

alive() { kill -0 "$1" 2>/dev/null; }

# Start the stack's pool again as tools/dev starts it.
restore_stack_pool() {
	rm -f "$FCGI_SOCKET"
	setsid "$IDEMORDERS_BIN" serve -c "$IDEMORDERS_CONF" </dev/null \
	    >>"$LOGDIR/idemorders.log" 2>&1 &
	echo "$!" >"$SERVE_PIDFILE"
	STACK_POOL_DOWN=0
	wait_until 15 eval '[[ -S '"$FCGI_SOCKET"' ]]'
}

# Stop the stack's pool and free its socket path for a private one
# (private_cleanup starts the stack's pool again).
stop_stack_pool() {
	local master
	master=$(cat "$SERVE_PIDFILE")
	STACK_POOL_DOWN=1
	kill -TERM "$master"
	wait_until 30 eval '! alive '"$master" || fail "stack pool" "did not stop"
	rm -f "$FCGI_SOCKET"
}

private_cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		pkill -KILL -P "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	[[ $STACK_POOL_DOWN == 1 ]] && restore_stack_pool
	rm -rf "$priv" "$T_TMP"
}
