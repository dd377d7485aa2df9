# tests/lib/http.sh -- helpers for the test scripts run against the stack
# (tests/http, tests/package, tests/audit, tests/clients).
# shellcheck shell=bash
#
# Source it first thing:   . "$(dirname "$0")/../lib/http.sh"
#
# `tools/dev test` exports the stack's coordinates (REPO, DEV,
# LIGHTTPD_URL, APACHE_URL, FCGID_URL, the demo shop's SHOP_LIGHTTPD_URL,
# SHOP_APACHE_URL, BEARER_LIGHTTPD_URL, BEARER_APACHE_URL, FCGI_SOCKET, IDEMORDERS_BIN,
# IDEMORDERS_CONF, SERVE_PIDFILE, RUNDIR, LOGDIR); run by hand against a
# test stack that is up (`IDEMORDERS_STACK=test tools/dev up`), a script
# finds the same values itself.
#
# Checks never stop the script: each one counts a pass (`ok`), a failure
# (`fail`) or a skip (`skip`: what this machine cannot run, never a pass),
# also from a subshell ($(...), a pipeline, a background job: counted
# through a file); `finish` prints "RESULT <script> <passed> <failed>"
# (and " <skipped>" when some were) and exits non-zero if anything failed.
#
#   req METHOD URL [curl args...]   one HTTP request; sets STATUS, BODY,
#                                   HEADERS (a file: "name: value" lines,
#                                   names lower-cased); the exact body
#                                   bytes are in $T_TMP/body
#   fcgi_req [-d BODY] METHOD URI [NAME=VALUE...]
#                                   the same straight to the FastCGI
#                                   socket (cgi-fcgi), with exactly the
#                                   given environment: what no web server
#                                   would let through (plus the stack's
#                                   frontend secret unless FCGI_NO_SECRET=1)
#   hdr NAME                        a response header's value
#   expect_status N [WHAT]          expect_header NAME VALUE [WHAT]
#   expect_header_has NAME WORD     expect_no_header NAME
#   expect_body_json JQ EXPECTED    (jq -r output)
#   expect_problem STATUS CODE      status, problem+json, code, no-store
#   sql "STATEMENT"                 expect_sql "STATEMENT" EXPECTED
#   expect_absent WHAT FILE GREP-ARGS...
#                                   nothing matches in FILE (which must exist)
#   ok NAME | fail NAME MSG | skip NAME WHY | check NAME COMMAND... | finish
#   unique_name VAR PREFIX          VAR=PREFIX-<run id>-<counter>
#   worker_asleep MASTER_PID        the pool's worker asleep in a fault point
#

set -uo pipefail

# wait_until SECONDS COMMAND...: run COMMAND every 0.1 s until it
# succeeds; its status after SECONDS.
wait_until() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

: "${REPO:=$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)}"
: "${IDEMORDERS_STACK:=test}"
: "${DEV:=$REPO/tools/dev}"
export REPO IDEMORDERS_STACK DEV

# The stack's coordinates, as tools/dev computes them, when not exported.
if [[ -z ${RUNDIR:-} ]]; then
	RUNDIR=/run/idemorders-$IDEMORDERS_STACK-$(printf '%s' "$REPO" | sha1sum | cut -c1-8)
fi
case $IDEMORDERS_STACK in
dev)	_ports=(8080 8081 8082) ;;
*)	_ports=(18080 18081 18082) ;;
esac
_off=${IDEMORDERS_PORT_OFFSET:-0}
: "${LIGHTTPD_URL:=http://127.0.0.1:$((_ports[0] + _off))}"
: "${APACHE_URL:=http://127.0.0.1:$((_ports[1] + _off))}"
: "${FCGID_URL:=http://127.0.0.1:$((_ports[2] + _off))}"
# The demo shop (examples/shop): the session vhosts and the bearer ones.
: "${SHOP_LIGHTTPD_URL:=http://127.0.0.1:$((_ports[0] + 3 + _off))}"
: "${SHOP_APACHE_URL:=http://127.0.0.1:$((_ports[0] + 4 + _off))}"
: "${BEARER_LIGHTTPD_URL:=http://127.0.0.1:$((_ports[0] + 5 + _off))}"
: "${BEARER_APACHE_URL:=http://127.0.0.1:$((_ports[0] + 6 + _off))}"
: "${FCGI_SOCKET:=$RUNDIR/fcgi/idemorders.sock}"
: "${IDEMORDERS_BIN:=$REPO/var/$IDEMORDERS_STACK/build/src/idemorders}"
: "${IDEMORDERS_CONF:=$RUNDIR/idemorders.conf}"
: "${SERVE_PIDFILE:=$RUNDIR/idemorders.pid}"
: "${LOGDIR:=$REPO/var/$IDEMORDERS_STACK/log}"
unset _ports _off

