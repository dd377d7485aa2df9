#!/usr/bin/env bash
# The FastCGI socket is the identity boundary (CONTRACT.md §2): the pool
# runs as its own user, never as root; the unix socket is 0660 with the
# web server's group from the moment it exists; a path that is not a
# socket is never replaced; world-writable modes, any TCP listen without
# frontend_secret_file (loopback included) and one reachable from other
# hosts without allow_peers, a principal_var other than REMOTE_USER, a
# frontend_secret_var the web server fills itself and a weak frontend
# secret are refused; allow_peers is enforced on accept; and the frontend
# secret keeps out a local process that talks to the socket itself, on a
# unix or a loopback TCP socket.  About 30 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

RUNBIN=$RUNDIR/bin/idemorders	# a copy every user may run
POOL_USER=idemorders


priv=$(mktemp -d /tmp/idemorders-guard.XXXXXX)
chmod 0755 "$priv"
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		pkill -KILL -P "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$priv" "$T_TMP"
}
trap cleanup EXIT

# The stack's database settings, for private configs.
db_lines() {
	grep -E '^[[:space:]]*(db_[a-z_]*|mount)[[:space:]]*=' "$IDEMORDERS_CONF"
}

# ids PID: "uid gid groups" of a process (real, effective, saved, fs).
ids() {
	awk '/^Uid:/ { u = $2 " " $3 " " $4 " " $5 }
	    /^Gid:/ { g = $2 " " $3 " " $4 " " $5 }
	    /^Groups:/ { $1 = ""; s = $0 }
	    END { print u "|" g "|" s }' "/proc/$1/status"
}

# --- the stack's pool ------------------------------------------------------

uid=$(id -u "$POOL_USER")
gid=$(id -g "$POOL_USER")
master=$(cat "$SERVE_PIDFILE")
want="$uid $uid $uid $uid|$gid $gid $gid $gid"
got=$(ids "$master")
[[ ${got%|*} == "$want" ]] && ok "pool master runs as $POOL_USER ($want)" ||
    fail "pool master ids" "want $want, got $got"
case " ${got##*|} " in
*" 0 "*) fail "pool master groups" "still in group 0: ${got##*|}" ;;
*) ok "pool master has no root group (groups:${got##*|})" ;;
esac
worker=$(pgrep -P "$master" | head -n 1)
got=$(ids "$worker")
[[ ${got%|*} == "$want" ]] && ok "worker $worker runs as $POOL_USER" ||
    fail "worker ids" "want $want, got $got"

got=$(stat -c '%F %a %U %G' "$FCGI_SOCKET")
[[ $got == "socket 660 root www-data" ]] && ok "stack socket: $got" ||
    fail "stack socket" "want 'socket 660 root www-data', got '$got'"
