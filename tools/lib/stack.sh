# tools/lib/stack.sh -- start, stop and inspect the private stack.
# shellcheck shell=bash
#
# Every daemon is started with fd 9 (the stack lock) closed, records its
# pid in RUN, and is stopped by that pid only after checking that the pid
# still names the program we started.

# The system user the responder pool drops to (it refuses to serve as
# root), as a package would create it.
ensure_pool_user() {
	id -u "$POOL_USER" >/dev/null 2>&1 && return 0
	say "creating the system user $POOL_USER"
	useradd --system --user-group --no-create-home \
	    --home-dir /nonexistent --shell /usr/sbin/nologin "$POOL_USER" ||
	    die "useradd $POOL_USER failed"
}

# MariaDB's user, as the mariadb-server package creates it, and the
# group of the database's clients: the pool's user and the web
# server's (mod_fcgid's responders, the shop's PHP) reach its socket,
# nobody else does.  A process started before it joined the group gets
# it at its next start.
ensure_db_user() {
	local u
	if ! id -u "$DB_OS_USER" >/dev/null 2>&1; then
		say "creating the system user $DB_OS_USER"
		useradd --system --user-group --no-create-home \
		    --home-dir /nonexistent --shell /usr/sbin/nologin "$DB_OS_USER" ||
		    die "useradd $DB_OS_USER failed"
	fi
	if ! getent group "$DB_CLIENT_GROUP" >/dev/null; then
		say "creating the system group $DB_CLIENT_GROUP"
		groupadd --system "$DB_CLIENT_GROUP" ||
		    die "groupadd $DB_CLIENT_GROUP failed"
	fi
	for u in "$POOL_USER" www-data "$SHOP_USER"; do
		id -nG "$u" | tr ' ' '\n' | grep -qx -- "$DB_CLIENT_GROUP" && continue
		say "adding $u to the group $DB_CLIENT_GROUP"
		gpasswd -a "$u" "$DB_CLIENT_GROUP" >/dev/null ||
		    die "gpasswd -a $u $DB_CLIENT_GROUP failed"
	done
}

# The hardened shop's accounts (docs/identity-layout.md, "The shop's
# own user"; tests/http/94-www-data.sh): the shop's own user, and the
# web server's own group, which a web server takes as its Group and no
# other process has.  Such a web server keeps www-data's groups beside
# it (initgroups); www-data is made a member of its own group, so that
# it still reaches the stack's responder socket (group www-data).
ensure_shop_user() {
	if ! getent group "$WEB_GROUP" >/dev/null; then
		say "creating the system group $WEB_GROUP"
		groupadd --system "$WEB_GROUP" || die "groupadd $WEB_GROUP failed"
	fi
	if ! id -u "$SHOP_USER" >/dev/null 2>&1; then
		say "creating the system user $SHOP_USER"
		useradd --system --user-group --no-create-home \
		    --home-dir /nonexistent --shell /usr/sbin/nologin "$SHOP_USER" ||
		    die "useradd $SHOP_USER failed"
	fi
	if ! getent group www-data | cut -d: -f4 | tr ',' '\n' | grep -qx www-data; then
		gpasswd -a www-data www-data >/dev/null ||
		    die "gpasswd -a www-data www-data failed"
	fi
}

prepare_dirs() {
	ensure_pool_user
	ensure_shop_user
	ensure_db_user
	install -d -m 0755 "$RUN" "$RUNBIN_DIR" "$DOCROOT" "$APACHE_DIR"
	# The logs list principals and order ids: for root and the web
	# server's user only.
	install -d -m 0750 -o www-data -g www-data "$WWW_LOGDIR"
	install -d -m 0755 -o "$POOL_USER" -g "$POOL_USER" "$FCGI_SOCKET_DIR"
	chmod 0755 "$RUN"
	mkdir -p "$VAR" "$LOGDIR"
	chmod 0750 "$LOGDIR"
	ln -sfn "$WWW_LOGDIR/lighttpd-error.log" "$LOGDIR/lighttpd-error.log"
	ln -sfn "$WWW_LOGDIR/lighttpd-access.log" "$LOGDIR/lighttpd-access.log"
}

# ---------------------------------------------------------------- MariaDB

