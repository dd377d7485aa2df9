#!/usr/bin/env bash
# tests/cluster/cluster-check.sh -- the short cluster check (`tools/dev cluster
# check`, a few minutes): the cluster up from any state, the tools' own
# commands (status, sql on every node, kill and start by IST), a small
# chaos run with one database node killed and rejoined and one responder
# pool killed, the quorum-loss test with its repair, then the cluster
# down.  Prints "RESULT cluster-check <passed> <failed>".
. "$(dirname -- "$0")/../lib/http.sh"

CL=("$DEV" cluster)
# Whatever happens, nothing of the cluster is left running.
trap '"${CL[@]}" down >/dev/null 2>&1' EXIT

# run_summary WHAT PATTERN CMD...: CMD's summary line (stdout) must match
# cluster-PATTERN: and report violations=0; CMD must exit 0.
run_summary() {
	local what=$1 pat=$2 out=$T_TMP/summary.out rc line
	shift 2
	echo "--- $*"
	"$@" >"$out" 2>"$T_TMP/summary.err"
	rc=$?
	grep -v '^  ' "$T_TMP/summary.err" | sed 's/^/    /' | tail -n 40
	line=$(grep "^cluster-$pat: " "$out" | tail -n 1)
	echo "    $line"
	if [[ $line =~ \ violations=([0-9]+)$ ]]; then
		[[ ${BASH_REMATCH[1]} == 0 ]] && ok "$what: no violation" ||
		    fail "$what: violations" "$line"
	else
		fail "$what: summary line" "got '$line'"
	fi
	[[ $rc == 0 ]] && ok "$what: exit status 0" || fail "$what: exit status" "$rc"
	SUMMARY=$line
}

# synced_all: every node Synced in a 3-node Primary component.
synced_all() {
	local n st
	for n in 1 2 3; do
		st=$("${CL[@]}" sql "$n" "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_cluster_status')" 2>/dev/null | sort | awk '{ printf "%s ", $2 }')
		[[ $st == "3 Primary Synced " ]] || { echo "node $n: $st"; return 1; }
	done
}

echo "--- tools/dev cluster up"
if "${CL[@]}" up >"$T_TMP/up.out" 2>&1; then
	ok "cluster up"
else
	tail -n 30 "$T_TMP/up.out"
	fail "cluster up" "exit status $?"
	finish
fi
check "three Synced nodes in one Primary component" synced_all
for n in 1 2 3; do
	code=$(curl -s -o /dev/null -m 10 -w '%{http_code}' "http://127.0.0.1:809$n$MOUNT/_health")
	[[ $code == 200 ]] && ok "web node $n health 200" || fail "web node $n health" "$code"
done
status=$("${CL[@]}" status 2>&1)
grep -q "/var/lib/idemorders-cluster-" <<<"$status" && ok "status names the data dir" ||
    fail "status: data dir" "$status"

# One write on node 1, read on every node (causal reads).
key=check-$(date +%s)-$$
req POST "http://127.0.0.1:8091$MOUNT" -u "$ALICE" -H "Idempotency-Key: $key" \
    -H 'Content-Type: application/json' \
    --data-binary '{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}'
expect_status 201 "create through web node 1"
for n in 1 2 3; do
	got=$("${CL[@]}" sql "$n" "SET SESSION wsrep_sync_wait=1; SELECT COUNT(*) FROM orders WHERE idempotency_key = '$key'")
	[[ $got == 1 ]] && ok "node $n has the order" || fail "node $n order" "got '$got'"
done

# kill N / start N: back by IST (or with nothing to transfer, when the
# group had not yet evicted it), never by a full SST.
"${CL[@]}" kill 2 >/dev/null 2>&1
out=$("${CL[@]}" start 2 2>&1)
if grep -Eq 'node 2 Synced after .* \((IST|no state transfer)\)' <<<"$out"; then
	ok "node 2 rejoined without SST: $(grep -o '(IST)\|(no state transfer)' <<<"$out")"
else
	fail "node 2 rejoin without SST" "$(tail -n 3 <<<"$out")"
fi

run_summary "chaos: a node killed and rejoined, a pool killed" chaos \
    "${CL[@]}" chaos --keys 200 --clients 4 --down-for 7
run_summary "quorum loss" quorum "${CL[@]}" quorum --keys 8 --outage 10
check "three Synced nodes after the repair" synced_all

echo "--- tools/dev cluster down"
"${CL[@]}" down >"$T_TMP/down.out" 2>&1 && ok "cluster down" ||
    fail "cluster down" "$(tail -n 5 "$T_TMP/down.out")"
finish
