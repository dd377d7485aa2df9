# tools/lib/shop.sh -- the demo shop of the stack: php-fpm, the shop's
# lighttpd and Apache (session and bearer-token vhosts), its config, its
# database user and the key that signs its tokens.
# shellcheck shell=bash
#
# Like the rest of the stack: every daemon records its pid in RUN and is
# stopped by that pid; nothing packaged (the php8.2-fpm service) is
# started or touched.

PHP_FPM_BIN=/usr/sbin/php-fpm8.2
PHP_CGI_BIN=/usr/bin/php-cgi8.2

# Copy the shop and the clients where www-data reads them (a clone under
# /root is not traversable): RUN/src mirrors the repository's layout, so
# that the shop's relative paths (../../../clients/php) hold.
shop_install_files() {
	install -d -m 0755 "$SHOP_SRC" "$SHOP_SRC/examples" "$SHOP_SRC/clients"
	rsync -a --delete --chmod=Du=rwx,Dgo=rx,Fu=rw,Fgo=r \
	    --exclude 'node_modules/' --exclude 'vendor/' \
	    "$REPO/examples/shop/" "$SHOP_DIR/"
	rsync -a --delete --chmod=Du=rwx,Dgo=rx,Fu=rw,Fgo=r \
	    --exclude 'node_modules/' --exclude 'vendor/' \
	    "$REPO/clients/" "$SHOP_SRC/clients/"
	install -d -m 0700 -o www-data -g www-data "$SHOP_SESSIONS"
}

# The key that signs the shop's tokens (RS256), made once per runtime
# dir: private.pem for token.php (www-data reads it), public.pem for the
# lighttpd token authorizer, cert.pem for mod_auth_openidc, and the key
# id the tokens carry.
shop_keys() {
	[[ -s $JWT_DIR/private.pem && -s $JWT_DIR/cert.pem && -s $JWT_DIR/kid ]] &&
	    return 0
	say "making the shop's token signing key (${JWT_DIR})"
	install -d -m 0750 -o root -g www-data "$JWT_DIR"
	(
		umask 027
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
		    -out "$JWT_DIR/private.pem.tmp" 2>/dev/null &&
		openssl pkey -in "$JWT_DIR/private.pem.tmp" -pubout \
		    -out "$JWT_DIR/public.pem" &&
		openssl req -x509 -new -key "$JWT_DIR/private.pem.tmp" \
		    -subj "/CN=$JWT_ISSUER" -days 3650 -out "$JWT_DIR/cert.pem" \
		    2>/dev/null
	) || die "openssl could not make the shop's key"
	openssl pkey -pubin -in "$JWT_DIR/public.pem" -outform DER |
	    sha256sum | cut -c1-16 >"$JWT_DIR/kid"
	chown root:www-data "$JWT_DIR/private.pem.tmp"
	chmod 0640 "$JWT_DIR/private.pem.tmp"
	chmod 0644 "$JWT_DIR/public.pem" "$JWT_DIR/cert.pem" "$JWT_DIR/kid"
	mv -f "$JWT_DIR/private.pem.tmp" "$JWT_DIR/private.pem"
}

# The shop's config (IDEMSHOP_CONFIG): read by the pages and the
# authorizers as www-data; the password is the read-only user's.
shop_write_config() {
	shop_keys
	cat >"$SHOP_INI.tmp" <<EOF
; The demo shop's configuration (IDEMSHOP_CONFIG) on the '$STACK' stack,
; written by $PROG up (edits are lost on the next 'up').
db_socket = $DB_SOCKET
db_name = $DB_NAME
db_user = $SHOP_DB_USER
db_password = $SHOP_DB_PASSWORD
orders_url = $MOUNT
jwt_issuer = $JWT_ISSUER
jwt_audience = $JWT_AUDIENCE
jwt_kid = $(<"$JWT_DIR/kid")
jwt_private_key = $JWT_DIR/private.pem
jwt_public_key = $JWT_DIR/public.pem
jwt_ttl = 300
session_idle = 1800
shop_db_name = $SHOP_DB_NAME
webhook_secret_file = $SHOP_WEBHOOK_SECRET_FILE
EOF
	chown root:www-data "$SHOP_INI.tmp"
	chmod 0640 "$SHOP_INI.tmp"
	mv -f "$SHOP_INI.tmp" "$SHOP_INI"
}