MOUNT=/orders
ALICE=alice:alice-secret
BOB=bob:bob-secret

# The front ends, by name: `for s in $SERVERS; do url=$(url_of "$s")...`.
# HTTP_SERVERS are the two every check runs through; ALL_SERVERS adds
# Apache mod_fcgid (a responder spawned by Apache as www-data).
HTTP_SERVERS="lighttpd apache"
ALL_SERVERS="lighttpd apache fcgid"

url_of() {
	case $1 in
	lighttpd)	echo "$LIGHTTPD_URL" ;;
	apache)		echo "$APACHE_URL" ;;
	fcgid)		echo "$FCGID_URL" ;;
	*)		echo "url_of: unknown server $1" >&2; return 1 ;;
	esac
}

TEST_NAME=$(basename -- "$0" .sh)
PASSED=0
FAILED=0
SKIPPED=0
STATUS=
BODY=
REQ_DESC=
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/idemorders-$TEST_NAME.XXXXXX")
HEADERS=$T_TMP/headers
: >"$HEADERS"
trap 'rm -rf "$T_TMP"' EXIT

# _in_subshell: true in a subshell of the script ($(...), a pipeline's
# loop, a background job), where a counter change would be lost.
_in_subshell() {
	[[ $BASHPID != "$$" ]]
}

# Count a passed check.  In a subshell the check is recorded in
# $T_TMP/subshell.results for finish to count, and printed on stderr (a
# command substitution captures stdout).
ok() {
	if _in_subshell; then
		echo P >>"$T_TMP/subshell.results"
		printf 'ok     %s\n' "$1" >&2
		return 0
	fi
	PASSED=$((PASSED + 1))
	printf 'ok     %s\n' "$1"
}

# skip NAME WHY: a check this machine cannot run.  Printed as a skip and
# counted as one (finish's RESULT line gets a fourth number), never as a
# pass; a script whose checks were all skipped has not failed.  In a
# subshell as ok does.
skip() {
	if _in_subshell; then
		echo S >>"$T_TMP/subshell.results"
		printf 'SKIP   %s: %s\n' "$1" "${2:-}" >&2
		return 0
	fi
	SKIPPED=$((SKIPPED + 1))
	printf 'SKIP   %s: %s\n' "$1" "${2:-}"
}

# Count a failed check; show the last request for context.  In a subshell
# as ok does: a `fail` inside $(...) is counted and its message shown.
fail() {
	if _in_subshell; then
		echo F >>"$T_TMP/subshell.results"
		_fail_lines "$@" >&2
		return 0
	fi
	FAILED=$((FAILED + 1))
	_fail_lines "$@"
}

_fail_lines() {
	printf 'FAIL   %s: %s\n' "$1" "${2:-}"
	if [[ -n $REQ_DESC ]]; then
		printf '       last request: %s -> %s\n' "$REQ_DESC" "${STATUS:-none}"
		printf '       body: %s\n' "$(printf '%s' "$BODY" | head -c 400 | tr '\n' ' ')"
	fi
}

