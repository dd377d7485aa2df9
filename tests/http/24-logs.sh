#!/usr/bin/env bash
# Logs: `log_format = json` writes one JSON object a line (jq parses every
# line; request lines carry time, principal, key, status, code, outcome,
# attempts, duration_ms) for requests through lighttpd (which always
# passes HTTP_AUTHORIZATION) and Apache, and no log holds a password or a
# secret; `log = syslog` with `log_facility = local3` sends datagrams
# with the facility's priority to /dev/log (a private one, in a mount
# namespace of its own).  About 15 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
# shellcheck source=tests/lib/orders.sh
. "$(dirname -- "$0")/../lib/orders.sh"
# shellcheck source=tests/lib/pool.sh
. "$(dirname -- "$0")/../lib/pool.sh"


priv=$(mktemp -d /tmp/idemorders-logs.XXXXXX)
chmod 0755 "$priv"
PIDS=()
trap private_cleanup EXIT

# Every secret a log must never hold.
SECRETS=(alice-secret bob-secret "$(printf alice:alice-secret | base64)"
    "$(printf bob:bob-secret | base64)" "$(<"$RUNDIR/db-password")"
    "$(<"$RUNDIR/frontend.secret")")

# no_secrets WHAT FILE...
no_secrets() {
	local what=$1 s f found=
	shift
	for f in "$@"; do
		[[ -f $f && -r $f ]] || { fail "$what" "no file $f to search"; return; }
	done
	for s in "${SECRETS[@]}"; do
		grep -qF -- "$s" "$@" && found+="${s:0:6}... "
	done
	[[ -z $found ]] && ok "$what: no password or secret" ||
	    fail "$what" "holds: $found"
}

# --- JSON request log through both web servers -------------------------------

jconf=$priv/json.conf
jlog=$priv/json.log
{
	cat "$IDEMORDERS_CONF"
	echo "log_format = json"
	echo "log_level = debug"
} >"$jconf"
pool_stop 30 || fail "stack pool" "did not stop"
pool_start "$IDEMORDERS_BIN" "$jconf" "$jlog" || fail "json pool" "$(tail -n 3 "$jlog")"
jpid=$POOL_PID
PIDS+=("$jpid")
sleep 0.5

unique_name key jlog
body='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}'
post "$LIGHTTPD_URL" "$ALICE" "$key" "$body"
expect_status 201 "create through lighttpd"
post "$APACHE_URL" "$ALICE" "$key" "$body"
expect_status 201 "replay through apache"
post "$LIGHTTPD_URL" "$ALICE" "$key" '{"currency":"KRW","items":[{"sku":"A-10","qty":2}],"amount":12000}'
expect_status 409 "another body through lighttpd"
req GET "$APACHE_URL$MOUNT/_health?token=should-not-be-logged"
expect_status 200 "health with a query string"
FCGI_NO_SECRET=1 fcgi_req GET "$MOUNT/_health"
expect_status 403 "no secret"
sleep 0.5

bad=$(grep -c . "$jlog")
good=$(jq -c . "$jlog" 2>/dev/null | grep -c .)
[[ $bad -gt 0 && $bad -eq $good ]] && ok "all $good log lines are JSON objects (jq)" ||
    fail "JSON log" "$good of $bad lines parse; $(jq . "$jlog" 2>&1 >/dev/null | head -n 2)"
jq -e -s 'all(.[]; type == "object" and has("time") and has("level"))' "$jlog" >/dev/null &&
    ok "every line has time and level" || fail "JSON log" "a line without time or level"

# request KEY STATUS: the request line of KEY with STATUS (compact JSON).
request() {
	jq -c --arg k "$1" --argjson s "$2" \
	    'select(.key == $k and .status == $s)' "$jlog" | head -n 1
}
line=$(request "$key" 201)
if [[ -n $line ]] && jq -e --arg k "$key" '
    (.time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$")) and
    .principal == "alice" and .key == $k and .status == 201 and
    .code == null and .outcome == "created" and .attempts == 1 and
    (.duration_ms | type == "number" and . >= 0) and .method == "POST"
    ' <<<"$line" >/dev/null; then
	ok "create: $line"
else
	fail "create line" "got '$line'"
fi
line=$(jq -c --arg k "$key" 'select(.key == $k and .status == 201 and .outcome != "created")' "$jlog" | head -n 1)
[[ -n $line ]] && jq -e '.outcome == "replayed"' <<<"$line" >/dev/null &&
    ok "replay: outcome replayed" || fail "replay line" "got '$line'"
line=$(request "$key" 409)
[[ -n $line ]] && jq -e '.code == "IDEMPOTENCY_KEY_REUSED" and .principal == "alice"' <<<"$line" >/dev/null &&
    ok "conflict: code IDEMPOTENCY_KEY_REUSED" || fail "conflict line" "got '$line'"
line=$(jq -c 'select(.status == 403)' "$jlog" | head -n 1)
[[ -n $line ]] && jq -e '.code == "FRONTEND_SECRET_MISMATCH" and .principal == null' <<<"$line" >/dev/null &&
    ok "no secret: code FRONTEND_SECRET_MISMATCH" || fail "403 line" "got '$line'"
jq -e -s 'all(.[] | select(has("status")); has("principal") and has("key") and
    has("code") and has("outcome") and has("attempts") and has("duration_ms"))' "$jlog" >/dev/null &&
    ok "every request line has the request fields" || fail "request fields" "missing somewhere"
