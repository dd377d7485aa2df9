# tools/lib/chaos.sh -- `tools/dev chaos`: tests/chaos/run against the stack.
#
#   tools/dev chaos [ARGS]       a chaos run against the stack's lighttpd
#                                (IDEMORDERS_STACK=dev|test), with worker
#                                kills and one MariaDB restart, creates and
#                                retried cancels mixed; ARGS go to
#                                tests/chaos/run (--requests N --keys K
#                                --cancel-pct P ...)
#   tools/dev chaos restart-db   kill -9 the stack's MariaDB and start it
#                                again (what the chaos run and the crash
#                                tests call)
#
# No stack lock is taken: `tools/dev test` holds it while its scripts call
# `tools/dev chaos restart-db`.

# Kill the stack's mariadbd with SIGKILL (no clean shutdown: InnoDB crash
# recovery on the way up) and start it again; returns once it answers.
chaos_restart_db() {
	local pid
	[[ -f $MY_CNF ]] || die "no database for stack '$STACK': run $PROG up"
	if pid=$(pid_alive "$DB_PIDFILE" mariadbd); then
		say "chaos: kill -KILL mariadbd (pid $pid)"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 30 || die "mariadbd (pid $pid) survived SIGKILL"
	else
		say "chaos: mariadbd was not running"
	fi
	db_start
	say "chaos: mariadbd is back"
}

run_chaos() {
	if [[ ${1:-} == restart-db ]]; then
		need_root
		chaos_restart_db
		return
	fi
	need_root
	[[ -f $MY_CNF ]] && pid_alive "$SERVE_PIDFILE" idemorders >/dev/null ||
	    die "stack '$STACK' is not up: run $PROG up (IDEMORDERS_STACK=$STACK)"
	export IDEMORDERS_STACK=$STACK
	exec "$REPO/tests/chaos/run" --base "$LIGHTTPD_URL$MOUNT" \
	    --serve-pidfile "$SERVE_PIDFILE" \
	    --sql "$(printf '%q' "$REPO/tools/dev") sql" \
	    --restart-db "$(printf '%q' "$REPO/tools/dev") chaos restart-db" \
	    --widen 30 "$@"
}