db_write_cnf() {
	install -d -m 0750 -o "$DB_OS_USER" -g "$DB_OS_USER" "$DB_HOME"
	install -d -m 0700 -o "$DB_OS_USER" -g "$DB_OS_USER" "$DB_FILES_DIR"
	install -d -m 0750 -o "$DB_OS_USER" -g "$DB_CLIENT_GROUP" "$DB_RUNDIR"
	ln -sfn "$DB_ERRLOG" "$LOGDIR/mariadb.err"
	cat >"$MY_CNF.tmp" <<EOF
# Private MariaDB of the idemorders '$STACK' stack, written by $PROG.
# It runs as $DB_OS_USER; its root is OS root by the unix socket
# (db_lockdown).
[client]
socket = $DB_SOCKET
user = root

[mariadbd]
datadir = $DB_DATADIR
socket = $DB_SOCKET
port = $DB_PORT
bind-address = 127.0.0.1
pid-file = $DB_PIDFILE
log-error = $DB_ERRLOG
user = $DB_OS_USER
# LOAD_FILE and SELECT ... INTO OUTFILE only here, a directory of its own.
secure_file_priv = $DB_FILES_DIR
innodb_buffer_pool_size = 256M
character-set-server = utf8mb4
skip-name-resolve
EOF
	# Lines a caller adds (bench --scale: the binary log).
	[[ -z ${DB_CNF_EXTRA:-} ]] || printf '%s\n' "$DB_CNF_EXTRA" >>"$MY_CNF.tmp"
	mv -f "$MY_CNF.tmp" "$MY_CNF"
}

# The mariadb client as root on the stack's server.
db_root() {
	mariadb --defaults-file="$MY_CNF" "$@"
}

# `tools/dev sql`: one statement on the stack's database, tab-separated.
db_sql() {
	[[ -f $MY_CNF ]] || die "no database for stack '$STACK': run $PROG up"
	db_root -N -B "$DB_NAME" -e "$1"
}

# The server's root is OS root, by the unix socket only: no other root
# account (mariadb-install-db's normal method made root@127.0.0.1, ::1 and
# the host name without a password, reachable by every local user over
# TCP), no anonymous one.  Run at every start: a data directory made
# before keeps its accounts.
db_lockdown() {
	local users u
	users=$(db_root -N -B -e "SELECT CONCAT(QUOTE(User), '@', QUOTE(Host)) FROM mysql.global_priv WHERE (User = 'root' AND Host <> 'localhost') OR User = ''") ||
	    die "cannot list the database's accounts"
	{
		echo "ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket;"
		for u in $users; do
			echo "DROP USER $u;"
		done
	} | db_root || die "cannot restrict the database's root to the unix socket"
}

db_ping() {
	mariadb-admin --defaults-file="$MY_CNF" --connect-timeout=2 ping >/dev/null 2>&1
}

db_start() {
	local pid i try
	db_write_cnf
	# One that still runs as root (its pid file where it was) stops, to
	# start again as $DB_OS_USER.
	pid_alive "$DB_OLD_PIDFILE" mariadbd >/dev/null && db_stop
	if pid=$(pid_alive "$DB_PIDFILE" mariadbd) && db_ping; then
		db_lockdown
		return 0
	fi
	[[ -n ${pid:-} ]] && die "mariadbd (pid $pid) runs but does not answer; see $DB_ERRLOG"
	if [[ ! -d $DB_DATADIR/mysql && -d $DB_OLD_DATADIR/mysql ]]; then
		say "moving the database from ${DB_OLD_DATADIR#"$REPO"/} to $DB_DATADIR"
		rm -rf "$DB_DATADIR"
		mv "$DB_OLD_DATADIR" "$DB_DATADIR" || die "cannot move $DB_OLD_DATADIR"
		rm -rf "$VAR/db-files"
	fi
	if [[ ! -d $DB_DATADIR/mysql ]]; then
		say "mariadb-install-db (in $DB_DATADIR)"
		rm -rf "$DB_DATADIR"
		mkdir -p "$DB_DATADIR"
		if ! mariadb-install-db --no-defaults --datadir="$DB_DATADIR" \
		    --user="$DB_OS_USER" --auth-root-authentication-method=socket \
		    --skip-test-db >"$LOGDIR/mariadb-install.log" 2>&1; then
			show_log "$LOGDIR/mariadb-install.log"
			die "mariadb-install-db failed"
		fi
	fi
	chown -R "$DB_OS_USER:$DB_OS_USER" "$DB_DATADIR"
	chmod 0700 "$DB_DATADIR"
	need_free_port "$DB_PORT" MariaDB
	# Up to three tries: a server that exits at once (a port or a file
	# lock not yet released by one just killed) is started again; one
	# that runs (InnoDB crash recovery) gets two minutes to answer.
	for ((try = 1; try <= 3; try++)); do
		say "starting mariadbd on 127.0.0.1:$DB_PORT"
		setsid mariadbd --defaults-file="$MY_CNF" </dev/null \
		    >>"$LOGDIR/mariadb.out" 2>&1 9>&- &
		pid=$!
		for ((i = 0; i < 1200; i++)); do
			db_ping && { db_lockdown; return 0; }
			proc_running "$pid" || break
			sleep 0.1
		done
		show_log "$DB_ERRLOG" 15
		if proc_running "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
			wait_gone "$pid" 30 || true
			die "mariadbd (pid $pid) did not answer in two minutes"
		fi
		say "mariadbd exited at start (try $try of 3)"
		sleep 2
	done
	die "mariadbd did not come up"
}

