#!/usr/bin/env bash
# Every wait is bounded, wherever the database stalls, with a responder
# pool of its own reaching MariaDB through the fault proxy:
#  - a server that stalls after the handshake (the proxy forwards the
#    login, then nothing): `check-config` gives up within
#    db_connect_timeout (1 s), workers that start meanwhile give up their
#    first connect and serve (_health 503 within the bound, not hung),
#    and once it passes again everything answers 200;
#  - a name in db_host whose resolver never answers: check-config gives
#    up by db_connect_timeout, not by the resolver's 30 s;
#  - two lock waits in one round trip (request_deadline = 6s,
#    lock_wait_timeout = 10s): the ledger INSERT waits on an uncommitted
#    owner of the key that rolls back after 4.5 s, then the stock row is
#    held FOR UPDATE by another session: the POST answers 503 within
#    the deadline plus the client's margin (< 7.5 s), never the sum of
#    the waits; nothing is committed, and the same key creates exactly
#    one order once the stock row is free.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"
. "$(dirname -- "$0")/../lib/dbfaults.sh"

HOLDERS=()
cleanup() {
	local p
	for p in "${HOLDERS[@]}"; do
		kill "$p" 2>/dev/null
	done
	proxy_cleanup
}
trap cleanup EXIT

# as_root_session SQL: a mariadb session of its own in the background.
as_root_session() {
	mariadb --defaults-file="$REPO/var/$IDEMORDERS_STACK/my.cnf" \
	    -D idemorders -N -B -e "$1" >>"$T_TMP/holders.log" 2>&1 &
	HOLDERS+=($!)
}

proxy_start || finish

# --- a server that stalls after the handshake --------------------------------
DEADLINE_S=3
BOUND_MS=$((DEADLINE_S * 1000 + 3000))
proxy stall-after-login >/dev/null
pool_swap --proxy workers=2 request_deadline=${DEADLINE_S}s \
    db_connect_timeout=1s || finish
t0=$(now_ms)
out=$(timeout 20 "$IDEMORDERS_BIN" check-config -c "$T_TMP/pool.conf" 2>&1)
rc=$?
ms=$(($(now_ms) - t0))
[[ $rc == 1 ]] && ok "stalled after the handshake: check-config exits 1" ||
    fail "stalled: check-config" "exit $rc after $ms ms: $out"
[[ $ms -lt 3000 ]] && ok "stalled: check-config gave up in $ms ms (db_connect_timeout 1 s)" ||
    fail "stalled: check-config bounded" "took $ms ms"
for s in $HTTP_SERVERS; do
	t0=$(now_ms)
	req GET "$(url_of "$s")$MOUNT/_health" --max-time 15
	expect_within "stalled: $s _health" $(($(now_ms) - t0))
	expect_status 503 "stalled: $s _health"
done
proxy pass >/dev/null
healthy() {
	req GET "$LIGHTTPD_URL$MOUNT/_health" --max-time 5
	[[ $STATUS == 200 ]]
}
wait_until 10 healthy && ok "the stall lifted: _health 200" ||
    fail "after the stall" "_health $STATUS"
new_sku sku T56-after 10
key=$(unique_key t56-after)
post_order "$LIGHTTPD_URL" "$key" "$(order_body "$sku" 1)"
expect_status 201 "the stall lifted: a POST creates"

# --- a resolver that never answers ------------------------------------------
# In mount and network namespaces of their own, /etc/resolv.conf names a
# nameserver on the namespace's loopback that takes every query and
# answers none (30 s a try): check-config with a host name in db_host
# gives up by db_connect_timeout (1 s), not by the resolver's 30 s.  The
# holder binds the nameserver's port first and says so ("resolver bound"),
# then becomes check-config, keeping the bound socket: without that line
# the fault was not in place and the check fails.
w="a resolver that never answers"
if unshare -mn true 2>/dev/null; then
	printf 'nameserver 127.0.0.53\noptions timeout:30 attempts:1\n' \
	    >"$T_TMP/resolv.conf"
	sed -e '/^db_socket/d' -e '/^db_host/d' -e '/^db_port/d' \
	    "$T_TMP/pool.conf" >"$T_TMP/named.conf"
	printf 'db_host = db.idemorders.invalid\ndb_connect_timeout = 1s\n' \
	    >>"$T_TMP/named.conf"
	t0=$(now_ms)
	out=$(timeout 25 unshare -mn sh -c 'ip link set lo up &&
	    mount --bind "$1" /etc/resolv.conf &&
	    exec python3 -c "
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((\"127.0.0.53\", 53))
s.set_inheritable(True)
print(\"resolver bound\", file=sys.stderr, flush=True)
os.execv(sys.argv[1], sys.argv[1:])" "$2" check-config -c "$3"' - \
	    "$T_TMP/resolv.conf" "$IDEMORDERS_BIN" "$T_TMP/named.conf" 2>&1)
	rc=$?
	ms=$(($(now_ms) - t0))
	if [[ $out == *"resolver bound"* ]]; then
		ok "$w: the silent nameserver is bound"
		[[ $rc == 1 && $out == *"db.idemorders.invalid"* ]] &&
		    ok "$w: check-config exits 1 naming the host (in $ms ms, db_connect_timeout 1 s, the resolver's try 30 s)" ||
		    fail "$w: check-config" "exit $rc after $ms ms (124: still waiting at 25 s): $out"
	else
		fail "$w: the fault" "the silent nameserver was not bound (exit $rc): $out"
	fi
else
	fail "$w" "unshare -mn is not permitted here"
fi

# --- two lock waits in one round trip ----------------------------------------
DEADLINE_S=6
BOUND_MS=$((DEADLINE_S * 1000 + 1500))
pool_swap --proxy workers=2 request_deadline=${DEADLINE_S}s \
    lock_wait_timeout=10s || finish
w="two lock waits"
new_sku sku T56-locks 50
key=$(unique_key t56-locks)
body=$(order_body "$sku" 2)
as_root_session "BEGIN;
    INSERT INTO idempotency_records (principal_id, operation, idem_key,
    request_fingerprint, status, created_at, updated_at, expires_at)
    VALUES ('alice', 'create-order', '$key', REPEAT('0', 64), 'PROCESSING',
    UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 1 DAY);
    DO SLEEP(4.5); ROLLBACK"
as_root_session "BEGIN; SELECT sku FROM stock WHERE sku = '$sku' FOR UPDATE;
    DO SLEEP(14); ROLLBACK"
# Both holders in their sleeps: the key row and the stock row are held.
holders_asleep() {
	[[ $(sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST
	    WHERE INFO LIKE 'DO SLEEP(4.5)%' OR INFO LIKE 'DO SLEEP(14)%'") == 2 ]]
}
wait_until 10 holders_asleep && ok "$w: both holders hold their rows" ||
    fail "$w: holders" "not both asleep holding their rows"
t0=$(now_ms)
post_order "$LIGHTTPD_URL" "$key" "$body"
ms=$(($(now_ms) - t0))
expect_within "$w: POST" "$ms"
expect_503_retry "$w"
expect_nothing_committed "$key" "$sku" 50 "$w"
for p in "${HOLDERS[@]}"; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
HOLDERS=()
retry_ok() {
	post_order "$LIGHTTPD_URL" "$key" "$body"
	[[ $STATUS == 201 ]]
}
wait_until 20 retry_ok
expect_status 201 "$w: the same key once the row is free"
expect_one_order "$key" "$sku" 48 "$(order_of "$key")" "$w: after the retry"

expect_no_asan_reports "db stalls"
finish
