#!/usr/bin/env bash
# The prefork supervisor: a killed worker is replaced while the others keep
# serving; SIGHUP re-reads the config and replaces the workers; SIGTERM
# stops the master and every worker and removes the socket.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

# The live (non-zombie) children of PID, one per line, sorted.
children() {
	local p
	for p in $(pgrep -P "$1" 2>/dev/null); do
		alive "$p" && echo "$p"
	done | LC_ALL=C sort
}

# True while PID exists and is not a zombie.
alive() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $st && $st != Z ]]
}


count_is() { [[ $(children "$1" | wc -l) -eq $2 ]]; }

# N health requests through URL; prints how many answered 200.
health_ok_count() {
	local url=$1 n=$2 i good=0 code
	for ((i = 0; i < n; i++)); do
		code=$(curl -s -o /dev/null -m 10 -w '%{http_code}' "$url$MOUNT/_health")
		[[ $code == 200 ]] && good=$((good + 1))
	done
	echo "$good"
}

# --- the test stack's pool: kill -9 a worker ------------------------------

master=$(cat "$SERVE_PIDFILE" 2>/dev/null)
if [[ -n $master ]] && alive "$master"; then
	ok "pool master $master is running"
else
	fail "pool master" "no live pid in $SERVE_PIDFILE"
	finish
fi
want=$(sed -n 's/^[[:space:]]*workers[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' "$IDEMORDERS_CONF" | tail -n 1)
want=${want:-4}
before=$(children "$master")
if [[ $(echo "$before" | grep -c .) -eq $want ]]; then
	ok "pool has $want workers"
else
	fail "pool workers" "expected $want, got: ${before//$'\n'/ }"
fi

victim=$(echo "$before" | head -n 1)
kill -KILL "$victim"
# The other workers answer while the victim is replaced.
good=$(health_ok_count "$LIGHTTPD_URL" 20)
[[ $good -eq 20 ]] && ok "lighttpd health 20/20 right after kill -9 of worker $victim" ||
    fail "lighttpd health after kill -9" "$good/20 answered 200"

if wait_until 5 eval '! alive '"$victim"' && count_is '"$master $want"; then
	ok "worker $victim replaced: $want workers again"
else
	fail "respawn" "children now: $(children "$master" | tr '\n' ' ')"
fi
after=$(children "$master")
new=$(LC_ALL=C comm -13 <(echo "$before") <(echo "$after") | grep -c .)
[[ $new -eq 1 ]] && ok "exactly one new worker pid" ||
    fail "new worker pid" "before: ${before//$'\n'/ }; after: ${after//$'\n'/ }"
alive "$master" && ok "master $master survived the worker's death" ||
    fail "master" "master $master is gone"

for s in $ALL_SERVERS; do
	good=$(health_ok_count "$(url_of "$s")" 20)
	[[ $good -eq 20 ]] && ok "$s health 20/20 after the respawn" ||
	    fail "$s health after the respawn" "$good/20 answered 200"
done

# The stack's socket lives in a directory of the user the pool runs as, as
# docs/sysadmin.md's "Processes and the socket" asks, so that the pool can remove its
# own socket at stop (the private serve below, set up the same way, shows
# that it does).
pool_user=$(sed -n 's/^[[:space:]]*user[[:space:]]*=[[:space:]]*//p' "$IDEMORDERS_CONF" | tail -n 1)
sock_dir=$(dirname -- "$FCGI_SOCKET")
owner=$(stat -c %U "$sock_dir" 2>/dev/null)
if [[ -n $pool_user && $owner == "$pool_user" ]]; then
	ok "the stack's socket directory $sock_dir belongs to the pool's user $pool_user"
else
	fail "socket directory" "$sock_dir belongs to '${owner:-?}', the pool runs as '${pool_user:-?}': the pool cannot remove its socket at stop"
fi

# --- a private serve: SIGHUP and SIGTERM -----------------------------------

priv=$(mktemp -d /tmp/idemorders-supervisor.XXXXXX)
chmod 0755 "$priv"
# The pool drops to the stack's pool user, who must be able to remove the
# socket at stop.
chown "$pool_user" "$priv"
pconf=$priv/idemorders.conf
psock=$priv/idemorders.sock
ppid=
cleanup() {
	local p
	if [[ -n $ppid ]] && alive "$ppid"; then
		kill -KILL $(children "$ppid") "$ppid" 2>/dev/null
	fi
	for p in $(pgrep -f -- "$pconf" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$priv" "$T_TMP"
}
trap cleanup EXIT

write_conf() {
	{
		echo "listen = unix:$psock"
		echo "socket_mode = 0600"
		echo "workers = $1"
		echo "log = stderr"
		echo "log_level = debug"
		# The database settings of the test stack.
		grep -E '^[[:space:]]*(db_[a-z_]*|mount|principal_var|user|group)[[:space:]]*=' "$IDEMORDERS_CONF"
	} >"$pconf.tmp"
	mv -f "$pconf.tmp" "$pconf"
}

write_conf 2
setsid "$IDEMORDERS_BIN" serve -c "$pconf" </dev/null >"$priv/serve.log" 2>&1 &
ppid=$!
if wait_until 10 eval '[[ -S '"$psock"' ]] && count_is '"$ppid"' 2'; then
	ok "private serve $ppid: socket and 2 workers"
else
	fail "private serve start" "socket: $(ls -l "$psock" 2>&1); workers: $(children "$ppid" | tr '\n' ' '); log: $(tail -n 5 "$priv/serve.log")"
fi
FCGI_SOCKET=$psock fcgi_req GET "$MOUNT/_health"
expect_status 200 "private serve health"

old=$(children "$ppid")
write_conf 3
kill -HUP "$ppid"
if wait_until 10 eval 'count_is '"$ppid"' 3'; then
	sleep 0.5
	count_is "$ppid" 3 && ok "SIGHUP with workers = 3: 3 workers" ||
	    fail "SIGHUP" "workers now: $(children "$ppid" | tr '\n' ' ')"
else
	fail "SIGHUP" "workers now: $(children "$ppid" | tr '\n' ' ')"
fi
alive "$ppid" && ok "master $ppid survived SIGHUP" || fail "SIGHUP" "master exited"
stale=$(LC_ALL=C comm -12 <(echo "$old") <(children "$ppid") | grep -c .)
[[ $stale -eq 0 ]] && ok "SIGHUP replaced every old worker" ||
    fail "SIGHUP" "$stale old workers still serve"
FCGI_SOCKET=$psock fcgi_req GET "$MOUNT/_health"
expect_status 200 "private serve health after SIGHUP"

all=$(children "$ppid")
kill -TERM "$ppid"
if wait_until 5 eval '! alive '"$ppid"; then
	ok "SIGTERM: master $ppid exited"
else
	fail "SIGTERM" "master $ppid still runs after 5 s"
fi
left=
for p in $all; do
	alive "$p" && left+="$p "
done
[[ -z $left ]] && ok "SIGTERM: every worker exited" || fail "SIGTERM" "workers left: $left"
[[ ! -e $psock ]] && ok "SIGTERM: socket removed" || fail "SIGTERM" "$psock still exists"
left=$(pgrep -f -- "$pconf" | tr '\n' ' ')
[[ -z $left ]] && ok "SIGTERM: no process runs with $pconf" || fail "SIGTERM" "still running: $left"
wait "$ppid" 2>/dev/null
rc=$?
[[ $rc -eq 0 ]] && ok "SIGTERM: master exit status 0" || fail "SIGTERM" "master exit status $rc"
ppid=

finish
