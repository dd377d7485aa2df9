#!/usr/bin/env bash
# The Debian package, from source to purge, on this machine:
#  - dpkg-buildpackage -us -uc -b builds idemorders_*.deb from a copy of
#    the tree under /var/tmp, a release build (the installed binary has
#    no fault injection) whose make check runs the unit and the database
#    tests (against a database of its own; under CI they may not skip);
#    lintian reports no error;
#  - dpkg -i installs the binary, the config (a conffile, root:idemorders
#    0640), the idemorders system user, the schema, the units, the
#    tmpfiles.d entry, /run/idemorders, the man pages and both web server
#    snippets; without a database, postinst says what to do and succeeds;
#  - with the config pointed at a database of its own on the test stack,
#    `dpkg-reconfigure idemorders` applies the schema (postinst runs
#    `idemorders migrate`), and `idemorders stock import` loads stock;
#  - /usr/sbin/idemorders serve, started with the installed config,
#    answers a create and its replay through lighttpd (the installed
#    conf-available/50-idemorders.conf and the modules it depends on) and
#    through Apache (conf-available/idemorders.conf, with a default
#    virtual host that inherits it): 401 without a user,
#    201, then the same bytes with Idempotent-Replayed: true; its workers
#    run as idemorders;
#  - with metrics = on, /orders/_metrics answers loopback without a user
#    through both snippets and counts the creates;
#  - with frontend_secret_file and lighttpd's root-only include as the
#    snippet documents them, lighttpd is served and the bare socket 403;
#  - systemd-socket-activate -l /run/idemorders/idemorders.sock starts
#    serve on fd 3, which answers through lighttpd, and serve sends
#    READY=1, RELOADING=1/READY=1 on SIGHUP, STOPPING=1 on SIGTERM;
#  - dpkg --purge leaves nothing: no file of the package, no config, no
#    user or group (a user idemorders that was there before the package,
#    such as the test stack's, stays), no /run/idemorders, no enabled
#    unit; the database and its orders stay.
# Takes about a minute, most of it dpkg-buildpackage.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/package.sh"

trap pkg_cleanup EXIT
pkg_lock
need_port_free() {
	if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
		fail "port $1" "already in use"
		finish
	fi
}
need_port_free "$PKG_LIGHTTPD_PORT"
need_port_free "$PKG_APACHE_PORT"

# --- build (PKG_DEB=FILE installs a package built before instead) ---------------
if [[ -n ${PKG_DEB:-} ]]; then
	mkdir -p "$PKG_WORK/src"
	cp "$PKG_DEB" "$PKG_WORK/" && PKG_DEB=$PKG_WORK/$(basename -- "$PKG_DEB")
else
	pkg_build || finish
fi
pkg_lintian

# --- install ---------------------------------------------------------------------
# A user idemorders made by someone else (the test stack runs its pool as
# one) must survive install and purge; one made by postinst must go.
PRE_USER=$(getent passwd idemorders)
pkg_install || finish
if strings /usr/sbin/idemorders | grep -q HTTP_X_IDEMORDERS_FAULT; then
	fail "release build" "/usr/sbin/idemorders reads X-Idemorders-Fault (fault injection)"
else
	ok "release build: /usr/sbin/idemorders has no fault injection"
fi
grep -q "cannot be reached yet" "$PKG_WORK/install.log" &&
    ok "postinst without a database: says what to do, install succeeds" ||
    fail "postinst message" "$(tail -n 5 "$PKG_WORK/install.log" | tr '\n' ' ')"
for f in /usr/sbin/idemorders /usr/share/idemorders/schema/001_initial.sql \
    /lib/systemd/system/idemorders.service /lib/systemd/system/idemorders.socket \
    /lib/systemd/system/idemorders-expire.service /lib/systemd/system/idemorders-expire.timer \
    /usr/lib/tmpfiles.d/idemorders.conf /etc/apache2/conf-available/idemorders.conf \
    /etc/lighttpd/conf-available/50-idemorders.conf; do
	[[ -f $f ]] && ok "installed $f" || fail "installed files" "no $f"
