#!/usr/bin/env bash
# The Debian package, from source to purge, on this machine:
#  - dpkg-buildpackage -us -uc -b builds idemorders_*.deb from a copy of
#    the tree under /var/tmp, a release build (the installed binary has
#    no fault injection) whose make check runs the unit and the database
#    tests (against a database of its own; under CI they may not skip);
#    lintian reports no error; it holds README.md and the guides
#    (docs/*.md) in /usr/share/doc/idemorders (gzipped when large);
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
#  - upgrade: the previous package (0.1.0, built from its commit)
#    installed, its
#    database migrated and its serve running; dpkg -i of this one
#    migrates the schema and the old binary, still running, creates an
#    order against it (the rule: migrations only add);
#  - install starts no service; without a database the init script's
#    serve answers _health 503 and its log says why; with one, the init
#    script starts, reloads, reports and stops serve; the cron line and
#    the logrotate file are installed;
#  - the frontend secret is on from the start, and a rotation
#    (idemorders-frontend-secret begin, web, end) refuses no request;
#  - dpkg -r disables both snippets (a2enconf'd, lighty-enable-mod'ed),
#    a reinstall enables them again; purge removes the secret includes,
#    Apache's state, the logs, the init links;
#  - dbconfig-common: the upgrade hands it the database the config
#    already uses (nothing created); without a database its failure is
#    ignored (DEBIAN_FRONTEND=noninteractive) and postinst says what to
#    do; on a host with Debian's MariaDB (a mariadbd of its own on
#    /run/mysqld/mysqld.sock, root by unix_socket) dpkg -i creates the
#    database idemorders and its user with a generated password, which
#    postinst writes to /etc/idemorders/db-password (root:idemorders
#    0640) before it migrates; the installed package creates an order;
#    installing again changes nothing; purge, answered yes to dropping
#    the database (preseeded), dumps and drops it.
# Takes a few minutes, most of it dpkg-buildpackage.
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
# README.md and the guides it links, in /usr/share/doc/idemorders/docs.
dpkg-deb -c "$PKG_DEB" | awk '{ print $NF }' | sed 's|^\./|/|' >"$T_TMP/contents"
missing=
for f in README.md "$REPO"/docs/*.md; do
	f=${f#"$REPO"/}
	grep -qxF -e "/usr/share/doc/idemorders/$f" -e "/usr/share/doc/idemorders/$f.gz" "$T_TMP/contents" || missing+=" $f"
done
[[ -z $missing ]] && ok "the package holds README.md and docs/*.md in /usr/share/doc/idemorders" ||
    fail "package docs" "not in /usr/share/doc/idemorders:$missing"

# --- upgrade from the previous package -----------------------------------------
ORDER1='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}'
if pkg_build_old; then
	dpkg --purge idemorders >/dev/null 2>&1
	if DEBIAN_FRONTEND=noninteractive dpkg -i "$PKG_OLD_DEB" >"$T_TMP/old-install" 2>&1; then
		ok "dpkg -i the previous package"
		pkg_use_test_db
		/usr/sbin/idemorders migrate -c "$PKG_CONF" >/dev/null 2>&1
		printf 'A-10,KRW,6000,100\n' >"$T_TMP/old-stock.csv"
		/usr/sbin/idemorders stock import -c "$PKG_CONF" "$T_TMP/old-stock.csv" >/dev/null 2>&1 ||
		    /usr/sbin/idemorders stock import "$T_TMP/old-stock.csv" >/dev/null 2>&1
		install -d -m 0755 "$PKG_RUN"
		pkg_serve
		OLD_PID=$PKG_SERVE_PID
		# The new version's dependencies first (apt would bring them;
		# a fresh host lacks dbconfig-mysql): the upgrade is the test.
		pkg_install_deps "$PKG_DEB" ||
		    fail "upgrade: the new package's dependencies" "$(tail -n 5 "$PKG_WORK/install.log" | tr '\n' ' ')"
		# The config was changed (the database): keep it, as an
		# administrator answering dpkg's question would.
		if DEBIAN_FRONTEND=noninteractive dpkg -i --force-confold "$PKG_DEB" >"$T_TMP/upgrade" 2>&1; then
			ok "dpkg -i: upgrade from the previous package"
		else
			fail "upgrade" "$(tail -n 5 "$T_TMP/upgrade" | tr '\n' ' ')"
		fi
		nmig=$(ls /usr/share/idemorders/schema/[0-9][0-9][0-9]_*.sql | wc -l)
		expect_sql "SELECT COUNT(*) FROM $PKG_DB.schema_migrations" "$nmig" \
		    "upgrade: postinst migrated the schema ($nmig migrations)"
		kill -0 "$OLD_PID" 2>/dev/null && [[ $(readlink "/proc/$OLD_PID/exe") == *"(deleted)" ]] &&
		    ok "upgrade: the old serve still runs (its binary replaced)" ||
		    fail "upgrade: old serve" "$(readlink "/proc/$OLD_PID/exe" 2>&1)"
		# With the secret the old package made, if it made one.
		old_secret=()
		[[ -r /etc/idemorders/frontend.secret ]] &&
		    old_secret=(IDEMORDERS_FRONTEND_SECRET="$(head -n 1 /etc/idemorders/frontend.secret)")
		FCGI_SOCKET=$PKG_SOCK fcgi_req -d "$ORDER1" POST "$MOUNT" REMOTE_USER=alice \
		    HTTP_IDEMPOTENCY_KEY="$(unique_key upgrade)" CONTENT_TYPE=application/json \
		    "${old_secret[@]}"
		expect_status 201 "upgrade: the old binary creates an order on the migrated schema"
		# dbconfig-common took over the database the config used, with
		# its password; nothing was created or changed.
		[[ $(. /etc/dbconfig-common/idemorders.conf; echo "$dbc_install $dbc_dbname $dbc_dbuser $dbc_dbpass") == \
		    "true $PKG_DB idemorders idemorders-dev" && $(cat /etc/idemorders/db-password) == idemorders-dev ]] &&
		    ok "upgrade: dbconfig-common took over $PKG_DB, its user and password from the config" ||
		    fail "upgrade: dbconfig-common" "$(grep -v pass /etc/dbconfig-common/idemorders.conf 2>&1 | grep '^dbc_' | tr '\n' ' ')"
		pkg_stop_all
	else
		fail "previous package" "$(tail -n 5 "$T_TMP/old-install" | tr '\n' ' ')"
	fi
	dpkg --purge idemorders >/dev/null 2>&1
	sql "DROP DATABASE IF EXISTS $PKG_DB" >/dev/null
fi

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
# A first install ends with the next steps: where the install guide is,
# users, a web server's snippet (Apache: restart, mod_proxy_fcgi may be
# new), TLS, a check.
for want in "Next steps" "htpasswd -cB /etc/idemorders/htpasswd" \
    "a2enmod proxy_fcgi auth_basic authn_file env" "systemctl restart apache2" \
    "lighty-enable-mod idemorders" "/usr/share/doc/idemorders/docs/tls.md.gz" \
    "/orders/_health"; do
	grep -qF -- "$want" "$PKG_WORK/install.log" &&
	    ok "postinst's next steps: $want" ||
	    fail "postinst's next steps" "no '$want' in: $(tail -n 12 "$PKG_WORK/install.log" | tr '\n' ' ')"
done
# Every guide the install's messages name is installed, and a section
# named with it ("FILE.gz, "Section"") is a heading of that guide.
while read -r f; do
	[[ -f $f ]] && ok "the install names $f: installed" ||
	    fail "the install names $f" "not installed"
done < <(grep -o '/usr/share/doc/idemorders/[^ ,)]*[^ ,).]' "$PKG_WORK/install.log" | sort -u)
while IFS=$'\t' read -r f sec; do
	zcat -f "$f" 2>/dev/null | grep -qxF "## $sec" &&
	    ok "the next steps' section \"$sec\" is in $f" ||
	    fail "the next steps' section" "no heading \"$sec\" in $f"
done < <(grep -oE '/usr/share/doc/idemorders/[^ ,]+, "[^"]+"' "$PKG_WORK/install.log" |
    sed -E 's/, "/\t/; s/"$//' | sort -u)
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
# (idemorders-db: the test stack's database clients, which tools/dev
# gives the stack's pool user, the same name.)
[[ -n $uid && $uid -lt 1000 && $(id -gn idemorders) == idemorders &&
    $(id -Gn idemorders | tr ' ' '\n' | grep -vx idemorders-db) == idemorders ]] &&
    ok "system user idemorders (uid $uid), in group idemorders only (and the test stack's idemorders-db)" ||
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
# The service is never started by the package (the socket may be).
grep -q 'deb-systemd-invoke \(start\|restart\).*idemorders.service' /var/lib/dpkg/info/idemorders.postinst &&
    fail "postinst" "starts idemorders.service: $(grep -n 'deb-systemd-invoke' /var/lib/dpkg/info/idemorders.postinst | tr '\n' ' ')" ||
    ok "postinst never starts idemorders.service (on upgrade: try-restart after migrate)"
pgrep -f '^/usr/sbin/idemorders serve' >/dev/null &&
    fail "install" "a serve runs: $(pgrep -af '^/usr/sbin/idemorders serve')" ||
    ok "install started no serve"
[[ $(stat -c '%U:%G %a' /etc/idemorders/db-password 2>&1) == "root:idemorders 640" ]] &&
    ! dpkg-query -W -f='${Conffiles}\n' idemorders | grep -q " /etc/idemorders/db-password " &&
    ok "postinst made a database password (root:idemorders 0640, not a conffile)" ||
    fail "db-password" "$(stat -c '%U:%G %a' /etc/idemorders/db-password 2>&1)"
f=/etc/cron.d/idemorders-expire
[[ $(stat -c '%U %a' $f 2>&1) == "root 644" ]] &&
    grep -q $'\tidemorders\t\\[ -d /run/systemd/system \\] || \\[ ! -x /usr/sbin/idemorders \\] || { out=$(/usr/sbin/idemorders expire -c /etc/idemorders/idemorders.conf' $f &&
    ok "$f: root 0644, /usr/sbin paths, steps aside under systemd" ||
    fail "$f" "$(stat -c '%U %a' $f 2>&1) $(grep -v '^#' $f 2>&1 | tail -n 1)"
[[ -f /etc/logrotate.d/idemorders ]] && grep -q copytruncate /etc/logrotate.d/idemorders &&
    ok "/etc/logrotate.d/idemorders (copytruncate)" || fail "logrotate" "no /etc/logrotate.d/idemorders"

# Every program a shipped script runs comes with the package: its
# package is essential, or in the closure of the package's Depends (any
# alternative).  The programs: what idemorders-verify checks for, the
# client its --db-defaults runs, what the init script, the cron line and
# the maintainer scripts run.
tools=$(sed -n 's/^for t in \(.*\); do$/\1/p' /usr/bin/idemorders-verify)
[[ -n $tools ]] || fail "idemorders-verify" "no 'for t in ...' line naming what it needs"
deps=$(dpkg-deb -f "$PKG_DEB" Depends | tr ',|' '\n\n' | sed 's/([^)]*)//g; s/:any//; s/[[:space:]]//g' | sed '/^$/d')
# shellcheck disable=SC2086
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances $deps 2>/dev/null | grep -v '^ ' | sort -u)
for t in $tools mariadb start-stop-daemon logger runuser adduser /lib/lsb/init-functions; do
	[[ $t == /* ]] && path=$t || path=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$t")
	# (dpkg knows a merged-/usr path by the name its package ships)
	p=$( [[ -n $path ]] && { dpkg -S "$path" 2>/dev/null || dpkg -S "${path#/usr}" 2>/dev/null ||
	    dpkg -S "$(readlink -f "$path")" 2>/dev/null; } |
	    head -n 1 | cut -d: -f1)
	if [[ -z $p ]]; then
		fail "dependencies: $t" "not installed on this host, cannot say which package has it"
	elif [[ $(dpkg-query -W -f='${Essential}' "$p" 2>/dev/null) == yes ]]; then
		ok "dependencies: $t ($p, essential)"
	elif grep -qxF "$p" <<<"$closure"; then
		ok "dependencies: $t ($p, in Depends$(grep -qxF "$p" <<<"$deps" && echo ' itself'))"
	else
		fail "dependencies: $t" "its package $p is neither essential nor in Depends ($(tr '\n' ' ' <<<"$deps"))"
	fi
done

# pkg_alive PID: the process runs (a zombie does not: the container's
# PID 1 may not reap what start-stop-daemon left to it).
pkg_alive() {
	[[ -r /proc/$1/stat ]] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null
}

# --- without systemd: the init script, first without a database ----------------
if /etc/init.d/idemorders start >"$T_TMP/init" 2>&1; then
	ok "/etc/init.d/idemorders start (no database yet)"
else
	fail "init start" "$(tr '\n' ' ' <"$T_TMP/init")"
fi
INIT_PID=$(cat /run/idemorders.pid 2>/dev/null)
SECRET=$(head -n 1 /etc/idemorders/frontend.secret)
FCGI_SOCKET=$PKG_SOCK fcgi_req GET "$MOUNT/_health" IDEMORDERS_FRONTEND_SECRET="$SECRET"
expect_status 503 "without a database: _health"
pkg_wait grep -qi 'database\|mysql\|connect' /var/log/idemorders/idemorders.log &&
    ok "the log says why: $(grep -i 'database\|mysql\|connect' /var/log/idemorders/idemorders.log | tail -n 1 | cut -c1-160)" ||
    fail "init log" "$(tail -n 3 /var/log/idemorders/idemorders.log 2>&1 | tr '\n' ' ')"
/etc/init.d/idemorders status >/dev/null 2>&1 && ok "init status: running (pid $INIT_PID)" ||
    fail "init status" "rc $?"
/etc/init.d/idemorders stop >/dev/null 2>&1 && ! pkg_alive "$INIT_PID" &&
    ok "init stop" || fail "init stop" "pid $INIT_PID"
/etc/init.d/idemorders status >/dev/null 2>&1
rc=$?
[[ $rc -eq 3 ]] && ok "init status after stop: 3 (not running)" || fail "init status after stop" "rc $rc"

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

# --- the init script with the database: start, reload, stop -------------------
if /etc/init.d/idemorders start >"$T_TMP/init" 2>&1; then
	INIT_PID=$(cat /run/idemorders.pid)
	FCGI_SOCKET=$PKG_SOCK fcgi_req GET "$MOUNT/_health" IDEMORDERS_FRONTEND_SECRET="$SECRET"
	expect_status 200 "init script: _health with the database"
	/etc/init.d/idemorders reload >/dev/null 2>&1 &&
	    pkg_wait grep -q 'SIGHUP\|reload' /var/log/idemorders/idemorders.log &&
	    ok "init reload: SIGHUP to the master" ||
	    fail "init reload" "$(tail -n 3 /var/log/idemorders/idemorders.log | tr '\n' ' ')"
	[[ $(cat /run/idemorders.pid) == "$INIT_PID" ]] && ok "init reload keeps the master" ||
	    fail "init reload" "pid changed"
	/etc/init.d/idemorders stop >/dev/null 2>&1 && ! pkg_alive "$INIT_PID" &&
	    ok "init stop (graceful)" || fail "init stop" "pid $INIT_PID"
else
	fail "init start with the database" "$(tr '\n' ' ' <"$T_TMP/init")"
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

# --- remove, reinstall: the snippets ----------------------------------------------
PKG_LIGHTTPD_LINKS=$(ls /etc/lighttpd/conf-enabled 2>/dev/null)
a2enconf -q idemorders >/dev/null 2>&1
lighty-enable-mod idemorders >/dev/null 2>&1
[[ -L /etc/apache2/conf-enabled/idemorders.conf && -L /etc/lighttpd/conf-enabled/50-idemorders.conf ]] &&
    ok "a2enconf idemorders, lighty-enable-mod idemorders" ||
    fail "enable snippets" "$(ls /etc/apache2/conf-enabled /etc/lighttpd/conf-enabled | tr '\n' ' ')"
# Without systemd the init script runs the service: remove must stop it.
if /etc/init.d/idemorders start >"$T_TMP/init" 2>&1; then
	INIT_PID=$(cat /run/idemorders.pid)
	ok "init script: started before the remove (pid $INIT_PID)"
else
	fail "init start before remove" "$(tr '\n' ' ' <"$T_TMP/init")"
	INIT_PID=
fi
if DEBIAN_FRONTEND=noninteractive dpkg -r idemorders >"$T_TMP/remove" 2>&1; then
	ok "dpkg -r idemorders"
else
	fail "dpkg -r" "$(tail -n 5 "$T_TMP/remove" | tr '\n' ' ')"
fi
[[ -n $INIT_PID ]] && ! pkg_alive "$INIT_PID" && [[ ! -e /run/idemorders.pid ]] &&
    ok "remove stopped the service the init script ran (pid $INIT_PID gone, no /run/idemorders.pid)" ||
    fail "remove: the service" "pid '$INIT_PID' alive: $(pkg_alive "$INIT_PID" && echo yes || echo no), $(ls /run/idemorders.pid 2>&1); remove said: $(grep -i 'idemorders\|invoke-rc' "$T_TMP/remove" | tr '\n' ' ' | cut -c1-300)"
[[ -n $INIT_PID ]] && pkg_alive "$INIT_PID" && kill -TERM "$INIT_PID"
# The init scripts stay until purge (conffiles, with their rc.d links:
# systemd-sysv-install reports them enabled); remove says so, and they
# do nothing without the binary.
grep -q "init scripts stay until purge" "$T_TMP/remove" &&
    ok "remove says that the kept init scripts stay (and look enabled) until purge" ||
    fail "remove: the kept init scripts" "not said: $(grep -i 'idemorders' "$T_TMP/remove" | tr '\n' ' ' | cut -c1-300)"
ls -l /etc/init.d/idemorders | sed 's/^/       after remove: /'
out=$(sh /etc/init.d/idemorders start 2>&1)
rc=$?
[[ $rc -eq 0 && -z $out && ! -e /run/idemorders.pid ]] &&
    ok "after remove the kept init script does nothing (exit 0, no daemon)" ||
    fail "init script after remove" "exit $rc: $out $(ls /run/idemorders.pid 2>&1)"
grep -qi 'debconf:\|perl: warning\|falling back to' "$T_TMP/remove" &&
    fail "remove, non-interactive" "debconf warned: $(grep -i 'debconf:\|perl:\|falling' "$T_TMP/remove" | tr '\n' ' ')" ||
    ok "remove, non-interactive: no debconf warning"
# The cron line stays (a conffile); with the binary gone it must do
# nothing, not fail every 15 minutes.  Run as cron runs it: its command
# field, \% unescaped, as its user, with its SHELL and PATH.
cronline=$(grep -P '^[^#\s]\S* \S+ \S+ \S+ \S+\t' /etc/cron.d/idemorders-expire | tail -n 1)
croncmd=$(cut -f3- <<<"$cronline" | sed 's/\\%/%/g')
cronuser=$(cut -f2 <<<"$cronline")
if [[ -z $croncmd ]]; then
	fail "cron line after remove" "no line in /etc/cron.d/idemorders-expire"
else
	out=$(cd / && runuser -u "$cronuser" -- env -i SHELL=/bin/sh PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	    /bin/sh -c "$croncmd" 2>&1)
	rc=$?
	[[ $rc -eq 0 && -z $out ]] && ok "after remove the kept cron line does nothing (exit 0, no output for cron to mail)" ||
	    fail "cron line after remove" "exit $rc: $out"
fi
[[ ! -e /etc/apache2/conf-enabled/idemorders.conf && ! -L /etc/apache2/conf-enabled/idemorders.conf ]] &&
    ok "remove: the Apache snippet is disabled" || fail "remove" "/etc/apache2/conf-enabled/idemorders.conf is still there"
[[ ! -L /etc/lighttpd/conf-enabled/50-idemorders.conf ]] &&
    ok "remove: the lighttpd snippet is disabled" || fail "remove" "/etc/lighttpd/conf-enabled/50-idemorders.conf is still there"
[[ -f $PKG_CONF && -f /etc/idemorders/frontend.secret && -f /etc/apache2/idemorders-secret.conf ]] &&
    ok "remove keeps the config, the secret and its includes" || fail "remove" "config or secret gone"
if DEBIAN_FRONTEND=noninteractive dpkg -i "$PKG_DEB" >"$T_TMP/reinstall" 2>&1; then
	ok "dpkg -i again after remove"
else
	fail "reinstall" "$(tail -n 5 "$T_TMP/reinstall" | tr '\n' ' ')"
fi
[[ -L /etc/apache2/conf-enabled/idemorders.conf && -L /etc/lighttpd/conf-enabled/50-idemorders.conf ]] &&
    ok "reinstall: both snippets enabled again, as before the remove" ||
    fail "reinstall" "snippets not enabled again"
[[ $(head -n 1 /etc/idemorders/frontend.secret) == "$(grep -o '"[0-9a-f]*"' /etc/apache2/idemorders-secret.conf | tr -d '"')" ]] &&
    ok "reinstall keeps the secret, and the includes send it" || fail "reinstall" "secret and include differ"

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
for d in /etc/idemorders /run/idemorders /var/log/idemorders /var/lib/idemorders \
    /etc/apache2/idemorders-secret.conf /etc/lighttpd/idemorders-secret.conf \
    /var/lib/apache2/conf/enabled_by_admin/idemorders /var/lib/apache2/conf/enabled_by_maint/idemorders \
    /var/lib/apache2/conf/disabled_by_maint/idemorders /etc/apache2/conf-enabled/idemorders.conf \
    /etc/lighttpd/conf-enabled/50-idemorders.conf /run/idemorders.pid; do
	[[ -e $d || -L $d ]] && fail "purge" "$d is still there: $(ls -Ad "$d" | tr '\n' ' ')" || ok "$d removed"
done
left=$(find /etc/rc?.d -name '*idemorders' 2>/dev/null | tr '\n' ' ')
[[ -z $left ]] && ok "no init script link left" || fail "init links after purge" "$left"
pkg_lighttpd_links_restore
left=$(find /etc/systemd/system -name 'idemorders*' 2>/dev/null | tr '\n' ' ')
[[ -z $left ]] && ok "no enabled idemorders unit left" || fail "units left after purge" "$left"
expect_sql "SELECT COUNT(*) FROM $PKG_DB.orders" "$n_orders" "purge keeps the database and its orders"

# --- dbconfig-common: install on a host with Debian's MariaDB, purge ------------
# mydb STATEMENT: as root on that MariaDB (unix_socket), tab-separated.
mydb() { mariadb -N -B -e "$1" 2>&1; }
if pkg_mariadb; then
	# What an administrator answers (these are the defaults too).
	debconf-set-selections <<-'EOF'
	idemorders idemorders/dbconfig-install boolean true
	idemorders idemorders/mysql/method select Unix socket
	idemorders idemorders/mysql/admin-user string root
	EOF
	if dpkg -i "$PKG_DEB" >"$T_TMP/dbc-install" 2>&1; then
		ok "dbconfig-common: dpkg -i with Debian's MariaDB running"
	else
		fail "dbconfig-common: dpkg -i" "$(tail -n 8 "$T_TMP/dbc-install" | tr '\n' ' ')"
	fi
	[[ $(mydb "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'idemorders'") == utf8mb4 ]] &&
	    ok "dbconfig-common created the database idemorders (utf8mb4)" ||
	    fail "dbconfig-common: database" "$(mydb "SHOW DATABASES" | tr '\n' ' ')"
	grants=$(mydb "SHOW GRANTS FOR idemorders@localhost" | tr '\n' ' ')
	[[ $grants == *'ON `idemorders`.*'* ]] && ok "dbconfig-common created the user idemorders@localhost with access to it" ||
	    fail "dbconfig-common: user" "$grants"
	dbcpw=$(. /etc/dbconfig-common/idemorders.conf; echo "$dbc_dbpass")
	[[ $(stat -c '%U:%G %a' /etc/idemorders/db-password 2>&1) == "root:idemorders 640" &&
	    ${#dbcpw} -ge 12 && $(cat /etc/idemorders/db-password) == "$dbcpw" ]] &&
	    ok "postinst wrote dbconfig-common's generated password to /etc/idemorders/db-password (root:idemorders 0640)" ||
	    fail "dbconfig-common: password file" "$(stat -c '%U:%G %a' /etc/idemorders/db-password 2>&1), ${#dbcpw} characters"
	nmig=$(ls /usr/share/idemorders/schema/[0-9][0-9][0-9]_*.sql | wc -l)
	[[ $(mydb "SELECT COUNT(*) FROM idemorders.schema_migrations") == "$nmig" ]] &&
	    ok "postinst applied the $nmig migrations as the new user" ||
	    fail "dbconfig-common: migrate" "$(mydb "SELECT COUNT(*) FROM idemorders.schema_migrations") $(tail -n 5 "$T_TMP/dbc-install" | tr '\n' ' ')"
	grep -q "cannot be reached" "$T_TMP/dbc-install" &&
	    fail "dbconfig-common: postinst" "says the database cannot be reached" ||
	    ok "postinst says nothing is left to do"
	if out=$(/usr/sbin/idemorders check-config 2>&1); then
		ok "check-config with the packaged config, unchanged: $out"
	else
		fail "dbconfig-common: check-config" "$out"
	fi
	# A create through the installed package.
	printf 'A-10,KRW,6000,100\n' >"$T_TMP/dbc-stock.csv"
	out=$(/usr/sbin/idemorders stock import "$T_TMP/dbc-stock.csv" 2>&1) || fail "dbconfig-common: stock import" "$out"
	install -d -m 0755 "$PKG_RUN"
	if pkg_serve; then
		FCGI_SOCKET=$PKG_SOCK fcgi_req -d "$ORDER1" POST "$MOUNT" REMOTE_USER=alice \
		    HTTP_IDEMPOTENCY_KEY="$(unique_key dbc)" CONTENT_TYPE=application/json \
		    IDEMORDERS_FRONTEND_SECRET="$(head -n 1 /etc/idemorders/frontend.secret)"
		expect_status 201 "dbconfig-common: the installed package creates an order"
		[[ $(mydb "SELECT COUNT(*) FROM idemorders.orders") == 1 ]] && ok "the order is in idemorders.orders" ||
		    fail "dbconfig-common: order" "$(mydb "SELECT COUNT(*) FROM idemorders.orders")"
		pkg_stop_all
	fi
	# The same version again: nothing is created or changed.
	if dpkg -i "$PKG_DEB" >"$T_TMP/dbc-again" 2>&1 && [[ $(cat /etc/idemorders/db-password) == "$dbcpw" &&
	    $(mydb "SELECT COUNT(*) FROM idemorders.orders") == 1 ]]; then
		ok "dbconfig-common: dpkg -i again keeps the database, its orders and the password"
	else
		fail "dbconfig-common: dpkg -i again" "$(tail -n 5 "$T_TMP/dbc-again" | tr '\n' ' ')"
	fi
	# Purge, answering yes to "drop the database" (the default is no).
	echo "idemorders idemorders/purge boolean true" | debconf-set-selections
	if dpkg --purge idemorders >"$T_TMP/dbc-purge" 2>&1; then
		ok "dbconfig-common: dpkg --purge, asked to drop the database"
	else
		fail "dbconfig-common: purge" "$(tail -n 8 "$T_TMP/dbc-purge" | tr '\n' ' ')"
	fi
	[[ -z $(mydb "SHOW DATABASES LIKE 'idemorders'") ]] && ok "purge dropped the database idemorders" ||
	    fail "dbconfig-common: purge" "the database idemorders is still there"
	grants=$(mydb "SHOW GRANTS FOR idemorders@localhost" | tr '\n' ' ')
	[[ $grants != *'ON `idemorders`.*'* ]] && ok "purge revoked the user's access" ||
	    fail "dbconfig-common: purge" "grants left: $grants"
	[[ $(mydb "SELECT COUNT(*) FROM mysql.user WHERE User = 'idemorders'") == 0 ]] &&
	    ok "purge dropped the database account idemorders@localhost with the database" ||
	    fail "dbconfig-common: purge" "the account is still there: $(mydb "SELECT CONCAT(User, '@', Host) FROM mysql.user WHERE User = 'idemorders'" | tr '\n' ' ')"
	grep -qi 'debconf:\|perl: warning\|falling back to' "$T_TMP/dbc-purge" &&
	    fail "purge, non-interactive" "debconf warned: $(grep -i 'debconf:\|perl:\|falling' "$T_TMP/dbc-purge" | tr '\n' ' ')" ||
	    ok "purge, non-interactive: no debconf warning"
	[[ ! -e /etc/dbconfig-common/idemorders.conf && ! -e /etc/idemorders/db-password ]] &&
	    ok "purge removed dbconfig-common's record and the password file" ||
	    fail "dbconfig-common: purge" "$(ls /etc/dbconfig-common/idemorders.conf /etc/idemorders/db-password 2>&1 | tr '\n' ' ')"
	# dbconfig-common dumps the database before it drops it.
	dump=$(ls /var/tmp/idemorders.idemorders.*.mysql.* 2>/dev/null | head -n 1)
	[[ -n $dump ]] && grep -q 'CREATE TABLE `orders`' "$dump" && ok "dbconfig-common dumped the database first: $dump" ||
	    fail "dbconfig-common: dump" "none in /var/tmp"
	rm -f /var/tmp/idemorders.idemorders.*.mysql.*
	pkg_mariadb_stop
fi

finish
