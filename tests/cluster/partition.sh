# tests/cluster/partition.sh -- `tools/dev cluster partition`: the Galera
# cluster of cluster.sh with every database node and every web host in a
# network namespace of its own, so that one link can be cut while the
# others stay up; tests/cluster/partition.py drives the faults, the
# retrying clients and the history checker.
# shellcheck shell=bash
#
#   namespace        address        runs
#   idemp-HASH-br    -              the bridge br0 (one veth end per host)
#   idemp-HASH-n1..3 10.77.0.11-13  mariadbd (SQL 3306, Galera 4567/4568,
#                                   SST 4444)
#   idemp-HASH-w1..3 10.77.0.21-23  `idemorders serve` (unix socket) and
#                                   lighttpd on :80, `idemorders relay`;
#                                   db_host = its node first, then the
#                                   other two
#   idemp-HASH-cl    10.77.0.100    partition.py (clients and checker),
#                                   the relays' receiver on :8099
#
# HASH names the checkout (6 hex digits).  The addresses exist only inside
# these namespaces: nothing is routed out of them, and nothing collides
# with the cluster of cluster.sh (127.0.0.1:3311-3313, 8091-8093) or any
# other stack.  The checker reads the databases through their unix
# sockets, which no cut reaches.
#
# The faults (tests/cluster/partition.py): a node cut off from the others
# while the web hosts reach it, a clean 2-1 split, a flapping link, 1-1-1,
# a web host cut mid-request (before its COMMIT arrives, and after: only
# the answer lost), the split while a pool is SIGKILLed.
#
# Links are cut with nftables inside the hosts' namespaces: each host has
# a table "inet idemp" whose sets cutin/cutout hold the peers whose packets
# it drops (silently, as a dead link does: no RST, no ICMP).  Unlike
# taking a veth down, which cuts a host from everyone at once, a set
# element cuts one pair (node 3 from nodes 1 and 2 while every web host
# still reaches it), or one direction only (a COMMIT that arrives but
# whose answer is lost).
#
# Every run starts from nothing (the data of the previous run is removed)
# and ends with everything stopped by pid and the namespaces deleted, also
# after a failure or an interrupt.  Data in
# /var/lib/idemorders-partition-HASH (kept after a failed run), runtime in
# /run/idemorders-partition-HASH, logs and histories in var/partition/.

PT_NET=10.77.0
PT_HOSTS=(n1 n2 n3 w1 w2 w3 cl)

# Switch the cluster functions of cluster.sh to the namespaced cluster.
# Only `cluster partition` calls this: the functions it redefines are
# those of this process alone.
pt_vars() {
	cluster_vars
	PT_NS=idemp-${HASH:0:6}
	CL_DATA=/var/lib/idemorders-partition-$HASH
	CL_RUN=/run/idemorders-partition-$HASH
	CL_VAR=$REPO/var/partition
	CL_LOG=$CL_VAR/log
	CL_BIN=$CL_RUN/bin/idemorders
	CL_HTPASSWD=$CL_RUN/htpasswd
	CL_CLUSTER_NAME=idemorders-partition
	CL_ADDRS=$PT_NET.11:4567,$PT_NET.12:4567,$PT_NET.13:4567
	CL_DB_CLIENTS=$PT_NET.%
	CL_RECEIVER_IP=$PT_NET.100
	cl_ip() { echo "$PT_NET.1$1"; }
	cl_web_ip() { echo "$PT_NET.2$1"; }
	cl_sql_port() { echo 3306; }
	cl_gcomm_port() { echo 4567; }
	cl_sst_port() { echo 4444; }
	cl_web_port() { echo 80; }
	cl_db_netns() { printf '%s\n' ip netns exec "$PT_NS-n$1"; }
	cl_web_netns() { printf '%s\n' ip netns exec "$PT_NS-w$1"; }
	# The namespaces are created empty by this run: no other server
	# can hold an address of theirs.
	need_free_port() { :; }
}

