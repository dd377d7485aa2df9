#!/usr/bin/env bash
# tests/cluster/cluster-check.sh -- the short cluster check (`tools/dev cluster
# check`, a few minutes): the cluster up from any state, the tools' own
# commands (status, sql on every node, kill and start by IST), a BF abort
# inside a multi-statement packet (the servers alone), causal reads while
# a node's applier lags (the servers alone, then a read and a cancel
# through another node right after a create), a create's final
# batch paused after each statement while another node restocks, a small
# chaos run (creates, and cancels of a share of them) with one database
# node killed and rejoined and one responder pool and its relay killed,
# while a relay
# on each web node delivers the events to a receiver on the client side
# (every event delivered, none lost, one effect per event after dedup by
# webhook-id, per order in order), the quorum-loss test with its repair,
# then the cluster down.  Prints "RESULT
# cluster-check <passed> <failed>".
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

# cl_sleeping_worker N: a worker of web node N's pool is asleep in a fault
# point (its wchan is nanosleep), within about 10 s.
cl_sleeping_worker() {
	local pidfile m p i
	pidfile=/run/idemorders-cluster-$(printf '%s' "$REPO" | sha1sum | cut -c1-8)/web$1/idemorders.pid
	for ((i = 0; i < 100; i++)); do
		m=$(cat "$pidfile" 2>/dev/null)
		for p in $(pgrep -P "${m:-0}" 2>/dev/null); do
			grep -q nanosleep "/proc/$p/wchan" 2>/dev/null && return 0
		done
		sleep 0.1
	done
	return 1
}

