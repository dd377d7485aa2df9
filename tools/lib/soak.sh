# tools/lib/soak.sh -- `tools/dev soak [MINUTES] [ARGS]`: tests/soak/run
# against the stack (IDEMORDERS_STACK=dev|test, which must be up).
# shellcheck shell=bash
#
# The soak swaps the stack's responder pool for one that recycles its
# workers every 50 requests and restores it at the end; it holds the
# stack lock meanwhile, so that no `tools/dev up` interleaves.

run_soak() {
	local minutes=${1:-10}
	[[ $# -gt 0 ]] && shift
	[[ $minutes =~ ^[0-9]+$ && $minutes -gt 0 ]] ||
	    die "usage: $PROG soak [MINUTES] [tests/soak/run options]"
	[[ -f $MY_CNF ]] && pid_alive "$SERVE_PIDFILE" idemorders >/dev/null ||
	    die "stack '$STACK' is not up: run $PROG up (IDEMORDERS_STACK=$STACK)"
	export REPO IDEMORDERS_STACK=$STACK DEV=$REPO/tools/dev
	export LIGHTTPD_URL APACHE_URL FCGID_URL FCGI_SOCKET
	export IDEMORDERS_BIN=$BIN IDEMORDERS_CONF=$CONF SERVE_PIDFILE
	export RUNDIR=$RUN LOGDIR
	"$REPO/tests/soak/run" --minutes "$minutes" "$@" 9>&-
}