pt_addr() {
	case $1 in
	n?)	echo "$PT_NET.1${1#n}" ;;
	w?)	echo "$PT_NET.2${1#w}" ;;
	cl)	echo "$PT_NET.100" ;;
	esac
}

# The namespaces of this checkout that exist now.
pt_namespaces() {
	ip netns list 2>/dev/null | awk -v p="$PT_NS-" 'index($1, p) == 1 { print $1 }'
}

# The bridge namespace, then one namespace per host with a veth link to
# the bridge and the nftables table of its cuts.
pt_net_up() {
	local h ns
	say "partition: namespaces $PT_NS-{br,${PT_HOSTS[*]// /,}} on $PT_NET.0/24"
	ip netns add "$PT_NS-br"
	ip -n "$PT_NS-br" link set lo up
	ip -n "$PT_NS-br" link add br0 type bridge
	ip -n "$PT_NS-br" link set br0 up
	for h in "${PT_HOSTS[@]}"; do
		ns=$PT_NS-$h
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip -n "$PT_NS-br" link add "$h" type veth peer name eth0 netns "$ns"
		ip -n "$PT_NS-br" link set "$h" master br0 up
		ip -n "$ns" addr add "$(pt_addr "$h")/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip netns exec "$ns" nft -f - <<'EOF'
table inet idemp {
	set cutin { type ipv4_addr; }
	set cutout { type ipv4_addr; }
	chain in {
		type filter hook input priority 0; policy accept;
		ip saddr @cutin drop
	}
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr @cutout drop
	}
}
EOF
	done
	# Every host reaches every other before anything starts.
	for h in n1 n2 n3 w1 w2 w3; do
		ip netns exec "$PT_NS-cl" ping -c 1 -W 2 "$(pt_addr "$h")" >/dev/null ||
		    die "partition: $PT_NS-cl does not reach $h ($(pt_addr "$h"))"
	done
}

