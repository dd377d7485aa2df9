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

pkg_lighttpd || finish
pkg_activation_checks

finish