# A run id no other run shares (the script's start in ns, its pid), and
# unique_name VAR PREFIX: sets VAR to PREFIX-<run id>-<counter>, a name
# unique by construction (the counter lives in the script's own shell, so
# a subshell cannot make one).
RUN_ID=$(date +%s%N)-$$
NAME_SEQ=0
unique_name() {
	if _in_subshell; then
		fail "unique_name $2" "called in a subshell: its counter would repeat"
		return 1
	fi
	NAME_SEQ=$((NAME_SEQ + 1))
	printf -v "$1" '%s-%s-%d' "$2" "$RUN_ID" "$NAME_SEQ"
}

# check NAME COMMAND...: pass if COMMAND succeeds.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else fail "$name" "command failed: $*"; fi
}

# Keep the last response's header block of raw file $1 in $HEADERS, with
# lower-cased names and no CRs.
_headers_from() {
	tr -d '\r' <"$1" | awk '
		/^HTTP\// { n = 0; delete h; next }
		/^$/ { next }
		{
			i = index($0, ":")
			if (i == 0) next
			name = tolower(substr($0, 1, i - 1))
			v = substr($0, i + 1)
			sub(/^[ \t]+/, "", v)
			h[n++] = name ": " v
		}
		END { for (i = 0; i < n; i++) print h[i] }' >"$HEADERS"
}

# req METHOD URL [curl args...]
req() {
	local method=$1 url=$2
	shift 2
	local how=(-X "$method")
	[[ $method == HEAD ]] && how=(--head)
	REQ_DESC="$method $url"
	rm -f "$T_TMP/body" "$T_TMP/headers.raw"
	: >"$T_TMP/headers.raw"
	STATUS=$(curl -s -S -o "$T_TMP/body" -D "$T_TMP/headers.raw" \
	    -w '%{http_code}' --max-time 60 "${how[@]}" "$@" "$url" 2>"$T_TMP/curl.err")
	if [[ $? -ne 0 ]]; then
		STATUS=000
		printf '       curl: %s\n' "$(head -c 300 "$T_TMP/curl.err")"
	fi
	[[ -f $T_TMP/body ]] || : >"$T_TMP/body"
	BODY=$(cat "$T_TMP/body")
	_headers_from "$T_TMP/headers.raw"
}

# fcgi_req [-d BODY] METHOD URI [NAME=VALUE...]: a request straight to the
# responder's socket.  The environment is exactly the CGI basics plus the
# given NAME=VALUE pairs (no REMOTE_USER unless given).
fcgi_req() {
	local data='' have_data=0 method uri path query
	if [[ ${1:-} == -d ]]; then
		data=$2
		have_data=1
		shift 2
	fi
	method=$1 uri=$2
	shift 2
	path=${uri%%\?*}
	query=
	[[ $uri == *\?* ]] && query=${uri#*\?}
	REQ_DESC="fcgi $method $uri $*"
	local env=(REQUEST_METHOD="$method" REQUEST_URI="$uri"
	    SCRIPT_NAME="$MOUNT" PATH_INFO="${path#"$MOUNT"}"
	    QUERY_STRING="$query" SERVER_PROTOCOL=HTTP/1.1
	    GATEWAY_INTERFACE=CGI/1.1 SERVER_NAME=127.0.0.1 SERVER_PORT=80
	    REMOTE_ADDR=127.0.0.1 REMOTE_PORT=40000)
	if [[ $have_data == 1 ]]; then
		env+=(CONTENT_LENGTH="$(printf '%s' "$data" | wc -c)")
	fi
	# The frontend secret the web servers pass (FCGI_NO_SECRET=1: none,
	# as a local process that connects to the socket itself would send).
	if [[ -z ${FCGI_NO_SECRET:-} && -r $RUNDIR/frontend.secret ]]; then
		env+=(IDEMORDERS_FRONTEND_SECRET="$(<"$RUNDIR/frontend.secret")")
	fi
	printf '%s' "$data" | timeout 30 env -i "${env[@]}" "$@" \
	    cgi-fcgi -bind -connect "$FCGI_SOCKET" >"$T_TMP/fcgi.raw" 2>"$T_TMP/fcgi.err"
	if [[ $? -ne 0 && ! -s $T_TMP/fcgi.raw ]]; then
		STATUS=000
		BODY=
		: >"$HEADERS"
		printf '       cgi-fcgi: %s\n' "$(head -c 300 "$T_TMP/fcgi.err")"
		return 0
	fi
	# Headers up to the first empty line, then the body.
	: >"$T_TMP/fcgi.head"
	: >"$T_TMP/fcgi.body"
	awk -v head="$T_TMP/fcgi.head" -v body="$T_TMP/fcgi.body" '
		!h { sub(/\r$/, ""); if ($0 == "") { h = 1; next }; print > head; next }
		{ print > body }' "$T_TMP/fcgi.raw"
	BODY=$(cat "$T_TMP/fcgi.body")
	_headers_from "$T_TMP/fcgi.head"
	STATUS=$(hdr status | awk '{ print $1 }')
	[[ -n $STATUS ]] || STATUS=200
}

# hdr NAME: the value of response header NAME (first one), empty if none.
hdr() {
	local name
	name=$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')
	awk -v n="$name" '{
		i = index($0, ":")
		if (substr($0, 1, i - 1) == n) { print substr($0, i + 2); exit }
	}' "$HEADERS"
}