# Stop every process of the namespaced cluster by its pid file, then any
# process left in one of this checkout's namespaces (all started by this
# run: the namespaces are its own), then delete the namespaces.
pt_teardown() {
	local n ns pids
	for n in "${CL_NODES[@]}"; do
		cl_lighttpd_stop "$n" 2>/dev/null || true
		cl_pool_stop "$n" 2>/dev/null || true
		cl_relay_stop "$n" 2>/dev/null || true
	done
	for n in 3 2 1; do
		cl_db_stop "$n" 2>/dev/null || true
	done
	for ns in $(pt_namespaces); do
		pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
		if [[ -n ${pids// /} ]]; then
			say "partition: killing what is left in $ns: $pids"
			# shellcheck disable=SC2086
			kill -KILL $pids 2>/dev/null || true
			for n in $pids; do wait_gone "$n" 10 || true; done
		fi
		ip netns del "$ns" 2>/dev/null || say "partition: could not delete namespace $ns"
	done
}

# The responders' settings for the partition runs: a request deadline the
# clients can wait out, and a connect timeout that lets a worker move on
# from a node it cannot reach well within it.
pt_local_conf() {
	mkdir -p "$CL_VAR"
	cat >"$CL_VAR/idemorders.local.conf" <<EOF
# Written by $PROG cluster partition.
# partition.py --deadline (10) is this deadline.
request_deadline = 10s
db_connect_timeout = 2s
EOF
}

# Three nodes (node 1 bootstraps an empty cluster, 2 and 3 join by SST),
# the schema, three pools and lighttpds; every web host's _health 200
# from the client's namespace.
pt_up() {
	local n i code
	PACKAGES+=("${CLUSTER_PACKAGES[@]}" nftables iproute2 iputils-ping curl)
	ensure_packages
	[[ -f $CL_PROVIDER ]] || die "partition: no Galera provider $CL_PROVIDER (package galera-4)"
	build_main || die "build failed"
	say "partition: removing the data of an earlier run ($CL_DATA, $CL_RUN)"
	rm -rf "$CL_DATA" "$CL_RUN" "$CL_LOG"
	pt_net_up
	cl_prepare_dirs
	install -m 0755 "$BIN" "$CL_BIN"
	ensure_pool_user
	cl_secrets
	pt_local_conf
	for n in "${CL_NODES[@]}"; do
		cl_write_responder_conf "$n"
	done
	cl_db_create
	cl_db_join 2
	cl_db_join 3
	cl_schema 1
	local HTPASSWD=$CL_HTPASSWD
	make_htpasswd
	for n in "${CL_NODES[@]}"; do
		cl_pool_start "$n"
		cl_lighttpd_start "$n"
		cl_relay_start "$n"
	done
	for n in "${CL_NODES[@]}"; do
		for ((i = 0; i < 150; i++)); do
			code=$(ip netns exec "$PT_NS-cl" curl -s -o /dev/null -m 5 \
			    -w '%{http_code}' "$(cl_web_url "$n")$MOUNT/_health" || true)
			[[ $code == 200 ]] && break
			sleep 0.2
		done
		[[ $code == 200 ]] || die "partition: web host $n's _health answers '$code'"
	done
	say "partition: 3 nodes Synced, 3 web hosts healthy"
}

pt_usage() {
	cat <<EOF
usage: $PROG cluster partition [--short | --long] [partition.py ARGS]

The cluster in network namespaces (3 Galera nodes, 3 web hosts, the
clients), the partition faults one at a time with retrying clients, the
history checker after each; then everything stopped and removed.
  --short   the version of '$PROG test' (a few minutes)
  --long    the one of the figures in docs/sysadmin.md
  ARGS      tests/cluster/partition.py --help (e.g. --faults minority,split)
EOF
}

# `cluster partition [--short|--long] [ARGS]`
cluster_partition() {
	local mode=default args=() rc
	while [[ $# -gt 0 ]]; do
		case $1 in
		--short) mode=short ;;
		--long) mode=long ;;
		-h|--help) pt_usage; return 0 ;;
		*) args+=("$1") ;;
		esac
		shift
	done
	need_root
	command -v ip >/dev/null || die "partition: no ip (package iproute2)"
	pt_vars
	mkdir -p "$CL_VAR"
	exec 9>"$CL_VAR/.lock"
	flock -n 9 || die "partition: another $PROG cluster partition of this checkout runs"
	# Whatever happens, nothing is left running and no namespace stays.
	trap 'pt_teardown' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	[[ -z $(pt_namespaces) ]] || { say "partition: removing the namespaces of an earlier run"; pt_teardown; }
	cl_webhooks_node
	pt_up
	set +e
	ip netns exec "$PT_NS-cl" python3 "$REPO/tests/cluster/partition.py" \
	    --mode "$mode" --ns "$PT_NS" --net "$PT_NET" \
	    --cnf "$(cl_cnf 1)" --cnf "$(cl_cnf 2)" --cnf "$(cl_cnf 3)" \
	    --error-log "$CL_DATA/n1/error.log" --error-log "$CL_DATA/n2/error.log" \
	    --error-log "$CL_DATA/n3/error.log" \
	    --history "$CL_VAR/history.jsonl" --run-dir "$CL_RUN" --bin "$CL_BIN" \
	    --log-dir "$CL_LOG" --receiver "$CL_RECEIVER_IP:$CL_RECEIVER_PORT" \
	    --webhook-secret "$CL_RUN/webhook.secret" \
	    --node-modules "$CL_NODE_MODULES" "${args[@]}" 9>&-
	rc=$?
	set -e
	if [[ $rc == 0 ]]; then
		pt_teardown
		rm -rf "$CL_DATA"
	else
		say "partition: data kept in $CL_DATA, logs in $CL_LOG, history in $CL_VAR/history.jsonl"
	fi
	return "$rc"
}
