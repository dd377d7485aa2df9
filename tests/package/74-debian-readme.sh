#!/usr/bin/env bash
# Every command that docs/sysadmin.md's "Install on Debian" and "After a deploy"
# sections show, run as written, in order, as root, against the package
# built from this tree, on a host like this one (no systemd as PID 1):
#  - the commands are the indented lines of the two sections (a trailing
#    "  # comment" dropped; lines of output, "HTTP/1.1 ..." and
#    "Location: ...", are not commands); each must exit 0;
#  - the database is Debian's MariaDB: a mariadbd of its own on
#    /run/mysqld/mysqld.sock (root by unix_socket, as on Debian), so
#    dbconfig-common's defaults and the packaged config reach it
#    unchanged;
#  - what this host cannot do as a real one would, and only that, is
#    replaced: `dpkg-buildpackage -us -uc -b` is the build this test
#    starts with (pkg_build runs exactly that); `systemctl` and `service`
#    for apache2 and lighttpd (re)start a private Apache and lighttpd
#    that load what a2enmod, a2enconf and lighty-enable-mod enabled, on
#    ports of their own, which http://localhost is mapped to
#    (each command run once through each) and https://shop.example to
#    Apache (the rotation reloads Apache); `systemctl ACTION idemorders`
#    runs the init script, as `service` does; the password prompts
#    (htpasswd, curl -u) are answered with the placeholder PASSWORD;
#    `apt-get install` gets -y --no-upgrade --no-install-recommends, so
#    that the shared test machine is neither upgraded nor given a mail
#    server (what it names must be installed, or installable);
#  - afterwards: orders were created, the first order replays, the
#    verification passed, audit is clean, the secret rotated.
# The machine's Apache and lighttpd enabled links are put back, the
# package purged, the MariaDB stopped.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/package.sh"

GUIDE=$REPO/docs/sysadmin.md
SHIM=$PKG_RUN/shim
QACNF=/root/idemorders-qa.cnf
APACHE_MODS=$(ls /etc/apache2/mods-enabled 2>/dev/null)
APACHE_CONFS=$(ls /etc/apache2/conf-enabled 2>/dev/null)
PKG_LIGHTTPD_LINKS=$(ls /etc/lighttpd/conf-enabled 2>/dev/null)
QACNF_BEFORE=$([[ -e $QACNF ]] && echo yes)

