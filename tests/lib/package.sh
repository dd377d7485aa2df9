# tests/lib/package.sh -- the Debian package on this machine, for the
# package test scripts.  Sourced after tests/lib/http.sh.
# shellcheck shell=bash
#
# The package is built from a copy of the tree under /var/tmp (never in
# the repository), installed with dpkg, pointed at a database of its own
# on the test stack's MariaDB, and served through lighttpd and Apache
# started from the installed conf-available snippets on ports of their
# own (18090/18091 + IDEMORDERS_PORT_OFFSET).  Everything is stopped by
# pid and the package purged by pkg_cleanup.
#
#   pkg_lock                  one package test on the machine at a time
#   pkg_copy_tree DIR         the tree as git sees it, into DIR
#   pkg_build                 dpkg-buildpackage -us -uc -b (make check with
#                             the database tests), once per tree contents
#                             (PKG_CACHE); sets PKG_DEB
#   pkg_lintian               lintian; fails on any E: line
#   pkg_install               dpkg -i (apt-get -f install for missing deps)
#   pkg_install_deps DEB      apt-get install what DEB depends on and this
#                             host lacks (the first of each alternative)
#   pkg_use_test_db           database PKG_DB on the stack, config pointed at it
#   pkg_serve [ARGS]          /usr/sbin/idemorders serve, as the package runs it
#   pkg_lighttpd | pkg_apache web servers from the installed snippets
#   pkg_mariadb               Debian's MariaDB as a host has it: a mariadbd
#                             of its own on /run/mysqld/mysqld.sock, root
#                             by unix_socket (stopped by pkg_cleanup)
#   pkg_cleanup               stop all, purge, drop PKG_DB (trap EXIT)

# debconf (dbconfig-common's questions) never asks: the defaults, or what
# a test preseeds with debconf-set-selections.
export DEBIAN_FRONTEND=noninteractive

PKG_OFF=${IDEMORDERS_PORT_OFFSET:-0}
PKG_LIGHTTPD_PORT=$((18090 + PKG_OFF))
PKG_APACHE_PORT=$((18091 + PKG_OFF))
PKG_LIGHTTPD_URL=http://127.0.0.1:$PKG_LIGHTTPD_PORT
PKG_APACHE_URL=http://127.0.0.1:$PKG_APACHE_PORT
PKG_HASH=$(printf '%s' "$REPO" | sha1sum | cut -c1-8)
PKG_WORK=/var/tmp/idemorders-package-$PKG_HASH
# World-traversable: lighttpd and Apache children (www-data) write here.
PKG_RUN=/run/idemorders-package-$PKG_HASH
PKG_DB=idemorders_pkg
PKG_CHECK_DB=idemorders_pkgcheck
PKG_CHECK_CONF=/var/tmp/idemorders-pkgcheck-$PKG_HASH.conf
PKG_CONF=/etc/idemorders/idemorders.conf
PKG_SOCK=/run/idemorders/idemorders.sock
PKG_HTPASSWD=/etc/idemorders/htpasswd
PKG_PIDS=()
PKG_MY_DIR=$PKG_WORK/mysql
PKG_MY_PID=

pkg_lock() {
	exec 8>/var/lock/idemorders-package-test.lock
	if ! flock -w 900 8; then
		fail "package lock" "another package test holds /var/lock/idemorders-package-test.lock"
		finish
	fi
}

# The database of the package build's `make check`: PKG_CHECK_DB on the
# stack, migrated by the stack's binary, named by PKG_CHECK_CONF.  The
# release build runs the database tests against it, as under CI they
# may not skip.
pkg_check_db() {
	local conf=$RUNDIR/idemorders-check.conf out
	[[ -f $conf ]] || { fail "package check database" "no $conf"; return 1; }
	"$DEV" sql "DROP DATABASE IF EXISTS $PKG_CHECK_DB" >/dev/null &&
	    "$DEV" sql "CREATE DATABASE $PKG_CHECK_DB CHARACTER SET utf8mb4" >/dev/null &&
	    "$DEV" sql "GRANT ALL PRIVILEGES ON $PKG_CHECK_DB.* TO 'idemorders'@'localhost'" >/dev/null ||
	    { fail "package check database" "cannot create $PKG_CHECK_DB"; return 1; }
	sed "s|^db_name = .*|db_name = $PKG_CHECK_DB|" "$conf" >"$PKG_CHECK_CONF"
	if ! out=$("$IDEMORDERS_BIN" migrate -c "$PKG_CHECK_CONF" 2>&1); then
		fail "package check database" "migrate: $out"
		return 1
	fi
}

