#!/usr/bin/env bash
# Socket activation and the notify protocol of the installed package,
# without a running systemd:
#  - systemd-socket-activate -l /run/idemorders/idemorders.sock starts
#    /usr/sbin/idemorders serve on the first connection with the socket
#    on fd 3 (LISTEN_FDS=1, LISTEN_PID); the socket has the unit's mode
#    and group (0660 www-data, set here as idemorders.socket sets them);
#  - a create and its replay through lighttpd from the installed snippet;
#  - with NOTIFY_SOCKET, the master sends READY=1 once its workers serve,
#    RELOADING=1 then READY=1 on SIGHUP, STOPPING=1 on SIGTERM.
# Builds and installs the package like 72-debian-package.sh (PKG_DEB=FILE
# reuses a built one), and purges it at the end.
# Run: IDEMORDERS_STACK=test tools/dev test tests/package/socket-activation.sh
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/package.sh"

trap pkg_cleanup EXIT
pkg_lock
if [[ -n ${PKG_DEB:-} ]]; then
	mkdir -p "$PKG_WORK"
else
	pkg_build || finish
fi
pkg_install || finish
pkg_use_test_db || finish
/usr/sbin/idemorders migrate -c "$PKG_CONF" >/dev/null 2>&1 ||
    { fail "migrate" "idemorders migrate failed"; finish; }
printf 'A-10,KRW,6000,100\n' >"$T_TMP/stock.csv"
/usr/sbin/idemorders stock import "$T_TMP/stock.csv" >/dev/null ||
    { fail "stock import" "failed"; finish; }
pkg_set_key user idemorders
pkg_set_key group idemorders
pkg_htpasswd
install -d -m 0755 "$PKG_RUN"

# The notify socket: every datagram the master sends, one per line.
NOTIFY=$PKG_RUN/notify.sock
socat -u UNIX-RECV:"$NOTIFY" OPEN:"$PKG_RUN/notify.log",creat,append 9>&- 8>&- &
PKG_PIDS+=("$!")
pkg_wait test -S "$NOTIFY" || { fail "notify socket" "socat did not start"; finish; }
chmod 0666 "$NOTIFY"

rm -f "$PKG_SOCK"
setsid systemd-socket-activate -E NOTIFY_SOCKET="$NOTIFY" -l "$PKG_SOCK" \
    /usr/sbin/idemorders serve -c "$PKG_CONF" </dev/null \
    >>"$PKG_RUN/serve.log" 2>&1 9>&- 8>&- &
PKG_SERVE_PID=$!
PKG_PIDS+=("$PKG_SERVE_PID")
if pkg_wait test -S "$PKG_SOCK"; then
	ok "systemd-socket-activate listens on $PKG_SOCK"
else
	fail "systemd-socket-activate" "no socket: $(tail -n 5 "$PKG_RUN/serve.log" | tr '\n' ' ')"
	finish
fi
# What idemorders.socket does: SocketGroup=www-data, SocketMode=0660.
chgrp www-data "$PKG_SOCK"
chmod 0660 "$PKG_SOCK"

pkg_lighttpd || finish
key=$(unique_key activated)
ORDER='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}'
post "$PKG_LIGHTTPD_URL" "$ALICE" "$key" "$ORDER"
expect_status 201 "first request through lighttpd starts the activated service"
first=$BODY
post "$PKG_LIGHTTPD_URL" "$ALICE" "$key" "$ORDER"
expect_status 201 "replay on the activated socket"
expect_header idempotent-replayed true "replay on the activated socket"
[[ $BODY == "$first" ]] && ok "replay has the same bytes" || fail "replay body" "'$BODY'"
grep -q 'socket activation: serving fd 3' "$PKG_RUN/serve.log" &&
    ok "the master serves the activated socket (fd 3), not its listen line" ||
    fail "activation log" "$(tail -n 5 "$PKG_RUN/serve.log" | tr '\n' ' ')"
[[ $(tr '\0' ' ' <"/proc/$PKG_SERVE_PID/cmdline" 2>/dev/null) == "/usr/sbin/idemorders serve"* ]] &&
    ok "systemd-socket-activate exec'd serve (LISTEN_PID is its pid)" ||
    fail "activated pid" "$(tr '\0' ' ' <"/proc/$PKG_SERVE_PID/cmdline" 2>/dev/null)"
kid=$(pgrep -P "$PKG_SERVE_PID" | head -n 1)
[[ -n $kid && $(ps -o user= -p "$kid") == idemorders ]] &&
    ok "workers run as idemorders" || fail "privilege drop" "worker '$kid' runs as '$(ps -o user= -p "$kid")'"

# notify_has N WORD: the notify log has WORD at least N times.
notify_has() {
	[[ $(grep -o -- "$2" "$PKG_RUN/notify.log" 2>/dev/null | wc -l) -ge $1 ]]
}
pkg_wait notify_has 1 READY=1 && ok "sd_notify: READY=1" ||
    fail "sd_notify READY" "$(tr '\n' ' ' <"$PKG_RUN/notify.log")"
kill -HUP "$PKG_SERVE_PID"
pkg_wait notify_has 1 RELOADING=1 && pkg_wait notify_has 2 READY=1 &&
    ok "sd_notify on SIGHUP: RELOADING=1, then READY=1" ||
    fail "sd_notify reload" "$(tr '\n' ' ' <"$PKG_RUN/notify.log")"
post "$PKG_LIGHTTPD_URL" "$ALICE" "$(unique_key activated)" "$ORDER"
expect_status 201 "create after the reload"
kill -TERM "$PKG_SERVE_PID"
pkg_wait notify_has 1 STOPPING=1 && ok "sd_notify on SIGTERM: STOPPING=1" ||
    fail "sd_notify stop" "$(tr '\n' ' ' <"$PKG_RUN/notify.log")"
pkg_wait sh -c "! kill -0 $PKG_SERVE_PID 2>/dev/null" &&
    ok "serve exits on SIGTERM" || fail "stop" "pid $PKG_SERVE_PID still runs"

finish
