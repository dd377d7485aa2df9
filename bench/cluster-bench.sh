# bench/cluster-bench.sh -- `tools/dev cluster bench`: the cluster
# beside the single-node stack, in one run.
# shellcheck shell=bash
#
#   tools/dev cluster bench [--quick]
#
# One binary for both (the bench build of bench/bench.sh: no fault
# injection, no sanitizers), log_level = warning, 4 workers a pool, the
# BENCH SKUs of bench/orders.lua with stock no run exhausts:
#
#  - single: the 'bench' stack (bench/bench.sh, its ports plus
#    IDEMORDERS_PORT_OFFSET), lighttpd, one MariaDB without Galera;
#  - cluster1/2/3: the cluster of `tools/dev cluster`, wrk through web
#    node 1, nodes 1-2, nodes 1-3 at once (the same total concurrency,
#    split over the nodes: one wrk per node).
#
# Each runs create (a new key every request, 64 SKUs), replay (one key
# again and again) and hot (every order on BENCH-HOT).  For each run: the
# answers per second, p50/p99 (the worst node's), the answers other than
# the expected one, the CPU per answer of every mariadbd, pool and
# lighttpd involved, and on the cluster the 1213s Galera counted
# (wsrep_local_cert_failures + wsrep_local_bf_aborts of all nodes) per
# 1000 201s.  Then the write stall of a node kill (tests/cluster/chaos.py
# --stall).  Results: bench/results/cluster.md (--quick:
# var/cluster/bench/quick.md).  Nothing asserts a speed.

CB_USER=alice
CB_PASSWORD=alice-secret

# Ticks of CPU of the pids given and their children (reaped ones too).
cb_ticks() {
	bench_ticks "$@"
}

# The pids whose CPU a run on TARGET counts.
cb_pids() {
	local n
	case $1 in
	single)
		pid_alive "$DB_PIDFILE" mariadbd || true
		pid_alive "$SERVE_PIDFILE" idemorders || true
		pid_alive "$LIGHTTPD_PIDFILE" lighttpd || true ;;
	*)
		for n in "${CL_NODES[@]}"; do
			cl_db_pid "$n" || true
			cl_pool_pid "$n" || true
			cl_lighttpd_pid "$n" || true
		done ;;
	esac
}

# The 1213s all cluster nodes counted so far.
cb_conflicts() {
	local n t=0 v
	for n in "${CL_NODES[@]}"; do
		v=$(cl_mysql "$n" -N -B -e "SHOW GLOBAL STATUS WHERE Variable_name IN
		    ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')" 2>/dev/null |
		    awk '{ t += $2 } END { print t + 0 }')
		t=$((t + ${v:-0}))
	done
	echo "$t"
}