# pkg_copy_tree DIR: copy the tree into DIR (tracked and new files, as git
# sees them; the whole tree without var/ when it is not a git checkout).
pkg_copy_tree() {
	if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$REPO" ls-files -co --exclude-standard -z |
		    rsync -a --from0 --files-from=- "$REPO/" "$1/"
	else
		rsync -a --exclude=/var/ "$REPO/" "$1/"
	fi
}

# Builds of this tree, by the contents of the copy they were made from:
# the package tests of one run (69, 72, 74, socket-activation) build it
# once.  `tools/dev test` empties it at the start of a full run.
PKG_CACHE=$REPO/var/$IDEMORDERS_STACK/pkg-cache

# Copy the tree and build the binary package; its `make check` runs the
# unit and the database tests (pkg_check_db).  A build of the same
# contents in PKG_CACHE is used instead: its package and its tests' logs.
# Sets PKG_DEB.
pkg_build() {
	local src=$PKG_WORK/src res key cache
	rm -rf "$PKG_WORK"
	mkdir -p "$src"
	pkg_copy_tree "$src"
	key=$(cd "$src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha1sum |
	    sha1sum | cut -c1-16)
	cache=$PKG_CACHE/$key
	if [[ -f $cache/built ]]; then
		cp "$cache"/idemorders_*.deb "$PKG_WORK/" &&
		    for res in unit db; do
			cp "$cache/run_$res.log" "$src/tests/$res/" || return 1
		    done ||
		    { fail "package cache" "cannot copy from $cache"; return 1; }
		ok "dpkg-buildpackage -us -uc -b: the build of this tree ($key) made earlier, $(cat "$cache/built")"
	else
		pkg_check_db || return 1
		if (cd "$src" && DEB_BUILD_OPTIONS=parallel=2 IDEMORDERS_TEST_CONF=$PKG_CHECK_CONF \
		    dpkg-buildpackage -us -uc -b) >"$PKG_WORK/build.log" 2>&1 9>&- 8>&-; then
			ok "dpkg-buildpackage -us -uc -b (in $src, tree $key)"
		else
			# The failing tests' own lines first (automake keeps them in
			# test-suite.log, which dh_auto_test prints with VERBOSE=1).
			fail "dpkg-buildpackage" "$(grep -E '^(FAIL|ERROR|SKIP):|RESULT |FAILED|cannot' \
			    "$PKG_WORK/build.log" | head -n 20 | tr '\n' ' ') ... $(tail -n 5 \
			    "$PKG_WORK/build.log" | tr '\n' ' ')"
			return 1
		fi
	fi
	# automake's driver keeps each runner's output in its .log.
	for res in unit db; do
		if grep -Eq "^RESULT $res [1-9][0-9]* 0\$" "$src/tests/$res/run_$res.log" 2>/dev/null; then
			ok "package build: make check ran the $res tests: $(grep "^RESULT $res " \
			    "$src/tests/$res/run_$res.log")"
		else
			fail "package build: $res tests" "no passing RESULT $res line in tests/$res/run_$res.log: $(tail -n 3 \
			    "$src/tests/$res/run_$res.log" 2>&1 | tr '\n' ' ')"
			return 1
		fi
	done
	PKG_DEB=$(ls "$PKG_WORK"/idemorders_*.deb 2>/dev/null | head -n 1)
	[[ -n $PKG_DEB ]] && ok "built $(basename -- "$PKG_DEB")" ||
	    { fail "dpkg-buildpackage" "no idemorders_*.deb"; return 1; }
	[[ -f $cache/built ]] && return 0
	mkdir -p "$cache" && cp "$PKG_DEB" "$src/tests/unit/run_unit.log" "$src/tests/db/run_db.log" "$cache/" &&
	    date -u '+at %H:%M:%S UTC' >"$cache/built"
}

pkg_lintian() {
	local out
	out=$(lintian "$PKG_DEB" 2>&1 | grep -v 'running with root privileges')
	[[ -z $out ]] || printf '%s\n' "$out" | sed 's/^/       lintian: /'
	if grep -q '^E:' <<<"$out"; then
		fail "lintian" "errors: $(grep '^E:' <<<"$out" | tr '\n' ' ')"
	else
		ok "lintian: no errors ($(grep -c '^W:' <<<"$out") warnings)"
	fi
}

