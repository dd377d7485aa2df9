# tools/lib/common.sh -- paths, logging, pids and packages for tools/dev.
# shellcheck shell=bash
# Sourced by tools/dev; expects REPO and PROG to be set.

# What `tools/dev up` needs: the build, MariaDB, the web servers and the
# demo shop.  The test run, the cluster, fuzzing and the bench add theirs
# (TEST_PACKAGES, CLUSTER_PACKAGES, FUZZ_PACKAGES, bench/bench.sh).
PACKAGES=(autoconf automake autoconf-archive pkg-config gcc make
	libfcgi-dev libfcgi-bin libjson-c-dev libmariadb-dev libcunit1-dev
	libssl-dev libcurl4-openssl-dev mariadb-server mariadb-client lighttpd apache2
	apache2-utils libapache2-mod-fcgid curl procps systemd
	php-fpm php-cgi php-mysql php-curl libapache2-mod-auth-openidc openssl
	lighttpd-modules-lua lighttpd-mod-openssl ssl-cert)
CLUSTER_PACKAGES=(galera-4 rsync python3 python3-pymysql)
FUZZ_PACKAGES=(clang-14 libfuzzer-14-dev libclang-rt-14-dev)
TEST_PACKAGES=(jq socat python3 php-cli phpunit nodejs
	python3-prometheus-client
	chromium $(command -v npm >/dev/null || echo npm)
	build-essential debhelper dpkg-dev fakeroot lintian mandoc man-db git
	systemd-container debootstrap nftables
	"${CLUSTER_PACKAGES[@]}" "${FUZZ_PACKAGES[@]}")

DB_NAME=idemorders
DB_USER=idemorders
DB_PASSWORD=idemorders-dev
POOL_USER=idemorders
# The hardened shop (docs/identity-layout.md): its own user, and the web
# server's own group.
SHOP_USER=idemshop
WEB_GROUP=idemorders-web
# The demo shop's database user: SELECT on the service's stock table,
# and its own database (SHOP_DB_NAME, examples/shop/schema.sql).
SHOP_DB_USER=shop
SHOP_DB_PASSWORD=shop-dev
SHOP_DB_NAME=idemshop
CHECK_DB_NAME=idemorders_check
MOUNT=/orders

