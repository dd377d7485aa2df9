#!/usr/bin/env bash
# systemd without systemd: the notification datagrams (READY=1 once the
# workers serve, RELOADING=1 with MONOTONIC_USEC then READY=1 on SIGHUP,
# STOPPING=1 on SIGTERM) to a path and to an abstract $NOTIFY_SOCKET; and
# socket activation (LISTEN_FDS, fd 3) with systemd-socket-activate, the
# activated pool answering through lighttpd and Apache.  About 20 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
# shellcheck source=tests/lib/orders.sh
. "$(dirname -- "$0")/../lib/orders.sh"
# shellcheck source=tests/lib/pool.sh
. "$(dirname -- "$0")/../lib/pool.sh"


priv=$(mktemp -d /tmp/idemorders-systemd.XXXXXX)
chmod 0755 "$priv"
PIDS=()
trap private_cleanup EXIT

# listen_notify ADDRESS FILE: receive datagrams at ADDRESS (a path, or
# @name for an abstract socket), one line each in FILE ('|' for newlines).
listen_notify() {
	: >"$2"
	/usr/bin/python3 -u - "$1" "$2" <<'EOF' &
import socket, sys
addr, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
with open(out, "a") as f:
    f.write("LISTENING\n")
    f.flush()
    while True:
        d = s.recv(4096)
        f.write(d.decode("utf-8", "replace").replace("\n", "|") + "\n")
        f.flush()
EOF
	NOTIFY_PID=$!
	PIDS+=("$NOTIFY_PID")
	disown "$NOTIFY_PID"
	wait_until 10 grep -q LISTENING "$2"
}

pconf=$priv/idemorders.conf
psock=$priv/sock
{
	echo "listen = unix:$psock"
	echo "workers = 2"
	echo "log_level = debug"
	grep -E '^[[:space:]]*(db_[a-z_]*|mount|user|group)[[:space:]]*=' "$IDEMORDERS_CONF"
} >"$pconf"

# --- sd_notify to a socket path ----------------------------------------------

notes=$priv/notify.out
listen_notify "$priv/notify.sock" "$notes"
NOTIFY_SOCKET=$priv/notify.sock setsid "$IDEMORDERS_BIN" serve -c "$pconf" \
    </dev/null >"$priv/serve.log" 2>&1 &
ppid=$!
PIDS+=("$ppid")
if wait_until 15 grep -q '^READY=1' "$notes"; then
	ok "READY=1 received"
else
	fail "READY=1" "got: $(tr '\n' ' ' <"$notes"); log: $(tail -n 3 "$priv/serve.log" | tr '\n' ' ')"
fi
FCGI_SOCKET=$psock fcgi_req GET "$MOUNT/_health"
expect_status 200 "health once READY=1 was sent"
kill -HUP "$ppid"
if wait_until 15 eval '[[ $(grep -c "^READY=1" "$notes") -ge 2 ]]'; then
	ok "READY=1 again after SIGHUP"
else
	fail "reload READY=1" "got: $(tr '\n' ' ' <"$notes")"
fi
line=$(grep '^RELOADING=1' "$notes" | head -n 1)
if [[ $line =~ ^RELOADING=1\|MONOTONIC_USEC=([0-9]+)$ ]]; then
	now_us=$(awk '{ printf "%d", $1 * 1000000 }' /proc/uptime)
	ok "RELOADING=1 with MONOTONIC_USEC=${BASH_REMATCH[1]}"
	# CLOCK_MONOTONIC and /proc/uptime share the boot epoch (give or take
	# suspended time, none here): the stamp is from this run.
	diff_us=$((now_us - BASH_REMATCH[1]))
	((diff_us < 0)) && diff_us=$((-diff_us))
	[[ $diff_us -lt 600000000 ]] && ok "MONOTONIC_USEC is CLOCK_MONOTONIC" ||
	    fail "MONOTONIC_USEC" "${BASH_REMATCH[1]} vs uptime $now_us"
else
	fail "RELOADING=1" "got: $(tr '\n' ' ' <"$notes")"
fi
order=$(grep -v LISTENING "$notes" | cut -d'|' -f1 | tr '\n' ' ')
[[ $order == "READY=1 RELOADING=1 READY=1 " ]] && ok "order: $order" ||
    fail "notification order" "$order"