# The previous package: built from PKG_OLD_REF (default: the commit of
# the last released build, 0.1.0) without its tests; sets PKG_OLD_DEB.
# Fails when the ref is missing.
PKG_PREVIOUS=5f48f8e
pkg_build_old() {
	local ref=${PKG_OLD_REF:-$PKG_PREVIOUS} src=$PKG_WORK/old/src
	rm -rf "$PKG_WORK/old"
	mkdir -p "$src"
	git -C "$REPO" archive "$ref" | tar -x -C "$src" ||
	    { fail "previous package" "no $ref to build"; return 1; }
	if (cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) \
	    >"$PKG_WORK/old/build.log" 2>&1 9>&- 8>&-; then
		PKG_OLD_DEB=$(ls "$PKG_WORK"/old/idemorders_*.deb | head -n 1)
		ok "the previous package, built from $ref: $(basename -- "$PKG_OLD_DEB")"
	else
		fail "previous package" "$(tail -n 5 "$PKG_WORK/old/build.log" | tr '\n' ' ')"
		return 1
	fi
}

# Links in /etc/lighttpd/conf-enabled that a test made (lighty-enable-mod
# enables the snippet's dependencies too) go again.
pkg_lighttpd_links_restore() {
	local f
	[[ -n ${PKG_LIGHTTPD_LINKS+x} ]] || return 0
	for f in /etc/lighttpd/conf-enabled/*.conf; do
		[[ -L $f ]] || continue
		grep -qxF "$(basename -- "$f")" <<<"$PKG_LIGHTTPD_LINKS" || rm -f "$f"
	done
}

pkg_install_deps() {
	local dep missing=()
	while read -r dep; do
		[[ -n $dep ]] || continue
		dpkg-query -W -f='${Status}' "$dep" 2>/dev/null |
		    grep -q 'install ok installed' || missing+=("$dep")
	done < <(dpkg-deb -f "$1" Depends | tr ',' '\n' |
	    sed 's/|.*//; s/([^)]*)//g; s/:any//; s/[[:space:]]//g')
	[[ ${#missing[@]} -eq 0 ]] && return 0
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}" \
	    >>"$PKG_WORK/install.log" 2>&1
}

pkg_install() {
	dpkg --purge idemorders >/dev/null 2>&1
	if DEBIAN_FRONTEND=noninteractive dpkg -i "$PKG_DEB" >"$PKG_WORK/install.log" 2>&1; then
		ok "dpkg -i $(basename -- "$PKG_DEB")"
	elif DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -f install -y -q >>"$PKG_WORK/install.log" 2>&1 &&
	    dpkg-query -W -f='${Status}' idemorders 2>/dev/null | grep -q 'install ok installed'; then
		ok "dpkg -i, then apt-get -f install for its dependencies"
	else
		fail "dpkg -i" "$(tail -n 10 "$PKG_WORK/install.log" | tr '\n' ' ')"
		return 1
	fi
}

# set_key KEY VALUE: set KEY in the installed config (keeps its mode).
pkg_set_key() {
	if grep -q "^#\?$1 = " "$PKG_CONF"; then
		sed -i "s|^#\?$1 = .*|$1 = $2|" "$PKG_CONF"
	else
		printf '%s = %s\n' "$1" "$2" >>"$PKG_CONF"
	fi
}

# The package's own database on the stack's MariaDB, its password in
# db_password_file, and the installed config pointed at both.
pkg_use_test_db() {
	sql "DROP DATABASE IF EXISTS $PKG_DB" >/dev/null
	"$DEV" sql "CREATE DATABASE $PKG_DB CHARACTER SET utf8mb4" >/dev/null &&
	    "$DEV" sql "GRANT ALL PRIVILEGES ON $PKG_DB.* TO 'idemorders'@'localhost'" >/dev/null ||
	    { fail "package database" "cannot create $PKG_DB"; return 1; }
	install -m 0640 -o root -g idemorders /dev/null /etc/idemorders/db-password
	echo idemorders-dev >/etc/idemorders/db-password
	# The stack's database socket is for the group idemorders-db; the
	# package's user is made anew by each install.
	gpasswd -a idemorders idemorders-db >/dev/null ||
	    { fail "package database" "cannot add idemorders to idemorders-db"; return 1; }
	pkg_set_key db_socket "$RUNDIR/db/mysqld.sock"
	pkg_set_key db_name "$PKG_DB"
	pkg_set_key db_user idemorders
	pkg_set_key db_password_file /etc/idemorders/db-password
}

# htpasswd as the snippets document it: root:www-data 0640.
pkg_htpasswd() {
	htpasswd -cbB -C 5 "$PKG_HTPASSWD" alice alice-secret 2>/dev/null
	htpasswd -bB -C 5 "$PKG_HTPASSWD" bob bob-secret 2>/dev/null
	chgrp www-data "$PKG_HTPASSWD"
	chmod 0640 "$PKG_HTPASSWD"
}

# wait_for COMMAND...: up to 15 s.
pkg_wait() {
	local i
	for ((i = 0; i < 150; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# pkg_serve [COMMAND PREFIX...]: start `idemorders serve` with the
# installed config, as root (it drops to user/group when the config has
# them), in the background; its pid is appended to PKG_PIDS.
pkg_serve() {
	rm -f "$PKG_SOCK"
	setsid "$@" /usr/sbin/idemorders serve -c "$PKG_CONF" </dev/null \
	    >>"$PKG_RUN/serve.log" 2>&1 9>&- 8>&- &
	PKG_SERVE_PID=$!
	PKG_PIDS+=("$PKG_SERVE_PID")
	if pkg_wait test -S "$PKG_SOCK"; then
		ok "idemorders serve (pid $PKG_SERVE_PID) listens on $PKG_SOCK"
	else
		fail "idemorders serve" "no socket; log: $(tail -n 5 "$PKG_RUN/serve.log" | tr '\n' ' ')"
		return 1
	fi
}

# lighttpd as Debian's lighttpd.conf would run the snippet once
# lighty-enable-mod idemorders linked it and its dependencies.
pkg_lighttpd() {
	local deps d
	install -d -m 0755 "$PKG_RUN" "$PKG_RUN/htdocs"
	install -d -m 0755 -o www-data -g www-data "$PKG_RUN/log"
	deps=$(sed -n 's/^# -\*- depends: \(.*\) -\*-$/\1/p' \
	    /etc/lighttpd/conf-available/50-idemorders.conf | tr -d ' ' | tr ',' ' ')
	{
		echo 'server.modules = ( "mod_access", "mod_accesslog" )'
		echo "server.bind = \"127.0.0.1\""
		echo "server.port = $PKG_LIGHTTPD_PORT"
		echo "server.document-root = \"$PKG_RUN/htdocs\""
		echo "server.pid-file = \"$PKG_RUN/lighttpd.pid\""
		echo "server.errorlog = \"$PKG_RUN/log/lighttpd-error.log\""
		echo 'server.username = "www-data"'
		echo 'server.groupname = "www-data"'
		for d in $deps; do
			d=$(ls /etc/lighttpd/conf-available/[0-9][0-9]-"$d".conf | head -n 1)
			echo "include \"$d\""
		done
		echo 'include "/etc/lighttpd/conf-available/50-idemorders.conf"'
		printf '%s\n' "${PKG_LIGHTTPD_EXTRA:-}"
	} >"$PKG_RUN/lighttpd.conf"
	[[ $deps == "auth fastcgi setenv" ]] && ok "lighttpd snippet depends on: $deps" ||
	    fail "lighttpd snippet depends line" "'$deps'"
	if ! lighttpd -tt -f "$PKG_RUN/lighttpd.conf" >"$PKG_RUN/lighttpd-check.log" 2>&1; then
		fail "lighttpd -tt with 50-idemorders.conf" "$(tr '\n' ' ' <"$PKG_RUN/lighttpd-check.log")"
		return 1
	fi
	rm -f "$PKG_RUN/lighttpd.pid"
	lighttpd -f "$PKG_RUN/lighttpd.conf" </dev/null >"$PKG_RUN/lighttpd.out" 2>&1 9>&- 8>&-
	if pkg_wait test -s "$PKG_RUN/lighttpd.pid"; then
		PKG_LIGHTTPD_PID=$(cat "$PKG_RUN/lighttpd.pid")
		PKG_PIDS+=("$PKG_LIGHTTPD_PID")
		ok "lighttpd from the installed snippet on $PKG_LIGHTTPD_URL"
	else
		fail "lighttpd" "did not start: $(tr '\n' ' ' <"$PKG_RUN/lighttpd.out")"
		return 1
	fi
}

# A MariaDB as Debian's mariadb-server sets one up: /run/mysqld/mysqld.sock,
# root@localhost by unix_socket, so that the packaged config and
# dbconfig-common's defaults reach it unchanged.  Fails when the socket
# is in use on this machine.  After pkg_build (which empties PKG_WORK).
pkg_mariadb() {
	if [[ -S /run/mysqld/mysqld.sock ]]; then
		fail "MariaDB" "/run/mysqld/mysqld.sock is in use on this machine"
		return 1
	fi
	[[ -d /run/mysqld ]] || PKG_MY_MADE_RUNDIR=1
	install -d -o mysql -g mysql -m 0755 /run/mysqld "$PKG_MY_DIR"
	mariadb-install-db --user=mysql --datadir="$PKG_MY_DIR/data" --auth-root-authentication-method=socket \
	    --skip-test-db >"$PKG_MY_DIR/install.log" 2>&1 ||
	    { fail "mariadb-install-db" "$(tail -n 3 "$PKG_MY_DIR/install.log" | tr '\n' ' ')"; return 1; }
	mariadbd --no-defaults --user=mysql --datadir="$PKG_MY_DIR/data" --socket=/run/mysqld/mysqld.sock \
	    --skip-networking --pid-file="$PKG_MY_DIR/mysqld.pid" --log-error="$PKG_MY_DIR/error.log" \
	    </dev/null >/dev/null 2>&1 9>&- 8>&- &
	PKG_MY_PID=$!
	if pkg_wait test -S /run/mysqld/mysqld.sock; then
		ok "MariaDB of its own on /run/mysqld/mysqld.sock (root by unix_socket)"
	else
		fail "mariadbd" "$(tail -n 3 "$PKG_MY_DIR/error.log" | tr '\n' ' ')"
		return 1
	fi
}

pkg_mariadb_stop() {
	[[ -n $PKG_MY_PID ]] || return 0
	kill -TERM "$PKG_MY_PID" 2>/dev/null
	pkg_wait sh -c "! kill -0 $PKG_MY_PID 2>/dev/null"
	PKG_MY_PID=
	[[ -n ${PKG_MY_MADE_RUNDIR:-} ]] && rm -rf /run/mysqld
}

# Stop one process we started (by pid) and wait for it.
pkg_stop() {
	kill -TERM "$1" 2>/dev/null || return 0
	pkg_wait sh -c "! kill -0 $1 2>/dev/null" || kill -KILL "$1" 2>/dev/null
}

# pkg_secret_health SECRET: GET _health on the bare socket with SECRET
# (none when empty); sets STATUS.
pkg_secret_health() {
	if [[ -n $1 ]]; then
		FCGI_SOCKET=$PKG_SOCK fcgi_req GET "$MOUNT/_health" IDEMORDERS_FRONTEND_SECRET="$1"
	else
		FCGI_SOCKET=$PKG_SOCK fcgi_req GET "$MOUNT/_health"
	fi
}

# pkg_secret_wait SECRET STATUS: until the socket answers STATUS to SECRET
# (new workers after a SIGHUP).
pkg_secret_wait() {
	local i
	for ((i = 0; i < 100; i++)); do
		pkg_secret_health "$1" >/dev/null
		[[ $STATUS == "$2" ]] && return 0
		sleep 0.1
	done
	return 1
}

# The frontend secret as the package sets it up, and a rotation without
# a refused request: postinst made /etc/idemorders/frontend.secret and
# the web servers' root-only includes, which the snippets include; the
# packaged config names the file.  idemorders-frontend-secret begin (new
# secret first, old second), SIGHUP, web (includes), web servers
# reloaded, end, SIGHUP: both secrets pass in the window, only the new
# one after.  Creates go through lighttpd and Apache at every step.
pkg_secret_checks() {
	local s1 s2 order apache_conf=$PKG_RUN/apache2.conf f
	order='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}'
	[[ $(stat -c '%U:%G %a' /etc/idemorders/frontend.secret 2>&1) == "root:idemorders 640" ]] &&
	    ok "postinst made /etc/idemorders/frontend.secret (root:idemorders 0640)" ||
	    fail "frontend.secret" "$(stat -c '%U:%G %a' /etc/idemorders/frontend.secret 2>&1)"
	for f in /etc/apache2/idemorders-secret.conf /etc/lighttpd/idemorders-secret.conf; do
		[[ $(stat -c '%U:%G %a' "$f" 2>&1) == "root:root 600" ]] &&
		    ! dpkg-query -W -f='${Conffiles}\n' idemorders | grep -q " $f " &&
		    ok "postinst wrote $f (root 0600, not a conffile)" ||
		    fail "secret include $f" "$(stat -c '%U:%G %a' "$f" 2>&1)"
	done
	grep -qx 'frontend_secret_file = /etc/idemorders/frontend.secret' "$PKG_CONF" &&
	    ok "the packaged config names the frontend secret" ||
	    fail "packaged config" "no frontend_secret_file line"
	s1=$(head -n 1 /etc/idemorders/frontend.secret)
	pkg_secret_health ""
	expect_status 403 "frontend secret: the socket without it"
	pkg_secret_health wrong
	expect_status 403 "frontend secret: the socket with a wrong one"
	pkg_secret_health "$s1"
	expect_status 200 "frontend secret: the socket with it"

	# 1. A new secret first, the old one second; serve reloads.
	idemorders-frontend-secret begin >"$T_TMP/rot" 2>&1 ||
	    fail "idemorders-frontend-secret begin" "$(cat "$T_TMP/rot")"
	s2=$(head -n 1 /etc/idemorders/frontend.secret)
	[[ -n $s2 && $s2 != "$s1" && $(sed -n 2p /etc/idemorders/frontend.secret) == "$s1" &&
	    $(stat -c '%U:%G %a' /etc/idemorders/frontend.secret) == "root:idemorders 640" ]] &&
	    ok "rotation begin: the new secret, then the old one (root:idemorders 0640)" ||
	    fail "rotation begin" "$(stat -c '%U:%G %a' /etc/idemorders/frontend.secret) $(wc -l </etc/idemorders/frontend.secret) lines"
	kill -HUP "$PKG_SERVE_PID"
	pkg_secret_wait "$s2" 200 && ok "rotation: after the reload the new secret passes" ||
	    fail "rotation: new secret after reload" "status $STATUS"
	pkg_secret_health "$s1"
	expect_status 200 "rotation: the old secret still passes"
	post "$PKG_LIGHTTPD_URL" "$ALICE" "$(unique_key rot1)" "$order"
	expect_status 201 "rotation: lighttpd, still sending the old secret"
	post "$PKG_APACHE_URL" "$ALICE" "$(unique_key rot1a)" "$order"
	expect_status 201 "rotation: Apache, still sending the old secret"

	# 2. The web servers send the new one.
	idemorders-frontend-secret web >"$T_TMP/rot" 2>&1 ||
	    fail "idemorders-frontend-secret web" "$(cat "$T_TMP/rot")"
	grep -q "\"$s2\"" /etc/apache2/idemorders-secret.conf &&
	    grep -q "\"$s2\"" /etc/lighttpd/idemorders-secret.conf &&
	    ok "rotation web: both includes hold the new secret" ||
	    fail "rotation web" "includes not rewritten"
	pkg_stop "$PKG_LIGHTTPD_PID"
	pkg_lighttpd || return 1
	apache2 -d "$PKG_RUN/apache" -f "$apache_conf" -k graceful >/dev/null 2>&1
	sleep 1
	post "$PKG_LIGHTTPD_URL" "$ALICE" "$(unique_key rot2)" "$order"
	expect_status 201 "rotation: lighttpd with the new secret"
	post "$PKG_APACHE_URL" "$ALICE" "$(unique_key rot2a)" "$order"
	expect_status 201 "rotation: Apache with the new secret"

	# 3. Only the new one.
	idemorders-frontend-secret end >"$T_TMP/rot" 2>&1 ||
	    fail "idemorders-frontend-secret end" "$(cat "$T_TMP/rot")"
	[[ $(wc -l </etc/idemorders/frontend.secret) == 1 &&
	    $(head -n 1 /etc/idemorders/frontend.secret) == "$s2" ]] &&
	    ok "rotation end: only the new secret is left" ||
	    fail "rotation end" "$(wc -l </etc/idemorders/frontend.secret) lines"
	kill -HUP "$PKG_SERVE_PID"
	pkg_secret_wait "$s1" 403 && ok "rotation: after the last reload the old secret is refused (403)" ||
	    fail "rotation: old secret after end" "status $STATUS"
	pkg_secret_health "$s2"
	expect_status 200 "rotation: the new secret passes"
	post "$PKG_LIGHTTPD_URL" "$ALICE" "$(unique_key rot3)" "$order"
	expect_status 201 "rotation done: lighttpd"
	post "$PKG_APACHE_URL" "$ALICE" "$(unique_key rot3a)" "$order"
	expect_status 201 "rotation done: Apache"
}

# metrics = on: /orders/_metrics answers loopback without credentials
# through both snippets (Prometheus text), and counts what was served.
pkg_metrics_checks() {
	local s url
	pkg_set_key metrics on
	kill -HUP "$PKG_SERVE_PID"
	# The new workers (SIGHUP) serve it; wait for them.
	pkg_wait sh -c "curl -s -o /dev/null -w '%{http_code}' \
	    '$PKG_LIGHTTPD_URL$MOUNT/_metrics' | grep -q 200"
	for s in lighttpd apache; do
		[[ $s == lighttpd ]] && url=$PKG_LIGHTTPD_URL || url=$PKG_APACHE_URL
		req GET "$url$MOUNT/_metrics"
		expect_status 200 "$s: metrics from loopback, no credentials"
		[[ $(hdr content-type) == text/plain* ]] &&
		    grep -q '^idemorders_requests_total{outcome="created"} [1-9]' "$T_TMP/body" &&
		    ok "$s: metrics in the text format, creates counted" ||
		    fail "$s: metrics body" "$(head -c 300 "$T_TMP/body")"
	done
}

# Apache as Debian's apache2.conf would run it after a2enmod proxy_fcgi
# auth_basic authn_file and a2enconf idemorders, with a default virtual
# host that answers every request.
pkg_apache() {
	local m conf=$PKG_RUN/apache2.conf
	install -d -m 0755 "$PKG_RUN" "$PKG_RUN/htdocs" "$PKG_RUN/apache"
	{
		echo "ServerRoot \"$PKG_RUN/apache\""
		echo "ServerName 127.0.0.1"
		echo "Listen 127.0.0.1:$PKG_APACHE_PORT"
		for m in mpm_event authn_core authn_file authz_core authz_host \
		    authz_user auth_basic env proxy proxy_fcgi; do
			echo "LoadModule ${m}_module /usr/lib/apache2/modules/mod_$m.so"
		done
		echo "User www-data"
		echo "Group www-data"
		echo "PidFile \"$PKG_RUN/apache/apache2.pid\""
		echo "DefaultRuntimeDir \"$PKG_RUN/apache\""
		echo "Mutex file:$PKG_RUN/apache default"
		echo "ErrorLog \"$PKG_RUN/apache/error.log\""
		echo "DocumentRoot \"$PKG_RUN/htdocs\""
		echo 'Include /etc/apache2/conf-available/idemorders.conf'
		# Like Debian's 000-default.conf: the snippet is global, so the
		# virtual hosts inherit /orders.
		echo "<VirtualHost *:$PKG_APACHE_PORT>"
		echo "	ServerName localhost"
		echo "	DocumentRoot \"$PKG_RUN/htdocs\""
		echo "</VirtualHost>"
	} >"$conf"
	if ! apache2 -d "$PKG_RUN/apache" -f "$conf" -t >"$PKG_RUN/apache-check.log" 2>&1; then
		fail "apache2 -t with conf-available/idemorders.conf" "$(tr '\n' ' ' <"$PKG_RUN/apache-check.log")"
		return 1
	fi
	rm -f "$PKG_RUN/apache/apache2.pid"
	apache2 -d "$PKG_RUN/apache" -f "$conf" -k start </dev/null >"$PKG_RUN/apache.out" 2>&1 9>&- 8>&-
	if pkg_wait test -s "$PKG_RUN/apache/apache2.pid"; then
		PKG_PIDS+=("$(cat "$PKG_RUN/apache/apache2.pid")")
		ok "apache2 from the installed conf-available snippet on $PKG_APACHE_URL"
	else
		fail "apache2" "did not start: $(tr '\n' ' ' <"$PKG_RUN/apache.out") $(tail -n 3 "$PKG_RUN/apache/error.log" 2>/dev/null)"
		return 1
	fi
}

# The installed package under systemd-socket-activate, as idemorders.socket
# starts it, answering through the lighttpd of pkg_lighttpd (started
# before or after: it connects on the first request), with a notify
# socket that records the master's sd_notify messages.  Stops serve at
# the end.  Needs the package installed, its database, stock A-10 and
# user/group in the config.
pkg_activation_checks() {
	local kid order
	order='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}'
	# The notify socket: every datagram the master sends.
	PKG_NOTIFY=$PKG_RUN/notify.sock
	rm -f "$PKG_NOTIFY" "$PKG_RUN/notify.log"
	socat -u UNIX-RECV:"$PKG_NOTIFY" OPEN:"$PKG_RUN/notify.log",creat,append \
	    9>&- 8>&- &
	PKG_PIDS+=("$!")
	pkg_wait test -S "$PKG_NOTIFY" ||
	    { fail "notify socket" "socat did not start"; return 1; }
	chmod 0666 "$PKG_NOTIFY"

	# systemd-socket-activate passes only the variables named with -E.
	rm -f "$PKG_SOCK"
	setsid systemd-socket-activate -E NOTIFY_SOCKET="$PKG_NOTIFY" \
	    -l "$PKG_SOCK" /usr/sbin/idemorders serve -c "$PKG_CONF" \
	    </dev/null >>"$PKG_RUN/serve.log" 2>&1 9>&- 8>&- &
	PKG_SERVE_PID=$!
	PKG_PIDS+=("$PKG_SERVE_PID")
	if ! pkg_wait test -S "$PKG_SOCK"; then
		fail "systemd-socket-activate" "no socket: $(tail -n 5 "$PKG_RUN/serve.log" | tr '\n' ' ')"
		return 1
	fi
	ok "systemd-socket-activate listens on $PKG_SOCK"
	# What idemorders.socket does: SocketGroup=www-data, SocketMode=0660.
	chgrp www-data "$PKG_SOCK"
	chmod 0660 "$PKG_SOCK"

	# The first request starts serve on the socket.
	create_and_replay "$PKG_LIGHTTPD_URL" "$ALICE" "$(unique_key activated)" \
	    "$order" "$order" activation
	grep -q 'socket activation: serving fd 3' "$PKG_RUN/serve.log" &&
	    ok "activation: the master serves fd 3, not its listen line" ||
	    fail "activation log" "$(tail -n 5 "$PKG_RUN/serve.log" | tr '\n' ' ')"
	[[ $(tr '\0' ' ' <"/proc/$PKG_SERVE_PID/cmdline" 2>/dev/null) == "/usr/sbin/idemorders serve"* ]] &&
	    ok "activation: systemd-socket-activate exec'd serve (LISTEN_PID is its pid)" ||
	    fail "activation pid" "$(tr '\0' ' ' <"/proc/$PKG_SERVE_PID/cmdline" 2>/dev/null)"
	kid=$(pgrep -P "$PKG_SERVE_PID" | head -n 1)
	[[ -n $kid && $(ps -o user= -p "$kid") == idemorders ]] &&
	    ok "activation: workers run as idemorders" ||
	    fail "activation: privilege drop" "worker '$kid' runs as '$(ps -o user= -p "$kid" 2>/dev/null)'"

	pkg_wait pkg_notified 1 READY=1 && ok "sd_notify: READY=1" ||
	    fail "sd_notify READY" "'$(cat "$PKG_RUN/notify.log" 2>/dev/null)'"
	kill -HUP "$PKG_SERVE_PID"
	pkg_wait pkg_notified 1 RELOADING=1 && pkg_wait pkg_notified 2 READY=1 &&
	    ok "sd_notify on SIGHUP: RELOADING=1, then READY=1" ||
	    fail "sd_notify reload" "'$(cat "$PKG_RUN/notify.log" 2>/dev/null)'"
	post "$PKG_LIGHTTPD_URL" "$ALICE" "$(unique_key activated)" "$order"
	expect_status 201 "activation: create after the reload"
	kill -TERM "$PKG_SERVE_PID"
	pkg_wait pkg_notified 1 STOPPING=1 && ok "sd_notify on SIGTERM: STOPPING=1" ||
	    fail "sd_notify stop" "'$(cat "$PKG_RUN/notify.log" 2>/dev/null)'"
	pkg_wait sh -c "! kill -0 $PKG_SERVE_PID 2>/dev/null" &&
	    ok "activation: serve exits on SIGTERM" ||
	    fail "activation: stop" "pid $PKG_SERVE_PID still runs"
	# The socket is systemd's: it stays for the next start.
	[[ -S $PKG_SOCK ]] && ok "activation: the socket outlives serve" ||
	    fail "activation: socket" "serve removed $PKG_SOCK, which it did not make"
}

# pkg_notified N WORD: the notify log holds WORD at least N times.
pkg_notified() {
	[[ $(grep -o -- "$2" "$PKG_RUN/notify.log" 2>/dev/null | wc -l) -ge $1 ]]
}

# Stop what we started, by pid, newest first.
pkg_stop_all() {
	local i pid
	for ((i = ${#PKG_PIDS[@]} - 1; i >= 0; i--)); do
		pid=${PKG_PIDS[i]}
		kill -TERM "$pid" 2>/dev/null || continue
		pkg_wait sh -c "! kill -0 $pid 2>/dev/null" || kill -KILL "$pid" 2>/dev/null
	done
	PKG_PIDS=()
}

# On exit: stop everything, purge the package if it is still there,
# drop the package's database, remove the build.
pkg_cleanup() {
	pkg_stop_all
	[[ -x /etc/init.d/idemorders ]] && /etc/init.d/idemorders stop >/dev/null 2>&1
	pkg_lighttpd_links_restore
	if dpkg-query -W -f='${Status}' idemorders 2>/dev/null | grep -q installed; then
		dpkg --purge idemorders >/dev/null 2>&1
	fi
	# Answers a test preseeded and dbconfig-common's dumps of the
	# databases it dropped.
	echo PURGE | debconf-communicate idemorders >/dev/null 2>&1
	rm -f /var/tmp/idemorders.idemorders.*.mysql.*
	pkg_mariadb_stop
	"$DEV" sql "DROP DATABASE IF EXISTS $PKG_DB" >/dev/null 2>&1
	"$DEV" sql "DROP DATABASE IF EXISTS $PKG_CHECK_DB" >/dev/null 2>&1
	rm -rf "$PKG_RUN" "$PKG_WORK" "$T_TMP" "$PKG_CHECK_CONF"
}
