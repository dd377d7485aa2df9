# tests/cluster/cluster.sh -- `tools/dev cluster`: three MariaDB Galera nodes,
# each with its own responder pool behind its own lighttpd, on 127.0.0.1.
# shellcheck shell=bash
#
#   node N   SQL 331N   Galera 4567/4577/4587 (IST +1, SST 4444/4454/4464)
#            web 809N   (lighttpd, Basic auth alice/bob, mount /orders)
#            relay      (`idemorders relay` of web node N, to the
#                       receiver of the checks on 127.0.0.1:8099)
#
# Data directories (owned by mysql, which runs the servers, as rsync SST
# needs) live in /var/lib/idemorders-cluster-HASH, sockets and pid files in
# /run/idemorders-cluster-HASH, HASH naming the checkout: both outside the
# checkout, which may sit under /root (mode 0700) where neither mysql nor
# www-data can reach.  Responder logs are in var/cluster/log.
#
# Every daemon is stopped by the pid it recorded, after checking that the
# pid still names the program and this cluster's config.

CL_NODES=(1 2 3)
CL_CLUSTER_NAME=idemorders
CL_PROVIDER=/usr/lib/galera/libgalera_smm.so
CL_WAIT=${IDEMORDERS_CLUSTER_WAIT:-300}	# seconds a node may take to sync

# Set every path and port of the cluster of this checkout.
cluster_vars() {
	CL_DATA=/var/lib/idemorders-cluster-$HASH
	CL_RUN=/run/idemorders-cluster-$HASH
	CL_VAR=$REPO/var/cluster
	CL_LOG=$CL_VAR/log
	CL_BIN=$CL_RUN/bin/idemorders
	CL_HTPASSWD=$CL_RUN/htpasswd
	CL_ADDRS=127.0.0.1:4567,127.0.0.1:4577,127.0.0.1:4587
	# Where every web node's relay delivers: the test receiver
	# (tests/lib/webhook-receiver.cjs) that chaos.py starts.
	CL_RECEIVER_IP=127.0.0.1
	CL_RECEIVER_PORT=8099
	CL_NODE_MODULES=$REPO/var/node-webhooks/node_modules
}

cl_sql_port() { echo $((3310 + $1)); }
cl_web_port() { echo $((8090 + $1)); }
cl_gcomm_port() { echo $((4557 + 10 * $1)); }
cl_sst_port() { echo $((4434 + 10 * $1)); }
cl_web_url() { echo "http://$(cl_web_ip "$1"):$(cl_web_port "$1")"; }
# The addresses of database node N and web node N, and the words that
# run a command in their network (none here; tests/cluster/partition.sh
# puts each in a network namespace of its own and redefines these).
cl_ip() { echo 127.0.0.1; }
cl_web_ip() { echo 127.0.0.1; }
cl_db_netns() { :; }
cl_web_netns() { :; }
# Extra Galera provider options ("" here).
CL_WSREP_EXTRA=

cl_cnf() { echo "$CL_DATA/n$1/my.cnf"; }
cl_datadir() { echo "$CL_DATA/n$1/data"; }
cl_db_pidfile() { echo "$CL_RUN/n$1/mysqld.pid"; }
cl_db_socket() { echo "$CL_RUN/n$1/mysqld.sock"; }
cl_webdir() { echo "$CL_RUN/web$1"; }

cl_check_node() {
	[[ $1 =~ ^[123]$ ]] || die "cluster: node must be 1, 2 or 3, not '$1'"
}

# ------------------------------------------------------------ database

# Write node N's my.cnf (the settings of GALERA-NOTES.md).
cl_write_cnf() {
	local n=$1 g cnf ip
	g=$(cl_gcomm_port "$n")
	ip=$(cl_ip "$n")
	cnf=$(cl_cnf "$n")
	cat >"$cnf.tmp" <<EOF
# Galera node n$n of the idemorders cluster of $REPO, written by $PROG.
[client]
socket = $(cl_db_socket "$n")
user = root

[mariadbd]
user = mysql
datadir = $(cl_datadir "$n")
tmpdir = $CL_DATA/n$n/tmp
socket = $(cl_db_socket "$n")
pid-file = $(cl_db_pidfile "$n")
log-error = $CL_DATA/n$n/error.log
port = $(cl_sql_port "$n")
bind-address = $ip
skip-name-resolve
character-set-server = utf8mb4
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
innodb_buffer_pool_size = 128M
max_connections = 200
wsrep_on = ON
wsrep_provider = $CL_PROVIDER
wsrep_cluster_name = $CL_CLUSTER_NAME
wsrep_cluster_address = gcomm://$CL_ADDRS
wsrep_node_name = n$n
wsrep_node_address = $ip:$g
wsrep_node_incoming_address = $ip:$(cl_sql_port "$n")
wsrep_provider_options = "base_host=$ip;base_port=$g;gmcast.listen_addr=tcp://$ip:$g;ist.recv_addr=$ip:$((g + 1));gcache.size=64M$CL_WSREP_EXTRA"
wsrep_sst_method = rsync
wsrep_sst_receive_address = $ip:$(cl_sst_port "$n")
wsrep_slave_threads = 2
EOF
	chmod 0644 "$cnf.tmp"
	mv -f "$cnf.tmp" "$cnf"
}