# cl_aborts N: node N's local transactions aborted by replicated writesets
# so far (wsrep_local_bf_aborts + wsrep_local_cert_failures).
cl_aborts() {
	"${CL[@]}" sql "$1" "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_bf_aborts', 'wsrep_local_cert_failures')" 2>/dev/null |
	    awk '{ n += $2 } END { print n + 0 }'
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

# The server alone: a BF abort landing while a statement of a
# multi-statement packet runs on node 3 (tests/cluster/bf-abort.py).
# Measured on MariaDB 10.11 (docs/sysadmin.md, Galera section): every statement
# answers OK, the COMMIT 1213, and yet the statements after the abort
# ran in a fresh transaction that the packet's COMMIT committed: the
# claim row is gone, the hot row holds node 1's change only, and the
# tail row exists on every node.
echo "--- tests/cluster/bf-abort.py"
cnfs=()
for n in 1 2 3; do
	cnfs+=(--cnf "$("${CL[@]}" status | awk '$1 == "data" { print $2 }')/n$n/my.cnf")
done
/usr/bin/python3 "$REPO/tests/cluster/bf-abort.py" "${cnfs[@]}" --expect \
    '{"answers": "OK OK OK OK OK ERROR1213", "bf_aborts": 1, "rows": ["{\"claim\": [], \"hot_v\": 100, \"tail\": [1]}"]}' \
    >"$T_TMP/bf-abort.out" 2>&1
rc=$?
grep -E '^(ok|FAIL|outcome|RESULT)' "$T_TMP/bf-abort.out" | sed 's/^/    /'
if [[ $rc == 0 ]] && grep -q '^RESULT bf-abort 3 0$' "$T_TMP/bf-abort.out"; then
	ok "BF abort inside a packet: the tail after it committed alone, as measured"
else
	fail "BF abort inside a packet" "$(tail -n 5 "$T_TMP/bf-abort.out")"
fi

# Causal reads while node 3's applier lags (tests/cluster/causal.py): the
# servers alone, then orders created through web node 1 and read and
# cancelled at once through web node 3, whose workers are kept busy with
# reads (each leaves a read-only transaction open for the next request).
echo "--- tests/cluster/causal.py"
/usr/bin/python3 "$REPO/tests/cluster/causal.py" "${cnfs[@]}" \
    --web1 "http://127.0.0.1:8091$MOUNT" --web3 "http://127.0.0.1:8093$MOUNT" \
    --user "$ALICE" >"$T_TMP/causal.out" 2>&1
rc=$?
sed 's/^/    /' "$T_TMP/causal.out" | tail -n 20
if [[ $rc == 0 ]] && grep -Eq '^RESULT causal [1-9][0-9]* 0$' "$T_TMP/causal.out"; then
	ok "causal reads while a node's applier lags"
else
	fail "causal reads while a node's applier lags" "$(grep -E '^(FAIL|RESULT|Traceback)' "$T_TMP/causal.out" | head -n 5)"
fi

# The service: a conflict landing inside a create's (then a cancel's)
# final batch, after each of its statements in turn (fault work_pause),
# raced by a restock on node 1: per key, order <=> ledger SUCCEEDED <=>
# stock decreased (a cancel: CANCELLED <=> SUCCEEDED <=> put back).
for op in create cancel; do
	run_summary "$op: a conflict inside the final batch, after each statement" \
	    workpause /usr/bin/python3 "$REPO/tests/cluster/work-pause.py" \
	    --op "$op" --max-k $([[ $op == create ]] && echo 7 || echo 5) \
	    --web "http://127.0.0.1:8093$MOUNT" "${cnfs[@]}" \
	    --db "$("${CL[@]}" sql 1 "SELECT DATABASE()")" --run "$(date +%s)-$$"
	if [[ $SUMMARY =~ \ bf_aborted=([0-9]+)\  ]] && [[ ${BASH_REMATCH[1]} -gt 0 ]]; then
		ok "$op work pause: ${BASH_REMATCH[1]} BF-aborted inside the batch"
	else
		fail "$op work pause: none was BF-aborted inside its batch" "got '$SUMMARY'"
	fi
done

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

# A final rejection judged on one node's stock must not stay a permanent
# FAILED_FINAL when another node changes that stock before it commits:
# node 2 judges 2 units of a SKU that has 1 (OUT_OF_STOCK) and sleeps
# before its COMMIT; meanwhile node 1 restocks it.  The rejection conflicts
# (the restock's writeset aborts it, 1213), is judged again, and creates.
# Before any node is restarted, so that node 2's workers are on node 2
# (a worker whose node went away serves from the next node for 30 s).
sku=CERT-$(date +%s)-$$
"${CL[@]}" sql 1 "INSERT INTO stock (sku, currency, unit_price, available) VALUES ('$sku', 'KRW', 100, 1)" >/dev/null
key=cert-$(date +%s)-$$
(
	curl -s -o "$T_TMP/cert.body" -w '%{http_code}' -m 60 -u "$ALICE" \
	    -H "Idempotency-Key: $key" -H 'Content-Type: application/json' \
	    -H 'X-Idemorders-Fault: before_commit=sleep3000' \
	    --data-binary "{\"currency\":\"KRW\",\"items\":[{\"sku\":\"$sku\",\"qty\":2}],\"amount\":200}" \
	    "http://127.0.0.1:8092$MOUNT" >"$T_TMP/cert.status"
) &
certpid=$!
# The restock only once node 2 has judged the rejection: one of its
# workers sleeps in the fault point before its COMMIT.  Then the restock's
# writeset must abort node 2's transaction (a brute-force abort or a
# certification failure there): the conflict path took place.
if cl_sleeping_worker 2; then
	ok "node 2 judged the rejection and sleeps before its COMMIT"
else
	fail "rejection during a restock elsewhere" "no worker of node 2 asleep in the fault point"
fi
aborts0=$(cl_aborts 2)
"${CL[@]}" sql 1 "UPDATE stock SET available = 10 WHERE sku = '$sku'" >/dev/null
wait "$certpid"
aborts1=$(cl_aborts 2)
[[ $aborts0 =~ ^[0-9]+$ && $aborts1 =~ ^[0-9]+$ && $aborts1 -gt $aborts0 ]] &&
    ok "the restock aborted node 2's judged transaction (aborts $aborts0 -> $aborts1)" ||
    fail "conflict on node 2" "wsrep_local_bf_aborts + wsrep_local_cert_failures: '$aborts0' -> '$aborts1'"
st=$(cat "$T_TMP/cert.status" 2>/dev/null)
[[ $st == 201 ]] && ok "rejection judged during a restock elsewhere: judged again, 201" ||
    fail "rejection during a restock elsewhere" "answered $st: $(head -c 300 "$T_TMP/cert.body")"
got=$("${CL[@]}" sql 2 "SET SESSION wsrep_sync_wait=1; SELECT CONCAT(status, ' ', (SELECT COUNT(*) FROM orders WHERE idempotency_key = '$key'), ' ', (SELECT available FROM stock WHERE sku = '$sku')) FROM idempotency_records WHERE idem_key = '$key'")
[[ $got == "SUCCEEDED 1 8" ]] && ok "no FAILED_FINAL kept: ledger SUCCEEDED, 1 order, stock 8" ||
    fail "certified rejection rows" "got '$got'"

# kill N / start N: back by IST (or with nothing to transfer, when the
# group had not yet evicted it), never by a full SST.
# The fault first: tools/dev says it killed node 2, which no longer answers.
out=$("${CL[@]}" kill 2 2>&1)
if [[ $out == *"kill -KILL node 2 "* ]] && ! "${CL[@]}" sql 2 "SELECT 1" >/dev/null 2>&1; then
	ok "node 2 killed: it no longer answers"
else
	fail "kill node 2" "the fault did not take place: $(tail -n 3 <<<"$out")"
fi
out=$("${CL[@]}" start 2 2>&1)
if grep -Eq 'node 2 Synced after .* \((IST|no state transfer)\)' <<<"$out"; then
	ok "node 2 rejoined without SST: $(grep -o '(IST)\|(no state transfer)' <<<"$out")"
else
	fail "node 2 rejoin without SST" "$(tail -n 3 <<<"$out")"
fi

# Jobs on two nodes at once: migrate applies nothing twice (every version
# already claimed), expire finishes on both.
for n in 1 2; do
	"${CL[@]}" job "$n" migrate >"$T_TMP/migrate-$n.out" 2>&1 &
done
wait
for n in 1 2; do
	grep -q "schema up to date" "$T_TMP/migrate-$n.out" && ok "migrate on node $n at once: up to date" ||
	    fail "migrate on node $n" "$(tail -n 3 "$T_TMP/migrate-$n.out")"
done
for n in 1 2; do
	"${CL[@]}" job "$n" expire >"$T_TMP/expire-$n.out" 2>&1 &
done
rcs=0
for j in $(jobs -p); do wait "$j" || rcs=1; done
for n in 1 2; do
	grep -q "^expired=" "$T_TMP/expire-$n.out" && ok "expire on node $n at once: $(grep '^expired=' "$T_TMP/expire-$n.out")" ||
	    fail "expire on node $n" "$(tail -n 3 "$T_TMP/expire-$n.out")"
done
[[ $rcs == 0 ]] && ok "both expire runs exit 0" || fail "expire runs" "one exited non-zero"

run_summary "chaos: a node killed and rejoined, a pool and its relay killed" chaos \
    "${CL[@]}" chaos --keys 200 --clients 4 --down-for 7
# A share of the orders was cancelled through the same faults.
if [[ $SUMMARY =~ \ cancels=([0-9]+)\ cancelled=([0-9]+) ]] &&
    [[ ${BASH_REMATCH[1]} -gt 0 && ${BASH_REMATCH[2]} -gt 0 ]]; then
	ok "chaos: ${BASH_REMATCH[1]} cancels, ${BASH_REMATCH[2]} cancelled"
else
	fail "chaos: cancels" "got '$SUMMARY'"
fi
# The relays of the three web nodes delivered every event of the run.
if [[ $SUMMARY =~ \ events=([0-9]+)\ delivered=([0-9]+)\ dup_deliveries=([0-9]+) ]] &&
    [[ ${BASH_REMATCH[1]} -gt 0 && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
	ok "chaos: the relays delivered all ${BASH_REMATCH[1]} events (${BASH_REMATCH[3]} deliveries again)"
else
	fail "chaos: events" "got '$SUMMARY'"
fi
# More than one relay delivered them: the relays share the work.
if [[ $SUMMARY =~ \ delivered_by=([0-9/]+) ]] && [[ ${BASH_REMATCH[1]} == */* ]]; then
	ok "chaos: the relays shared the deliveries (${BASH_REMATCH[1]})"
else
	fail "chaos: relays sharing the events" "got '$SUMMARY'"
fi
run_summary "quorum loss" quorum "${CL[@]}" quorum --keys 8 --outage 10
check "three Synced nodes after the repair" synced_all

echo "--- tools/dev cluster down"
"${CL[@]}" down >"$T_TMP/down.out" 2>&1 && ok "cluster down" ||
    fail "cluster down" "$(tail -n 5 "$T_TMP/down.out")"
finish
