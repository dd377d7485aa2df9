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
# Then the web server's side itself: root (who may reach the pools)
# prepends a spy to every PHP worker, a signed-in customer sends requests
# through each vhost, and no PHP request saw the frontend secret.
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

# ---- the frontend secret never reaches PHP ---------------------------------
# Root is on the web server's side of the door: it may talk to the pools.
# A spy prepended to every php-fpm worker (and php-cgi under mod_fcgid is
# given nothing: it is spawned by Apache; its requests are seen through
# the authorizer's answers below, the spy covers the pools) records what
# each PHP request saw.
secret=$(head -n 1 "$RUNDIR/frontend.secret" 2>/dev/null)
[[ -n $secret ]] && ok "the stack has a frontend secret" ||
    fail "frontend secret" "$RUNDIR/frontend.secret is empty"
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
ana=$T_TMP/ana.jar
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