# Set every path and port of the stack named by IDEMORDERS_STACK.
stack_vars() {
	STACK=${IDEMORDERS_STACK:-dev}
	case $STACK in
	dev)	LIGHTTPD_PORT=8080 APACHE_PORT=8081 FCGID_PORT=8082
		DB_PORT=3307 ;;
	test)	LIGHTTPD_PORT=18080 APACHE_PORT=18081 FCGID_PORT=18082
		DB_PORT=13307 ;;
	bench)	LIGHTTPD_PORT=28080 APACHE_PORT=28081 FCGID_PORT=28082
		DB_PORT=23307 ;;	# tools/dev bench (bench/bench.sh)
	*)	die "IDEMORDERS_STACK must be dev, test or bench, not '$STACK'" ;;
	esac
	# IDEMORDERS_PORT_OFFSET=N moves all four ports by N, so that the
	# same stack of two clones can run at once (e.g. 100: 18180...).
	local off=${IDEMORDERS_PORT_OFFSET:-0}
	[[ $off =~ ^[0-9]+$ ]] || die "IDEMORDERS_PORT_OFFSET must be a number"
	LIGHTTPD_PORT=$((LIGHTTPD_PORT + off)) APACHE_PORT=$((APACHE_PORT + off))
	FCGID_PORT=$((FCGID_PORT + off)) DB_PORT=$((DB_PORT + off))
	# The relay's receiver in the tests: 19000 (test), 19050 (dev),
	# 19025 (bench), moved by the offset too.
	case $STACK in
	dev)	WEBHOOK_PORT=$((19050 + off)) ;;
	bench)	WEBHOOK_PORT=$((19025 + off)) ;;
	*)	WEBHOOK_PORT=$((19000 + off)) ;;
	esac
	# The demo shop's front ends, next to the Basic-auth ones: the
	# session vhosts (lighttpd +3, Apache +4), the bearer-token vhosts
	# (+5, +6).
	SHOP_LIGHTTPD_PORT=$((LIGHTTPD_PORT + 3)) SHOP_APACHE_PORT=$((LIGHTTPD_PORT + 4))
	BEARER_LIGHTTPD_PORT=$((LIGHTTPD_PORT + 5)) BEARER_APACHE_PORT=$((LIGHTTPD_PORT + 6))
	HASH=$(printf '%s' "$REPO" | sha1sum | cut -c1-8)

	# Runtime: world-traversable, so that www-data (Apache children,
	# lighttpd after dropping privileges, mod_fcgid's responders) reaches
	# sockets, configs and the binary even when the clone sits in /root.
	RUN=/run/idemorders-$STACK-$HASH
	# Data: in the repository (gitignored), read only by root.
	VAR=$REPO/var/$STACK
	LOGDIR=$VAR/log
	BUILD=$VAR/build
	BUILD_ASAN=$VAR/build-asan
	BIN=$BUILD/src/idemorders

	RUNBIN_DIR=$RUN/bin
	RUNBIN=$RUNBIN_DIR/idemorders
	CONF=$RUN/idemorders.conf
	FCGID_CONF=$RUN/idemorders-fcgid.conf
	CHECK_CONF=$RUN/idemorders-check.conf
	# The socket's directory belongs to the pool's user, who removes the
	# socket at stop (docs/sysadmin.md, "Processes and the socket").
	FCGI_SOCKET_DIR=$RUN/fcgi
	FCGI_SOCKET=$FCGI_SOCKET_DIR/idemorders.sock
	SERVE_PIDFILE=$RUN/idemorders.pid
	DB_PASSWORD_FILE=$RUN/db-password
	FRONTEND_SECRET_FILE=$RUN/frontend.secret
	# The relay (idemorders relay) delivers the stack's events to the
	# test receiver (tests/lib/webhook-receiver.cjs) on WEBHOOK_PORT,
	# signed with WEBHOOK_SECRET_FILE's secret.
	RELAY_PIDFILE=$RUN/relay.pid
	WEBHOOK_SECRET_FILE=$RUN/webhook.secret
	LIGHTTPD_SECRET_CONF=$RUN/lighttpd-frontend-secret.conf
	APACHE_SECRET_CONF=$RUN/apache-frontend-secret.conf
	HTPASSWD=$RUN/htpasswd
	DOCROOT=$RUN/htdocs
	# lighttpd opens its logs after dropping to www-data, which cannot
	# traverse a clone under /root: its logs live here (linked from LOGDIR).
	WWW_LOGDIR=$RUN/log

	# IDEMORDERS_DB_PROXY=1: the responders reach MariaDB through the
	# fault proxy of the tests (tests/dbproxy), 127.0.0.1:DB_PORT+20,
	# commanded on DB_PORT+21 (tests/lib/dbfaults.sh).
	DBPROXY_PORT=$((DB_PORT + 20)) DBPROXY_CONTROL_PORT=$((DB_PORT + 21))
	DBPROXY_BIN=$BUILD/tests/dbproxy/dbproxy
	DBPROXY_PIDFILE=$RUN/dbproxy.pid

	# MariaDB runs as its own user (DB_OS_USER), which cannot traverse
	# a clone under /root: its data, error log and secure_file_priv
	# directory live in DB_HOME, its alone; its socket and pid file in
	# DB_RUNDIR, which only root, that user and the database's clients
	# (DB_CLIENT_GROUP: the pool's user and the web server's) traverse.
	DB_OS_USER=mysql
	DB_CLIENT_GROUP=idemorders-db
	DB_HOME=/var/lib/idemorders-$STACK-$HASH
	DB_DATADIR=$DB_HOME/db
	DB_FILES_DIR=$DB_HOME/files
	DB_ERRLOG=$DB_HOME/mariadb.err
	# Where the data lived while MariaDB ran as root (moved at start).
	DB_OLD_DATADIR=$VAR/db
	MY_CNF=$VAR/my.cnf
	DB_RUNDIR=$RUN/db
	DB_SOCKET=$DB_RUNDIR/mysqld.sock
	DB_PIDFILE=$DB_RUNDIR/mariadb.pid
	DB_OLD_PIDFILE=$RUN/mariadb.pid

	LIGHTTPD_CONF=$RUN/lighttpd.conf
	LIGHTTPD_PIDFILE=$RUN/lighttpd.pid
	APACHE_DIR=$RUN/apache
	APACHE_CONF=$APACHE_DIR/apache2.conf
	APACHE_FCGID_CONF=$APACHE_DIR/apache-fcgid.conf
	APACHE_PIDFILE=$APACHE_DIR/apache2.pid

	LIGHTTPD_URL=http://127.0.0.1:$LIGHTTPD_PORT
	APACHE_URL=http://127.0.0.1:$APACHE_PORT
	FCGID_URL=http://127.0.0.1:$FCGID_PORT

	# The demo shop (examples/shop): its files and the clients, copied
	# where www-data reads them; php-fpm's own master; the sessions; the
	# shop's config (IDEMSHOP_CONFIG) and the key that signs its tokens.
	SHOP_SRC=$RUN/src
	SHOP_DIR=$SHOP_SRC/examples/shop
	JS_CLIENT=$SHOP_SRC/clients/js/idemorders-client.mjs
	PHP_FPM_CONF=$RUN/php-fpm.conf
	PHP_FPM_PIDFILE=$RUN/php-fpm.pid
	PHP_FPM_SOCKET=$RUN/php-fpm.sock
	SHOP_SESSIONS=$RUN/shop-sessions
	SHOP_INI=$RUN/shop.ini
	# The shop's warehouse (examples/shop/public/warehouse.php): its
	# webhook secret (www-data reads it), and a relay config that
	# delivers the stack's events there instead of to the test receiver,
	# with its own copy of that secret (the pool's user reads it).  The
	# stack does not start that relay: tests/browser does, for a while.
	SHOP_WEBHOOK_SECRET_FILE=$RUN/shop-webhook.secret
	WAREHOUSE_RELAY_CONF=$RUN/idemorders-warehouse.conf
	WAREHOUSE_SECRET_FILE=$RUN/warehouse-webhook.secret
	AUTHORIZER_PHP_INI=$RUN/authorizer-php.ini
	JWT_DIR=$RUN/shop-jwt
	JWT_ISSUER=idemshop-$STACK
	JWT_AUDIENCE=idemorders-$STACK
	SHOP_LIGHTTPD_CONF=$RUN/lighttpd-shop.conf
	SHOP_LIGHTTPD_PIDFILE=$RUN/lighttpd-shop.pid
	APACHE_SHOP_DIR=$RUN/apache-shop
	APACHE_SHOP_CONF=$APACHE_SHOP_DIR/apache2.conf
	APACHE_SHOP_PIDFILE=$APACHE_SHOP_DIR/apache2.pid
	SHOP_LIGHTTPD_URL=http://127.0.0.1:$SHOP_LIGHTTPD_PORT
	SHOP_APACHE_URL=http://127.0.0.1:$SHOP_APACHE_PORT
	BEARER_LIGHTTPD_URL=http://127.0.0.1:$BEARER_LIGHTTPD_PORT
	BEARER_APACHE_URL=http://127.0.0.1:$BEARER_APACHE_PORT
}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 1; }

