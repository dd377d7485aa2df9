#!/usr/bin/env bash
# The web server's own user (CONTRACT §3): what a process running as
# www-data (another site's PHP, a plugin) can do, as
# docs/identity-layout.md says, in the stack's default layout; and that
# it can do none of it in the layout where the shop's pages, its
# authorizer and its sessions are the shop's own and every door of the
# web server opens for its own group alone
# (httpd-conf/php-fpm-shop-own.conf, docs/identity-layout.md "The shop's
# own user").
#
# The attacker is www-data with its own groups (setpriv --init-groups):
#  - it forges a session file for ben and sends its cookie;
#  - it signs a token for ben with the shop's key;
#  - it connects to the shop's PHP pool and to mod_fcgid's sockets (the
#    session authorizer's php-cgi, the idemorders responders) and asks
#    for ben's orders or runs its own PHP there;
#  - it reads the web server's processes' memory (/proc/PID/environ).
# In the default layout the first three succeed (ben is served: 404
# ORDER_NOT_FOUND for an unknown order, not 401); in the hardened one,
# started here beside the stack from its rendered configs (lighttpd on
# +12, Apache on +13 with its mod_fcgid responders on +14), each fails.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/shop.sh"

WEB_GROUP=idemorders-web
SHOP_USER=idemshop
H=$(mktemp -d /tmp/idemorders-own.XXXXXX)
chmod 0755 "$H"
trap 'rm -rf "$H" "$T_TMP"' EXIT

# as_www CMD...: CMD as www-data with www-data's groups.
as_www() {
	timeout 10 setpriv --reuid=www-data --regid=www-data --init-groups "$@"
}

# www_fcgi SOCKET [NAME=VALUE...]: GET /orders/o-999999999 as ben over
# FastCGI to SOCKET, as www-data; prints the answer.
www_fcgi() {
	local s=$1
	shift
	as_www env -i REQUEST_METHOD=GET REQUEST_URI=$MOUNT/o-999999999 \
	    SCRIPT_NAME=$MOUNT PATH_INFO=/o-999999999 REMOTE_USER=$BEN \
	    REMOTE_ADDR=127.0.0.1 SERVER_PROTOCOL=HTTP/1.1 "$@" \
	    cgi-fcgi -bind -connect "$s" 2>&1 </dev/null
}

# forge DIR: a session file for ben written by www-data in DIR; prints
# its id (false when www-data cannot write it).
forge() {
	local id
	id=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	as_www sh -c 'printf "%s" "$2" >"$1"' sh "$1/sess_$id" \
	    "seen|i:$(date +%s);customer|s:${#BEN}:\"$BEN\";name|s:3:\"ben\";" \
	    2>/dev/null || return 1
	echo "$id"
}

# as_ben WHAT URL [curl args...]: GET an unknown order with the given
# credentials; sets STATUS and BODY.
as_ben() {
	req GET "$2$MOUNT/o-999999999" --max-time 20 "${@:3}"
}

# steal_token KEY: a token for ben signed with KEY as read by www-data
# (empty when www-data cannot read it).
steal_token() {
	as_www cat "$1" >"$H/stolen.pem" 2>/dev/null || return 1
	mint_token "$(claims "$BEN")" "$H/stolen.pem"
}

# env_readable PATTERN: the pids of the processes matching PATTERN whose
# environment www-data reads.
env_readable() {
	local p r=
	for p in $(pgrep -f -- "$1"); do
		as_www cat "/proc/$p/environ" >/dev/null 2>&1 && r+=" $p"
	done
	echo "$r"
}

# ---- the default layout: what docs/identity-layout.md says www-data can do -
id=$(forge "$SHOP_SESSIONS") && ok "default: www-data writes a session file" ||
    fail "default: www-data writes a session file" "it cannot"
for url in "$SHOP_LIGHTTPD_URL" "$SHOP_APACHE_URL"; do
	as_ben forged "$url" -b "idemshop=$id"
	expect_problem 404 ORDER_NOT_FOUND "default $url: www-data's forged session is ben"