# Create database NAME and grant the application user on it.
db_create() {
	local db=$1
	db_root <<EOF
CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASSWORD';
ALTER USER '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
ALTER USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL PRIVILEGES ON \`$db\`.* TO '$DB_USER'@'localhost';
GRANT ALL PRIVILEGES ON \`$db\`.* TO '$DB_USER'@'127.0.0.1';
EOF
}

# Load schema/demo.sql into database DB (skipped quietly while it does not
# exist).  The test stack reloads it every time, so that each run starts
# from the demo stock; the dev stack only when the file changed, so that
# `up` keeps what QA did to the stock.
db_demo() {
	local db=$1 demo=$REPO/schema/demo.sql sum mark
	[[ -f $demo ]] || return 0
	sum=$(files_sum "$demo")
	mark=$DB_DATADIR/.idemorders-demo-$db
	[[ $STACK != test && -f $mark && $(<"$mark") == "$sum" ]] && return 0
	say "loading schema/demo.sql into $db"
	if ! db_root "$db" <"$demo"; then
		[[ $STACK == test ]] && die "schema/demo.sql failed on $db"
		say "warning: schema/demo.sql failed on $db (is it re-runnable?)"
		return 0
	fi
	printf '%s\n' "$sum" >"$mark"
}

# Create, migrate and fill database DB with config CONFIG.
db_prepare() {
	local db=$1 config=$2
	db_create "$db"
	dbproxy_start	# CONF may reach MariaDB through it
	say "idemorders migrate ($db)"
	"$BIN" migrate -c "$config" 9>&- || die "idemorders migrate failed on $db"
	db_demo "$db"
}

# Drop and re-create the database of `make check`.
db_reset_check() {
	db_root -e "DROP DATABASE IF EXISTS \`$CHECK_DB_NAME\`"
	rm -f "$DB_DATADIR/.idemorders-demo-$CHECK_DB_NAME"
	db_prepare "$CHECK_DB_NAME" "$CHECK_CONF"
}

db_stop() {
	local pid
	# One started as root, before the pid file moved, stops too.
	pid=$(pid_alive "$DB_PIDFILE" mariadbd) ||
	    pid=$(pid_alive "$DB_OLD_PIDFILE" mariadbd) || return 0
	say "stopping mariadbd (pid $pid)"
	mariadb-admin --defaults-file="$MY_CNF" shutdown >/dev/null 2>&1 ||
	    kill -TERM "$pid" 2>/dev/null || true
	if ! wait_gone "$pid" 60; then
		say "mariadbd (pid $pid) did not stop; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 5 || true
	fi
}

# -------------------------------------------------------------- responder

# The secrets of the pool: the DB password and the frontend secret, in
# files root and the pool's group read (the master reads them as root,
# and again as $POOL_USER on SIGHUP), and the web servers' includes that
# pass the frontend secret, readable by root only (lighttpd and Apache
# read their configs before dropping privileges).
write_pool_secrets() {
	local secret
	printf '%s\n' "$DB_PASSWORD" >"$DB_PASSWORD_FILE.tmp"
	if [[ ! -s $FRONTEND_SECRET_FILE ]]; then
		head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$FRONTEND_SECRET_FILE.tmp"
		echo >>"$FRONTEND_SECRET_FILE.tmp"
		mv -f "$FRONTEND_SECRET_FILE.tmp" "$FRONTEND_SECRET_FILE"
	fi
	if [[ ! -s $WEBHOOK_SECRET_FILE ]]; then
		echo "whsec_$(head -c 32 /dev/urandom | base64)" >"$WEBHOOK_SECRET_FILE.tmp"
		mv -f "$WEBHOOK_SECRET_FILE.tmp" "$WEBHOOK_SECRET_FILE"
	fi
	chown "root:$POOL_USER" "$DB_PASSWORD_FILE.tmp" "$FRONTEND_SECRET_FILE" \
	    "$WEBHOOK_SECRET_FILE"
	chmod 0640 "$DB_PASSWORD_FILE.tmp" "$FRONTEND_SECRET_FILE" \
	    "$WEBHOOK_SECRET_FILE"
	mv -f "$DB_PASSWORD_FILE.tmp" "$DB_PASSWORD_FILE"
	secret=$(<"$FRONTEND_SECRET_FILE")
	(
		umask 077
		t=$(<"$REPO/httpd-conf/lighttpd-frontend-secret.conf")
		printf '%s\n' "${t//@FRONTEND_SECRET@/$secret}" >"$LIGHTTPD_SECRET_CONF"
		t=$(<"$REPO/httpd-conf/apache-frontend-secret.conf")
		printf '%s\n' "${t//@FRONTEND_SECRET@/$secret}" >"$APACHE_SECRET_CONF"
	)
}

# Write the three responder configs: the pool behind lighttpd and Apache
# proxy_fcgi, the one mod_fcgid spawns, and the one of `make check`.
write_responder_confs() {
	local common db_at="db_socket = $DB_SOCKET"
	if [[ ${IDEMORDERS_DB_PROXY:-0} == 1 ]]; then
		db_at="db_host = 127.0.0.1
db_port = $DBPROXY_PORT"
	fi
	common="log = stderr
log_level = info
mount = $MOUNT
db_user = $DB_USER"

	write_pool_secrets
	cat >"$CONF.tmp" <<EOF
# Responder pool of the idemorders '$STACK' stack, written by $PROG up
# (edits are lost on the next 'up'). See idemorders.conf.example.
# Started as root, it drops to $POOL_USER; www-data (lighttpd, Apache)
# connects through socket_group, and every request must carry the
# frontend secret that only the web servers' root-only includes hold.
listen = unix:$FCGI_SOCKET
socket_mode = 0660
socket_group = www-data
user = $POOL_USER
frontend_secret_file = $FRONTEND_SECRET_FILE
workers = 4
$common
db_password_file = $DB_PASSWORD_FILE
$db_at
db_name = $DB_NAME
schema_dir = $REPO/schema

# The relay (idemorders relay) delivers events to the test receiver
# (tests/lib/webhook-receiver.cjs) on this port, with short delays so
# that tests see timeouts and retries within seconds; at most 30s apart,
# so that the events of the scripts that run without a receiver cost
# the database little.
webhook_url = http://127.0.0.1:$WEBHOOK_PORT/webhook
webhook_secret_file = $WEBHOOK_SECRET_FILE
webhook_timeout = 2s
event_backoff = 200ms
event_backoff_max = 30s
EOF
	cat >"$FCGID_CONF.tmp" <<EOF
# Responder spawned by Apache mod_fcgid (runs as www-data, so this file
# is world-readable), written by $PROG up.  No 'listen': mod_fcgid hands
# over a listening socket on fd 0 and sends one request at a time to each
# process it spawns, so one worker per process.
workers = 1
$common
db_password = $DB_PASSWORD
$db_at
db_name = $DB_NAME
EOF
	cat >"$CHECK_CONF.tmp" <<EOF
# Database of 'make check' (IDEMORDERS_TEST_CONF) on the '$STACK' stack,
# written by $PROG.  Dropped and re-created before each 'make check'.
$common
db_password = $DB_PASSWORD
db_socket = $DB_SOCKET
db_name = $CHECK_DB_NAME
schema_dir = $REPO/schema
EOF
	# Local settings for this stack (e.g. out_of_stock = retryable,
	# key_retention = 30s), kept across 'up': var/<stack>/idemorders.local.conf.
	if [[ -f $VAR/idemorders.local.conf ]]; then
		local f
		for f in "$CONF.tmp" "$FCGID_CONF.tmp"; do
			printf '\n# From %s:\n' "$VAR/idemorders.local.conf" >>"$f"
			cat "$VAR/idemorders.local.conf" >>"$f"
		done
	fi
	# The two with a password: the one mod_fcgid's responders read as
	# www-data, the one of `make check` (run as root).
	chmod 0644 "$CONF.tmp"
	chown root:www-data "$FCGID_CONF.tmp"
	chmod 0640 "$FCGID_CONF.tmp"
	chmod 0600 "$CHECK_CONF.tmp"
	# A pool may have been reloaded with an edited config: serve_start
	# reloads it with this one.
	CONF_EDITED=0
	[[ ! -f $CONF ]] || cmp -s "$CONF.tmp" "$CONF" || CONF_EDITED=1
	mv -f "$CONF.tmp" "$CONF"
	mv -f "$FCGID_CONF.tmp" "$FCGID_CONF"
	mv -f "$CHECK_CONF.tmp" "$CHECK_CONF"
}

# With IDEMORDERS_DB_PROXY=1: the fault proxy between the responders and
# MariaDB (in "pass" mode; the tests command it).
dbproxy_start() {
	local pid i
	if [[ ${IDEMORDERS_DB_PROXY:-0} != 1 ]]; then
		dbproxy_stop
		return 0
	fi
	pid_alive "$DBPROXY_PIDFILE" dbproxy >/dev/null && return 0
	[[ -x $DBPROXY_BIN ]] || die "no $DBPROXY_BIN (IDEMORDERS_DB_PROXY=1)"
	need_free_port "$DBPROXY_PORT" "the database fault proxy"
	say "starting the database fault proxy on 127.0.0.1:$DBPROXY_PORT (control $DBPROXY_CONTROL_PORT)"
	setsid "$DBPROXY_BIN" -l "$DBPROXY_PORT" -u "$DB_SOCKET" \
	    -c "$DBPROXY_CONTROL_PORT" -p "$DBPROXY_PIDFILE" </dev/null \
	    >>"$LOGDIR/dbproxy.log" 2>&1 9>&- &
	for ((i = 0; i < 50; i++)); do
		pid_alive "$DBPROXY_PIDFILE" dbproxy >/dev/null && return 0
		sleep 0.1
	done
	die "the database fault proxy did not start; see $LOGDIR/dbproxy.log"
}

dbproxy_stop() {
	local pid
	pid=$(pid_alive "$DBPROXY_PIDFILE" dbproxy) || return 0
	say "stopping the database fault proxy (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	wait_gone "$pid" 5 || kill -KILL "$pid" 2>/dev/null || true
	rm -f "$DBPROXY_PIDFILE"
}

# Copy the built binary where www-data can run it (mod_fcgid).
install_runbin() {
	if ! cmp -s "$BIN" "$RUNBIN"; then
		install -m 0755 "$BIN" "$RUNBIN.tmp"
		mv -f "$RUNBIN.tmp" "$RUNBIN"
	fi
}

# Start the responder pool on FCGI_SOCKET unless the pool there is the one
# this function started from the same binary and config: its stamp holds
# their checksum and the master's pid, so that a pool a test script put
# on the socket (tests/lib/pool.sh) is replaced, never taken for it.
serve_start() {
	local pid sum i
	sum=$(files_sum "$BIN" "$CONF")
	if pid=$(pid_alive "$SERVE_PIDFILE" idemorders); then
		if [[ $(cat "$RUN/idemorders.stamp" 2>/dev/null) == "$sum $pid" ]]; then
			[[ ${CONF_EDITED:-0} == 1 ]] || return 0
			say "$CONF had been edited: the responder reloads it as written now"
			kill -HUP "$pid"
			return 0
		fi
		say "binary, config or pool changed: restarting the responder"
		serve_stop
	fi
	say "starting idemorders serve (log: ${LOGDIR#"$REPO"/}/idemorders.log)"
	rm -f "$FCGI_SOCKET"
	setsid "$BIN" serve -c "$CONF" </dev/null \
	    >>"$LOGDIR/idemorders.log" 2>&1 9>&- &
	pid=$!
	echo "$pid" >"$SERVE_PIDFILE"
	for ((i = 0; i < 100; i++)); do
		if [[ -S $FCGI_SOCKET ]]; then
			printf '%s %s\n' "$sum" "$pid" >"$RUN/idemorders.stamp"
			return 0
		fi
		proc_running "$pid" || break
		sleep 0.1
	done
	show_log "$LOGDIR/idemorders.log"
	die "idemorders serve did not open $FCGI_SOCKET"
}

# Start the relay as the pool's user (from the copy www-data can read)
# unless the one this function started from the same binary and config
# runs; its stamp holds their checksum and its pid.
relay_start() {
	local pid sum
	# The bench stack measures creates alone: no relay there, but
	# when bench --events starts it (BENCH_RELAY=1).
	[[ $STACK != bench || ${BENCH_RELAY:-0} == 1 ]] || return 0
	sum=$(files_sum "$RUNBIN" "$CONF")
	if pid=$(pid_alive "$RELAY_PIDFILE" " relay -c "); then
		[[ $(cat "$RUN/relay.stamp" 2>/dev/null) == "$sum $pid" ]] && return 0
		say "binary or config changed: restarting the relay"
		relay_stop
	fi
	say "starting idemorders relay to 127.0.0.1:$WEBHOOK_PORT (log: ${LOGDIR#"$REPO"/}/relay.log)"
	setsid setpriv --reuid="$POOL_USER" --regid="$POOL_USER" --init-groups \
	    "$RUNBIN" relay -c "$CONF" </dev/null >>"$LOGDIR/relay.log" 2>&1 9>&- &
	pid=$!
	echo "$pid" >"$RELAY_PIDFILE"
	sleep 0.2
	if ! proc_running "$pid"; then
		show_log "$LOGDIR/relay.log"
		die "idemorders relay did not start"
	fi
	printf '%s %s\n' "$sum" "$pid" >"$RUN/relay.stamp"
}

# Stop the relay: SIGTERM lets its deliveries in flight finish.
relay_stop() {
	stop_pidfile "$RELAY_PIDFILE" " relay -c " TERM "idemorders relay"
	kill_leftovers "relays" "^$RUNBIN relay -c $CONF\$"
	rm -f "$RUN/relay.stamp"
}

# Kill the processes of OURS (a pgrep -f pattern naming a path of this
# stack's runtime dir) that are still there.
kill_leftovers() {
	local what=$1 pattern=$2 pids pid
	pids=$(pgrep -f -- "$pattern" || true)
	[[ -n $pids ]] || return 0
	say "stopping leftover $what: $(echo $pids)"
	# shellcheck disable=SC2086
	kill -TERM $pids 2>/dev/null || true
	for pid in $pids; do
		wait_gone "$pid" 5 || kill -KILL "$pid" 2>/dev/null || true
	done
}

serve_stop() {
	local pid kids
	if pid=$(pid_alive "$SERVE_PIDFILE" idemorders); then
		say "stopping idemorders serve (pid $pid)"
		kids=$(pgrep -P "$pid" || true)
		kill -TERM "$pid" 2>/dev/null || true
		if ! wait_gone "$pid" 15; then
			say "idemorders serve (pid $pid) did not stop; killing it"
			# shellcheck disable=SC2086
			kill -KILL "$pid" $kids 2>/dev/null || true
			wait_gone "$pid" 5 || true
		fi
	fi
	kill_leftovers "responders" " serve -c $CONF\$"
	rm -f "$SERVE_PIDFILE" "$RUN/idemorders.stamp"
}

# --------------------------------------------------------- web servers

make_htpasswd() {
	if [[ ! -s $HTPASSWD ]] || ! grep -q '^alice:' "$HTPASSWD" ||
	    ! grep -q '^bob:' "$HTPASSWD"; then
		# bcrypt at cost 5: what a real host would use, cheap enough here.
		htpasswd -cbB -C 5 "$HTPASSWD.tmp" alice alice-secret 2>/dev/null
		htpasswd -bB -C 5 "$HTPASSWD.tmp" bob bob-secret 2>/dev/null
		mv -f "$HTPASSWD.tmp" "$HTPASSWD"
	fi
	if ! grep -q '^Alice:' "$HTPASSWD"; then
		# Look-alikes of alice, principals of their own
		# (tests/http/46-principals-exact.sh): a trailing space, a
		# trailing no-break space, another case.
		cp "$HTPASSWD" "$HTPASSWD.tmp"
		htpasswd -bB -C 5 "$HTPASSWD.tmp" 'alice ' alice-space-secret 2>/dev/null
		htpasswd -bB -C 5 "$HTPASSWD.tmp" "alice$(printf '\302\240')" \
		    alice-nbsp-secret 2>/dev/null
		htpasswd -bB -C 5 "$HTPASSWD.tmp" Alice Alice-secret 2>/dev/null
		mv -f "$HTPASSWD.tmp" "$HTPASSWD"
	fi
	chown root:www-data "$HTPASSWD"
	chmod 0640 "$HTPASSWD"
}

lighttpd_start() {
	local pid sum i
	TPL_LOGDIR=$WWW_LOGDIR render_template "$REPO/httpd-conf/lighttpd.conf" \
	    "$LIGHTTPD_CONF.new" "$LIGHTTPD_PORT"
	if ! lighttpd -tt -f "$LIGHTTPD_CONF.new" >"$LOGDIR/lighttpd-check.log" 2>&1; then
		show_log "$LOGDIR/lighttpd-check.log"
		die "lighttpd rejects the config rendered from httpd-conf/lighttpd.conf ($LIGHTTPD_CONF.new)"
	fi
	mv -f "$LIGHTTPD_CONF.new" "$LIGHTTPD_CONF"
	sum=$(files_sum "$LIGHTTPD_CONF")
	if pid=$(pid_alive "$LIGHTTPD_PIDFILE" lighttpd); then
		[[ $(cat "$RUN/lighttpd.stamp" 2>/dev/null) == "$sum" ]] && return 0
		say "config changed: restarting lighttpd"
		lighttpd_stop
	fi
	need_free_port "$LIGHTTPD_PORT" lighttpd
	say "starting lighttpd on $LIGHTTPD_URL"
	rm -f "$LIGHTTPD_PIDFILE"
	if ! lighttpd -f "$LIGHTTPD_CONF" </dev/null \
	    >>"$LOGDIR/lighttpd.out" 2>&1 9>&-; then
		show_log "$LOGDIR/lighttpd.out"
		show_log "$LOGDIR/lighttpd-error.log"
		die "lighttpd did not start"
	fi
	await_pidfile "$LIGHTTPD_PIDFILE" lighttpd 5 "$sum" "$RUN/lighttpd.stamp" \
	    "$LOGDIR/lighttpd-error.log" "lighttpd"
}

lighttpd_stop() {
	stop_pidfile "$LIGHTTPD_PIDFILE" lighttpd TERM lighttpd
	rm -f "$RUN/lighttpd.stamp"
}

apache_ctl() {
	apache2 -d "$APACHE_DIR" -f "$APACHE_CONF" "$@"
}

apache_start() {
	local pid sum i
	render_template "$REPO/httpd-conf/apache-fcgid.conf" "$APACHE_FCGID_CONF" \
	    "$FCGID_PORT"
	render_template "$REPO/httpd-conf/apache-proxy-fcgi.conf" \
	    "$APACHE_CONF.new" "$APACHE_PORT"
	cat >>"$APACHE_CONF.new" <<EOF

# Added by $PROG: the mod_fcgid front end on the same private instance.
Include "$APACHE_FCGID_CONF"
EOF
	if ! apache2 -d "$APACHE_DIR" -f "$APACHE_CONF.new" -t \
	    >"$LOGDIR/apache-check.log" 2>&1; then
		show_log "$LOGDIR/apache-check.log"
		die "apache2 rejects the config rendered from httpd-conf/ ($APACHE_CONF.new)"
	fi
	mv -f "$APACHE_CONF.new" "$APACHE_CONF"
	sum=$(files_sum "$APACHE_CONF" "$APACHE_FCGID_CONF" "$FCGID_CONF" "$RUNBIN")
	if pid=$(pid_alive "$APACHE_PIDFILE" apache2); then
		[[ $(cat "$RUN/apache.stamp" 2>/dev/null) == "$sum" ]] && return 0
		say "config or binary changed: restarting apache2"
		apache_stop
	fi
	need_free_port "$APACHE_PORT" "Apache proxy_fcgi"
	need_free_port "$FCGID_PORT" "Apache mod_fcgid"
	say "starting apache2 on $APACHE_URL (proxy_fcgi) and $FCGID_URL (fcgid)"
	rm -f "$APACHE_PIDFILE"
	if ! apache_ctl -k start </dev/null >>"$LOGDIR/apache.out" 2>&1 9>&-; then
		show_log "$LOGDIR/apache.out"
		show_log "$LOGDIR/apache-error.log"
		die "apache2 did not start"
	fi
	await_pidfile "$APACHE_PIDFILE" apache2 10 "$sum" "$RUN/apache.stamp" \
	    "$LOGDIR/apache-error.log" "apache2"
}

apache_stop() {
	local pid
	if pid=$(pid_alive "$APACHE_PIDFILE" apache2); then
		say "stopping apache2 (pid $pid)"
		apache_ctl -k stop >/dev/null 2>&1 9>&- ||
		    kill -TERM "$pid" 2>/dev/null || true
		if ! wait_gone "$pid" 20; then
			say "apache2 (pid $pid) did not stop; killing it"
			kill -KILL "$pid" $(pgrep -P "$pid" || true) 2>/dev/null || true
			wait_gone "$pid" 5 || true
		fi
	fi
	# Responders spawned by mod_fcgid run our copy of the binary (and
	# so does the relay, which is not theirs).
	kill_leftovers "mod_fcgid responders" "^$RUNBIN serve -c $FCGID_CONF\$"
	rm -f "$APACHE_PIDFILE" "$RUN/apache.stamp"
	apache_reuse_stop
}

# The second Apache with enablereuse=on that `tools/dev bench` and
# tests/http/14 start in $RUN/apache-reuse, if it is still up.
apache_reuse_stop() {
	local dir=$RUN/apache-reuse pid
	pid=$(pid_alive "$dir/apache2.pid" apache2) || return 0
	say "stopping apache2 enablereuse=on (pid $pid)"
	apache2 -d "$dir" -f "$dir/apache2.conf" -k stop >/dev/null 2>&1 9>&- ||
	    kill -TERM "$pid" 2>/dev/null || true
	wait_gone "$pid" 15 || kill -KILL "$pid" 2>/dev/null || true
}

# ----------------------------------------------------------- whole stack

# Wait until URL answers 200; print what it answered last otherwise.
wait_http() {
	local url=$1 secs=${2:-15} i code
	for ((i = 0; i < secs * 5; i++)); do
		code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$url" || true)
		[[ $code == 200 ]] && return 0
		sleep 0.2
	done
	say "$url answers ${code:-nothing}: $(curl -s -m 5 "$url" 2>&1 | head -c 300)"
	return 1
}

stack_up() {
	ensure_packages
	build_main || die "build failed"
	prepare_dirs
	write_responder_confs
	db_start
	[[ ${DB_PREPARED:-} == 1 || ${IDEMORDERS_DB_PREPARED:-} == "$VAR" ]] ||
	    db_prepare "$DB_NAME" "$CONF"
	install_runbin
	dbproxy_start
	serve_start
	relay_start
	make_htpasswd
	lighttpd_start
	apache_start
	shop_up
	local ok=1 u
	for u in "$LIGHTTPD_URL" "$APACHE_URL" "$FCGID_URL" "$SHOP_LIGHTTPD_URL" \
	    "$SHOP_APACHE_URL" "$BEARER_LIGHTTPD_URL" "$BEARER_APACHE_URL"; do
		wait_http "$u$MOUNT/_health" || ok=0
	done
	if [[ $ok != 1 ]]; then
		show_log "$LOGDIR/idemorders.log"
		show_log "$LOGDIR/lighttpd-error.log" 10
		show_log "$LOGDIR/apache-error.log" 10
		show_log "$LOGDIR/lighttpd-shop-error.log" 10
		show_log "$LOGDIR/apache-shop-error.log" 10
		show_log "$LOGDIR/php-fpm.log" 10
		die "the stack is up but health does not answer 200 everywhere"
	fi
	stack_status
	[[ $STACK == dev ]] || return 0
	cat <<EOF

Try:
  curl -u alice:alice-secret -H 'Idempotency-Key: demo-1' \\
       -H 'Content-Type: application/json' \\
       -d '{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}' \\
       $LIGHTTPD_URL$MOUNT
  curl -u alice:alice-secret $APACHE_URL$MOUNT/o-1
  $PROG sql "SELECT * FROM stock"

The demo shop (sign in as ana/ana-secret or ben/ben-secret):
  $SHOP_LIGHTTPD_URL/  $SHOP_APACHE_URL/      (the session is the customer)
  $BEARER_LIGHTTPD_URL/  $BEARER_APACHE_URL/  (a bearer token from /token.php)
EOF
}

stack_down() {
	shop_down
	apache_stop
	lighttpd_stop
	relay_stop
	serve_stop
	dbproxy_stop
	db_stop
	rm -f "$FCGI_SOCKET"
}

# One status line: NAME, pid (or "stopped"), details.
status_line() {
	local name=$1 pid=$2; shift 2
	if [[ -n $pid ]]; then
		printf '  %-10s running  pid %-7s %s\n' "$name" "$pid" "$*"
	else
		printf '  %-10s stopped\n' "$name"
	fi
}

stack_status() {
	local pid kids
	echo "idemorders stack '$STACK' of $REPO"
	echo "  runtime    $RUN"
	echo "  data/logs  $VAR"
	pid=$(pid_alive "$DB_PIDFILE" mariadbd || true)
	status_line mariadb "$pid" "127.0.0.1:$DB_PORT $DB_SOCKET"
	pid=$(pid_alive "$SERVE_PIDFILE" idemorders || true)
	kids=
	[[ -n $pid ]] && kids=$(pgrep -P "$pid" | tr '\n' ' ' || true)
	status_line responder "$pid" "$FCGI_SOCKET workers: ${kids:-none}"
	pid=$(pid_alive "$RELAY_PIDFILE" " relay -c " || true)
	status_line relay "$pid" "to http://127.0.0.1:$WEBHOOK_PORT/webhook"
	pid=$(pid_alive "$LIGHTTPD_PIDFILE" lighttpd || true)
	status_line lighttpd "$pid" "$LIGHTTPD_URL$MOUNT/"
	pid=$(pid_alive "$APACHE_PIDFILE" apache2 || true)
	status_line apache2 "$pid" "$APACHE_URL$MOUNT/ (proxy_fcgi)  $FCGID_URL$MOUNT/ (fcgid)"
	echo "  users      alice/alice-secret  bob/bob-secret"
	shop_status
	if [[ -n $pid ]] || pid_alive "$LIGHTTPD_PIDFILE" lighttpd >/dev/null; then
		printf '  health     lighttpd %s  apache %s  fcgid %s\n' \
		    "$(health_code "$LIGHTTPD_URL")" "$(health_code "$APACHE_URL")" \
		    "$(health_code "$FCGID_URL")"
		printf '  health     shop: lighttpd %s  apache %s  bearer: lighttpd %s  apache %s\n' \
		    "$(health_code "$SHOP_LIGHTTPD_URL")" "$(health_code "$SHOP_APACHE_URL")" \
		    "$(health_code "$BEARER_LIGHTTPD_URL")" "$(health_code "$BEARER_APACHE_URL")"
	fi
}

# The HTTP status of GET URL/orders/_health (000: no answer).
health_code() {
	curl -s -o /dev/null -m 5 -w '%{http_code}' "$1$MOUNT/_health" || true
}

stack_expire() {
	[[ -x $BIN && -f $CONF ]] || die "stack '$STACK' is not built: run $PROG up"
	exec "$BIN" expire -c "$CONF" "$@"
}

stack_audit() {
	[[ -x $BIN && -f $CONF ]] || die "stack '$STACK' is not built: run $PROG up"
	exec "$BIN" audit -c "$CONF" "$@"
}