need_root() {
	[[ $EUID -eq 0 ]] || die "must run as root (private MariaDB, Apache and lighttpd run as root and drop to www-data)"
}

# Run "$@" holding the stack's lock, so that two commands on one stack
# never interleave.  The commands a test script runs (`$DEV up` among
# them) run under the lock `tools/dev test` holds: IDEMORDERS_LOCK_HELD
# names the stack whose lock an ancestor holds.
with_lock() {
	if [[ ${IDEMORDERS_LOCK_HELD:-} != "$VAR" ]]; then
		mkdir -p "$VAR"
		exec 9>"$VAR/.lock"
		if ! flock -n 9; then
			say "waiting for another $PROG on stack '$STACK'"
			flock 9
		fi
		export IDEMORDERS_LOCK_HELD=$VAR
	fi
	"$@"
}

# Print the tail of a log file, indented, to stderr.
show_log() {
	local f=$1 n=${2:-30}
	[[ -s $f ]] || return 0
	printf '%s: --- last lines of %s ---\n' "$PROG" "$f" >&2
	tail -n "$n" "$f" | sed 's/^/    /' >&2
}

# Print the pid recorded in FILE if that process is alive, not a zombie,
# and its command line contains NAME.
pid_alive() {
	local file=$1 name=$2 pid state
	[[ -r $file ]] || return 1
	pid=$(tr -dc '0-9' <"$file")
	[[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
	state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) || return 1
	[[ $state != Z ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$name" || return 1
	echo "$pid"
}

# True while process PID exists and is not a zombie.  A killed
# multi-threaded process (mariadbd) shows its leader as a zombie while the
# other threads still exit holding its files, locks and listening sockets:
# it runs until every thread is gone.
proc_running() {
	local state t
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $state ]] || return 1
	[[ $state != Z ]] && return 0
	for t in /proc/"$1"/task/*/stat; do
		state=$(awk '{ print $3 }' "$t" 2>/dev/null) || continue
		[[ -n $state && $state != Z ]] && return 0
	done
	return 1
}

# Wait up to SECONDS for PID to exit; false if it is still there.
wait_gone() {
	local pid=$1 secs=${2:-15} i
	for ((i = 0; i < secs * 10; i++)); do
		proc_running "$pid" || return 0
		sleep 0.1
	done
	! proc_running "$pid"
}

# await_pidfile PIDFILE NAME SECONDS SUM STAMP ERRLOG WHAT: wait until the
# process NAME of PIDFILE runs, then record SUM in STAMP; else show ERRLOG
# and die saying WHAT did not start.
await_pidfile() {
	local pidfile=$1 name=$2 secs=$3 sum=$4 stamp=$5 errlog=$6 what=$7 i
	for ((i = 0; i < secs * 10; i++)); do
		if pid_alive "$pidfile" "$name" >/dev/null; then
			printf '%s\n' "$sum" >"$stamp"
			return 0
		fi
		sleep 0.1
	done
	show_log "$errlog"
	die "$what did not start"
}

# stop_pidfile PIDFILE NAME SIGNAL [WHAT]: send SIGNAL to the process NAME
# of PIDFILE (saying so when WHAT is given), KILL it and its children
# after 15 s; remove PIDFILE.
stop_pidfile() {
	local pidfile=$1 name=$2 sig=$3 what=${4:-} pid
	if pid=$(pid_alive "$pidfile" "$name"); then
		[[ -z $what ]] || say "stopping $what (pid $pid)"
		kill "-$sig" "$pid" 2>/dev/null || true
		if ! wait_gone "$pid" 15; then
			kill -KILL "$pid" $(pgrep -P "$pid" || true) 2>/dev/null || true
			wait_gone "$pid" 5 || true
		fi
	fi
	rm -f "$pidfile"
}

# Die unless nothing listens on 127.0.0.1:PORT (for WHAT).
need_free_port() {
	local port=$1 what=$2
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		die "127.0.0.1:$port ($what of stack '$STACK') is already in use: another server, or the same stack of another clone of the repository (stop that one first)"
	fi
}

# apt-get that waits for the dpkg lock (up to APT_LOCK_WAIT seconds,
# 600 unless IDEMORDERS_APT_LOCK_WAIT says otherwise) instead of failing
# at once: a fresh cloud VM runs unattended-upgrades at boot, which holds
# it for minutes.
APT_LOCK_WAIT=${IDEMORDERS_APT_LOCK_WAIT:-600}
apt_get() {
	apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" "$@"
}

# apt-get update, waiting the same for the package lists' lock (which
# DPkg::Lock::Timeout does not cover): tried again every 5 s while
# another apt holds it.
apt_update() {
	local out t0=$SECONDS
	while :; do
		out=$(apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" update -q 2>&1) && return 0
		if ! grep -q 'Could not get lock' <<<"$out" ||
		    ((SECONDS - t0 >= APT_LOCK_WAIT)); then
			printf '%s\n' "$out" >&2
			return 1
		fi
		say "apt-get update: waiting for another apt to release the package lists"
		sleep 5
	done
}

# Install the packages that are missing; apt-get update only if needed.
ensure_packages() {
	local p missing=()
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		    grep -q 'install ok installed' || missing+=("$p")
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt_get install -y -q "${missing[@]}"; then
		apt_update
		apt_get install -y -q "${missing[@]}"
	fi
}

# Replace the @PLACEHOLDERS@ of template SRC and write DST (mode 0644).
render_template() {
	local src=$1 dst=$2 t
	t=$(<"$src")
	t=${t//@RUNDIR@/$RUN}
	t=${t//@LOGDIR@/${TPL_LOGDIR:-$LOGDIR}}
	t=${t//@DOCROOT@/$DOCROOT}
	t=${t//@PORT@/$3}
	t=${t//@FCGID_PORT@/$FCGID_PORT}
	t=${t//@FCGI_SOCKET@/$FCGI_SOCKET}
	t=${t//@HTPASSWD@/$HTPASSWD}
	t=${t//@BINDIR@/$RUNBIN_DIR}
	t=${t//@CONF@/$CONF}
	t=${t//@FCGID_CONF@/$FCGID_CONF}
	t=${t//@APACHE_DIR@/$APACHE_DIR}
	t=${t//@LIGHTTPD_SECRET_CONF@/$LIGHTTPD_SECRET_CONF}
	t=${t//@APACHE_SECRET_CONF@/$APACHE_SECRET_CONF}
	t=${t//@SHOP_PORT@/$SHOP_LIGHTTPD_PORT}
	t=${t//@BEARER_PORT@/$BEARER_LIGHTTPD_PORT}
	t=${t//@SHOP_APACHE_PORT@/$SHOP_APACHE_PORT}
	t=${t//@BEARER_APACHE_PORT@/$BEARER_APACHE_PORT}
	t=${t//@SHOP_DIR@/$SHOP_DIR}
	t=${t//@AUTHORIZER_DIR@/$SHOP_DIR/authorizer}
	t=${t//@JS_CLIENT@/$JS_CLIENT}
	t=${t//@PHP_FPM_SOCKET@/$PHP_FPM_SOCKET}
	t=${t//@PHP_CGI@/$PHP_CGI_BIN}
	t=${t//@SHOP_INI@/$SHOP_INI}
	t=${t//@AUTHORIZER_PHP_INI@/$AUTHORIZER_PHP_INI}
	t=${t//@JWT_CERT@/$JWT_DIR/cert.pem}
	t=${t//@JWT_ISSUER@/$JWT_ISSUER}
	t=${t//@JWT_AUDIENCE@/$JWT_AUDIENCE}
	t=${t//@JWT_KID@/$(cat "$JWT_DIR/kid" 2>/dev/null || true)}
	t=${t//@APACHE_SHOP_DIR@/$APACHE_SHOP_DIR}
	t=${t//@AUTHORIZER_SECRET_LUA@/$RUN/lighttpd-authorizer-secret.lua}
	if [[ $t =~ @[A-Z_]+@ ]]; then
		die "$src: no value for placeholder ${BASH_REMATCH[0]}"
	fi
	printf '%s\n' "$t" >"$dst.tmp"
	chmod 0644 "$dst.tmp"
	mv -f "$dst.tmp" "$dst"
}

# A checksum of files (missing ones count as empty), for restart decisions.
files_sum() {
	local f
	for f in "$@"; do
		printf '%s\n' "$f"
		cat "$f" 2>/dev/null || true
	done | sha1sum | cut -c1-40
}
