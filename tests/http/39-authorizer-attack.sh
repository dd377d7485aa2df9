#!/usr/bin/env bash
# The authorizer is inside the identity boundary (CONTRACT §3): a local
# user other than the web server's can neither choose the principal
# through the shop's PHP nor learn the frontend secret from it.
#
# The attack, as user nobody (another customer of a LAMP host), against
# every listening socket a PHP process of the stack holds (php-fpm pools,
# php-cgi under mod_fcgid): one FastCGI request per worker, twice over,
# with PHP_ADMIN_VALUE=auto_prepend_file=<nobody's file> (php-fpm keeps
# it in the worker) and, as a one-shot, SCRIPT_FILENAME=<nobody's file>.
# nobody's code answers an authorizer call that carries `X-As: NAME` with
# `Variable-REMOTE_USER: NAME`, and writes what PHP sees to a file.
# Afterwards, through each shop vhost (session and bearer, lighttpd and
# Apache):
#  - an anonymous request with `X-As: customer-1002` is refused 401 (an
#    answer from idemorders, 404 ORDER_NOT_FOUND, means it was served as
#    customer-1002);
#  - nobody's code never ran (no file written);
#  - nobody cannot connect to the responder's socket either.
# Then, as nobody, the stack's own doors: its MariaDB as root, the
# files with a password, secret or key, the htpasswd file and the logs.
# The secret on the error paths: copies of the shop's lighttpd and
# Apache with a PHP error page for the whole site; the lighttpd script
# across three vhosts; no Variable-REMOTE_USER in answers; a cross-site
# sign-in; SERVER_PORT against the Host header; /orders as a path
# segment.  Last the web server's side itself: root (who may reach the
# pools) prepends a spy to every PHP worker, a signed-in customer sends
# requests through each vhost, and no PHP request saw the frontend
# secret.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/shop.sh"

ATTACK=$(mktemp -d /tmp/idemorders-attack.XXXXXX)
chmod 0755 "$ATTACK"
install -d -m 0777 "$ATTACK/seen"
trap 'rm -rf "$ATTACK" "$T_TMP"' EXIT

# nobody's code: a prepend file and a one-shot script.
cat >"$ATTACK/prepend.php" <<'EOF'
<?php
@file_put_contents(__DIR__ . '/seen/' . getmypid() . '-' . uniqid(),
    json_encode($_SERVER));
if (isset($_SERVER['HTTP_X_AS'])) {
	header('Status: 200');
	header('Variable-REMOTE_USER: ' . $_SERVER['HTTP_X_AS']);
	exit;
}
EOF
cp "$ATTACK/prepend.php" "$ATTACK/oneshot.php"
chown -R nobody:nogroup "$ATTACK/prepend.php" "$ATTACK/oneshot.php"
chmod 0644 "$ATTACK/prepend.php" "$ATTACK/oneshot.php"

# The stack's PHP processes: php-fpm's master and workers, and whatever
# the shop's Apache spawned (php-cgi under mod_fcgid).
stack_pids() {
	local root p
	for root in "$(cat "$RUNDIR/php-fpm.pid" 2>/dev/null)" \
	    "$(cat "$RUNDIR/apache-shop/apache2.pid" 2>/dev/null)"; do
		[[ -n $root ]] || continue
		echo "$root"
		for p in $(pgrep -P "$root"); do
			echo "$p"
			pgrep -P "$p"
		done
	done
}

# The listening sockets of the stack's PHP processes: "unix:PATH" or
# "tcp:HOST:PORT" (ss -p names each socket's processes as pid=N).
php_listeners() {
	local pids
	pids=" $(stack_pids | tr '\n' ' ') "
	ss -Hxlp 2>/dev/null | awk -v pids="$pids" '/"php/ {
		for (s = $0; match(s, /pid=[0-9]+/); s = substr(s, RSTART + RLENGTH))
			if (index(pids, " " substr(s, RSTART + 4, RLENGTH - 4) " ")) {
				print "unix:" $5; break
			}
	}'
	ss -Htlpn 2>/dev/null | awk -v pids="$pids" '/"php/ {
		for (s = $0; match(s, /pid=[0-9]+/); s = substr(s, RSTART + RLENGTH))
			if (index(pids, " " substr(s, RSTART + 4, RLENGTH - 4) " ")) {
				print "tcp:" $4; break
			}
	}'
}