readme_cleanup() {
	local f
	[[ -x /etc/init.d/idemorders ]] && /etc/init.d/idemorders stop >/dev/null 2>&1
	pkg_stop_all
	for f in /etc/apache2/mods-enabled/* /etc/apache2/conf-enabled/*; do
		[[ -L $f ]] || continue
		grep -qxF "$(basename -- "$f")" <<<"$APACHE_MODS"$'\n'"$APACHE_CONFS" && continue
		rm -f "$f"
		# a2enmod's record of what the administrator enabled.
		[[ $f == */mods-enabled/* ]] &&
		    rm -f "/var/lib/apache2/module/enabled_by_admin/$(basename -- "${f%.*}")"
	done
	[[ -z $QACNF_BEFORE ]] && rm -f "$QACNF"
	pkg_cleanup
}
trap readme_cleanup EXIT
pkg_lock

# --- the commands, as docs/sysadmin.md shows them ------------------------------------
# section TITLE: the indented lines of the "## TITLE" section.
section() {
	awk -v t="## $1" '
	    index($0, t) == 1 { on = 1; next }
	    on && /^##+ / { exit }
	    on && /^    [^ ]/ { print substr($0, 5) }' "$GUIDE"
}
{ section "Install on Debian"; section "After a deploy"; } |
    sed -E 's/[[:space:]]{2,}# .*$//' | grep -Ev '^(HTTP/|Location: |#)' >"$T_TMP/commands"
n=$(wc -l <"$T_TMP/commands")
[[ $n -gt 20 ]] && ok "docs/sysadmin.md: $n commands in \"Install on Debian\" and \"After a deploy\"" ||
    { fail "docs/sysadmin.md commands" "only $n found"; finish; }
# What a command runs is installed by an earlier one: htpasswd comes
# with apache2-utils (apache2 brings it).
h=$(grep -n -m1 '^htpasswd ' "$T_TMP/commands" | cut -d: -f1)
a=$(grep -n -m1 -E '^apt-get install .*\<apache2(-utils)?\>' "$T_TMP/commands" | cut -d: -f1)
[[ -n $h && -n $a && $a -lt $h ]] &&
    ok "docs/sysadmin.md: apache2 (htpasswd's apache2-utils) is installed (command $a) before htpasswd runs (command $h)" ||
    fail "docs/sysadmin.md: htpasswd before its package" "htpasswd is command ${h:-none}, apt-get install apache2 or apache2-utils ${a:-none}"
if grep -n 'sudo\|/usr/local\|/etc/idemorders\.conf' "$T_TMP/commands" >"$T_TMP/bad"; then
	fail "docs/sysadmin.md commands: paths" "$(tr '\n' ' ' <"$T_TMP/bad")"
else
	ok "docs/sysadmin.md commands: no sudo, no /usr/local, no /etc/idemorders.conf"
fi

# --- build; the machine as a Debian host with MariaDB ----------------------------
if [[ -n ${PKG_DEB:-} ]]; then
	mkdir -p "$PKG_WORK/src"
	cp "$PKG_DEB" "$PKG_WORK/" && PKG_DEB=$PKG_WORK/$(basename -- "$PKG_DEB")
else
	pkg_build || finish
fi
dpkg --purge idemorders >/dev/null 2>&1
pkg_mariadb || finish

# --- the replacements ------------------------------------------------------------
install -d -m 0755 "$PKG_RUN" "$SHIM"
# The private web servers, from what is enabled on the machine.
cat >"$SHIM/webserver" <<EOF
#!/bin/bash
# webserver apache2|lighttpd: (re)start the private one from the enabled files.
set -e
run=$PKG_RUN
case "\$1" in
apache2)
	install -d -m 0755 \$run/apache \$run/htdocs
	{
		echo "ServerRoot \"\$run/apache\""
		echo "ServerName 127.0.0.1"
		echo "Listen 127.0.0.1:$PKG_APACHE_PORT"
		for f in /etc/apache2/mods-enabled/*.load; do echo "Include \$f"; done
		echo "User www-data"; echo "Group www-data"
		echo "PidFile \"\$run/apache/apache2.pid\""
		echo "DefaultRuntimeDir \"\$run/apache\""
		echo "Mutex file:\$run/apache default"
		echo "ErrorLog \"\$run/apache/error.log\""
		echo "DocumentRoot \"\$run/htdocs\""
		echo "TypesConfig /etc/mime.types"
		echo "IncludeOptional /etc/apache2/conf-enabled/idemorders.conf"
		echo "<VirtualHost *:$PKG_APACHE_PORT>"
		echo "	DocumentRoot \"\$run/htdocs\""
		echo "</VirtualHost>"
	} >\$run/apache2.conf
	if [ -s \$run/apache/apache2.pid ] && kill -0 \$(cat \$run/apache/apache2.pid) 2>/dev/null; then
		apache2 -d \$run/apache -f \$run/apache2.conf -k graceful
	else
		apache2 -d \$run/apache -f \$run/apache2.conf -k start </dev/null 9>&- 8>&- ||
		    { rc=\$?; tail -n 5 \$run/apache/error.log >&2; exit \$rc; }
	fi
	;;
lighttpd)
	install -d -m 0755 \$run/htdocs
	install -d -m 0755 -o www-data -g www-data \$run/log
	{
		echo 'server.modules = ( "mod_access", "mod_accesslog" )'
		echo 'server.bind = "127.0.0.1"'
		echo "server.port = $PKG_LIGHTTPD_PORT"
		echo "server.document-root = \"\$run/htdocs\""
		echo "server.pid-file = \"\$run/lighttpd.pid\""
		echo "server.errorlog = \"\$run/log/lighttpd-error.log\""
		echo 'server.username = "www-data"'
		echo 'server.groupname = "www-data"'
		echo 'include "/etc/lighttpd/conf-enabled/*.conf"'
	} >\$run/lighttpd.conf
	if [ -s \$run/lighttpd.pid ]; then
		kill -TERM \$(cat \$run/lighttpd.pid) 2>/dev/null || true
		for i in \$(seq 50); do kill -0 \$(cat \$run/lighttpd.pid) 2>/dev/null || break; sleep 0.1; done
	fi
	rm -f \$run/lighttpd.pid
	lighttpd -f \$run/lighttpd.conf </dev/null 9>&- 8>&-
	for i in \$(seq 50); do [ -s \$run/lighttpd.pid ] && break; sleep 0.1; done
	;;
esac
EOF
cat >"$SHIM/systemctl" <<EOF
#!/bin/sh
# systemctl ACTION UNIT on a host without systemd.
action=\$1 unit=\${2%.service}
case "\$unit" in
apache2|lighttpd) exec "$SHIM/webserver" "\$unit" ;;
idemorders) exec /etc/init.d/idemorders "\$action" ;;
esac
echo "systemctl shim: \$*: not handled" >&2
exit 1
EOF
cat >"$SHIM/service" <<EOF
#!/bin/sh
case "\$1" in
apache2|lighttpd) exec "$SHIM/webserver" "\$1" ;;
esac
exec /usr/sbin/service "\$@"
EOF
chmod 0755 "$SHIM"/*

# --- run them ----------------------------------------------------------------------
install -d -m 0700 "$T_TMP/cwd"
i=0
while IFS= read -r cmd; do
	i=$((i + 1))
	[[ -n $cmd ]] || continue
	if [[ $cmd == "dpkg-buildpackage -us -uc -b" ]]; then
		ok "[$i] $cmd: the build above"
		continue
	fi
	run=${cmd//http:\/\/localhost/__URL__}
	[[ $run == "apt-get install "* ]] &&
	    run="apt-get install -y -q --no-upgrade --no-install-recommends ${run#apt-get install }"
	run=${run//https:\/\/shop.example/$PKG_APACHE_URL}
	# apt-get install ../idemorders_*.deb: from the tree it was built in.
	dir=$T_TMP/cwd
	[[ $cmd == apt-get* ]] && dir=$PKG_WORK/src
	urls=("")
	[[ $run == *__URL__* ]] && urls=("$PKG_APACHE_URL" "$PKG_LIGHTTPD_URL")
	for u in "${urls[@]}"; do
		c=${run//__URL__/$u}
		# Without a terminal htpasswd reads a line per prompt, curl
		# all of its input less the last byte (the newline).
		answer=$'PASSWORD\nPASSWORD\n'
		[[ $c == curl* ]] && answer=$'PASSWORD\n'
		(cd "$dir" && printf '%s' "$answer" |
		    PATH=$SHIM:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		    setsid -w bash -c "$c") >"$T_TMP/out" 2>&1 8>&- 9>&-
		rc=$?
		if [[ $rc -eq 0 && $c == curl* ]] && grep -q '^HTTP/1.1 401' "$T_TMP/out"; then
			fail "[$i] $cmd${u:+ ($u)}" "401: $(htpasswd -vb /etc/idemorders/htpasswd alice PASSWORD 2>&1) $(tail -n 3 "$PKG_RUN/log/lighttpd-error.log" 2>/dev/null | tr '\n' ' ')"
		elif [[ $rc -eq 0 ]]; then
			ok "[$i] $(cut -c1-110 <<<"$cmd")${u:+ ($u)}"
		else
			fail "[$i] $cmd${u:+ ($u)}" "exit $rc: $(tail -n 6 "$T_TMP/out" | tr '\n' ' ' | cut -c1-600)"
		fi
		cp "$T_TMP/out" "$T_TMP/out.$i${u:+.${u##*:}}"
	done
	# What the web servers run from the shims: stopped by pid at the end.
	for p in "$PKG_RUN/apache/apache2.pid" "$PKG_RUN/lighttpd.pid"; do
		[[ -s $p ]] && ! grep -qxF "$(cat "$p")" <<<"$(printf '%s\n' "${PKG_PIDS[@]}")" &&
		    PKG_PIDS+=("$(cat "$p")")
	done
done <"$T_TMP/commands"

# --- what they left -----------------------------------------------------------------
# The first order: 201 through Apache, the same command through lighttpd
# (same user, same key) its replay.
f=$(grep -l 'first-order-1' /dev/null "$T_TMP"/out.* 2>/dev/null)
a=$(grep -l '^HTTP/1.1 201' "$T_TMP"/out.*."${PKG_APACHE_PORT}" 2>/dev/null | head -n 1)
l=$(grep -il '^Idempotent-Replayed: true' "$T_TMP"/out.*."${PKG_LIGHTTPD_PORT}" 2>/dev/null | head -n 1)
[[ -n $a ]] && ok "first order: 201 Created through Apache" || fail "first order" "no 201 through Apache"
[[ -n $l ]] && ok "the same command through lighttpd: the replay (Idempotent-Replayed: true)" ||
    fail "first order replay" "$(cat "$T_TMP"/out.*."${PKG_LIGHTTPD_PORT}" 2>/dev/null | head -n 12 | tr '\n' ' ')"
f=$(grep -l 'PASS' "$T_TMP"/out.* | head -n 1)
[[ -n $f ]] && ! grep -q '^FAIL' "$f" && ok "idemorders-verify: $(grep -c '^PASS' "$f") PASS, no FAIL" ||
    fail "idemorders-verify" "$(cat "$f" 2>/dev/null | tail -n 10 | tr '\n' ' ')"
[[ $(stat -c '%U %a' "$QACNF" 2>&1) == "root 600" ]] && ok "$QACNF is root 0600" ||
    fail "$QACNF" "$(stat -c '%U %a' "$QACNF" 2>&1)"
f=$(grep -l 'audit\|clean' "$T_TMP"/out.* | tail -n 1)
grants=$(mariadb -N -B -e "SHOW GRANTS FOR idemorders_qa@localhost" 2>&1 | grep -v USAGE | tr '\n' ' ')
[[ $grants == *"GRANT SELECT ON \`idemorders\`.*"* && $grants == *"GRANT UPDATE ON \`idemorders\`.\`idempotency_records\`"* &&
    $grants != *ALL* && $grants != *INSERT* ]] && ok "the QA user has SELECT, and UPDATE on idempotency_records only" ||
    fail "QA grants" "$grants"
[[ $(wc -l </etc/idemorders/frontend.secret) == 1 ]] && ok "the rotation ended with one secret" ||
    fail "rotation" "$(wc -l </etc/idemorders/frontend.secret) lines"
[[ $(. /etc/dbconfig-common/idemorders.conf 2>/dev/null; echo "$dbc_install $dbc_dbname $dbc_dbuser") == "true idemorders idemorders" ]] &&
    ok "dbconfig-common set up the database idemorders and its user" ||
    fail "dbconfig-common" "$(grep -v pass /etc/dbconfig-common/idemorders.conf 2>&1 | grep '^dbc_' | tr '\n' ' ')"

finish