cl_prepare_dirs() {
	local n
	install -d -m 0755 "$CL_RUN" "$CL_RUN/bin" "$CL_DATA"
	mkdir -p "$CL_VAR" "$CL_LOG"
	for n in "${CL_NODES[@]}"; do
		install -d -m 0755 -o mysql -g mysql "$CL_RUN/n$n" "$CL_DATA/n$n" \
		    "$CL_DATA/n$n/data" "$CL_DATA/n$n/tmp"
		cl_write_cnf "$n"
		install -d -m 0755 "$(cl_webdir "$n")" "$(cl_webdir "$n")/htdocs"
		install -d -m 0755 -o www-data -g www-data "$(cl_webdir "$n")/log"
	done
}

# The mariadb client as root on node N (-N -B and the arguments given).
cl_mysql() {
	local n=$1; shift
	mariadb --defaults-file="$(cl_cnf "$n")" --connect-timeout=3 "$@"
}

# Print one global status variable of node N (nothing if it does not answer).
cl_status_var() {
	cl_mysql "$1" -N -B -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null |
	    awk '{ print $2 }'
}

# Print the pid of node N's mariadbd if it runs.
cl_db_pid() {
	pid_alive "$(cl_db_pidfile "$1")" "$(cl_cnf "$1")"
}

# True if node N is Synced in a Primary component.
cl_synced() {
	local s
	s=$(cl_mysql "$1" -N -B -e "SHOW GLOBAL STATUS WHERE Variable_name IN
	    ('wsrep_local_state_comment', 'wsrep_cluster_status')" 2>/dev/null |
	    awk '{ printf "%s ", $2 }')
	[[ $s == *Primary* && $s != *non-Primary* && $s == *Synced* ]]
}

# Wait until node N (started as PID) is Synced; die with its log otherwise.
cl_wait_synced() {
	local n=$1 pid=$2 i
	for ((i = 0; i < CL_WAIT * 5; i++)); do
		cl_synced "$n" && return 0
		if ! proc_running "$pid"; then
			show_log "$CL_DATA/n$n/error.log" 40
			die "cluster: node $n (pid $pid) exited before it was Synced"
		fi
		sleep 0.2
	done
	show_log "$CL_DATA/n$n/error.log" 40
	die "cluster: node $n is not Synced after ${CL_WAIT}s"
}

# Print node N's position (uuid:seqno) as --wsrep-recover finds it in its
# InnoDB data; nothing when it has no data or the recovery fails.
cl_recover_position() {
	local n=$1 log
	[[ -d $(cl_datadir "$n")/mysql ]] || return 0
	log=$CL_DATA/n$n/recover.log
	rm -f "$log"
	install -m 0644 -o mysql -g mysql /dev/null "$log"
	mariadbd --defaults-file="$(cl_cnf "$n")" --wsrep-recover \
	    --log-error="$log" </dev/null >/dev/null 2>&1 9>&- || true
	grep -o 'WSREP: Recovered position: [^ ]*' "$log" 2>/dev/null |
	    tail -n 1 | awk '{ print $4 }'
}