# The mount URLs of TARGET (single, cluster1, cluster2, cluster3).
cb_urls() {
	local n
	case $1 in
	single)	echo "$LIGHTTPD_URL$MOUNT" ;;
	cluster*)
		for ((n = 1; n <= ${1#cluster}; n++)); do
			echo "$(cl_web_url "$n")$MOUNT"
		done ;;
	esac
}

# cb_run TARGET TEST MODE EXPECT [ARG]: one run, wrk per URL of TARGET at
# once, CB_C connections in all; one row in CB_TSV.
cb_run() {
	local target=$1 test=$2 mode=$3 expect=$4 arg=${5:-}
	local urls i k c t out pids before after c0 c1 lines hz wpids=()
	mapfile -t urls < <(cb_urls "$target")
	k=${#urls[@]}
	mapfile -t pids < <(cb_pids "$target")
	before=$(cb_ticks "${pids[@]}")
	c0=0
	[[ $target == cluster* ]] && c0=$(cb_conflicts)
	CB_N=$((CB_N + 1))
	for ((i = 0; i < k; i++)); do
		c=$(( (CB_C + k - 1 - i) / k ))
		t=$((c < 2 ? 1 : 2))
		out=$CB_LOG/$(printf '%02d' "$CB_N")-$target-$test-$((i + 1)).txt
		timeout -k 5 $((CB_SECONDS + 60)) wrk -t"$t" -c"$c" \
		    -d"${CB_SECONDS}s" --timeout 10s \
		    -H "Authorization: Basic $CB_AUTH" \
		    -s "$REPO/bench/orders.lua" "${urls[i]}" -- \
		    "$mode" "$expect" "cb$CB_RUN-$CB_N-$i" $arg >"$out" 2>&1 9>&- &
		wpids+=($!)
	done
	# Only the wrk processes: the daemons are background jobs too.
	wait "${wpids[@]}" || true
	after=$(cb_ticks "${pids[@]}")
	c1=0
	[[ $target == cluster* ]] && c1=$(cb_conflicts)
	hz=$(getconf CLK_TCK)
	lines=$(cat "$CB_LOG/$(printf '%02d' "$CB_N")-$target-$test-"*.txt | grep '^BENCH ' || true)
	[[ -n $lines ]] || say "cluster bench: wrk printed no BENCH line ($target $test)"
	awk -v target="$target" -v test="$test" -v k="$k" -v c="$CB_C" \
	    -v ticks=$((after - before)) -v hz="$hz" -v conf=$((c1 - c0)) \
	    -v cl="${target#cluster}" '
	{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		req += v["requests"]; rps += v["rps"]; unexp += v["unexpected"]
		sock += v["socket_errors"]
		if (v["p50_ms"] > p50) p50 = v["p50_ms"]
		if (v["p99_ms"] > p99) p99 = v["p99_ms"]
		n = split(v["statuses"], st, ",")
		for (j = 1; j <= n; j++) {
			split(st[j], sc, ":"); s[sc[1]] += sc[2]
			if (sc[1] == "201") created += sc[2]
		}
	}
	END {
		list = ""
		for (x in s) list = list (list == "" ? "" : ",") x ":" s[x]
		cpu = req > 0 ? ticks / hz * 1e6 / req : 0
		per = (target != "single" && created > 0) ? sprintf("%.0f", conf * 1000 / created) : "-"
		printf "%s\t%s\t%d\t%d\t%.0f\t%.1f\t%.1f\t%d\t%d\t%d\t%s\t%.0f\t%s\t%s\n",
		    target, test, k, c, rps, p50, p99, req, unexp, sock, list,
		    cpu, (target == "single" ? "-" : conf), per
	}' <<<"$lines" >>"$CB_TSV"
	tail -n 1 "$CB_TSV" | awk -F'\t' '{ printf "  %-9s %-7s nodes %s c%s %7s req/s  p50 %6s ms  p99 %7s ms  unexpected %s  socket errors %s  CPU %s us/req  1213s %s (%s per 1000 201s)  (%s)\n",
	    $1, $2, $3, $4, $5, $6, $7, $9, $10, $12, $13, $14, $11 }'
}

# POST the replay body of bench/orders.lua with KEY to URL.
cb_seed() {
	local out
	out=$(curl -s -m 30 -u "$CB_USER:$CB_PASSWORD" -H "Idempotency-Key: $2" \
	    -H 'Content-Type: application/json' --data "$BENCH_REPLAY_BODY" \
	    -w '\n%{http_code}' "$1")
	[[ ${out##*$'\n'} == 201 ]] || die "cluster bench: seeding $2 on $1 answered: $out"
}

# The BENCH SKUs on the cluster (BENCH_STOCK each).
cb_cluster_stock() {
	cl_mysql 1 "$DB_NAME" -e "$(bench_stock_sql)" ||
	    die "cluster bench: inserting the BENCH SKUs failed"
}

cb_end() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	say "cluster bench: stopping the single-node bench stack"
	# stack_down also stops the Apache with enablereuse=on it started.
	stack_down >/dev/null 2>&1
	exit "$rc"
}

cb_main() {
	local target key start load stall out args
	start=$(date +%s)
	load=$(cut -d' ' -f1 /proc/loadavg)
	CB_LOG=$CL_VAR/bench
	rm -rf "$CB_LOG"
	mkdir -p "$CB_LOG"
	CB_TSV=$CB_LOG/runs.tsv
	: >"$CB_TSV"
	CB_N=0
	CB_RUN=$(date +%s)-$$
	CB_AUTH=$(printf '%s:%s' "$CB_USER" "$CB_PASSWORD" | base64 -w0)
	# bench_stack_up logs here.
	BENCH_LOG=$CB_LOG BENCH_WORKERS=4
	ensure_packages
	bench_build
	trap cb_end EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	say "cluster bench: the single-node stack 'bench' ($LIGHTTPD_URL)"
	bench_stack_up
	say "cluster bench: the cluster, with the same binary"
	IDEMORDERS_CLUSTER_LOG_LEVEL=warning cluster_up >"$CB_LOG/cluster-up.out" 2>&1 ||
	    { show_log "$CB_LOG/cluster-up.out"; die "cluster bench: cluster up failed"; }
	cb_cluster_stock
	say "cluster bench: load average $load; c$CB_C in all; ${CB_SECONDS}s a run"
	for target in single cluster1 cluster2 cluster3; do
		cb_run "$target" create create 201
		key=cb-$CB_RUN-replay-$target
		cb_seed "$(cb_urls "$target" | head -n 1)" "$key"
		cb_run "$target" replay replay 201 "$key"
		cb_run "$target" hot hot 201
	done
	say "cluster bench: write stall of a node kill"
	mapfile -t args < <(cl_chaos_args)
	stall=$(python3 "$REPO/tests/cluster/chaos.py" "${args[@]}" \
	    --stall --think 0 --clients 4 --down-for "$CB_STALL_DOWN" \
	    --stall-before 4 --stall-after 3 2>"$CB_LOG/stall.err") || true
	echo "  $stall"
	out=$CB_OUT
	mkdir -p "$(dirname "$out")"
	cb_report "$load" "$stall" $(($(date +%s) - start)) >"$out.tmp"
	mv -f "$out.tmp" "$out"
	say "cluster bench: results in ${out#"$REPO"/}"
	IDEMORDERS_CLUSTER_LOG_LEVEL=info cluster_up >"$CB_LOG/cluster-up-after.out" 2>&1 || true
}

cb_report() {
	local load=$1 stall=$2 secs=$3
	cat <<EOF
# Cluster bench: one MariaDB beside a 3-node Galera cluster

\`tools/dev cluster bench$( [[ $CB_QUICK == 1 ]] && echo ' --quick')\`, $(date -u '+%Y-%m-%d %H:%M UTC'), ${secs} s in all; load
average $load at the start (the machine is shared: compare rows of this run
only, never with another machine).

- machine: \`nproc\` = $(nproc), MariaDB $(mariadbd --version 2>&1 | sed 's/.*Ver \([^ ]*\).*/\1/'), galera-4 $(dpkg-query -W -f='${Version}' galera-4 2>/dev/null), $(wrk -v 2>&1 | head -n 1 | sed 's/ Copyright.*//; s/ \[.*//')
- binary: the bench build (no fault injection), \`log_level = warning\`,
  4 workers a pool; lighttpd with Basic auth and \`auth.cache\`
- single: the \`bench\` stack, one MariaDB (no Galera) over its unix socket
- clusterK: the cluster of \`tools/dev cluster\` (every node on this
  machine, 3 × mariadbd, each pool on its own node over TCP 127.0.0.1),
  wrk through web nodes 1..K at once; the same $CB_C connections in all,
  split over the nodes
- load: \`bench/orders.lua\`, ${CB_SECONDS} s a run: create (new key every
  request, 64 SKUs), replay (one key), hot (every order on one SKU)
- CPU: every mariadbd, pool and lighttpd of the target (all three
  mariadbd for every cluster row: each applies every writeset), per answer
- 1213s: \`wsrep_local_cert_failures + wsrep_local_bf_aborts\` summed over
  the nodes during the run, each a transaction the responder retried (or
  answered 5xx when its retries were spent)

| target | test | web nodes | conns | answers/s | p50 ms | p99 ms | answers | unexpected | socket errors | CPU µs/answer | 1213s | 1213s per 1000 201s | statuses |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
$(awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12, $13, $14, $11 }' "$CB_TSV")

## Cost of certification

$(awk -F'\t' '$2 == "create" { rps[$1] = $5; cpu[$1] = $12 }
END {
	if (cpu["single"] > 0) {
		printf "- create: CPU per order %s µs on one MariaDB, ", cpu["single"]
		printf "%s / %s / %s µs through 1 / 2 / 3 web nodes of the cluster", cpu["cluster1"], cpu["cluster2"], cpu["cluster3"]
		printf " (%.1f× with three nodes: every node applies every writeset, plus certification and the group traffic).\n", cpu["cluster3"] / cpu["single"]
		printf "- create throughput: %s/s single, %s / %s / %s per second through 1 / 2 / 3 web nodes.\n", rps["single"], rps["cluster1"], rps["cluster2"], rps["cluster3"]
	}
}' "$CB_TSV")
$(awk -F'\t' '$2 == "hot" && $1 != "single" { printf "- hot SKU through %s web node(s): %s 1213s per 1000 201s (%s)\n", $3, $14, $11 }' "$CB_TSV")

On two shared cores the cluster cannot be faster than one server: all
three nodes run here, and each applies every order.  On separate machines
a multi-primary cluster still adds the work of every writeset to every
node: it buys availability, not write throughput.

## Write stall when a node dies

\`tests/cluster/chaos.py --stall\`: 4 clients send creates to the web nodes
of the surviving database nodes while node 3 is SIGKILLed, kept down
${CB_STALL_DOWN} s and brought back by IST:

    $stall

The stall is Galera's \`evs.suspect_timeout\` (PT5S): until the group
evicts the dead node, no writeset commits anywhere.
EOF
}

cluster_bench() {
	CB_QUICK=0
	while [[ $# -gt 0 ]]; do
		case $1 in
		--quick)	CB_QUICK=1 ;;
		*)		die "usage: $PROG cluster bench [--quick]" ;;
		esac
		shift
	done
	export IDEMORDERS_STACK=bench
	stack_vars
	PACKAGES+=(wrk jq "${CLUSTER_PACKAGES[@]}")
	if [[ $CB_QUICK == 1 ]]; then
		CB_SECONDS=${BENCH_SECONDS:-3} CB_STALL_DOWN=6
		CB_OUT=$CL_VAR/bench-quick.md
	else
		CB_SECONDS=${BENCH_SECONDS:-10} CB_STALL_DOWN=8
		CB_OUT=$REPO/bench/results/cluster.md
	fi
	CB_C=${BENCH_C:-16}
	with_lock cb_main
}