# expect_status N [WHAT]
expect_status() {
	local what=${2:-$REQ_DESC}
	if [[ $STATUS == "$1" ]]; then
		ok "$what: status $1"
	else
		fail "$what: status" "expected $1, got $STATUS"
	fi
}

# expect_header NAME VALUE [WHAT]: exact value (media types: up to ';').
expect_header() {
	local what=${3:-$REQ_DESC} v
	v=$(hdr "$1")
	if [[ $v == "$2" ]]; then
		ok "$what: $1: $2"
	else
		fail "$what: header $1" "expected '$2', got '$v'"
	fi
}

# expect_header_has NAME WORD: the header lists WORD (comma-separated).
expect_header_has() {
	local what=${3:-$REQ_DESC} v
	v=$(hdr "$1")
	if printf '%s' "$v" | tr ',' '\n' | sed 's/^ *//; s/ *$//' | grep -qxF -- "$2"; then
		ok "$what: $1 has $2"
	else
		fail "$what: header $1" "expected it to list '$2', got '$v'"
	fi
}

# expect_no_header NAME
expect_no_header() {
	local what=${2:-$REQ_DESC}
	if grep -q "^$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]'):" "$HEADERS"; then
		fail "$what: no $1 header" "got '$(hdr "$1")'"
	else
		ok "$what: no $1 header"
	fi
}

# expect_body_json JQ EXPECTED [WHAT]: `jq -r JQ` on the body prints EXPECTED.
expect_body_json() {
	local what=${3:-$REQ_DESC} v
	if ! v=$(printf '%s' "$BODY" | jq -r "$1" 2>&1); then
		fail "$what: body $1" "body is not JSON (jq: $v)"
		return
	fi
	if [[ $v == "$2" ]]; then
		ok "$what: body $1 = $2"
	else
		fail "$what: body $1" "expected '$2', got '$v'"
	fi
}

# The media type of the response, without parameters, lower-cased.
media_type() {
	hdr content-type | sed 's/;.*//; s/[[:space:]]*$//' | tr '[:upper:]' '[:lower:]'
}

# expect_media_type TYPE [WHAT]
expect_media_type() {
	local what=${2:-$REQ_DESC} v
	v=$(media_type)
	if [[ $v == "$1" ]]; then
		ok "$what: content-type $1"
	else
		fail "$what: content-type" "expected '$1', got '$(hdr content-type)'"
	fi
}

# expect_problem STATUS CODE [WHAT]: an application error answer.
expect_problem() {
	local what=${3:-$REQ_DESC}
	expect_status "$1" "$what"
	expect_media_type application/problem+json "$what"
	expect_body_json .code "$2" "$what"
	expect_body_json .status "$1" "$what"
	expect_header cache-control no-store "$what"
}

# sql "STATEMENT": tab-separated result from the stack's database.
sql() {
	"$DEV" sql "$1"
}