done
rm -f "$SHOP_SESSIONS/sess_$id"
tok=$(steal_token "$SHOP_JWT/private.pem") && [[ -n $tok ]] &&
    ok "default: www-data signs a token with the shop's key" ||
    fail "default: www-data signs a token" "it cannot read $SHOP_JWT/private.pem"
for url in "$BEARER_LIGHTTPD_URL" "$BEARER_APACHE_URL"; do
	as_ben token "$url" -H "Authorization: Bearer $tok"
	expect_problem 404 ORDER_NOT_FOUND "default $url: www-data's token is ben"
done
# mod_fcgid's responders (apache-fcgid.conf): one is spawned by a health
# check; www-data sends REMOTE_USER itself.
req GET "$FCGID_URL$MOUNT/_health"
expect_status 200 "default: mod_fcgid spawned a responder"
mapfile -t socks < <(find "$RUNDIR/apache/fcgid" -type s 2>/dev/null)
served=0
for s in "${socks[@]}"; do
	[[ $(www_fcgi "$s") == *ORDER_NOT_FOUND* ]] && served=1
done
[[ $served == 1 ]] &&
    ok "default: www-data is served as ben by a mod_fcgid responder (${#socks[@]} sockets)" ||
    fail "default: mod_fcgid's responders" "none of ${#socks[@]} served www-data"
r=$(env_readable "$RUNDIR/idemorders-fcgid.conf")
[[ -n $r ]] && ok "default: www-data reads a mod_fcgid responder's environment" ||
    fail "default: the responders' environment" "www-data reads none"
# The shop's pool and the session authorizer's php-cgi run www-data's
# own PHP.
printf '<?php echo "www-data code ran as ", posix_getpwuid(posix_geteuid())["name"];\n' \
    >"$H/x.php"
chmod 0644 "$H/x.php"
# (mod_fcgid leaves the sockets of processes gone: one of them answers.)
out=$(www_fcgi "$RUNDIR/php-fpm.sock" SCRIPT_FILENAME="$H/x.php" SCRIPT_NAME=/x.php)
[[ $out == *"code ran as www-data"* ]] &&
    ok "default: www-data runs its PHP in the shop's pool" ||
    fail "default: www-data's PHP in the shop's pool" "$(head -c 200 <<<"$out")"
mapfile -t socks < <(find "$RUNDIR/apache-shop/fcgid" -type s 2>/dev/null)
ran=0
for s in "${socks[@]}"; do
	out=$(www_fcgi "$s" SCRIPT_FILENAME="$H/x.php" SCRIPT_NAME=/x.php)
	[[ $out == *"code ran as www-data"* ]] && ran=1
done
[[ $ran == 1 ]] &&
    ok "default: www-data runs its PHP in the session authorizer's php-cgi" ||
    fail "default: the session authorizer's php-cgi" "none of ${#socks[@]} sockets ran www-data's PHP"
# The responder pool asks for the frontend secret, of www-data too.
out=$(www_fcgi "$FCGI_SOCKET")
[[ $out == *FRONTEND_SECRET_MISMATCH* ]] &&
    ok "default: the responder pool refuses www-data without the secret" ||
    fail "default: the responder pool" "$(head -c 200 <<<"$out")"

# ---- the hardened layout ------------------------------------------------------
getent group "$WEB_GROUP" >/dev/null && id -u "$SHOP_USER" >/dev/null 2>&1 &&
    ok "the users of the hardened layout: group $WEB_GROUP, user $SHOP_USER" ||
    fail "the hardened layout" "no group $WEB_GROUP or user $SHOP_USER (tools/dev up makes them)"
id -nG www-data | tr ' ' '\n' | grep -qx -- "$WEB_GROUP" &&
    fail "www-data's groups" "www-data is a member of $WEB_GROUP" ||
    ok "www-data is no member of $WEB_GROUP"
