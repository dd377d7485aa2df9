#!/usr/bin/env bash
# A hung database and wait limits, with a responder pool of its own
# (request_deadline = 3s) on the stack's socket:
#  - mariadbd stopped (SIGSTOP; SIGCONT always, from a trap): POST, GET
#    and _health each answer the application's 5xx (POST and _health 503,
#    POST with Retry-After) within the deadline plus slack (< 6 s);
#    once it runs again, the same key creates exactly one order;
#  - wait limits belong to one request: with one worker, a POST that
#    ends at its deadline (its stock row held FOR UPDATE elsewhere), or
#    whose last attempt began near it (a slow attempt, then a simulated
#    deadlock), then a GET that waits 2 s on a table lock: 200.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"
. "$(dirname -- "$0")/../lib/dbfaults.sh"

DEADLINE_S=3
BOUND_MS=$((DEADLINE_S * 1000 + 3000))
DB_PID=$(cat "$RUNDIR/db/mariadb.pid" 2>/dev/null)
HOLDERS=()

db_cont() { [[ -n $DB_PID ]] && kill -CONT "$DB_PID" 2>/dev/null; }
cleanup() {
	db_cont
	local p
	for p in "${HOLDERS[@]}"; do
		kill "$p" 2>/dev/null
	done
	pool_restore
	rm -rf "$T_TMP"
}
trap cleanup EXIT
trap 'db_cont; exit 130' INT
trap 'db_cont; exit 143' TERM

# timed_req OUT METHOD URL [curl args]: a request in the background;
# OUT.status, OUT.body, OUT.headers, OUT.ms.
timed_req() {
	local out=$1 method=$2 url=$3
	shift 3
	(
		t0=$(date +%s%N)
		curl -s -o "$out.body" -D "$out.headers" -w '%{http_code}' \
		    --max-time 60 -X "$method" "$@" "$url" >"$out.status" 2>/dev/null ||
		    echo 000 >"$out.status"
		echo $((($(date +%s%N) - t0) / 1000000)) >"$out.ms"
	) &
	BG_PID=$!
}

expect_within() {
	if [[ $2 -lt $BOUND_MS ]]; then
		ok "$1: answered in $2 ms (bound $BOUND_MS ms)"
	else
		fail "$1: bounded" "took $2 ms, bound $BOUND_MS ms (deadline $DEADLINE_S s)"
	fi
}

expect_app_status() {	# WHAT STATUS|5xx
	if [[ $2 == 5xx && $STATUS == 5?? ]] || [[ $STATUS == "$2" ]]; then
		ok "$1: status $STATUS"
	else
		fail "$1: status" "expected $2, got $STATUS"
	fi
	expect_media_type application/problem+json "$1"
}

if [[ -z $DB_PID ]] || ! kill -0 "$DB_PID" 2>/dev/null; then
	fail "mariadbd pid" "none in $RUNDIR/db/mariadb.pid"
	finish
fi

# --- mariadbd stopped --------------------------------------------------------
pool_swap workers=4 request_deadline=${DEADLINE_S}s || finish
wait_healthy "with the deadline pool"
for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	w="$s mariadbd stopped"
	new_sku sku T47-stop 50
	post_order "$url" "$(unique_key "t47-$s-before")" "$(order_body "$sku" 1)"
	expect_status 201 "$w: an order before"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	key=$(unique_key "t47-$s-stop")
	body=$(order_body "$sku" 2)
	kill -STOP "$DB_PID"
	timed_req "$T_TMP/post" POST "$url$MOUNT" -u "$ALICE" \
	    -H "Idempotency-Key: $key" -H 'Content-Type: application/json' \
	    --data-binary "$body"
	p1=$BG_PID
	timed_req "$T_TMP/get" GET "$url$MOUNT/$oid" -u "$ALICE"
	p2=$BG_PID
	timed_req "$T_TMP/health" GET "$url$MOUNT/_health"
	p3=$BG_PID
	wait "$p1" "$p2" "$p3"
	db_cont
	bg_load "$T_TMP/post"
	REQ_DESC="$w: POST"
	expect_within "$w: POST" "$(cat "$T_TMP/post.ms")"
	expect_app_status "$w: POST" 503
	[[ -n $(hdr retry-after) ]] && ok "$w: POST Retry-After" ||
	    fail "$w: POST Retry-After" "missing"
	bg_load "$T_TMP/get"
	REQ_DESC="$w: GET $oid"
	expect_within "$w: GET" "$(cat "$T_TMP/get.ms")"
	expect_app_status "$w: GET" 5xx
	bg_load "$T_TMP/health"
	REQ_DESC="$w: _health"
	expect_within "$w: _health" "$(cat "$T_TMP/health.ms")"
	expect_app_status "$w: _health" 503
	# Running again: nothing half-written, the key creates one order.
	sleep 1
	n=$(orders_for "$key")
	expect_sql_value "$w: stock conserved" $((49 - 2 * n)) "$(stock_of "$sku")"
	[[ $(ledger_status "$key") != PROCESSING ]] &&
	    ok "$w: no PROCESSING row" || fail "$w: PROCESSING row" "committed"
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: the same key afterwards"
	oid2=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	expect_one_order "$key" "$sku" 47 "$oid2" "$w: afterwards"
	req GET "$url$MOUNT/$oid" -u "$ALICE"
	expect_status 200 "$w: GET afterwards"