# expect_sql "STATEMENT" EXPECTED [WHAT]
expect_sql() {
	local what=${3:-sql: $1} v
	if ! v=$(sql "$1" 2>&1); then
		fail "$what" "query failed: $v"
	elif [[ $v == "$2" ]]; then
		ok "$what = $2"
	else
		fail "$what" "expected '$2', got '$v'"
	fi
}

# expect_absent WHAT FILE GREP-ARGS...: `grep -q GREP-ARGS FILE` finds
# nothing.  A FILE that is missing or unreadable is a failure, never a
# pass (there was nothing to search).
expect_absent() {
	local what=$1 file=$2 rc
	shift 2
	if [[ ! -f $file || ! -r $file ]]; then
		fail "$what" "no file $file to search"
		return
	fi
	grep -q "$@" "$file"
	rc=$?
	case $rc in
	1)	ok "$what" ;;
	0)	fail "$what" "found in $file: $(grep -m 1 "$@" "$file" | cut -c 1-300)" ;;
	*)	fail "$what" "grep $* $file: status $rc" ;;
	esac
}

# worker_asleep MASTER_PID: print the child of MASTER_PID (a responder
# worker) asleep in a fault point (its wchan is nanosleep), waiting for it
# up to about 10 s; false if none is.  A request sent with a sleep fault
# has reached that point once this is true.
worker_asleep() {
	local i p
	for ((i = 0; i < 100; i++)); do
		for p in $(pgrep -P "$1" 2>/dev/null); do
			if grep -q nanosleep "/proc/$p/wchan" 2>/dev/null; then
				echo "$p"
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}

# A key no earlier run used: PREFIX-<time>-<pid>.
unique_key() {
	printf '%s-%s-%s' "${1:-k}" "$(date +%s%N)" "$$"
}

# bench_test_begin: for a script that runs a bench (its own stack 'bench'):
# whether the test stack serves now (BENCH_TEST_STACK_UP), so that
# bench_test_end can check that it still does.
bench_test_begin() {
	req GET "$LIGHTTPD_URL$MOUNT/_health"
	BENCH_TEST_STACK_UP=0
	[[ $STATUS == 200 ]] && BENCH_TEST_STACK_UP=1
	return 0
}

# bench_test_end LOG: this checkout's bench stack left no process (only
# its own: another checkout may run one), the test stack still serves if
# it did, LOG's tail on a failure; then finish.
bench_test_end() {
	local brun left
	brun=/run/idemorders-bench-$(printf '%s' "$REPO" | sha1sum | cut -c1-8)
	left=$(pgrep -af -- "$brun/|$REPO/var/bench/" | grep -v pgrep || true)
	if [[ -n $left ]]; then
		fail "bench stack" "processes left: $(printf '%s' "$left" | head -n 3 | tr '\n' ' ')"
	else
		ok "bench stack stopped afterwards"
	fi
	if [[ $BENCH_TEST_STACK_UP == 1 ]]; then
		req GET "$LIGHTTPD_URL$MOUNT/_health"
		expect_status 200 "the test stack still serves"
	fi
	[[ $FAILED -eq 0 ]] || sed 's/^/    /' "$1" | tail -n 40
	finish
}

# finish: print the RESULT line and exit (non-zero if anything failed).
finish() {
	local r
	# The checks counted in subshells.
	if [[ -f $T_TMP/subshell.results ]]; then
		while read -r r; do
			case $r in
			P)	PASSED=$((PASSED + 1)) ;;
			S)	SKIPPED=$((SKIPPED + 1)) ;;
			*)	FAILED=$((FAILED + 1)) ;;
			esac
		done <"$T_TMP/subshell.results"
		rm -f "$T_TMP/subshell.results"
	fi
	# A script that ends before any check ran (or was skipped) has failed.
	((PASSED + FAILED + SKIPPED > 0)) ||
	    fail "$TEST_NAME" "ended before any check ran"
	if ((SKIPPED > 0)); then
		echo "RESULT $TEST_NAME $PASSED $FAILED $SKIPPED"
	else
		echo "RESULT $TEST_NAME $PASSED $FAILED"
	fi
	[[ $FAILED -eq 0 ]] && exit 0
	exit 1
}