# as_nobody_fcgi LISTENER SCRIPT [NAME=VALUE...]: one FastCGI request to
# LISTENER as user nobody; prints what came back.
as_nobody_fcgi() {
	local l=$1 script=$2 target
	shift 2
	case $l in
	unix:*)	target=${l#unix:} ;;
	tcp:*)	target=${l#tcp:} ;;
	esac
	timeout 10 setpriv --reuid=nobody --regid=nogroup --clear-groups \
	    env -i REQUEST_METHOD=GET SCRIPT_FILENAME="$script" \
	    SCRIPT_NAME=/x.php REQUEST_URI=/x.php SERVER_PROTOCOL=HTTP/1.1 \
	    GATEWAY_INTERFACE=CGI/1.1 SERVER_NAME=127.0.0.1 SERVER_PORT=80 \
	    REMOTE_ADDR=127.0.0.1 "$@" \
	    cgi-fcgi -bind -connect "$target" 2>&1 </dev/null
}

mapfile -t LISTENERS < <(php_listeners | sort -u)
[[ ${#LISTENERS[@]} -gt 0 ]] && ok "the stack's PHP listeners: ${LISTENERS[*]}" ||
    fail "PHP listeners" "ss found no socket of a PHP process"

authorizer=$RUNDIR/src/examples/shop/authorizer/session.php
for l in "${LISTENERS[@]}"; do
	reached=0
	for ((i = 0; i < 16; i++)); do
		out=$(as_nobody_fcgi "$l" "$authorizer" \
		    PHP_ADMIN_VALUE="auto_prepend_file=$ATTACK/prepend.php" \
		    PHP_VALUE="auto_prepend_file=$ATTACK/prepend.php")
		[[ $out == *Status:* || $out == *Content-type* || $out == *Content-Type* ]] &&
		    reached=1
	done
	out=$(as_nobody_fcgi "$l" "$ATTACK/oneshot.php")
	[[ $out == *Status:* || $out == *Content-type* || $out == *Content-Type* ]] &&
	    reached=1
	[[ $reached == 0 ]] && ok "nobody cannot talk FastCGI to $l" ||
	    fail "nobody talks FastCGI to $l" "a PHP answer came back: $(head -c 200 <<<"$out")"
done

# The responder's own socket, straight.
out=$(timeout 10 setpriv --reuid=nobody --regid=nogroup --clear-groups \
    env -i REQUEST_METHOD=GET REQUEST_URI=$MOUNT/o-1 SCRIPT_NAME=$MOUNT \
    PATH_INFO=/o-1 REMOTE_USER=$BEN REMOTE_ADDR=127.0.0.1 \
    cgi-fcgi -bind -connect "$FCGI_SOCKET" 2>&1 </dev/null)
[[ $out != *ORDER_NOT_FOUND* && $out != *Status:* ]] &&
    ok "nobody cannot reach the responder's socket" ||
    fail "nobody reaches the responder" "$(head -c 200 <<<"$out")"

for url in "$SHOP_LIGHTTPD_URL" "$SHOP_APACHE_URL" "$BEARER_LIGHTTPD_URL" "$BEARER_APACHE_URL"; do
	for ((i = 0; i < 12; i++)); do
		req GET "$url$MOUNT/o-1" -H "X-As: $BEN"
		[[ $STATUS == 401 ]] || break
	done
	expect_status 401 "$url: X-As after the attack"
done
n=$(find "$ATTACK/seen" -type f | wc -l)
[[ $n -eq 0 ]] && ok "nobody's PHP never ran" ||
    fail "nobody's PHP ran" "$n requests ran it"

# ---- the stack's own doors, as nobody --------------------------------------
# "nobody cannot choose the principal" holds only if nobody cannot reach
# the stack's database either (as its root, or with the application's
# password from a config) nor read a secret, a key or a log that lists
# principals.  Each as user nobody.
my_cnf=$REPO/var/$IDEMORDERS_STACK/my.cnf
db_port=$(sed -n 's/^port = //p' "$my_cnf" | head -n 1)
for how in "-S $RUNDIR/db/mysqld.sock" "-h 127.0.0.1 -P $db_port" "-h ::1 -P $db_port"; do
	# shellcheck disable=SC2086
	if out=$(timeout 10 runuser -u nobody -- mariadb --no-defaults $how -u root \
	    -N -e 'SELECT CURRENT_USER()' 2>&1); then
		fail "nobody talks to MariaDB as root ($how)" "$out"
	else
		ok "nobody cannot talk to MariaDB as root ($how)"
	fi
done
v=$(mariadb --defaults-file="$my_cnf" -N -e 'SELECT IFNULL(@@secure_file_priv, "NULL")' 2>&1)
[[ -n $v && $v != NULL && $v == /* ]] && ok "MariaDB's secure_file_priv is $v" ||
    fail "MariaDB's secure_file_priv" "is '$v', not a directory"
secret_files=("$RUNDIR/frontend.secret" "$RUNDIR/db-password"
    "$RUNDIR/idemorders-fcgid.conf" "$RUNDIR/idemorders-check.conf"
    "$RUNDIR/shop.ini" "$RUNDIR/shop-jwt/private.pem" "$RUNDIR/htpasswd"
    "$RUNDIR/lighttpd-frontend-secret.conf" "$RUNDIR/apache-frontend-secret.conf")
while IFS= read -r f; do
	secret_files+=("$f")
done < <(find "$RUNDIR/log" "$LOGDIR" -maxdepth 1 -name '*access*.log' 2>/dev/null)
for f in "${secret_files[@]}"; do
	[[ -e $f ]] || { fail "a secret of the stack" "$f is not there"; continue; }
	if runuser -u nobody -- cat "$f" >/dev/null 2>&1; then
		fail "nobody reads $f" "mode $(stat -c '%a %U:%G' "$f")"
	else
		ok "nobody cannot read $f"
	fi
done

# ---- the frontend secret on the error paths ---------------------------------
# A shop may give its site PHP error pages: lighttpd's server.error-handler
# (with server.error-intercept), Apache's ErrorDocument /page.php (with
# ProxyErrorOverride On).  Both restart the request (lighttpd keeps its
# environment, Apache passes it on as REDIRECT_*): the shipped /orders
# blocks must not let any error of theirs reach such a page.  Copies of
# the stack's shop servers, the shipped session snippets as rendered, plus
# the shop's own error settings at server level, on the ports after the
# stack's (+7, +8, +9); one vhost reaches the live responder, one a
# responder that is not there.
secret=$(head -n 1 "$RUNDIR/frontend.secret" 2>/dev/null)
[[ -n $secret ]] && ok "the stack has a frontend secret" ||
    fail "frontend secret" "$RUNDIR/frontend.secret is empty"
base_port=$((${SHOP_LIGHTTPD_URL##*:} - 3))
E=$ATTACK/err
install -d -m 0755 "$E" "$E/apache"
install -d -m 0777 "$E/seen"
install -d -m 0755 -o www-data -g www-data "$E/log"
shop_public=$RUNDIR/src/examples/shop/public
errpage=$shop_public/t39-error.php
cat >"$errpage" <<EOF
<?php
@file_put_contents('$E/seen/' . uniqid('', true),
    json_encode(['server' => \$_SERVER, 'env' => getenv()]));
echo "the shop's error page\n";
EOF
chmod 0644 "$errpage"
trap 'rm -rf "$ATTACK" "$T_TMP"; rm -f "$errpage"' EXIT

# lighttpd: live on +9, no responder on a unix socket of its own.
lt_port=$((base_port + 9))
sed -e "s|$FCGI_SOCKET|$E/gone.sock|g" "$RUNDIR/lighttpd-session.conf" \
    >"$E/lighttpd-session-dead.conf"
sed -e "s|^server.port .*|server.port = $lt_port|" \
    -e "s|^server.pid-file .*|server.pid-file = \"$E/lighttpd.pid\"|" \
    -e "s|^server.errorlog .*|server.errorlog = \"$E/log/lighttpd-error.log\"|" \
    -e "s|^accesslog.filename .*|accesslog.filename = \"$E/log/lighttpd-access.log\"|" \
    -e "/^\\\$SERVER\\[\"socket\"\\] == \"127.0.0.1:${BEARER_LIGHTTPD_URL##*:}\"/,/^}/d" \
    -e "s|^\\\$SERVER\\[\"socket\"\\] == \"127.0.0.1:${SHOP_LIGHTTPD_URL##*:}\"|\\\$SERVER[\"socket\"] == \"127.0.0.1:$lt_port\"|" \
    "$RUNDIR/lighttpd-shop.conf" >"$E/lighttpd.conf"
cat >>"$E/lighttpd.conf" <<EOF
\$SERVER["socket"] == "$E/dead.sock" {
	include "$E/lighttpd-session-dead.conf"
}
# The shop's own error pages, for the whole site.
server.error-handler = "/t39-error.php"
server.error-handler-404 = "/t39-error.php"
server.error-intercept = "enable"
EOF
# Apache: live on +7, no responder on +8.
ap_live=$((base_port + 7)) ap_dead=$((base_port + 8))
for v in live dead; do
	port=$ap_live sock=$FCGI_SOCKET
	[[ $v == dead ]] && port=$ap_dead sock=$E/gone.sock
	sed -e "s|127.0.0.1:${SHOP_APACHE_URL##*:}>|127.0.0.1:$port>|" \
	    -e "s|$RUNDIR/apache-shop|$E/apache|g" -e "s|$FCGI_SOCKET|$sock|g" \
	    "$RUNDIR/apache-session.conf" >"$E/apache-session-$v.conf"
done
sed -e "s|$RUNDIR/apache-shop|$E/apache|g" \
    -e "s|^Listen .*${SHOP_APACHE_URL##*:}\$|Listen 127.0.0.1:$ap_live|" \
    -e "s|^Listen .*${BEARER_APACHE_URL##*:}\$|Listen 127.0.0.1:$ap_dead|" \
    -e "s|^ErrorLog .*|ErrorLog \"$E/log/apache-error.log\"|" \
    -e "s|^CustomLog .*|CustomLog \"$E/log/apache-access.log\" idemorders|" \
    -e "s|^Include .*apache-session.conf.*|Include \"$E/apache-session-live.conf\"|" \
    -e "s|^Include .*apache-bearer.conf.*|Include \"$E/apache-session-dead.conf\"|" \
    "$RUNDIR/apache-shop/apache2.conf" >"$E/apache.conf"
cat >>"$E/apache.conf" <<EOF
# The shop's own error pages, for the whole site.
ProxyErrorOverride On
ErrorDocument 400 /t39-error.php
ErrorDocument 404 /t39-error.php
ErrorDocument 500 /t39-error.php
ErrorDocument 502 /t39-error.php
ErrorDocument 503 /t39-error.php
ErrorDocument 504 /t39-error.php
EOF
# shellcheck disable=SC2329
err_servers_stop() {
	local pid
	pid=$(cat "$E/lighttpd.pid" 2>/dev/null) && kill -TERM "$pid" 2>/dev/null
	pid=$(cat "$E/apache/apache2.pid" 2>/dev/null) &&
	    apache2 -d "$E/apache" -f "$E/apache.conf" -k stop >/dev/null 2>&1
	rm -f "$E/lighttpd.pid"
}
trap 'err_servers_stop; rm -rf "$ATTACK" "$T_TMP"; rm -f "$errpage"' EXIT
if lighttpd -f "$E/lighttpd.conf" >"$E/lighttpd.out" 2>&1 </dev/null 9>&-; then
	ok "lighttpd with the shop's error pages starts"
else
	fail "lighttpd with the shop's error pages" "$(head -c 400 "$E/lighttpd.out")"
fi
if apache2 -d "$E/apache" -f "$E/apache.conf" -k start >"$E/apache.out" 2>&1 </dev/null 9>&-; then
	ok "Apache with the shop's error pages starts"
else
	fail "Apache with the shop's error pages" "$(head -c 400 "$E/apache.out")"
fi
lt=http://127.0.0.1:$lt_port
wait_until 10 curl -s -o /dev/null "$lt/" ||
    fail "lighttpd copy" "does not answer on $lt"
wait_until 10 curl -s -o /dev/null --unix-socket "$E/dead.sock" http://127.0.0.1/ ||
    fail "lighttpd copy" "does not answer on $E/dead.sock"
wait_until 10 curl -s -o /dev/null "http://127.0.0.1:$ap_live/" ||
    fail "Apache copy" "does not answer on $ap_live"
wait_until 10 curl -s -o /dev/null "http://127.0.0.1:$ap_dead/" ||
    fail "Apache copy" "does not answer on $ap_dead"

ana=$T_TMP/ana.jar
shop_login "$SHOP_LIGHTTPD_URL" ana "$ana"
# The error pages are in place: a page that is not there gets them.
for u in "$lt" "http://127.0.0.1:$ap_live"; do
	req GET "$u/no-such-page"
	[[ $BODY == *"the shop's error page"* ]] &&
	    ok "$u: the shop's error page answers a missing page" ||
	    fail "$u: the shop's error page" "a missing page got $STATUS: $(head -c 200 <<<"$BODY")"
done
# Each error of /orders, live and without a responder (a hung answer
# counts as a failure after 10 s, not 60).
for u in "$lt" "$lt|--unix-socket|$E/dead.sock" \
    "http://127.0.0.1:$ap_live" "http://127.0.0.1:$ap_dead|--next-is-dead"; do
	IFS='|' read -r -a how <<<"$u"
	u=${how[0]} how=("${how[@]:1}")
	what=$u
	[[ ${how[*]} == *--unix-socket* ]] && what="$u (no responder)"
	[[ ${how[*]} == *--next-is-dead* ]] && what="$u (no responder)" how=()
	how+=(--max-time 10)
	if [[ $what == *"no responder"* ]]; then
		# The responder is not there: the server's own 503.
		req GET "$u$MOUNT/o-999999" -b "$ana" "${how[@]}"
		expect_status 503 "$what: ana"
		[[ $BODY != *"the shop's error page"* ]] &&
		    ok "$what: the 503 of /orders is not the shop's page" ||
		    fail "$what: the 503 of /orders" "went to the shop's error page"
	else
		# 4xx of the service.
		req GET "$u$MOUNT/o-999999" -b "$ana" "${how[@]}"
		expect_problem 404 ORDER_NOT_FOUND "$what: ana, an unknown order"
		req POST "$u$MOUNT" -b "$ana" "${how[@]}" \
		    -H 'Content-Type: application/json' -d '{}'
		expect_problem 400 IDEMPOTENCY_KEY_MISSING "$what: ana, no key"
	fi
	# The authorizer's refusal.
	req GET "$u$MOUNT/o-999999" "${how[@]}"
	expect_status 401 "$what: anonymous"
	[[ $BODY == *UNAUTHENTICATED* ]] &&
	    ok "$what: the 401 of /orders is not the shop's page" ||
	    fail "$what: the 401 of /orders" "got $(head -c 200 <<<"$BODY")"
done
if grep -rlF -- "$secret" "$E/seen" >/dev/null 2>&1; then
	fail "the frontend secret reached the shop's error page" \
	    "$(grep -rlF -- "$secret" "$E/seen" | xargs -r jq -r '.server | [.REQUEST_URI, .REDIRECT_STATUS // "", .SERVER_PORT, .HTTP_HOST] | join(" ")' | sort | uniq -c | tr '\n' ';')"
else
	ok "no error page saw the frontend secret"
fi
err_servers_stop

# ---- the lighttpd script keeps each request's own secret -------------------
# lighttpd-authorizer-secret.lua takes the secret out before the
# authorizer and puts it back for the responder.  Three vhosts share the
# script in one lighttpd: a.test (secret A), b.test (secret B, and Basic
# auth, which sets REMOTE_USER before the authorizer runs), c.test (no
# secret).  The authorizer and the responder are one PHP script in the
# shop's pool: as the authorizer it records what it saw and answers for
# `X-Ok: N`, as the responder it prints the secret it got.
L=$ATTACK/lua
install -d -m 0755 "$L" "$L/docroot"
install -d -m 0777 "$L/seen"
install -d -m 0755 -o www-data -g www-data "$L/log"
cat >"$L/echo.php" <<EOF
<?php
if ((\$_SERVER['FCGI_ROLE'] ?? '') === 'AUTHORIZER') {
	@file_put_contents('$L/seen/' . uniqid('', true), json_encode(\$_SERVER));
	if (isset(\$_SERVER['HTTP_X_OK'])) {
		header('Status: 200');
		header('Variable-REMOTE_USER: customer-' . \$_SERVER['HTTP_X_OK']);
	} else {
		header('Status: 401');
		echo "refused\n";
	}
	exit;
}
\$s = \$_SERVER['IDEMORDERS_FRONTEND_SECRET'] ?? 'none';
echo "secret=\$s\n";
EOF
printf 'u:p\n' >"$L/users"
chmod 0644 "$L/echo.php" "$L/users"
sa=lua-test-secret-A-0123456789abcdef0123456789
sb=lua-test-secret-B-0123456789abcdef0123456789
cat >"$L/lighttpd.conf" <<EOF
server.modules = ( "mod_access", "mod_alias", "mod_auth", "mod_authn_file",
	"mod_setenv", "mod_magnet", "mod_fastcgi" )
server.bind = "$L/lighttpd.sock"
server.document-root = "$L/docroot"
server.pid-file = "$L/lighttpd.pid"
server.errorlog = "$L/log/error.log"
server.username = "www-data"
server.groupname = "www-data"
fastcgi.server = ( "/orders" => (
	( "socket" => "$RUNDIR/php-fpm.sock", "mode" => "authorizer" ),
	( "socket" => "$RUNDIR/php-fpm.sock", "check-local" => "disable" ),
) )
\$HTTP["url"] =~ "^/orders" {
	alias.url = ( "/orders" => "$L/echo.php" )
	magnet.attract-physical-path-to = ( "$RUNDIR/lighttpd-authorizer-secret.lua" )
}
\$HTTP["host"] == "a.test" {
	setenv.add-environment = ( "IDEMORDERS_FRONTEND_SECRET" => "$sa" )
}
\$HTTP["host"] == "b.test" {
	setenv.add-environment = ( "IDEMORDERS_FRONTEND_SECRET" => "$sb" )
	auth.backend = "plain"
	auth.backend.plain.userfile = "$L/users"
	auth.require = ( "/orders" => ( "method" => "basic", "realm" => "t",
		"require" => "valid-user" ) )
}
EOF
# shellcheck disable=SC2329
lua_server_stop() {
	local pid
	pid=$(cat "$L/lighttpd.pid" 2>/dev/null) && kill -TERM "$pid" 2>/dev/null
	rm -f "$L/lighttpd.pid"
}
trap 'lua_server_stop; err_servers_stop; rm -rf "$ATTACK" "$T_TMP"; rm -f "$errpage"' EXIT
if lighttpd -f "$L/lighttpd.conf" >"$L/lighttpd.out" 2>&1 </dev/null 9>&-; then
	ok "lighttpd with three vhosts starts"
else
	fail "lighttpd with three vhosts" "$(head -c 400 "$L/lighttpd.out")"
fi
wait_until 10 test -S "$L/lighttpd.sock" ||
    fail "lighttpd with three vhosts" "no socket $L/lighttpd.sock"
# lua_req HOST EXPECTED [curl args]: the responder's answer through HOST.
lua_req() {
	local host=$1 want=$2
	shift 2
	req GET "http://$host/orders/x" --unix-socket "$L/lighttpd.sock" "$@"
	[[ $STATUS == 200 && $BODY == "secret=$want" ]] &&
	    ok "$host ${*:-}: the responder got secret=${want:0:20}" ||
	    fail "$host ${*:-}: the responder" "expected 200 secret=$want, got $STATUS $(head -c 100 <<<"$BODY")"
}
lua_req a.test "$sa" -H 'X-Ok: 1001'
lua_req c.test none -H 'X-Ok: 1001'
lua_req b.test "$sb" -H 'X-Ok: 1002' -u u:p
lua_req a.test "$sa" -H 'X-Ok: 1001'
req GET http://a.test/orders/x --unix-socket "$L/lighttpd.sock"
expect_status 401 "a.test: refused by the authorizer"
lua_req c.test none -H 'X-Ok: 1001'
lua_req b.test "$sb" -H 'X-Ok: 1002' -u u:p
n=$(find "$L/seen" -type f | wc -l)
[[ $n -ge 7 ]] && ok "the authorizer ran $n times" ||
    fail "the authorizer" "ran $n times, not 7"
if grep -rlF -e "$sa" -e "$sb" "$L/seen" >/dev/null 2>&1; then
	fail "a secret reached the authorizer" \
	    "$(grep -rlF -e "$sa" -e "$sb" "$L/seen" | xargs -r jq -r '.HTTP_HOST' | sort | uniq -c | tr '\n' ' ')"
else
	ok "no authorizer call saw a secret"
fi
lua_server_stop

# ---- the authorizer's variables stay on the server -------------------------
# mod_fcgid copies the authorizer's Variable-* headers into the request's
# environment and leaves them in the answer's headers too.
for url in "$SHOP_LIGHTTPD_URL" "$SHOP_APACHE_URL"; do
	req GET "$url$MOUNT/o-999999" -b "$ana"
	expect_status 404 "$url: ana"
	expect_no_header Variable-REMOTE_USER "$url: ana"
	req GET "$url$MOUNT/o-999999"
	expect_status 401 "$url: anonymous"
	expect_no_header Variable-REMOTE_USER "$url: anonymous"
done

# ---- login CSRF --------------------------------------------------------------
# A page of another site posts ana's name and password to the shop's
# login.php from ben's browser: the browser marks the request as
# cross-site (Origin, Sec-Fetch-Site) and the shop must not sign that
# browser in.  The shop's own form (same origin) still signs in.
for url in "$SHOP_LIGHTTPD_URL" "$SHOP_APACHE_URL"; do
	for h in "Origin: https://evil.example" "Sec-Fetch-Site: cross-site" "Origin: null"; do
		jar=$T_TMP/csrf.jar
		rm -f "$jar"
		req POST "$url/login.php" -c "$jar" -H "$h" \
		    --data-urlencode user=ana --data-urlencode password=ana-secret
		expect_status 403 "$url: a cross-site sign-in ($h)"
		req GET "$url$MOUNT/o-999999" -b "$jar"
		expect_status 401 "$url: after a cross-site sign-in ($h), /orders"
	done
	rm -f "$jar"
	req POST "$url/login.php" -c "$jar" -H "Origin: $url" -H "Sec-Fetch-Site: same-origin" \
	    --data-urlencode user=ana --data-urlencode password=ana-secret
	expect_status 303 "$url: the shop's own sign-in form"
	req GET "$url$MOUNT/o-999999" -b "$jar"
	expect_problem 404 ORDER_NOT_FOUND "$url: signed in from the shop's own page, /orders"
done

# ---- the shop's own URL is not the client's to choose ----------------------
# The shop's pages call /orders of their own vhost from PHP
# (shop_orders_url_here(): SERVER_ADDR and SERVER_PORT).  Apache with
# UseCanonicalName Off takes SERVER_PORT from the client's Host header,
# which would send the shop's request, with the customer's cookie, to
# any port on the host.  A probe page prints what PHP sees.
probe=$shop_public/t39-port.php
printf '<?php echo ($_SERVER["SERVER_PORT"] ?? ""), "\\n";\n' >"$probe"
chmod 0644 "$probe"
trap 'lua_server_stop; err_servers_stop; rm -rf "$ATTACK" "$T_TMP"; rm -f "$errpage" "$probe"' EXIT
for url in "$SHOP_LIGHTTPD_URL" "$SHOP_APACHE_URL" "$BEARER_LIGHTTPD_URL" "$BEARER_APACHE_URL"; do
	req GET "$url/t39-port.php" -H "Host: 127.0.0.1:1"
	[[ $STATUS == 200 && $BODY == "${url##*:}" ]] &&
	    ok "$url: PHP's SERVER_PORT is the vhost's, whatever the Host header says" ||
	    fail "$url: PHP's SERVER_PORT with Host: 127.0.0.1:1" "got $STATUS '$BODY', not ${url##*:}"
done
rm -f "$probe"

# ---- /orders is a path segment ---------------------------------------------
# A shop page whose name starts with "orders" (/orders-x.php) is the
# shop's: served as a page, never run as the authorizer nor sent to
# idemorders.
probe=$shop_public/orders-t39.php
install -d -m 0777 "$ATTACK/roles"
cat >"$probe" <<EOF
<?php
@file_put_contents('$ATTACK/roles/' . uniqid('', true), (\$_SERVER['FCGI_ROLE'] ?? '?') . "\n");
echo "the shop's page\n";
EOF
chmod 0644 "$probe"
trap 'lua_server_stop; err_servers_stop; rm -rf "$ATTACK" "$T_TMP"; rm -f "$errpage" "$probe"' EXIT
for url in "$SHOP_LIGHTTPD_URL" "$SHOP_APACHE_URL" "$BEARER_LIGHTTPD_URL" "$BEARER_APACHE_URL"; do
	req GET "$url/orders-t39.php"
	[[ $STATUS == 200 && $BODY == "the shop's page" ]] &&
	    ok "$url: /orders-t39.php is the shop's page" ||
	    fail "$url: /orders-t39.php" "got $STATUS $(head -c 100 <<<"$BODY")"
done
roles=$(cat "$ATTACK/roles/"* 2>/dev/null | sort | uniq -c | tr '\n' ' ')
[[ $roles != *AUTHORIZER* ]] && ok "no shop page ran as the authorizer ($roles)" ||
    fail "a shop page ran as the authorizer" "$roles"
rm -f "$probe"

# ---- the frontend secret never reaches PHP ---------------------------------
# Root is on the web server's side of the door: it may talk to the pools.
# A spy prepended to every php-fpm worker (and php-cgi under mod_fcgid is
# given nothing: it is spawned by Apache; its requests are seen through
# the authorizer's answers below, the spy covers the pools) records what
# each PHP request saw.
rm -f "$ATTACK/seen/"*
spied=0
for l in "${LISTENERS[@]}"; do
	[[ $l == unix:* ]] || continue
	for ((i = 0; i < 16; i++)); do
		timeout 10 env -i REQUEST_METHOD=GET SCRIPT_FILENAME="$authorizer" \
		    PHP_ADMIN_VALUE="auto_prepend_file=$ATTACK/prepend.php" \
		    cgi-fcgi -bind -connect "${l#unix:}" >/dev/null 2>&1 </dev/null &&
		    spied=1
	done
done
[[ $spied == 1 ]] && ok "root's spy is in the pools" ||
    fail "spy" "root could not reach any pool"
rm -f "$ATTACK/seen/"*
P=T39-P
set_stock "$P" KRW 700 100
for url in "$SHOP_LIGHTTPD_URL" "$SHOP_APACHE_URL"; do
	shop_login "$url" ana "$ana" || continue
	for ((i = 0; i < 6; i++)); do
		req GET "$url$MOUNT/o-999999" -b "$ana"
	done
	expect_problem 404 ORDER_NOT_FOUND "$url: ana, the spy in place"
	token=$(curl -s -b "$ana" --max-time 20 "$url/token.php" | jq -r .access_token 2>/dev/null)
	for burl in "$BEARER_LIGHTTPD_URL" "$BEARER_APACHE_URL"; do
		for ((i = 0; i < 6; i++)); do
			req GET "$burl$MOUNT/o-999999" -H "Authorization: Bearer $token"
		done
		expect_problem 404 ORDER_NOT_FOUND "$burl: ana's token, the spy in place"
	done
done
n=$(find "$ATTACK/seen" -type f | wc -l)
[[ $n -gt 0 ]] && ok "the spy saw $n PHP requests" ||
    fail "spy" "no PHP request was seen (the check below would prove nothing)"
if grep -rlF -- "$secret" "$ATTACK/seen" >/dev/null 2>&1; then
	fail "the frontend secret reached PHP" \
	    "$(grep -rlF -- "$secret" "$ATTACK/seen" | head -n 3 | xargs -r -n1 sh -c 'jq -r ".SCRIPT_FILENAME" "$0"' | tr '\n' ' ')"
else
	ok "no PHP request saw the frontend secret"
fi

# Respawn every php-fpm worker (SIGUSR2: a graceful reload), so that no
# spy outlives this script.
kill -USR2 "$(cat "$RUNDIR/php-fpm.pid")" 2>/dev/null ||
    fail "php-fpm reload" "no master at $RUNDIR/php-fpm.pid"
finish