if grep -rEn 'socket_mode[[:space:]]*=[[:space:]]*0?[0-7]?[0-7][2367]([^0-7]|$)' \
    "$REPO/tools" "$REPO/tests" "$REPO/httpd-conf" "$REPO/idemorders.conf.example" \
    "$RUNDIR"/*.conf 2>/dev/null | grep -v -e '22-guarded-socket.sh' -e 'tests/unit/test_conf.c'; then
	fail "world-writable socket_mode" "found in the tree or the stack (above)"
else
	ok "no world-writable socket_mode in tools/, tests/, httpd-conf/ or the stack"
fi

# --- the frontend secret ----------------------------------------------------

FCGI_NO_SECRET=1 fcgi_req GET "$MOUNT/_health"
expect_problem 403 FRONTEND_SECRET_MISMATCH
FCGI_NO_SECRET=1 fcgi_req -d '{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}' \
    POST "$MOUNT" REMOTE_USER=alice CONTENT_TYPE=application/json HTTP_IDEMPOTENCY_KEY=guard-$$
expect_problem 403 FRONTEND_SECRET_MISMATCH
expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE idem_key = 'guard-$$'" 0
FCGI_NO_SECRET=1 fcgi_req GET "$MOUNT/_health" IDEMORDERS_FRONTEND_SECRET=wrong
expect_problem 403 FRONTEND_SECRET_MISMATCH
# A secret sent as a request header arrives as HTTP_*, never as the variable.
FCGI_NO_SECRET=1 fcgi_req GET "$MOUNT/_health" \
    HTTP_IDEMORDERS_FRONTEND_SECRET="$(<"$RUNDIR/frontend.secret")"
expect_problem 403 FRONTEND_SECRET_MISMATCH
fcgi_req GET "$MOUNT/_health"
expect_status 200 "straight on the socket with the secret"
# What a PHP script running as www-data could do: connect and claim alice.
out=$(runuser -u www-data -- env -i REQUEST_METHOD=GET REQUEST_URI="$MOUNT/o-1" \
    REMOTE_USER=alice cgi-fcgi -bind -connect "$FCGI_SOCKET" 2>&1)
[[ $out == *"Status: 403"*FRONTEND_SECRET_MISMATCH* ]] &&
    ok "www-data on the socket without the secret: 403" ||
    fail "www-data on the socket" "$(printf '%s' "$out" | head -c 300)"
for s in $HTTP_SERVERS; do
	req GET "$(url_of "$s")$MOUNT/_health"
	expect_status 200 "$s passes the secret"
	req GET "$(url_of "$s")$MOUNT/o-999999" -u "$ALICE"
	expect_problem 404 ORDER_NOT_FOUND
done
got=$(stat -c '%a %U' "$RUNDIR/lighttpd-frontend-secret.conf" "$RUNDIR/apache-frontend-secret.conf" | sort -u)
[[ $got == "600 root" ]] && ok "web server secret includes are root's, 0600" ||
    fail "secret includes" "$got"
if runuser -u www-data -- cat "$RUNDIR/frontend.secret" >/dev/null 2>&1; then
	fail "frontend secret file" "www-data can read it"
else
	ok "www-data cannot read the frontend secret"
fi

# --- refusals at start-up -------------------------------------------------

# refuse NAME WANT [CONF LINES...]: serve must exit non-zero naming WANT.
refuse() {
	local name=$1 want=$2 rc
	shift 2
	printf '%s\n' "$@" >"$priv/r.conf"
	db_lines >>"$priv/r.conf"
	timeout 20 "$IDEMORDERS_BIN" serve -c "$priv/r.conf" </dev/null >"$priv/r.log" 2>&1
	rc=$?
	if [[ $rc -ne 0 && $rc -ne 124 ]] && grep -q -- "$want" "$priv/r.log"; then
		ok "refused: $name"
	else
		fail "refused: $name" "status $rc; log: $(tail -n 3 "$priv/r.log" | tr '\n' ' ')"
	fi
}

psock=$priv/sock
refuse "root without user" "does not serve as root" "listen = unix:$psock"
[[ ! -e $psock ]] && ok "no socket left after refusing root" ||
    fail "refusing root" "left $psock"
refuse "user = root" "is root" "listen = unix:$psock" "user = root"
refuse "socket_mode 0666" "socket_mode 0666 lets every local user" \
    "listen = unix:$psock" "socket_mode = 0666" "user = $POOL_USER"
PORT=$((18090 + ${IDEMORDERS_PORT_OFFSET:-0}))
refuse "TCP on 0.0.0.0 without allow_peers" "list the web servers in allow_peers" \
    "listen = 0.0.0.0:$PORT" "user = $POOL_USER"
refuse "principal_var = HTTP_X_REMOTE_USER" "may not be an HTTP_\* variable" \
    "listen = unix:$psock" "user = $POOL_USER" "principal_var = HTTP_X_REMOTE_USER"
refuse "TCP on 127.0.0.1 without frontend_secret_file" \
    "listen = 127.0.0.1:$PORT is a TCP socket: every local user can connect to it.*set frontend_secret_file" \
    "listen = 127.0.0.1:$PORT" "user = $POOL_USER"
refuse "TCP on 0.0.0.0 with allow_peers, without frontend_secret_file" \
    "listen = 0.0.0.0:$PORT is a TCP socket: every local user can connect to it.*set frontend_secret_file" \
    "listen = 0.0.0.0:$PORT" "allow_peers = 127.0.0.1" "user = $POOL_USER"
refuse "principal_var = QUERY_STRING (the client's query)" \
    "principal_var may not be QUERY_STRING.*REMOTE_USER" \
    "listen = unix:$psock" "user = $POOL_USER" "principal_var = QUERY_STRING"
refuse "frontend_secret_var = CONTENT_TYPE (a request header's value)" \
    "frontend_secret_var may not be CONTENT_TYPE" \
    "listen = unix:$psock" "user = $POOL_USER" "frontend_secret_var = CONTENT_TYPE"
printf 'x\n' >"$priv/weak.secret"
chmod 0640 "$priv/weak.secret"
refuse "a one-byte frontend secret" "line 1 of $priv/weak.secret has 1 characters; it needs at least 32" \
    "listen = unix:$psock" "user = $POOL_USER" "frontend_secret_file = $priv/weak.secret"
printf '%40s\n' '' >"$priv/blank.secret"
chmod 0640 "$priv/blank.secret"
refuse "a frontend secret of 40 spaces" "line 1 of $priv/blank.secret holds a character other than" \
    "listen = unix:$psock" "user = $POOL_USER" "frontend_secret_file = $priv/blank.secret"
# The secret the stack generated (as the documented generator makes it)
# meets the rule: 64 hex digits.
[[ $(head -n 1 "$RUNDIR/frontend.secret") =~ ^[0-9a-f]{64}$ ]] &&
    ok "the stack's generated frontend secret: 64 hex digits" ||
    fail "the stack's frontend secret" "$(head -n 1 "$RUNDIR/frontend.secret" | wc -c) bytes, not 64 hex digits"
echo "precious" >"$priv/notasock"
refuse "a regular file at the socket path" "exists and is not a socket" \
    "listen = unix:$priv/notasock" "user = $POOL_USER"
[[ $(cat "$priv/notasock") == precious ]] && ok "the file at the socket path is untouched" ||
    fail "file at the socket path" "changed or removed"
ln -s "$priv/notasock" "$priv/link"
refuse "a symlink at the socket path" "exists and is not a socket" \
    "listen = unix:$priv/link" "user = $POOL_USER"

# Not root, socket_group a group the user is not in: a clear error and
# no stale socket (chown: Operation not permitted).
udir=$priv/user
install -d -m 0755 -o "$POOL_USER" "$udir"
{
	echo "listen = unix:$udir/sock"
	echo "socket_group = www-data"
	echo "user = $POOL_USER"
	db_lines
} >"$udir/c.conf"
chmod 0644 "$udir/c.conf"
timeout 20 runuser -u "$POOL_USER" -- "$RUNBIN" serve -c "$udir/c.conf" </dev/null >"$udir/log" 2>&1
rc=$?
if [[ $rc -ne 0 && $rc -ne 124 ]] && grep -q 'cannot give .* to that group' "$udir/log"; then
	ok "as $POOL_USER with socket_group www-data: $(grep -o 'socket_group.*' "$udir/log" | head -c 120)"
else
	fail "non-root socket_group" "status $rc; $(tail -n 2 "$udir/log" | tr '\n' ' ')"
fi
[[ ! -e $udir/sock ]] && ok "no stale socket after the chown failure" ||
    fail "stale socket" "$(ls -l "$udir/sock")"

# --- allow_peers on accept ----------------------------------------------------

# serve_tcp PEERS [HOST]: a private pool on HOST:PORT (0.0.0.0) allowing
# PEERS (none: empty), with the stack's frontend secret.
serve_tcp() {
	{
		echo "listen = ${2:-0.0.0.0}:$PORT"
		[[ -z $1 ]] || echo "allow_peers = $1"
		echo "frontend_secret_file = $RUNDIR/frontend.secret"
		echo "user = $POOL_USER"
		echo "workers = 1"
		db_lines
	} >"$priv/tcp.conf"
	: >"$priv/tcp.log"
	setsid "$IDEMORDERS_BIN" serve -c "$priv/tcp.conf" </dev/null >"$priv/tcp.log" 2>&1 &
	TCP_PID=$!
	PIDS+=("$TCP_PID")
	wait_until 10 eval 'grep -q "serving" "$priv/tcp.log" && [[ -n $(pgrep -P '"$TCP_PID"') ]]'
	sleep 0.3
}
stop_tcp() {
	kill -TERM "$TCP_PID"
	wait_until 20 eval '! kill -0 '"$TCP_PID"' 2>/dev/null'
	wait "$TCP_PID" 2>/dev/null
}

serve_tcp "192.0.2.10, 192.0.2.11"
FCGI_SOCKET=127.0.0.1:$PORT fcgi_req GET "$MOUNT/_health"
[[ $STATUS == 000 ]] && ok "allow_peers without 127.0.0.1: the connection is closed unanswered" ||
    fail "allow_peers refusal" "status $STATUS"
wait_until 5 grep -q 'refused a connection from 127.0.0.1: not in allow_peers' "$priv/tcp.log" &&
    ok "the refusal is logged with the peer's address" ||
    fail "allow_peers log" "$(tail -n 2 "$priv/tcp.log" | tr '\n' ' ')"
stop_tcp
serve_tcp "192.0.2.10, 127.0.0.1"
FCGI_SOCKET=127.0.0.1:$PORT fcgi_req GET "$MOUNT/_health"
expect_status 200 "allow_peers with 127.0.0.1"
stop_tcp

# --- a loopback TCP listen: every local user can connect, the secret keeps
# out whoever does not send it ---------------------------------------------

serve_tcp "" 127.0.0.1
FCGI_SOCKET=127.0.0.1:$PORT fcgi_req GET "$MOUNT/_health"
expect_status 200 "listen = 127.0.0.1 with frontend_secret_file: the web server's request"
out=$(runuser -u nobody -- env -i REQUEST_METHOD=GET REQUEST_URI="$MOUNT/o-1" \
    REMOTE_USER=alice timeout 10 cgi-fcgi -bind -connect "127.0.0.1:$PORT" 2>&1)
[[ $out == *"Status: 403"*FRONTEND_SECRET_MISMATCH* ]] &&
    ok "nobody on the loopback TCP socket without the secret: 403" ||
    fail "nobody on the loopback TCP socket" "$(printf '%s' "$out" | head -c 300)"
stop_tcp

finish