done

# --- wait limits belong to one request -----------------------------------------
pool_swap workers=1 request_deadline=${DEADLINE_S}s lock_wait_timeout=10s || finish
url=$LIGHTTPD_URL
DBN=$(sed -n 's/^[[:space:]]*db_name[[:space:]]*=[[:space:]]*//p' "$IDEMORDERS_CONF" | tail -n 1)
new_sku sku T47-limits 50
post_order "$url" "$(unique_key "t47-limits-before")" "$(order_body "$sku" 1)"
expect_status 201 "wait limits: an order to read"
oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)

# get_behind_table_lock WHAT: with the orders table locked for 2 s by
# another session, GET the order on the (only) worker: 200.
get_behind_table_lock() {
	db_root_sql "USE \`$DBN\`; LOCK TABLES orders WRITE; SELECT SLEEP(2);
	    UNLOCK TABLES" >/dev/null 2>&1 &
	HOLDERS+=($!)
	sleep 0.3
	t0=$(now_ms)
	req GET "$url$MOUNT/$oid" -u "$ALICE"
	expect_status 200 "$1: the GET on the same worker ($(($(now_ms) - t0)) ms)"
	wait "${HOLDERS[@]}" 2>/dev/null
	HOLDERS=()
}

# A POST that ends at its deadline: its stock row held elsewhere.
w="GET after a POST that waited on a row lock until its deadline"
db_root_sql "USE \`$DBN\`; BEGIN; SELECT available FROM stock WHERE sku = '$sku'
    FOR UPDATE; SELECT SLEEP($((DEADLINE_S + 1))); ROLLBACK" >/dev/null 2>&1 &
HOLDERS+=($!)
sleep 0.5
key=$(unique_key "t47-limits")
t0=$(now_ms)
post_order "$url" "$key" "$(order_body "$sku" 2)"
el=$(($(now_ms) - t0))
[[ $STATUS == 503 || $STATUS == 409 ]] &&
    ok "$w: the POST gave up at its deadline ($STATUS $(printf '%s' "$BODY" | jq -r .code 2>/dev/null), $el ms)" ||
    fail "$w: POST" "expected 503 or 409, got $STATUS after $el ms"
wait "${HOLDERS[@]}" 2>/dev/null
HOLDERS=()
get_behind_table_lock "$w"
expect_nothing_committed "$key" "$sku" 49 "$w: the POST"

# A POST whose last attempt starts late: a slow first attempt ends in a
# (simulated) deadlock, the second commits near the deadline.
w="GET after a POST whose last attempt began near its deadline"
key=$(unique_key "t47-limits-late")
t0=$(now_ms)
post_order "$url" "$key" "$(order_body "$sku" 2)" \
    after_ledger_insert=sleep1200,before_commit=transient1
el=$(($(now_ms) - t0))
expect_status 201 "$w: the POST ($el ms)"
get_behind_table_lock "$w"
req GET "$url$MOUNT/_health"
expect_status 200 "wait limits: health"
finish