# Print the seqno of a uuid:seqno position (-1 when unknown).
cl_seqno() {
	local s=${1##*:}
	[[ $s =~ ^-?[0-9]+$ ]] && echo "$s" || echo -1
}

# Start node N's mariadbd with ARGS and wait until it is Synced.  With
# POS (uuid:seqno from --wsrep-recover) it rejoins by IST when the donor's
# gcache still holds what it missed.
cl_db_launch() {
	local n=$1 pos=$2; shift 2
	local pid args=("$@") t0 ns
	mapfile -t ns < <(cl_db_netns "$n")
	need_free_port "$(cl_sql_port "$n")" "MariaDB node $n"
	[[ -n $pos ]] && args+=("--wsrep-start-position=$pos")
	CL_START_POS=$pos
	say "cluster: starting node $n ($(cl_ip "$n"):$(cl_sql_port "$n"))${args[*]:+ ${args[*]}}"
	t0=$(date +%s.%N)
	CL_LOG_OFF=$(stat -c %s "$CL_DATA/n$n/error.log" 2>/dev/null || echo 0)
	"${ns[@]}" setsid mariadbd --defaults-file="$(cl_cnf "$n")" "${args[@]}" \
	    </dev/null >>"$CL_DATA/n$n/stdout.log" 2>&1 9>&- &
	pid=$!
	# Not a job of this shell: a later SIGKILL is no job notice here.
	disown "$pid" 2>/dev/null || true
	cl_wait_synced "$n" "$pid"
	say "cluster: node $n Synced after $(awk -v a="$t0" -v b="$(date +%s.%N)" \
	    'BEGIN { printf "%.1f", b - a }')s ($(cl_join_kind "$n"))"
}

# How node N joined just now: IST, SST or none, from its error log (read
# from offset CL_LOG_OFF; CL_START_POS is the position it started at).
cl_join_kind() {
	local part
	part=$(tail -c +"$((CL_LOG_OFF + 1))" "$CL_DATA/n$1/error.log" 2>/dev/null)
	# rsync "SST" at the start position is a bypassed dump: IST only.
	if [[ -n $CL_START_POS ]] &&
	    grep -qF "SST received: $CL_START_POS" <<<"$part"; then
		echo "IST"
	elif grep -q 'SST received\|SST succeeded' <<<"$part"; then
		echo "SST"
	elif grep -q 'IST received' <<<"$part"; then
		echo "IST"
	else
		echo "no state transfer"
	fi
}

# Bring node N into the running Primary component (by IST when it has data).
cl_db_join() {
	local n=$1 pos
	cl_db_pid "$n" >/dev/null && return 0
	pos=$(cl_recover_position "$n")
	[[ $(cl_seqno "$pos") -ge 0 ]] || pos=
	cl_db_launch "$n" "$pos"
}

# Start node N as the first of a new Primary component at position POS.
cl_db_bootstrap() {
	local n=$1 pos=$2 gs
	gs=$(cl_datadir "$n")/grastate.dat
	if [[ -f $gs ]]; then
		sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$gs"
	fi
	cl_db_launch "$n" "$pos" --wsrep-new-cluster
}

# A brand-new cluster: install node 1's system tables and bootstrap it.
cl_db_create() {
	local d
	d=$(cl_datadir 1)
	say "cluster: mariadb-install-db (node 1, $d)"
	if ! mariadb-install-db --defaults-file="$(cl_cnf 1)" --user=mysql \
	    --skip-test-db >"$CL_LOG/install-db.log" 2>&1 9>&-; then
		show_log "$CL_LOG/install-db.log"
		die "cluster: mariadb-install-db failed"
	fi
	rm -f "$CL_DATA/.demo-loaded"
	cl_db_launch 1 "" --wsrep-new-cluster
}

# Print the number of a running node that is in a Primary component.
cl_primary_node() {
	local n
	for n in "${CL_NODES[@]}"; do
		cl_db_pid "$n" >/dev/null || continue
		[[ $(cl_status_var "$n" wsrep_cluster_status) == Primary ]] &&
		    { echo "$n"; return 0; }
	done
	return 1
}

# From any state to three Synced nodes.  A node in a Primary component
# takes the others in.  Without one (nothing runs, or the running nodes
# lost quorum), the most advanced node (running: wsrep_last_committed;
# stopped: --wsrep-recover) becomes the new Primary component
# (pc.bootstrap when it runs, safe_to_bootstrap + --wsrep-new-cluster
# when it does not) and the others rejoin by IST.
cl_db_up() {
	local n p best= best_seq=-2 best_pos= seq pos running=()
	if ! p=$(cl_primary_node); then
		for n in "${CL_NODES[@]}"; do
			cl_db_pid "$n" >/dev/null && running+=("$n")
		done
		if [[ ${#running[@]} -eq 0 && ! -d $(cl_datadir 1)/mysql &&
		    ! -d $(cl_datadir 2)/mysql && ! -d $(cl_datadir 3)/mysql ]]; then
			cl_db_create
			p=1
		else
			for n in "${CL_NODES[@]}"; do
				if cl_db_pid "$n" >/dev/null; then
					seq=$(cl_status_var "$n" wsrep_last_committed)
					pos=
				else
					pos=$(cl_recover_position "$n")
					seq=$(cl_seqno "$pos")
				fi
				[[ $seq =~ ^-?[0-9]+$ ]] || seq=-1
				say "cluster: node $n at seqno $seq$(cl_db_pid "$n" >/dev/null && echo ' (running, no quorum)')"
				# Prefer a running node on a tie: no restart.
				if ((seq > best_seq)) || { ((seq == best_seq)) &&
				    cl_db_pid "$n" >/dev/null; }; then
					best=$n best_seq=$seq best_pos=$pos
				fi
			done
			((best_seq >= 0)) || die "cluster: no node has a usable position; '$PROG cluster down --wipe' starts afresh"
			if cl_db_pid "$best" >/dev/null; then
				say "cluster: node $best takes the Primary component (pc.bootstrap)"
				cl_mysql "$best" -e "SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'" ||
				    die "cluster: pc.bootstrap on node $best failed"
				cl_wait_synced "$best" "$(cl_db_pid "$best")"
			else
				# Running nodes without quorum would not
				# join a new component: stop them first.
				for n in "${running[@]}"; do
					cl_db_stop "$n"
				done
				say "cluster: bootstrapping node $best at $best_pos"
				cl_db_bootstrap "$best" "$best_pos"
			fi
			p=$best
		fi
	fi
	for n in "${CL_NODES[@]}"; do
		cl_db_join "$n"
	done
	CL_PRIMARY=$p
}

# Stop node N's mariadbd cleanly (SIGTERM; it saves its position).
cl_db_stop() {
	local n=$1 pid
	pid=$(cl_db_pid "$n") || return 0
	say "cluster: stopping node $n (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_gone "$pid" 90; then
		say "cluster: node $n (pid $pid) did not stop; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 10 || true
	fi
}

# `cluster kill N`: SIGKILL node N's mariadbd.
cl_db_kill() {
	local n=$1 pid
	pid=$(cl_db_pid "$n") || { say "cluster: node $n is not running"; return 0; }
	say "cluster: kill -KILL node $n (pid $pid)"
	kill -KILL "$pid" 2>/dev/null || true
	wait_gone "$pid" 30 || die "cluster: node $n (pid $pid) survived SIGKILL"
}

# Create the database and its user, migrate, load the demo stock once.
cl_schema() {
	local n=$1 ns
	cl_mysql "$n" <<EOF || die "cluster: creating the database on node $n failed"
CREATE DATABASE IF NOT EXISTS \`$DB_NAME\` CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
CREATE USER IF NOT EXISTS '$DB_USER'@'${CL_DB_CLIENTS:-127.0.0.1}' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL PRIVILEGES ON \`$DB_NAME\`.* TO '$DB_USER'@'localhost';
GRANT ALL PRIVILEGES ON \`$DB_NAME\`.* TO '$DB_USER'@'${CL_DB_CLIENTS:-127.0.0.1}';
EOF
	say "cluster: idemorders migrate (node $n)"
	mapfile -t ns < <(cl_web_netns "$n")
	"${ns[@]}" "$CL_BIN" migrate -c "$(cl_webdir "$n")/idemorders.conf" 9>&- ||
	    die "cluster: idemorders migrate failed on node $n"
	if [[ ! -f $CL_DATA/.demo-loaded && -f $REPO/schema/demo.sql ]]; then
		say "cluster: loading schema/demo.sql (node $n)"
		cl_mysql "$n" "$DB_NAME" <"$REPO/schema/demo.sql" ||
		    die "cluster: schema/demo.sql failed on node $n"
		touch "$CL_DATA/.demo-loaded"
	fi
}

# ------------------------------------------------------------ web nodes

# Node N's db_host list: its own database node first (preferred), then
# the others, so that its workers move on when that node cannot serve.
cl_db_hosts() {
	local n=$1 m list=$(cl_ip "$1"):$(cl_sql_port "$1")
	for m in "${CL_NODES[@]}"; do
		[[ $m == "$n" ]] || list+=,$(cl_ip "$m"):$(cl_sql_port "$m")
	done
	echo "$list"
}

# The cluster's pool secrets (DB password, frontend and webhook secrets),
# the includes that pass the frontend secret, as the stack writes its own.
cl_secrets() {
	local DB_PASSWORD_FILE=$CL_RUN/db-password
	local FRONTEND_SECRET_FILE=$CL_RUN/frontend.secret
	local WEBHOOK_SECRET_FILE=$CL_RUN/webhook.secret
	local LIGHTTPD_SECRET_CONF=$CL_RUN/lighttpd-frontend-secret.conf
	local APACHE_SECRET_CONF=$CL_RUN/apache-frontend-secret.conf
	write_pool_secrets
}

# Write web node N's responder config: its pool prefers database node N,
# runs as the pool user and takes requests from www-data with the secret.
cl_write_responder_conf() {
	local n=$1 conf
	conf=$(cl_webdir "$n")/idemorders.conf
	cat >"$conf.tmp" <<EOF
# Responder pool of web node $n of the idemorders cluster, written by
# $PROG cluster up (edits are lost on the next 'up').
listen = unix:$(cl_webdir "$n")/idemorders.sock
socket_mode = 0660
socket_group = www-data
user = $POOL_USER
frontend_secret_file = $CL_RUN/frontend.secret
workers = ${IDEMORDERS_CLUSTER_WORKERS:-4}
log = stderr
log_level = ${IDEMORDERS_CLUSTER_LOG_LEVEL:-info}
mount = $MOUNT
db_host = $(cl_db_hosts "$n")
db_name = $DB_NAME
db_user = $DB_USER
db_password_file = $CL_RUN/db-password
schema_dir = $REPO/schema
# The relay of this web node: retries within seconds, so that a check
# sees every event delivered soon after its faults heal.
webhook_url = http://$CL_RECEIVER_IP:$CL_RECEIVER_PORT/webhook
webhook_secret_file = $CL_RUN/webhook.secret
webhook_timeout = 2s
event_backoff = 200ms
event_backoff_max = 2s
EOF
	if [[ -f $CL_VAR/idemorders.local.conf ]]; then
		printf '\n# From %s:\n' "$CL_VAR/idemorders.local.conf" >>"$conf.tmp"
		cat "$CL_VAR/idemorders.local.conf" >>"$conf.tmp"
	fi
	chmod 0644 "$conf.tmp"
	mv -f "$conf.tmp" "$conf"
}

cl_pool_pidfile() { echo "$(cl_webdir "$1")/idemorders.pid"; }

cl_pool_pid() {
	pid_alive "$(cl_pool_pidfile "$1")" "$(cl_webdir "$1")/idemorders.conf"
}

# Start web node N's `idemorders serve` pool (restart it when the binary or
# its config changed).
cl_pool_start() {
	local n=$1 w pid sum i conf ns
	mapfile -t ns < <(cl_web_netns "$n")
	w=$(cl_webdir "$n")
	conf=$w/idemorders.conf
	sum=$(files_sum "$CL_BIN" "$conf")
	if pid=$(cl_pool_pid "$n"); then
		[[ $(cat "$w/idemorders.stamp" 2>/dev/null) == "$sum" ]] && return 0
		say "cluster: binary or config changed: restarting pool $n"
		cl_pool_stop "$n"
	fi
	rm -f "$w/idemorders.sock"
	"${ns[@]}" setsid "$CL_BIN" serve -c "$conf" </dev/null \
	    >>"$CL_LOG/idemorders-$n.log" 2>&1 9>&- &
	pid=$!
	echo "$pid" >"$(cl_pool_pidfile "$n")"
	for ((i = 0; i < 100; i++)); do
		if [[ -S $w/idemorders.sock ]]; then
			printf '%s\n' "$sum" >"$w/idemorders.stamp"
			return 0
		fi
		proc_running "$pid" || break
		sleep 0.1
	done
	show_log "$CL_LOG/idemorders-$n.log"
	die "cluster: idemorders serve of node $n did not open $w/idemorders.sock"
}

# Stop web node N's pool: SIGTERM, or with "kill" SIGKILL (master and
# workers at once, as a crash would).
cl_pool_stop() {
	local n=$1 how=${2:-term} pid kids
	if pid=$(cl_pool_pid "$n"); then
		kids=$(pgrep -P "$pid" || true)
		if [[ $how == kill ]]; then
			say "cluster: kill -KILL pool $n (pid $pid, workers $(echo $kids))"
			# shellcheck disable=SC2086
			kill -KILL "$pid" $kids 2>/dev/null || true
		else
			kill -TERM "$pid" 2>/dev/null || true
		fi
		if ! wait_gone "$pid" 15; then
			# shellcheck disable=SC2086
			kill -KILL "$pid" $kids 2>/dev/null || true
			wait_gone "$pid" 5 || true
		fi
	fi
	kill_leftovers "responders of node $n" " serve -c $(cl_webdir "$n")/idemorders.conf\$"
	rm -f "$(cl_pool_pidfile "$n")" "$(cl_webdir "$n")/idemorders.stamp"
}

cl_relay_pidfile() { echo "$(cl_webdir "$1")/relay.pid"; }

cl_relay_pid() {
	pid_alive "$(cl_relay_pidfile "$1")" " relay -c $(cl_webdir "$1")/idemorders.conf"
}

# Start web node N's `idemorders relay` as the pool's user, in the web
# host's network (restart it when the binary or its config changed).
cl_relay_start() {
	local n=$1 w pid sum conf ns log lines i
	mapfile -t ns < <(cl_web_netns "$n")
	w=$(cl_webdir "$n")
	conf=$w/idemorders.conf
	sum=$(files_sum "$CL_BIN" "$conf")
	if pid=$(cl_relay_pid "$n"); then
		[[ $(cat "$w/relay.stamp" 2>/dev/null) == "$sum" ]] && return 0
		say "cluster: binary or config changed: restarting relay $n"
		cl_relay_stop "$n"
	fi
	log=$CL_LOG/relay-$n.log
	lines=0
	[[ ! -f $log ]] || lines=$(wc -l <"$log")
	"${ns[@]}" setsid setpriv --reuid="$POOL_USER" --regid="$POOL_USER" \
	    --init-groups "$CL_BIN" relay -c "$conf" </dev/null \
	    >>"$log" 2>&1 9>&- &
	pid=$!
	# Not a job of this shell: a later SIGKILL is no job notice here.
	disown "$pid" 2>/dev/null || true
	echo "$pid" >"$(cl_relay_pidfile "$n")"
	# Started: it says so in its log (at most 10 s), and still runs.
	cl_relay_started() {
		awk -v n="$lines" 'NR > n && /relay: delivering events to/ { f = 1 }
		    END { exit !f }' "$log"
	}
	for ((i = 0; i < 100; i++)); do
		cl_relay_started && break
		proc_running "$pid" || break
		sleep 0.1
	done
	if ! proc_running "$pid" || ! cl_relay_started; then
		show_log "$log"
		die "cluster: idemorders relay of node $n did not start"
	fi
	printf '%s\n' "$sum" >"$w/relay.stamp"
}

# Stop web node N's relay: SIGTERM lets its deliveries in flight finish;
# with "kill", SIGKILL (its leases pass, another relay sends again).
cl_relay_stop() {
	local n=$1 how=${2:-term} w pid
	w=$(cl_webdir "$n")
	if [[ $how == kill ]] && pid=$(cl_relay_pid "$n"); then
		say "cluster: kill -KILL relay $n (pid $pid)"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 5 || true
	fi
	stop_pidfile "$(cl_relay_pidfile "$n")" " relay -c $w/idemorders.conf" TERM
	kill_leftovers "relay of node $n" " relay -c $w/idemorders.conf\$"
	rm -f "$w/relay.stamp"
}

# The npm standardwebhooks package the test receiver verifies with, in
# var/node-webhooks (the version tests/lib/webhooks.sh installs).
cl_webhooks_node() {
	local want have dir=${CL_NODE_MODULES%/node_modules}
	want=$(sed -n 's/^STANDARDWEBHOOKS_VERSION=//p' "$REPO/tests/lib/webhooks.sh")
	have=$(node -p "try { require('$CL_NODE_MODULES/standardwebhooks/package.json').version } catch { '' }" 2>/dev/null || true)
	[[ -n $want && $have == "$want" ]] && return 0
	command -v npm >/dev/null || die "cluster: npm is needed (Debian: npm)"
	say "cluster: installing standardwebhooks@$want in ${dir#"$REPO"/}"
	mkdir -p "$dir"
	[[ -f $dir/package.json ]] || echo '{ "private": true }' >"$dir/package.json"
	(cd "$dir" && timeout 300 npm install --no-audit --no-fund \
	    --loglevel=error "standardwebhooks@$want") >&2 ||
	    die "cluster: npm install standardwebhooks@$want failed"
}

cl_lighttpd_pid() {
	pid_alive "$(cl_webdir "$1")/lighttpd.pid" lighttpd
}

# Start web node N's lighttpd from httpd-conf/lighttpd.conf.
cl_lighttpd_start() {
	local n=$1 w sum i ns
	mapfile -t ns < <(cl_web_netns "$n")
	w=$(cl_webdir "$n")
	# render_template reads these names: this node's values.
	local RUN=$w DOCROOT=$w/htdocs FCGI_SOCKET=$w/idemorders.sock
	local HTPASSWD=$CL_HTPASSWD RUNBIN_DIR=$CL_RUN/bin CONF=$w/idemorders.conf
	local LIGHTTPD_SECRET_CONF=$CL_RUN/lighttpd-frontend-secret.conf
	TPL_LOGDIR=$w/log render_template "$REPO/httpd-conf/lighttpd.conf" \
	    "$w/lighttpd.conf.new" "$(cl_web_port "$n")"
	sed -i "s/^server.bind  *= \"127.0.0.1\"/server.bind           = \"$(cl_web_ip "$n")\"/" \
	    "$w/lighttpd.conf.new"
	if ! lighttpd -tt -f "$w/lighttpd.conf.new" >"$CL_LOG/lighttpd-check-$n.log" 2>&1; then
		show_log "$CL_LOG/lighttpd-check-$n.log"
		die "cluster: lighttpd rejects $w/lighttpd.conf.new"
	fi
	mv -f "$w/lighttpd.conf.new" "$w/lighttpd.conf"
	sum=$(files_sum "$w/lighttpd.conf")
	if cl_lighttpd_pid "$n" >/dev/null; then
		[[ $(cat "$w/lighttpd.stamp" 2>/dev/null) == "$sum" ]] && return 0
		cl_lighttpd_stop "$n"
	fi
	need_free_port "$(cl_web_port "$n")" "lighttpd of cluster node $n"
	rm -f "$w/lighttpd.pid"
	if ! "${ns[@]}" lighttpd -f "$w/lighttpd.conf" </dev/null \
	    >>"$CL_LOG/lighttpd-$n.out" 2>&1 9>&-; then
		show_log "$CL_LOG/lighttpd-$n.out"
		die "cluster: lighttpd of node $n did not start"
	fi
	for ((i = 0; i < 50; i++)); do
		if cl_lighttpd_pid "$n" >/dev/null; then
			printf '%s\n' "$sum" >"$w/lighttpd.stamp"
			return 0
		fi
		sleep 0.1
	done
	show_log "$w/log/lighttpd-error.log"
	die "cluster: lighttpd of node $n did not start"
}

cl_lighttpd_stop() {
	local n=$1 pid
	if pid=$(cl_lighttpd_pid "$n"); then
		kill -TERM "$pid" 2>/dev/null || true
		wait_gone "$pid" 15 || kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$(cl_webdir "$n")/lighttpd.pid" "$(cl_webdir "$n")/lighttpd.stamp"
}

# ------------------------------------------------------------- commands

cluster_up() {
	local n ok=1
	PACKAGES+=("${CLUSTER_PACKAGES[@]}")
	ensure_packages
	[[ -f $CL_PROVIDER ]] || die "cluster: no Galera provider $CL_PROVIDER (package galera-4)"
	build_main || die "build failed"
	cl_prepare_dirs
	if ! cmp -s "$BIN" "$CL_BIN"; then
		install -m 0755 "$BIN" "$CL_BIN.tmp"
		mv -f "$CL_BIN.tmp" "$CL_BIN"
	fi
	ensure_pool_user
	cl_secrets
	for n in "${CL_NODES[@]}"; do
		cl_write_responder_conf "$n"
	done
	cl_db_up
	cl_schema "$CL_PRIMARY"
	local HTPASSWD=$CL_HTPASSWD
	make_htpasswd
	for n in "${CL_NODES[@]}"; do
		cl_pool_start "$n"
		cl_lighttpd_start "$n"
		cl_relay_start "$n"
	done
	for n in "${CL_NODES[@]}"; do
		wait_http "$(cl_web_url "$n")$MOUNT/_health" 60 || ok=0
	done
	cluster_status
	[[ $ok == 1 ]] || die "cluster: a web node's health does not answer 200"
}

cluster_down() {
	local n wipe=${1:-}
	for n in "${CL_NODES[@]}"; do
		cl_lighttpd_stop "$n"
		cl_pool_stop "$n"
		cl_relay_stop "$n"
	done
	# The last node stopped is safe to bootstrap from: stop 3, 2, then 1.
	for n in 3 2 1; do
		cl_db_stop "$n"
	done
	if [[ $wipe == --wipe ]]; then
		say "cluster: removing $CL_DATA and $CL_RUN"
		rm -rf "$CL_DATA" "$CL_RUN"
	fi
}

cluster_status() {
	local n pid st
	echo "idemorders cluster of $REPO"
	echo "  data       $CL_DATA (nN/data, nN/error.log; owned by mysql)"
	echo "  runtime    $CL_RUN (nN/mysqld.sock, webN/)"
	echo "  logs       $CL_LOG (idemorders-N.log)"
	printf '  %-6s %-8s %-6s %-13s %-12s %-5s %-9s %-8s %-8s %s\n' node db-pid sql \
	    state status size committed pool-pid web health
	for n in "${CL_NODES[@]}"; do
		local dbpid=- state=- cstat=- size=- seq=- ppid=- code=-
		if pid=$(cl_db_pid "$n"); then
			dbpid=$pid
			st=$(cl_mysql "$n" -N -B -e "SHOW GLOBAL STATUS WHERE Variable_name IN
			    ('wsrep_local_state_comment', 'wsrep_cluster_size',
			     'wsrep_cluster_status', 'wsrep_last_committed')" 2>/dev/null |
			    awk '{ v[$1] = $2 } END { printf "%s %s %s %s",
			    v["wsrep_local_state_comment"], v["wsrep_cluster_status"],
			    v["wsrep_cluster_size"], v["wsrep_last_committed"] }')
			read -r state cstat size seq <<<"$st"
			state=${state:-?} cstat=${cstat:-?} size=${size:-?} seq=${seq:-?}
		fi
		ppid=$(cl_pool_pid "$n" || echo -)
		if cl_lighttpd_pid "$n" >/dev/null; then
			code=$(health_code "$(cl_web_url "$n")")
		fi
		printf '  %-6s %-8s %-6s %-13s %-12s %-5s %-9s %-8s %-8s %s\n' "n$n" "$dbpid" \
		    "$(cl_sql_port "$n")" "$state" "$cstat" "$size" "$seq" "$ppid" \
		    "$(cl_web_port "$n")" "_health $code"
	done
	echo "  users      alice/alice-secret  bob/bob-secret  (mount $MOUNT)"
}

# `cluster sql N "STMT"`: tab-separated rows from node N's database.
cluster_sql() {
	[[ $# -eq 2 ]] || die "usage: $PROG cluster sql N \"STATEMENT\""
	cl_check_node "$1"
	[[ -f $(cl_cnf "$1") ]] || die "no cluster: run $PROG cluster up"
	cl_mysql "$1" -N -B "$DB_NAME" -e "$2"
}

# `cluster start N`: node N back into the cluster (by IST), its pool and
# lighttpd too.
cluster_start() {
	local n=$1
	cl_check_node "$n"
	[[ -f $(cl_cnf "$n") ]] || die "no cluster: run $PROG cluster up"
	cl_primary_node >/dev/null ||
	    die "cluster: no node is in a Primary component: run $PROG cluster up"
	cl_db_join "$n"
	cl_pool_start "$n"
	cl_lighttpd_start "$n"
}

cluster_usage() {
	cat <<EOF
usage: $PROG cluster COMMAND

  up                from any state to three Synced Galera nodes, each with
                    its responder pool and lighttpd (after a quorum loss:
                    the most advanced node bootstraps, the others rejoin by IST)
  down [--wipe]     stop everything (by pid); --wipe also removes the data
  status            pids, wsrep state, cluster size, web health, where
  sql N "STMT"      run SQL as root on node N's database (-N -B)
  kill N            SIGKILL database node N
  start N           bring node N back by IST (--wsrep-recover, then
                    --wsrep-start-position), and its pool and lighttpd
  kill-pool N       SIGKILL web node N's responder pool (master and
                    workers) and its relay
  start-pool N      start web node N's pool and relay again
  chaos [ARGS]      the cluster chaos run (tests/cluster/chaos.py --help)
  quorum [ARGS]     the quorum-loss test (tests/cluster/chaos.py --quorum)
  stall [ARGS]      the write stall clients see while a node is killed
  check             up, a short chaos run, a rejection raced by a restock on
                    another node, migrate and expire on two nodes at once,
                    the quorum-loss test, down
  job N migrate|expire [ARGS]
                    the job with web node N's config (its node first)
  bench [--quick]   create, replay, hot SKU through 1, 2 and 3 web nodes
                    beside the single-node stack; bench/results/cluster.md
  partition [--short|--long] [ARGS]
                    another cluster, each node and web host in a network
                    namespace of its own (10.77.0.0/24): links cut with
                    nftables (a node cut off, a 2-1 split, a flapping
                    link, 1-1-1, a web host cut mid-request), retrying
                    clients, the history checker; tests/cluster/partition.sh

Node N: SQL 127.0.0.1:331N, web http://127.0.0.1:809N$MOUNT, Galera
4567/4577/4587.  Data $CL_DATA, runtime $CL_RUN.
EOF
}

# The arguments tests/cluster/chaos.py needs to reach this cluster.
cl_chaos_args() {
	local n
	for n in "${CL_NODES[@]}"; do
		printf -- '--web\n%s\n--cnf\n%s\n' "$(cl_web_url "$n")$MOUNT" "$(cl_cnf "$n")"
	done
	printf -- '--dev\n%s\n' "$REPO/tools/dev"
	printf -- '--log-dir\n%s\n' "$CL_LOG"
	printf -- '--receiver\n%s\n' "$CL_RECEIVER_IP:$CL_RECEIVER_PORT"
	printf -- '--webhook-secret\n%s\n' "$CL_RUN/webhook.secret"
	printf -- '--node-modules\n%s\n' "$CL_NODE_MODULES"
}

cluster_chaos() {
	local args
	mapfile -t args < <(cl_chaos_args)
	for n in "${CL_NODES[@]}"; do
		cl_synced "$n" || die "cluster: node $n is not Synced: run $PROG cluster up"
	done
	cl_webhooks_node
	python3 "$REPO/tests/cluster/chaos.py" "${args[@]}" "$@"
}

run_cluster() {
	local cmd=${1:-help}
	[[ $# -gt 0 ]] && shift
	cluster_vars
	case $cmd in
	up)		need_root; with_cluster_lock cluster_up ;;
	down)		need_root; with_cluster_lock cluster_down "$@" ;;
	status)		cluster_status ;;
	sql)		cluster_sql "$@" ;;
	kill)		need_root; cl_check_node "${1:-}"; cl_db_kill "$1" ;;
	start)		need_root; cl_check_node "${1:-}"; cluster_start "$1" ;;
	kill-pool)	need_root; cl_check_node "${1:-}"; cl_pool_stop "$1" kill
			cl_relay_stop "$1" kill ;;
	start-pool)	need_root; cl_check_node "${1:-}"; cl_pool_start "$1"
			cl_relay_start "$1" ;;
	chaos)		need_root; cluster_chaos "$@" ;;
	quorum)		need_root; cluster_chaos --quorum "$@" ;;
	stall)		need_root; cluster_chaos --stall "$@" ;;
	check)		need_root; cluster_check "$@" ;;
	job)		need_root; cl_check_node "${1:-}"; cluster_job "$@" ;;
	bench)		need_root; cluster_bench "$@" ;;
	partition)	cluster_partition "$@" ;;
	help|-h|--help)	cluster_usage ;;
	*)		cluster_usage >&2; exit 2 ;;
	esac
}

# Run "$@" holding the cluster's lock (up and down never interleave).
# Fd 9, which every daemon is started without.
with_cluster_lock() {
	mkdir -p "$CL_VAR"
	exec 9>"$CL_VAR/.lock"
	if ! flock -n 9; then
		say "waiting for another $PROG cluster up/down"
		flock 9
	fi
	"$@"
}

# `cluster job N migrate|expire [ARGS]`: the job with web node N's config
# (its database node first in db_host).
cluster_job() {
	local n=$1 job=${2:-}
	shift 2 || true
	case $job in
	migrate|expire) ;;
	*)	die "usage: $PROG cluster job N migrate|expire [ARGS]" ;;
	esac
	"$CL_BIN" "$job" -c "$(cl_webdir "$n")/idemorders.conf" "$@"
}

# `cluster check`: tests/cluster/cluster-check.sh (up, chaos with a node
# kill, quorum loss, down; a few minutes).
cluster_check() {
	DEV=$REPO/tools/dev REPO=$REPO "$REPO/tests/cluster/cluster-check.sh" "$@"
}