kill -TERM "$ppid"
wait_until 15 grep -q '^STOPPING=1' "$notes" && ok "STOPPING=1 on SIGTERM" ||
    fail "STOPPING=1" "got: $(tr '\n' ' ' <"$notes")"
wait_until 20 eval '! alive '"$ppid"
wait "$ppid" 2>/dev/null
kill "$NOTIFY_PID" 2>/dev/null

# --- sd_notify to an abstract socket --------------------------------------------

unique_name abstract @idemorders-notify
listen_notify "$abstract" "$notes"
NOTIFY_SOCKET=$abstract setsid "$IDEMORDERS_BIN" serve -c "$pconf" \
    </dev/null >"$priv/serve2.log" 2>&1 &
ppid=$!
PIDS+=("$ppid")
wait_until 15 grep -q '^READY=1' "$notes" && ok "READY=1 to the abstract socket $abstract" ||
    fail "abstract NOTIFY_SOCKET" "got: $(tr '\n' ' ' <"$notes"); log: $(tail -n 3 "$priv/serve2.log" | tr '\n' ' ')"
kill -TERM "$ppid"
wait_until 15 grep -q '^STOPPING=1' "$notes" && ok "STOPPING=1 to the abstract socket" ||
    fail "abstract STOPPING=1" "got: $(tr '\n' ' ' <"$notes")"
wait_until 20 eval '! alive '"$ppid"
wait "$ppid" 2>/dev/null
kill "$NOTIFY_PID" 2>/dev/null

# --- socket activation behind lighttpd and Apache ---------------------------------
# The stack's pool makes way for the same config started by
# systemd-socket-activate on the stack's socket path; it is restarted at
# the end as tools/dev starts it.

pool_stop 30 || fail "stack pool" "did not stop"
alog=$priv/activated.log
setsid systemd-socket-activate -l "$FCGI_SOCKET" "$IDEMORDERS_BIN" serve \
    -c "$IDEMORDERS_CONF" </dev/null >"$alog" 2>&1 &
apid=$!
PIDS+=("$apid")
wait_until 10 eval '[[ -S '"$FCGI_SOCKET"' ]]'
# What a .socket unit's SocketGroup=www-data and SocketMode=0660 do.
chgrp www-data "$FCGI_SOCKET" && chmod 0660 "$FCGI_SOCKET"
for s in $HTTP_SERVERS; do
	req GET "$(url_of "$s")$MOUNT/_health"
	expect_status 200 "$s health on the activated socket"
done
grep -q 'serving the socket passed by socket activation' "$alog" &&
    ok "the master serves the activated socket (fd 3)" ||
    fail "socket activation" "$(tail -n 5 "$alog" | tr '\n' ' ')"
grep -q '"listen = unix:.*" is not used' "$alog" &&
    ok "the configured listen is reported unused" ||
    fail "listen under activation" "no such log line"
[[ $(awk '/^Uid:/ { print $2 }' "/proc/$apid/status") == "$(id -u idemorders)" ]] &&
    ok "the activated master dropped to idemorders" ||
    fail "activated master uid" "$(grep Uid "/proc/$apid/status")"
unique_name key act
for s in $HTTP_SERVERS; do
	post "$(url_of "$s")" "$ALICE" "$key" \
	    '{"currency":"KRW","items":[{"sku":"B-20","qty":1}],"amount":2500}'
	if [[ $s == lighttpd ]]; then
		expect_status 201 "create through lighttpd on the activated socket"
	else
		expect_status 201 "replay through apache on the activated socket"
		expect_header idempotent-replayed true
	fi
done
kill -TERM "$apid"
wait_until 30 eval '! alive '"$apid" && ok "the activated pool stops on SIGTERM" ||
    fail "activated stop" "still runs"
wait "$apid" 2>/dev/null

# Back to the stack's own pool.
if pool_restore; then
	sleep 0.5
	req GET "$LIGHTTPD_URL$MOUNT/_health"
	expect_status 200 "the stack's pool is back"
else
	fail "stack pool restart" "no socket"
fi

finish
