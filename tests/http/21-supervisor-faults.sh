#!/usr/bin/env bash
# The supervisor under faults: a worker whose wait fails is respawned
# under the rate limit (no fork loop); on SIGTERM the socket is gone at
# once (new connections are refused, not queued) while the request in
# hand still finishes; SIGHUP with changed socket settings says that they
# need a restart.  The private pool runs as the stack's pool user from
# the start (runuser), so that prlimit may change its limits (a master
# that dropped from root is not dumpable).  About 25 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

alive() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $st && $st != Z ]]
}
children() {
	local p
	for p in $(pgrep -P "$1" 2>/dev/null); do
		alive "$p" && echo "$p"
	done
}
count_is() { [[ $(children "$1" | wc -l) -eq $2 ]]; }

POOL_USER=idemorders
RUNBIN=$RUNDIR/bin/idemorders	# a copy every user may run
priv=$(mktemp -d /tmp/idemorders-supfault.XXXXXX)
chmod 0755 "$priv"
chown "$POOL_USER" "$priv"
pconf=$priv/idemorders.conf
psock=$priv/sock
plog=$priv/serve.log
ppid=
cleanup() {
	if [[ -n $ppid ]] && alive "$ppid"; then
		# shellcheck disable=SC2046
		kill -KILL $(children "$ppid") "$ppid" 2>/dev/null
	fi
	rm -rf "$priv" "$T_TMP"
}
trap cleanup EXIT

# write_conf WORKERS SOCKET_MODE
write_conf() {
	{
		echo "listen = unix:$psock"
		echo "socket_mode = $2"
		echo "workers = $1"
		echo "log = stderr"
		echo "log_level = debug"
		echo "request_deadline = 20s"
		grep -E '^[[:space:]]*(db_[a-z_]*|mount|principal_var|user|group)[[:space:]]*=' "$IDEMORDERS_CONF"
	} >"$pconf.tmp"
	chmod 0644 "$pconf.tmp"
	mv -f "$pconf.tmp" "$pconf"
}

start() {
	rm -f "$psock"
	: >"$plog"
	setsid setpriv --reuid="$POOL_USER" --regid="$POOL_USER" --init-groups -- "$RUNBIN" serve -c "$pconf" </dev/null >>"$plog" 2>&1 &
	ppid=$!
	if wait_until 15 eval '[[ -S '"$psock"' ]] && count_is '"$ppid $1"; then
		ok "private serve $ppid: socket and $1 workers"
	else
		fail "private serve start" "log: $(tail -n 5 "$plog" | tr '\n' ' ')"
	fi
}

stop() {
	kill -TERM "$ppid" 2>/dev/null
	wait_until 30 eval '! alive '"$ppid"
	wait "$ppid" 2>/dev/null
	ppid=
}

# --- a worker whose ppoll() fails is a crash, not a recycle ---------------
# ppoll() fails with EINVAL when nfds exceeds RLIMIT_NOFILE: with the
# master's soft limit at 0, every new worker fails its first wait.
write_conf 2 0660
start 2
spawns_before=$(grep -c 'worker [0-9]* started' "$plog")
setpriv --reuid="$POOL_USER" --regid="$POOL_USER" --init-groups -- prlimit --pid "$ppid" --nofile=0: ||
    fail "prlimit" "cannot lower the master's RLIMIT_NOFILE"
victim=$(children "$ppid" | head -n 1)
kill -KILL "$victim"
sleep 4
spawns=$(($(grep -c 'worker [0-9]* started' "$plog") - spawns_before))
if [[ $spawns -ge 1 && $spawns -le 5 ]]; then
	ok "failing wait: $spawns respawns in 4 s (rate-limited)"
else
	fail "failing wait" "$spawns respawns in 4 s (a fork loop?); log: $(grep -v ' started' "$plog" | tail -n 3 | tr '\n' ' ')"
fi
grep -q 'exited with status 1; respawning in' "$plog" && ok "the log names the respawn delay" ||
    fail "respawn delay" "no 'respawning in' line: $(tail -n 3 "$plog" | tr '\n' ' ')"
setpriv --reuid="$POOL_USER" --regid="$POOL_USER" --init-groups -- prlimit --pid "$ppid" --nofile=1024:
if wait_until 60 eval 'count_is '"$ppid"' 2'; then
	sleep 1
	FCGI_SOCKET=$psock fcgi_req GET "$MOUNT/_health"
	expect_status 200 "health once the limit is back"
else
	fail "respawn after the fault" "workers: $(children "$ppid" | tr '\n' ' ')"
fi

# --- SIGHUP with a changed socket setting ---------------------------------
write_conf 2 0600
kill -HUP "$ppid"
if wait_until 10 grep -q 'socket_mode.*restart' "$plog"; then
	ok "SIGHUP: a changed socket_mode is reported as needing a restart"
else
	fail "SIGHUP socket_mode" "no warning: $(tail -n 3 "$plog" | tr '\n' ' ')"
fi
mode=$(stat -c %a "$psock")
[[ $mode == 660 ]] && ok "the running socket keeps mode 0660" ||
    fail "socket mode after SIGHUP" "$mode"
stop

# --- SIGTERM: the request in hand finishes, new connections are refused ----
write_conf 1 0660
start 1
unique_name key stop
body='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}'
printf '%s' "$body" | timeout 60 env -i REQUEST_METHOD=POST REQUEST_URI="$MOUNT" \
    SCRIPT_NAME="$MOUNT" PATH_INFO= QUERY_STRING= SERVER_PROTOCOL=HTTP/1.1 \
    GATEWAY_INTERFACE=CGI/1.1 REMOTE_USER=alice CONTENT_TYPE=application/json \
    CONTENT_LENGTH=${#body} HTTP_IDEMPOTENCY_KEY="$key" \
    HTTP_X_IDEMORDERS_FAULT=before_ledger_insert=sleep8000 \
    cgi-fcgi -bind -connect "$psock" >"$priv/slow.out" 2>&1 &
slow=$!
# The one worker is busy with the slow request once it sleeps in the
# fault point; then stop.
worker_asleep "$ppid" >/dev/null ||
    fail "slow request" "the worker is not asleep in before_ledger_insert"
kill -TERM "$ppid"
wait_until 3 eval '[[ ! -e '"$psock"' ]]'
FCGI_SOCKET=$psock fcgi_req GET "$MOUNT/_health"
if kill -0 "$slow" 2>/dev/null; then
	ok "while the request in hand runs, the next connection fails at once"
	[[ $STATUS == 000 ]] && ok "the next connection is refused (status $STATUS)" ||
	    fail "the next connection" "got status $STATUS"
else
	fail "stop order" "the new connection ended only after the request in hand"
fi
[[ ! -e $psock ]] && ok "the socket is removed first" ||
    fail "socket at stop" "$psock still exists while stopping"
wait "$slow"
grep -q '^Status: 201' "$priv/slow.out" && ok "the request in hand finished: 201" ||
    fail "request in hand" "$(head -c 300 "$priv/slow.out")"
wait_until 30 eval '! alive '"$ppid" && ok "master exited" || fail "master" "still runs"
wait "$ppid" 2>/dev/null
ppid=

finish