done
[[ $(stat -c '%U:%G %a' "$PKG_CONF") == "root:idemorders 640" ]] &&
    ok "$PKG_CONF is root:idemorders 0640" || fail "config permissions" "$(stat -c '%U:%G %a' "$PKG_CONF")"
dpkg-query -W -f='${Conffiles}\n' idemorders | grep -q " $PKG_CONF " &&
    ok "$PKG_CONF is a conffile" || fail "conffiles" "$(dpkg-query -W -f='${Conffiles}' idemorders)"
uid=$(id -u idemorders 2>/dev/null)
[[ -n $uid && $uid -lt 1000 && $(id -gn idemorders) == idemorders &&
    $(id -Gn idemorders) == idemorders ]] &&
    ok "system user idemorders (uid $uid), in group idemorders only" ||
    fail "user idemorders" "$(id idemorders 2>&1)"
[[ $(getent passwd idemorders | cut -d: -f7) == */nologin ]] &&
    ok "idemorders has no login shell" || fail "idemorders shell" "$(getent passwd idemorders)"
if [[ -n $PRE_USER ]]; then
	[[ $(getent passwd idemorders) == "$PRE_USER" ]] &&
	    ok "the user idemorders that was there is left as it was" ||
	    fail "existing user" "changed: '$PRE_USER' -> '$(getent passwd idemorders)'"
else
	[[ $(getent passwd idemorders | cut -d: -f5) == "idemorders FastCGI service"* ]] &&
	    ok "postinst made the user idemorders" || fail "new user" "$(getent passwd idemorders)"
fi
[[ -d /run/idemorders && $(stat -c '%U %a' /run/idemorders) == "idemorders 755" ]] &&
    ok "/run/idemorders made (idemorders, 0755)" || fail "/run/idemorders" "$(stat -c '%U %a' /run/idemorders 2>&1)"
[[ $(man -w idemorders 2>/dev/null) == /usr/share/man/man8/idemorders.8.gz &&
    $(man -w idemorders.conf 2>/dev/null) == /usr/share/man/man5/idemorders.conf.5.gz ]] &&
    ok "man idemorders, man idemorders.conf" || fail "man pages" "$(man -w idemorders idemorders.conf 2>&1)"
if out=$(systemd-analyze verify --man=no /lib/systemd/system/idemorders.service \
    /lib/systemd/system/idemorders.socket /lib/systemd/system/idemorders-expire.service \
    /lib/systemd/system/idemorders-expire.timer 2>&1) && [[ -z $out ]]; then
	ok "systemd-analyze verify on the installed units: clean"
else
	fail "systemd-analyze verify (installed)" "$out"
fi
for u in sockets.target.wants/idemorders.socket timers.target.wants/idemorders-expire.timer; do
	[[ -L /etc/systemd/system/$u ]] && ok "enabled: $u" || fail "enabled units" "no /etc/systemd/system/$u"
done

# --- database: postinst migrates once it can reach it ---------------------------
pkg_use_test_db || finish
if /usr/sbin/idemorders check-config -c "$PKG_CONF" >"$T_TMP/cc" 2>&1; then
	ok "check-config with the installed config: $(cat "$T_TMP/cc")"
else
	fail "check-config" "$(cat "$T_TMP/cc")"
fi
DEBIAN_FRONTEND=noninteractive dpkg-reconfigure idemorders >"$T_TMP/reconf" 2>&1
nmig=$(ls /usr/share/idemorders/schema/[0-9][0-9][0-9]_*.sql | wc -l)
expect_sql "SELECT COUNT(*) FROM $PKG_DB.schema_migrations" "$nmig" \
    "dpkg-reconfigure: postinst applied the $nmig migrations"
printf 'sku,currency,unit_price,available\nA-10,KRW,6000,100\nB-20,KRW,2500,50\n' >"$T_TMP/stock.csv"
if out=$(/usr/sbin/idemorders stock import "$T_TMP/stock.csv" 2>&1); then
	ok "idemorders stock import: $out"
else
	fail "stock import" "$out"
fi

# --- serve through the installed snippets ----------------------------------------
grep -qx 'user = idemorders' "$PKG_CONF" && grep -qx 'group = idemorders' "$PKG_CONF" &&
    ok "the installed config drops to idemorders when started as root" ||
    fail "installed config" "no user/group = idemorders"