expect_absent "the query string is not logged" "$jlog" 'should-not-be-logged'
expect_absent "no Authorization in the log" "$jlog" -i 'authorization\|basic '
no_secrets "JSON log" "$jlog"

kill -TERM "$jpid"
wait_until 30 eval '! alive '"$jpid"
wait "$jpid" 2>/dev/null
pool_restore || fail "stack pool restart" "no socket"
sleep 0.5
req GET "$LIGHTTPD_URL$MOUNT/_health"
expect_status 200 "the stack's pool is back"
no_secrets "the stack's responder log" "$LOGDIR/idemorders.log"
no_secrets "lighttpd and Apache logs" "$RUNDIR"/log/*.log "$LOGDIR"/apache-*.log

# --- syslog with a facility -------------------------------------------------------

# A datagram listener at $priv/devlog, bound over /dev/log in a private
# mount namespace for the pool only.
: >"$priv/syslog.out"
/usr/bin/python3 -u - "$priv/devlog" "$priv/syslog.out" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as f:
    f.write("LISTENING\n")
    f.flush()
    while True:
        f.write(s.recv(65536).decode("utf-8", "replace").rstrip("\n") + "\n")
        f.flush()
EOF
PIDS+=("$!")
disown "$!"
wait_until 10 grep -q LISTENING "$priv/syslog.out"
chmod 0666 "$priv/devlog"
sconf=$priv/syslog.conf
ssock=$priv/sock
{
	echo "listen = unix:$ssock"
	echo "workers = 1"
	echo "log = syslog"
	echo "log_facility = local3"
	echo "log_format = json"
	grep -E '^[[:space:]]*(db_[a-z_]*|mount|user|group)[[:space:]]*=' "$IDEMORDERS_CONF"
} >"$sconf"
touch "$priv/devlog-target"
setsid unshare --mount --propagation private sh -c '
	mount -t tmpfs -o mode=0755 none /dev || exit 90
	mknod -m 0666 /dev/null c 1 3
	: >/dev/log
	mount --bind "$1" /dev/log || exit 91
	exec "$2" serve -c "$3"' sh "$priv/devlog" "$IDEMORDERS_BIN" "$sconf" \
    </dev/null >"$priv/syslog-serve.out" 2>&1 &
spid=$!
PIDS+=("$spid")
if wait_until 15 eval '[[ -S '"$ssock"' ]]'; then
	ok "a pool logging to syslog runs"
else
	fail "syslog pool" "status: $(wait "$spid"; echo $?); $(head -c 300 "$priv/syslog-serve.out")"
fi
sleep 0.3
FCGI_SOCKET=$ssock fcgi_req GET "$MOUNT/_health"
expect_status 200 "health on the syslog pool"
FCGI_SOCKET=$ssock fcgi_req GET "$MOUNT/o-999999" REMOTE_USER=alice HTTP_AUTHORIZATION="Basic $(printf alice:alice-secret | base64)"
expect_status 404 "GET with an Authorization header, straight on the socket"
wait_until 5 grep -q '"status":404' "$priv/syslog.out"
# local3 = 19: info is <19*8+6> = <158>.
line=$(grep '"status":404' "$priv/syslog.out" | head -n 1)
if [[ $line == "<158>"* ]]; then
	ok "syslog: local3.info priority <158>"
else
	fail "syslog priority" "got '${line:0:80}'"
fi
json=${line#*\]: }
jq -e '.principal == "alice" and .status == 404 and .code == "ORDER_NOT_FOUND"' <<<"$json" >/dev/null &&
    ok "syslog: the message is the JSON request line" || fail "syslog message" "got '$json'"
grep -q 'running as user idemorders' "$priv/syslog.out" &&
    ok "syslog: start-up messages arrive too" || fail "syslog start-up" "$(head -n 3 "$priv/syslog.out")"
[[ ! -s $priv/syslog-serve.out ]] && ok "syslog: nothing on stderr" ||
    fail "syslog stderr" "$(head -c 200 "$priv/syslog-serve.out")"
no_secrets "syslog" "$priv/syslog.out"
kill -TERM "$spid"
wait_until 20 eval '! alive '"$spid"

finish