# The shop's database user: it reads the service's stock table, and
# reads and writes its own database (the warehouse's tables), nothing
# else.
shop_db_user() {
	db_root <<EOF
CREATE USER IF NOT EXISTS '$SHOP_DB_USER'@'localhost' IDENTIFIED BY '$SHOP_DB_PASSWORD';
ALTER USER '$SHOP_DB_USER'@'localhost' IDENTIFIED BY '$SHOP_DB_PASSWORD';
GRANT SELECT ON \`$DB_NAME\`.\`stock\` TO '$SHOP_DB_USER'@'localhost';
CREATE DATABASE IF NOT EXISTS \`$SHOP_DB_NAME\` CHARACTER SET utf8mb4;
GRANT SELECT, INSERT, UPDATE ON \`$SHOP_DB_NAME\`.* TO '$SHOP_DB_USER'@'localhost';
EOF
	db_root "$SHOP_DB_NAME" <"$REPO/examples/shop/schema.sql" ||
	    die "examples/shop/schema.sql did not load into $SHOP_DB_NAME"
}

# The warehouse's webhook secret, made once per runtime dir: the shop's
# copy (www-data reads it, outside the document root) and the relay's
# (the pool's user reads it); and the relay config that delivers to
# the warehouse (the stack's, with another webhook_url and secret).
shop_warehouse_relay() {
	local conf
	if [[ ! -s $SHOP_WEBHOOK_SECRET_FILE ]]; then
		echo "whsec_$(head -c 32 /dev/urandom | base64)" >"$SHOP_WEBHOOK_SECRET_FILE.tmp"
		chown root:www-data "$SHOP_WEBHOOK_SECRET_FILE.tmp"
		chmod 0640 "$SHOP_WEBHOOK_SECRET_FILE.tmp"
		mv -f "$SHOP_WEBHOOK_SECRET_FILE.tmp" "$SHOP_WEBHOOK_SECRET_FILE"
	fi
	install -m 0640 -o root -g "$POOL_USER" "$SHOP_WEBHOOK_SECRET_FILE" \
	    "$WAREHOUSE_SECRET_FILE"
	conf=$(grep -v -E '^(webhook_url|webhook_secret_file) *=' "$CONF")
	cat >"$WAREHOUSE_RELAY_CONF.tmp" <<EOF
$conf

# The relay to the demo shop's warehouse, written by $PROG up from the
# config above: tests/browser runs 'idemorders relay -c' on this file
# while it watches orders get packed.
webhook_url = $SHOP_LIGHTTPD_URL/warehouse.php
webhook_secret_file = $WAREHOUSE_SECRET_FILE
EOF
	chown "root:$POOL_USER" "$WAREHOUSE_RELAY_CONF.tmp"
	chmod 0640 "$WAREHOUSE_RELAY_CONF.tmp"
	mv -f "$WAREHOUSE_RELAY_CONF.tmp" "$WAREHOUSE_RELAY_CONF"
}

# ---------------------------------------------------------------- php-fpm

# A private php-fpm master with one pool, "shop", on a unix socket only
# the web servers' user opens (0660 www-data): the pages and lighttpd's
# authorizers.  No pool on TCP: every local user can connect to one, and
# php-fpm obeys PHP_VALUE/PHP_ADMIN_VALUE from any client, so whoever
# reached an authorizer's pool would choose the principal (Apache's
# session authorizer runs in php-cgi under mod_fcgid instead,
# shop_authorizer_ini).  The pool runs as www-data, which owns the
# sessions.  Where the sessions live is the pool's (php_admin_value); the
# cookie settings are defaults the shop may set itself (php_value).
SHOP_SESSION_INI="session.name = idemshop
session.save_handler = files
session.save_path = @SESSIONS@
session.use_strict_mode = 1
session.use_only_cookies = 1
session.cookie_httponly = 1
session.cookie_samesite = Lax
session.gc_maxlifetime = 1800"

# The pool's lines for SHOP_SESSION_INI: where the sessions are is the
# pool's (php_admin_value), the rest defaults (the pages set
# gc_maxlifetime from the shop's session_idle).
php_fpm_session_lines() {
	sed -e "s|@SESSIONS@|$SHOP_SESSIONS|" \
	    -e 's/^\(session\.\(save_handler\|save_path\)\) = \(.*\)/php_admin_value[\1] = \3/' \
	    -e 's/^\(session\.[a-z_]*\) = \(.*\)/php_value[\1] = \2/' <<<"$SHOP_SESSION_INI"
}

php_fpm_write_conf() {
	cat >"$PHP_FPM_CONF.tmp" <<EOF
; php-fpm of the idemorders '$STACK' stack (the demo shop), written by
; $PROG up.  Started and stopped by $PROG, never the system service.
[global]
pid = $PHP_FPM_PIDFILE
error_log = $LOGDIR/php-fpm.log
daemonize = no

[shop]
listen = $PHP_FPM_SOCKET
listen.owner = www-data
listen.group = www-data
listen.mode = 0660
user = www-data
group = www-data
pm = static
pm.max_children = 4
pm.max_requests = 5000
catch_workers_output = yes
decorate_workers_output = no
clear_env = yes
env[IDEMSHOP_CONFIG] = $SHOP_INI
security.limit_extensions = .php
$(php_fpm_session_lines)
php_admin_flag[display_errors] = off
php_admin_flag[log_errors] = on
EOF
	chmod 0644 "$PHP_FPM_CONF.tmp"
	mv -f "$PHP_FPM_CONF.tmp" "$PHP_FPM_CONF"
}

# php.ini of the session authorizer's php-cgi under Apache mod_fcgid
# (PHPRC): the pool's session settings, so that it reads the sessions the
# pages write.
shop_authorizer_ini() {
	{
		echo "; the session authorizer's php-cgi ('$STACK' stack), written by $PROG up"
		sed -e "s|@SESSIONS@|$SHOP_SESSIONS|" <<<"$SHOP_SESSION_INI"
		echo "display_errors = off"
		echo "log_errors = on"
	} >"$AUTHORIZER_PHP_INI.tmp"
	chmod 0644 "$AUTHORIZER_PHP_INI.tmp"
	mv -f "$AUTHORIZER_PHP_INI.tmp" "$AUTHORIZER_PHP_INI"
}

php_fpm_start() {
	local pid sum i
	php_fpm_write_conf
	if ! "$PHP_FPM_BIN" -t --fpm-config "$PHP_FPM_CONF" \
	    >"$LOGDIR/php-fpm-check.log" 2>&1; then
		show_log "$LOGDIR/php-fpm-check.log"
		die "php-fpm rejects $PHP_FPM_CONF"
	fi
	# The database's socket in the stamp: a pool started before its
	# user joined DB_CLIENT_GROUP cannot reach a socket that moved.
	sum="$(files_sum "$PHP_FPM_CONF") $DB_SOCKET"
	if pid=$(pid_alive "$PHP_FPM_PIDFILE" php-fpm); then
		[[ $(cat "$RUN/php-fpm.stamp" 2>/dev/null) == "$sum" ]] && return 0
		say "config changed: restarting php-fpm"
		php_fpm_stop
	fi
	say "starting php-fpm ($PHP_FPM_SOCKET)"
	rm -f "$PHP_FPM_PIDFILE" "$PHP_FPM_SOCKET"
	setsid "$PHP_FPM_BIN" --nodaemonize --fpm-config "$PHP_FPM_CONF" \
	    </dev/null >>"$LOGDIR/php-fpm.out" 2>&1 9>&- &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		if [[ -S $PHP_FPM_SOCKET ]] && pid_alive "$PHP_FPM_PIDFILE" php-fpm >/dev/null; then
			printf '%s\n' "$sum" >"$RUN/php-fpm.stamp"
			return 0
		fi
		proc_running "$pid" || break
		sleep 0.1
	done
	show_log "$LOGDIR/php-fpm.log"
	die "php-fpm did not start"
}

php_fpm_stop() {
	stop_pidfile "$PHP_FPM_PIDFILE" php-fpm QUIT php-fpm
	rm -f "$RUN/php-fpm.stamp" "$PHP_FPM_SOCKET"
}

# ------------------------------------------------- the shop's web servers

shop_lighttpd_start() {
	local pid sum i
	install -m 0644 "$REPO/httpd-conf/lighttpd-authorizer-secret.lua" \
	    "$RUN/lighttpd-authorizer-secret.lua"
	TPL_LOGDIR=$WWW_LOGDIR render_template "$REPO/httpd-conf/lighttpd-session.conf" \
	    "$RUN/lighttpd-session.conf" "$SHOP_LIGHTTPD_PORT"
	TPL_LOGDIR=$WWW_LOGDIR render_template "$REPO/httpd-conf/lighttpd-bearer.conf" \
	    "$RUN/lighttpd-bearer.conf" "$BEARER_LIGHTTPD_PORT"
	TPL_LOGDIR=$WWW_LOGDIR render_template "$REPO/httpd-conf/lighttpd-shop.conf" \
	    "$SHOP_LIGHTTPD_CONF.new" "$SHOP_LIGHTTPD_PORT"
	if ! lighttpd -tt -f "$SHOP_LIGHTTPD_CONF.new" >"$LOGDIR/lighttpd-shop-check.log" 2>&1; then
		show_log "$LOGDIR/lighttpd-shop-check.log"
		die "lighttpd rejects the config rendered from httpd-conf/lighttpd-shop.conf ($SHOP_LIGHTTPD_CONF.new)"
	fi
	mv -f "$SHOP_LIGHTTPD_CONF.new" "$SHOP_LIGHTTPD_CONF"
	ln -sfn "$WWW_LOGDIR/lighttpd-shop-error.log" "$LOGDIR/lighttpd-shop-error.log"
	ln -sfn "$WWW_LOGDIR/lighttpd-shop-access.log" "$LOGDIR/lighttpd-shop-access.log"
	sum=$(files_sum "$SHOP_LIGHTTPD_CONF" "$RUN/lighttpd-session.conf" \
	    "$RUN/lighttpd-bearer.conf" "$LIGHTTPD_SECRET_CONF" \
	    "$RUN/lighttpd-authorizer-secret.lua")
	if pid=$(pid_alive "$SHOP_LIGHTTPD_PIDFILE" lighttpd); then
		[[ $(cat "$RUN/lighttpd-shop.stamp" 2>/dev/null) == "$sum" ]] && return 0
		say "config changed: restarting the shop's lighttpd"
		shop_lighttpd_stop
	fi
	need_free_port "$SHOP_LIGHTTPD_PORT" "lighttpd (shop, session)"
	need_free_port "$BEARER_LIGHTTPD_PORT" "lighttpd (shop, bearer)"
	say "starting lighttpd on $SHOP_LIGHTTPD_URL (session) and $BEARER_LIGHTTPD_URL (bearer)"
	rm -f "$SHOP_LIGHTTPD_PIDFILE"
	if ! lighttpd -f "$SHOP_LIGHTTPD_CONF" </dev/null \
	    >>"$LOGDIR/lighttpd-shop.out" 2>&1 9>&-; then
		show_log "$LOGDIR/lighttpd-shop.out"
		show_log "$LOGDIR/lighttpd-shop-error.log"
		die "the shop's lighttpd did not start"
	fi
	await_pidfile "$SHOP_LIGHTTPD_PIDFILE" lighttpd 5 "$sum" "$RUN/lighttpd-shop.stamp" \
	    "$LOGDIR/lighttpd-shop-error.log" "the shop's lighttpd"
}

shop_lighttpd_stop() {
	stop_pidfile "$SHOP_LIGHTTPD_PIDFILE" lighttpd TERM "the shop's lighttpd"
	rm -f "$RUN/lighttpd-shop.stamp"
}

shop_apache_ctl() {
	apache2 -d "$APACHE_SHOP_DIR" -f "$APACHE_SHOP_CONF" "$@"
}

shop_apache_start() {
	local pid sum i
	install -d -m 0755 "$APACHE_SHOP_DIR"
	shop_authorizer_ini
	render_template "$REPO/httpd-conf/apache-session.conf" \
	    "$RUN/apache-session.conf" "$SHOP_APACHE_PORT"
	render_template "$REPO/httpd-conf/apache-bearer.conf" \
	    "$RUN/apache-bearer.conf" "$BEARER_APACHE_PORT"
	render_template "$REPO/httpd-conf/apache-shop.conf" \
	    "$APACHE_SHOP_CONF.new" "$SHOP_APACHE_PORT"
	if ! apache2 -d "$APACHE_SHOP_DIR" -f "$APACHE_SHOP_CONF.new" -t \
	    >"$LOGDIR/apache-shop-check.log" 2>&1; then
		show_log "$LOGDIR/apache-shop-check.log"
		die "apache2 rejects the config rendered from httpd-conf/apache-shop.conf ($APACHE_SHOP_CONF.new)"
	fi
	mv -f "$APACHE_SHOP_CONF.new" "$APACHE_SHOP_CONF"
	sum=$(files_sum "$APACHE_SHOP_CONF" "$RUN/apache-session.conf" \
	    "$RUN/apache-bearer.conf" "$APACHE_SECRET_CONF" "$JWT_DIR/cert.pem" \
	    "$AUTHORIZER_PHP_INI")
	sum="$sum $DB_SOCKET"
	if pid=$(pid_alive "$APACHE_SHOP_PIDFILE" apache2); then
		[[ $(cat "$RUN/apache-shop.stamp" 2>/dev/null) == "$sum" ]] && return 0
		say "config changed: restarting the shop's apache2"
		shop_apache_stop
	fi
	need_free_port "$SHOP_APACHE_PORT" "Apache (shop, session)"
	need_free_port "$BEARER_APACHE_PORT" "Apache (shop, bearer)"
	say "starting apache2 on $SHOP_APACHE_URL (session) and $BEARER_APACHE_URL (bearer)"
	rm -f "$APACHE_SHOP_PIDFILE"
	if ! shop_apache_ctl -k start </dev/null >>"$LOGDIR/apache-shop.out" 2>&1 9>&-; then
		show_log "$LOGDIR/apache-shop.out"
		show_log "$LOGDIR/apache-shop-error.log"
		die "the shop's apache2 did not start"
	fi
	await_pidfile "$APACHE_SHOP_PIDFILE" apache2 10 "$sum" "$RUN/apache-shop.stamp" \
	    "$LOGDIR/apache-shop-error.log" "the shop's apache2"
}

shop_apache_stop() {
	local pid
	if pid=$(pid_alive "$APACHE_SHOP_PIDFILE" apache2); then
		say "stopping the shop's apache2 (pid $pid)"
		shop_apache_ctl -k stop >/dev/null 2>&1 9>&- ||
		    kill -TERM "$pid" 2>/dev/null || true
		if ! wait_gone "$pid" 20; then
			kill -KILL "$pid" $(pgrep -P "$pid" || true) 2>/dev/null || true
			wait_gone "$pid" 5 || true
		fi
	fi
	rm -f "$APACHE_SHOP_PIDFILE" "$RUN/apache-shop.stamp"
}

# ----------------------------------------------------------- all of it

shop_up() {
	shop_install_files
	shop_db_user
	shop_warehouse_relay
	shop_write_config
	php_fpm_start
	shop_lighttpd_start
	shop_apache_start
}

shop_down() {
	shop_apache_stop
	shop_lighttpd_stop
	php_fpm_stop
}

shop_status() {
	local pid
	pid=$(pid_alive "$PHP_FPM_PIDFILE" php-fpm || true)
	status_line php-fpm "$pid" "$PHP_FPM_SOCKET"
	pid=$(pid_alive "$SHOP_LIGHTTPD_PIDFILE" lighttpd || true)
	status_line shop-lttpd "$pid" "$SHOP_LIGHTTPD_URL/ (session)  $BEARER_LIGHTTPD_URL/ (bearer)"
	pid=$(pid_alive "$APACHE_SHOP_PIDFILE" apache2 || true)
	status_line shop-apache "$pid" "$SHOP_APACHE_URL/ (session)  $BEARER_APACHE_URL/ (bearer)"
	echo "  customers  ana/ana-secret (customer-1001)  ben/ben-secret (customer-1002)"
}