pkg_htpasswd
install -d -m 0755 "$PKG_RUN"
pkg_serve || finish
[[ $(stat -c '%G %a' "$PKG_SOCK") == "www-data 660" ]] &&
    ok "socket is group www-data, mode 0660" || fail "socket permissions" "$(stat -c '%U:%G %a' "$PKG_SOCK")"
kids=$(pgrep -P "$PKG_SERVE_PID" | head -n 1)
[[ -n $kids && $(ps -o user= -p "$kids") == idemorders ]] &&
    ok "workers run as idemorders" || fail "privilege drop" "worker $kids runs as $(ps -o user= -p "$kids")"

pkg_lighttpd || finish
pkg_apache || finish

ORDER='{"currency":"KRW","items":[{"sku":"A-10","qty":2}],"amount":12000}'
for s in lighttpd apache; do
	[[ $s == lighttpd ]] && url=$PKG_LIGHTTPD_URL || url=$PKG_APACHE_URL
	req GET "$url$MOUNT/_health"
	expect_status 200 "$s: health without credentials"
	req POST "$url$MOUNT" -H 'Idempotency-Key: pkg-1' -H 'Content-Type: application/json' --data-binary "$ORDER"
	expect_status 401 "$s: create without a user"
	create_and_replay "$url" "$ALICE" "$(unique_key "pkg-$s")" "$ORDER" \
	    '{"items":[{"qty":2,"sku":"A-10"}],"amount":12000,"currency":"KRW"}' "$s"
done
expect_sql "SELECT COUNT(*), SUM(amount) FROM $PKG_DB.orders" "2	24000" "two orders, one per key"
expect_sql "SELECT available FROM $PKG_DB.stock WHERE sku = 'A-10'" 96 "stock went down once per order"

# --- metrics, the frontend secret, then socket activation and sd_notify ---------
pkg_metrics_checks
pkg_secret_checks
pkg_stop "$PKG_SERVE_PID"
pkg_activation_checks
pkg_stop_all

# --- purge -----------------------------------------------------------------------
n_orders=$(sql "SELECT COUNT(*) FROM $PKG_DB.orders")
dpkg -L idemorders >"$T_TMP/files" 2>/dev/null
if dpkg --purge idemorders >"$T_TMP/purge" 2>&1; then
	ok "dpkg --purge idemorders"
else
	fail "dpkg --purge" "$(tail -n 5 "$T_TMP/purge" | tr '\n' ' ')"
fi
dpkg -L idemorders >/dev/null 2>&1 && fail "purge" "dpkg -L still lists idemorders" ||
    ok "dpkg -L: idemorders is not installed"
left=
while read -r f; do
	[[ ! -d $f ]] && [[ -e $f || -L $f ]] && left+=" $f"
done <"$T_TMP/files"
[[ -z $left ]] && ok "no file of the package is left ($(wc -l <"$T_TMP/files") listed)" ||
    fail "files left after purge" "$left"
if [[ -n $PRE_USER ]]; then
	[[ $(getent passwd idemorders) == "$PRE_USER" ]] &&
	    ok "purge keeps the user idemorders it did not make" ||
	    fail "purge" "the user idemorders that was there before changed: '$(getent passwd idemorders)'"
else
	getent passwd idemorders >/dev/null && fail "purge" "user idemorders is still there" ||
	    ok "user idemorders removed"
	getent group idemorders >/dev/null && fail "purge" "group idemorders is still there" ||
	    ok "group idemorders removed"
fi
for d in /etc/idemorders /run/idemorders; do
	[[ -e $d ]] && fail "purge" "$d is still there: $(ls -A "$d" | tr '\n' ' ')" || ok "$d removed"
done
left=$(find /etc/systemd/system -name 'idemorders*' 2>/dev/null | tr '\n' ' ')
[[ -z $left ]] && ok "no enabled idemorders unit left" || fail "units left after purge" "$left"
expect_sql "SELECT COUNT(*) FROM $PKG_DB.orders" "$n_orders" "purge keeps the database and its orders"

finish