base_port=$((${SHOP_LIGHTTPD_URL##*:} - 3))
lt_port=$((base_port + 12)) ap_port=$((base_port + 13)) fc_port=$((base_port + 14))
P=$H/private	# the web server's group only: its sockets
install -d -m 0750 -o root -g "$WEB_GROUP" "$P"
install -d -m 0750 -o www-data -g www-data "$H/log"
install -d -m 0755 "$H/apache"
install -d -m 0700 -o "$SHOP_USER" -g "$SHOP_USER" "$H/sessions"
install -d -m 0750 -o root -g "$SHOP_USER" "$H/jwt"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
    -out "$H/jwt/private.pem" 2>/dev/null
openssl pkey -in "$H/jwt/private.pem" -pubout -out "$H/jwt/public.pem"
chown root:"$SHOP_USER" "$H/jwt/private.pem"
chmod 0640 "$H/jwt/private.pem"
chmod 0644 "$H/jwt/public.pem"
sed -e "s|^jwt_private_key = .*|jwt_private_key = $H/jwt/private.pem|" \
    -e "s|^jwt_public_key = .*|jwt_public_key = $H/jwt/public.pem|" \
    "$SHOP_INI" >"$H/shop.ini"
chown "root:$SHOP_USER" "$H/shop.ini"
chmod 0640 "$H/shop.ini"
install -m 0755 "$REPO/httpd-conf/fcgid-relay.pl" "$H/fcgid-relay"

# The shop's pool, as shipped, in a php-fpm master of its own.
sed -e "s|@SHOP_USER@|$SHOP_USER|g" -e "s|@WEB_GROUP@|$WEB_GROUP|g" \
    -e "s|@SHOP_SOCKET@|$P/php-fpm.sock|g" -e "s|@SHOP_INI@|$H/shop.ini|g" \
    -e "s|@SESSIONS@|$H/sessions|g" "$REPO/httpd-conf/php-fpm-shop-own.conf" \
    >"$H/pool.conf"
cat >"$H/php-fpm.conf" <<EOF
[global]
pid = $H/php-fpm.pid
error_log = $H/php-fpm.log
daemonize = no
include = $H/pool.conf
EOF
# lighttpd: the stack's shop config, the session vhost on +12, the
# shop's own pool, the web server's own group.
sed -e "s|$RUNDIR/php-fpm.sock|$P/php-fpm.sock|g" \
    "$RUNDIR/lighttpd-session.conf" >"$H/lighttpd-session.conf"
sed -e "s|^server.port .*|server.port = $lt_port|" \
    -e "s|^server.groupname .*|server.groupname = \"$WEB_GROUP\"|" \
    -e "s|^server.pid-file .*|server.pid-file = \"$H/lighttpd.pid\"|" \
    -e "s|^server.errorlog .*|server.errorlog = \"$H/log/lighttpd-error.log\"|" \
    -e "s|^accesslog.filename .*|accesslog.filename = \"$H/log/lighttpd-access.log\"|" \
    -e "s|$RUNDIR/lighttpd-session.conf|$H/lighttpd-session.conf|" \
    -e "/^\\\$SERVER\\[\"socket\"\\] == \"127.0.0.1:${BEARER_LIGHTTPD_URL##*:}\"/,/^}/d" \
    -e "s|127.0.0.1:${SHOP_LIGHTTPD_URL##*:}\"|127.0.0.1:$lt_port\"|" \
    "$RUNDIR/lighttpd-shop.conf" >"$H/lighttpd.conf"
# Apache: the stack's shop config, the session vhost on +13 and
# apache-fcgid.conf's vhost on +14, the web server's own group, its
# FcgidIPCDir in the group's directory, the shop's own pool, and the
# session authorizer in that pool through fcgid-relay.
sed -e "s|127.0.0.1:${SHOP_APACHE_URL##*:}>|127.0.0.1:$ap_port>|" \
    -e "s|$RUNDIR/apache-shop/fcgid_shm|$H/apache/fcgid_shm|g" \
    -e "s|$RUNDIR/apache-shop/fcgid|$P/fcgid|g" \
    -e "s|$RUNDIR/php-fpm.sock|$P/php-fpm.sock|g" \
    -e "s|^\(FcgidInitialEnv IDEMSHOP_CONFIG\) .*|FcgidInitialEnv FCGID_RELAY_SOCKET \"$P/php-fpm.sock\"|" \
    -e "s|FcgidAccessChecker .*|FcgidAccessChecker \"$H/fcgid-relay\"|" \
    "$RUNDIR/apache-session.conf" >"$H/apache-session.conf"
install -m 0640 -o root -g "$WEB_GROUP" "$RUNDIR/idemorders-fcgid.conf" "$H/idemorders-fcgid.conf"
sed -n '/^<VirtualHost/,/^<\/VirtualHost>/p' "$RUNDIR/apache/apache-fcgid.conf" |
    sed -e "s|<VirtualHost 127.0.0.1:[0-9]*>|<VirtualHost 127.0.0.1:$fc_port>|" \
    -e "s|$RUNDIR/idemorders-fcgid.conf|$H/idemorders-fcgid.conf|" >"$H/apache-fcgid.conf"
sed -e "s|$RUNDIR/apache-shop|$H/apache|g" \
    -e "s|^Group .*|Group $WEB_GROUP|" \
    -e "s|^Listen .*${SHOP_APACHE_URL##*:}\$|Listen 127.0.0.1:$ap_port|" \
    -e "s|^Listen .*${BEARER_APACHE_URL##*:}\$|Listen 127.0.0.1:$fc_port|" \
    -e "s|^ErrorLog .*|ErrorLog \"$H/log/apache-error.log\"|" \
    -e "s|^CustomLog .*|CustomLog \"$H/log/apache-access.log\" idemorders|" \
    -e "s|^Include .*apache-session.conf.*|Include \"$H/apache-session.conf\"|" \
    -e "s|^Include .*apache-bearer.conf.*|Include \"$H/apache-fcgid.conf\"|" \
    -e "s|^LoadModule headers_module .*|&\\
LoadModule auth_basic_module /usr/lib/apache2/modules/mod_auth_basic.so\\
LoadModule authn_file_module /usr/lib/apache2/modules/mod_authn_file.so|" \
    "$RUNDIR/apache-shop/apache2.conf" >"$H/apache.conf"
# shellcheck disable=SC2329
own_stop() {
	local pid
	pid=$(cat "$H/lighttpd.pid" 2>/dev/null) && kill -TERM "$pid" 2>/dev/null
	[[ -f $H/apache/apache2.pid ]] &&
	    apache2 -d "$H/apache" -f "$H/apache.conf" -k stop >/dev/null 2>&1
	pid=$(cat "$H/php-fpm.pid" 2>/dev/null) && kill -QUIT "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		pgrep -f -- "$H/" >/dev/null || break
		sleep 0.1
	done
}
trap 'own_stop; rm -rf "$H" "$T_TMP"' EXIT
setsid /usr/sbin/php-fpm8.2 --nodaemonize --fpm-config "$H/php-fpm.conf" \
    </dev/null >"$H/php-fpm.out" 2>&1 9>&- &
wait_until 15 test -S "$P/php-fpm.sock" &&
    ok "the shop's own pool starts" ||
    fail "the shop's own pool" "$(head -c 400 "$H/php-fpm.out" "$H/php-fpm.log" 2>/dev/null)"
lighttpd -f "$H/lighttpd.conf" >"$H/lighttpd.out" 2>&1 </dev/null 9>&- &&
    ok "lighttpd with the web server's own group starts" ||
    fail "lighttpd, hardened" "$(head -c 400 "$H/lighttpd.out")"
apache2 -d "$H/apache" -f "$H/apache.conf" -k start >"$H/apache.out" 2>&1 </dev/null 9>&- &&
    ok "Apache with the web server's own group starts" ||
    fail "Apache, hardened" "$(head -c 400 "$H/apache.out")"
lt=http://127.0.0.1:$lt_port ap=http://127.0.0.1:$ap_port fc=http://127.0.0.1:$fc_port
for u in "$lt" "$ap" "$fc"; do
	wait_until 15 curl -s -o /dev/null --max-time 5 "$u$MOUNT/_health" ||
	    fail "hardened $u" "does not answer"
done

# The layout works: ana signs in through each vhost and is served.
ana=$T_TMP/ana.jar
for u in "$lt" "$ap"; do
	shop_login "$u" ana "$ana"
	as_ben signed-in "$u" -b "$ana"
	expect_problem 404 ORDER_NOT_FOUND "hardened $u: ana, signed in, is served"
	[[ $STATUS == 404 ]] || tail -n 5 "$H"/log/*error.log "$H/php-fpm.log" >&2
	sid=$(session_id_of "$ana")
	[[ $(stat -c '%U:%G %a' "$H/sessions/sess_$sid" 2>/dev/null) == "$SHOP_USER:$SHOP_USER 600" ]] &&
	    ok "hardened $u: the session file is $SHOP_USER's" ||
	    fail "hardened $u: the session file" "$(stat -c '%U:%G %a' "$H/sessions/sess_$sid" 2>&1)"
done

# The attack, as www-data.
if id=$(forge "$H/sessions"); then
	fail "hardened: www-data writes a session file" "$H/sessions/sess_$id"
else
	ok "hardened: www-data cannot write a session file"
	id=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
fi
for u in "$lt" "$ap"; do
	as_ben forged "$u" -b "idemshop=$id"
	expect_status 401 "hardened $u: www-data's forged session"
done
as_www ls "$H/sessions" >/dev/null 2>&1 &&
    fail "hardened: www-data lists the sessions" "it can" ||
    ok "hardened: www-data cannot list the sessions"
as_www cat "$H/shop.ini" >/dev/null 2>&1 &&
    fail "hardened: www-data reads the shop's config" "it can" ||
    ok "hardened: www-data cannot read the shop's config"
tok=$(steal_token "$H/jwt/private.pem") &&
    fail "hardened: www-data signs a token" "it read $H/jwt/private.pem" ||
    ok "hardened: www-data cannot read the shop's key"
# Every socket the hardened servers and the pool listen on, straight:
# the pool (its own PHP, as in tests/http/39), the authorizer's relay,
# the mod_fcgid responders (one spawned by a health check).
req GET "$fc$MOUNT/_health"
expect_status 200 "hardened: mod_fcgid spawned a responder"
mapfile -t socks < <(find "$P" -type s)
[[ ${#socks[@]} -ge 3 ]] && ok "hardened: ${#socks[@]} sockets to attack" ||
    fail "hardened: the sockets" "only ${socks[*]}"
for s in "${socks[@]}"; do
	out=$(www_fcgi "$s"; www_fcgi "$s" SCRIPT_FILENAME="$H/x.php" \
	    PHP_ADMIN_VALUE="auto_prepend_file=$H/x.php")
	[[ $out != *ORDER_NOT_FOUND* && $out != *"code ran"* && $out != *Status:* &&
	    $out != *Content-[Tt]ype* ]] &&
	    ok "hardened: www-data cannot talk FastCGI to ${s#"$P"/}" ||
	    fail "hardened: www-data talks FastCGI to ${s#"$P"/}" "$(head -c 200 <<<"$out")"
done
# The processes the web server starts (the authorizer's relay, the
# mod_fcgid responders): their environment and memory are not www-data's.
gid=$(getent group "$WEB_GROUP" | cut -d: -f3)
mapfile -t kids < <(ps -eo pid=,egid=,comm= |
    awk -v g="$gid" '$2 == g && ($3 == "fcgid-relay" || $3 == "idemorders") { print $1 }')
r=
for p in "${kids[@]}"; do
	as_www cat "/proc/$p/environ" >/dev/null 2>&1 && r+=" $p"
done
comms=$(ps -o comm= -p "$(IFS=,; echo "${kids[*]:-1}")" | sort -u | tr '\n' ' ')
[[ $comms == "fcgid-relay idemorders " && -z $r ]] &&
    ok "hardened: www-data reads the environment of none of the web server's ${#kids[@]} children ($comms)" ||
    fail "hardened: the web server's children ($comms)" "www-data reads /proc/PID/environ of:${r:- none of ${#kids[@]}}"

finish
