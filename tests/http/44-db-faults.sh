#!/usr/bin/env bash
# The database connection breaks, through the fault proxy
# (tests/dbproxy/dbproxy) between a responder pool and MariaDB, with
# request_deadline = 3s; every case is judged by the rows it leaves (at
# most one order per key, stock conserved, a 201 only for a committed
# order, the ledger row SUCCEEDED exactly when there is an order) and by
# a retry with the same key, which creates exactly one order or replays:
#  - a cut while the fresh ledger read after a duplicate key streams
#    (conflict_read=sleep parks the worker, then the proxy cuts after
#    20 bytes of the answer): the same order replayed, or 503;
#  - (cuts at growing byte offsets inside the transaction, the stock-lock
#    result among them: tests/http/48-db-cut-sweep.sh;)
#  - the answer to COMMIT lost (committed, then cut): 201 from the ledger;
#    the same, then connections refused for the rest of the deadline:
#    503 REQUEST_STATUS_UNCONFIRMED (never "nothing was stored");
#    COMMIT itself lost (never reached the server): 201, 409 unconfirmed
#    or 503;
#  - the same for a cancel: the answer to its COMMIT lost: 200 from the
#    ledger; then the database out of reach: 503
#    REQUEST_STATUS_UNCONFIRMED ("the order may have been cancelled");
#    the retry replays 200 and the order is restocked exactly once;
#  - every connection cut while idle: the next POST creates (201);
#  - connections refused: 503 with Retry-After, health 503;
#  - a black hole longer than the deadline: POST, GET and _health each
#    answer 5xx within the deadline plus slack (< 6 s), and all is well
#    once it lifts;
#  - every chunk delayed 150 ms: 201 or 503 within the bound;
# and the pool's log (the ASan build's when it is built) has no
# sanitizer report.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"
. "$(dirname -- "$0")/../lib/dbfaults.sh"

DEADLINE_S=3
BOUND_MS=$((DEADLINE_S * 1000 + 3000))
two_line_orders T44

trap proxy_cleanup EXIT

START_TS=$(sql "SELECT UTC_TIMESTAMP(6)")
proxy_start || finish
pool_swap --proxy workers=4 request_deadline=${DEADLINE_S}s || finish
wait_healthy "through the proxy"

warm_statements T44

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	o=$T_TMP/$s

	# --- a cut while the ledger read after a duplicate key streams ------
	w="$s cut in the ledger read"
	new_sku sku T44-read 50
	key=$(unique_key "t44-$s-read")
	body=$(order_body "$sku" 2)
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: first request"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	parked_cut "$o-read" "$url" "$key" "$body" conflict_read=sleep1500 \
	    cut-after-bytes 20 server
	[[ $CUT == 1 ]] && ok "$w: the proxy cut the read" ||
	    fail "$w: cut" "the proxy cut nothing"
	if expect_status_in "$w" 201 503; then
		if [[ $STATUS == 201 ]]; then
			expect_body_json .orderId "$oid" "$w"
			expect_header idempotent-replayed true "$w"
		else
			expect_503_retry "$w"
		fi
	fi
	expect_rows_sane "$key" "$sku" 50 2 "$w"
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: retry"
	expect_body_json .orderId "$oid" "$w: retry"
	expect_one_order "$key" "$sku" 48 "$oid" "$w: after the retry"

	# --- the answer to COMMIT lost: committed, answered from the ledger --
	w="$s answer to COMMIT lost"
	new_sku sku T44-commit 50
	key=$(unique_key "t44-$s-commit")
	body=$(order_body "$sku" 2)
	parked_cut "$o-commit" "$url" "$key" "$body" before_commit=sleep1500 \
	    cut-after-bytes 0 server
	[[ $CUT == 1 ]] && ok "$w: the proxy cut" || fail "$w: cut" "the proxy cut nothing"
	expect_status 201 "$w: outcome unknown, read from the ledger"
	expect_no_header idempotent-replayed "$w"
	expect_rows_sane "$key" "$sku" 50 2 "$w"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: retry"
	expect_header idempotent-replayed true "$w: retry"
	expect_body_json .orderId "$oid" "$w: retry"
	expect_one_order "$key" "$sku" 48 "$oid" "$w: after the retry"

	# --- the answer to COMMIT lost, then the database out of reach -------
	# Every later answer of the request that does not come from a ledger
	# row says the outcome is unconfirmed, never that nothing was stored.
	w="$s answer to COMMIT lost, then no database"
	new_sku sku T44-dark 50
	key=$(unique_key "t44-$s-dark")
	body=$(order_body "$sku" 2)
	settle_reads
	c0=$(proxy_stat cuts)
	bg_post "$o-dark" "$url" "$key" "$body" before_commit=sleep1500
	pid=$!
	sleeping_worker >/dev/null ||
	    echo "note   $w: no worker seen sleeping; arming anyway"
	proxy cut-after-bytes 0 server >/dev/null
	proxy refuse >/dev/null
	wait "$pid"
	proxy pass >/dev/null
	bg_load "$o-dark"
	[[ $(proxy_stat cuts) -gt $c0 ]] && ok "$w: the proxy cut" ||
	    fail "$w: cut" "the proxy cut nothing"
	expect_problem 503 REQUEST_STATUS_UNCONFIRMED "$w"
	expect_503_retry "$w"
	expect_sql_value "$w: the order was committed" 1 "$(orders_for "$key")"
	expect_rows_sane "$key" "$sku" 50 2 "$w"
	oid=$(order_of "$key")
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: retry"
	expect_header idempotent-replayed true "$w: retry"
	expect_body_json .orderId "$oid" "$w: retry"
	expect_one_order "$key" "$sku" 48 "$oid" "$w: after the retry"

	# --- a cancel's COMMIT answer lost, then (second row) no database ----
	# Answered from the ledger (200, restocked once), or 503
	# REQUEST_STATUS_UNCONFIRMED saying the order may have been
	# cancelled; either way the same key converges to one restock.
	for how in cut dark; do
		w="$s cancel, answer to COMMIT lost ($how)"
		new_sku sku T44-cancel-$how 50
		post_order "$url" "$(unique_key "t44-$s-cancel-$how-order")" "$(order_body "$sku" 2)"
		expect_status 201 "$w: the order"
		oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
		key=$(unique_key "t44-$s-cancel-$how")
		settle_reads
		c0=$(proxy_stat cuts)
		bg_cancel "$o-cancel-$how" "$url" "$key" "$oid" before_commit=sleep1500
		pid=$!
		sleeping_worker >/dev/null ||
		    echo "note   $w: no worker seen sleeping; arming anyway"
		proxy cut-after-bytes 0 server >/dev/null
		[[ $how == dark ]] && proxy refuse >/dev/null
		wait "$pid"
		proxy pass >/dev/null
		bg_load "$o-cancel-$how"
		[[ $(proxy_stat cuts) -gt $c0 ]] && ok "$w: the proxy cut" ||
		    fail "$w: cut" "the proxy cut nothing"
		if [[ $how == cut ]]; then
			expect_status 200 "$w: outcome unknown, read from the ledger"
			expect_no_header idempotent-replayed "$w"
			expect_body_json .status CANCELLED "$w"
		else
			expect_problem 503 REQUEST_STATUS_UNCONFIRMED "$w"
			expect_503_retry "$w"
			expect_body_json '.detail | test("the order may have been cancelled")' true "$w: detail"
		fi
		expect_sql_value "$w: cancel ledger" "1	SUCCEEDED" "$(cancel_ledger "$key")"
		expect_sql_value "$w: order" CANCELLED "$(order_state "$oid")"
		expect_sql_value "$w: stock of $sku restocked once" 50 "$(stock_of "$sku")"
		expect_sql_value "$w: restocked of $sku" 2 "$(restocked_of "$sku")"
		post_cancel "$url" "$key" "$oid"
		expect_status 200 "$w: retry"
		expect_header idempotent-replayed true "$w: retry"
		expect_body_json .orderId "$oid" "$w: retry"
		expect_sql_value "$w: after the retry: stock" 50 "$(stock_of "$sku")"
		expect_sql_value "$w: after the retry: restocked" 2 "$(restocked_of "$sku")"
	done

	# --- COMMIT itself lost: never reached the server --------------------
	w="$s COMMIT lost on the way"
	new_sku sku T44-commit2 50
	key=$(unique_key "t44-$s-commit2")
	body=$(order_body "$sku" 2)
	parked_cut "$o-commit2" "$url" "$key" "$body" before_commit=sleep1500 \
	    cut-after-bytes 0 client
	[[ $CUT == 1 ]] && ok "$w: the proxy cut" || fail "$w: cut" "the proxy cut nothing"
	expect_status_in "$w" 201 409 503
	[[ $STATUS == 409 ]] && expect_body_json .code REQUEST_STATUS_UNCONFIRMED "$w"
	expect_rows_sane "$key" "$sku" 50 2 "$w"
	retry_creates_one "$key" "$sku" 50 2 "$body" "$url" "$w"

	# --- every connection cut while idle ---------------------------------
	w="$s every connection cut while idle"
	proxy cut >/dev/null
	new_sku sku T44-idle 50
	key=$(unique_key "t44-$s-idle")
	body=$(order_body "$sku" 2)
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: the next POST reconnects"
	expect_rows_sane "$key" "$sku" 50 2 "$w"
	req GET "$url$MOUNT/_health"
	expect_status 200 "$w: health"

	# --- connections refused ----------------------------------------------
	w="$s connections refused"
	proxy refuse >/dev/null
	proxy cut >/dev/null
	new_sku sku T44-refuse 50
	key=$(unique_key "t44-$s-refuse")
	body=$(order_body "$sku" 2)
	t0=$(now_ms)
	post_order "$url" "$key" "$body"
	expect_within "$w: POST" $(($(now_ms) - t0))
	expect_503_retry "$w: POST"
	expect_nothing_committed "$key" "$sku" 50 "$w"
	req GET "$url$MOUNT/_health"
	expect_status 503 "$w: health"
	proxy pass >/dev/null
	retry_creates_one "$key" "$sku" 50 2 "$body" "$url" "$w"

	# --- a black hole longer than the deadline ----------------------------
	w="$s black hole"
	new_sku sku T44-hole 50
	key=$(unique_key "t44-$s-hole")
	body=$(order_body "$sku" 2)
	post_order "$url" "$(unique_key "t44-$s-hole-before")" "$(order_body "$sku" 1)"
	expect_status 201 "$w: an order before"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	proxy hold >/dev/null
	bg_post "$o-hole-post" "$url" "$key" "$body"
	p1=$!
	bg_get "$o-hole-get" "$url$MOUNT/$oid"
	p2=$BG_PID
	bg_get "$o-hole-health" "$url$MOUNT/_health"
	p3=$BG_PID
	wait "$p1" "$p2" "$p3"
	proxy pass >/dev/null
	bg_load "$o-hole-post"
	REQ_DESC="$w: POST"
	expect_within "$w: POST" "$(cat "$o-hole-post.ms")"
	expect_503_retry "$w: POST"
	bg_load "$o-hole-get"
	REQ_DESC="$w: GET $oid"
	expect_within "$w: GET" "$(cat "$o-hole-get.ms")"
	[[ $STATUS == 5* ]] && ok "$w: GET answers $STATUS" ||
	    fail "$w: GET" "expected 5xx, got $STATUS"
	bg_load "$o-hole-health"
	REQ_DESC="$w: _health"
	expect_within "$w: _health" "$(cat "$o-hole-health.ms")"
	expect_status 503 "$w: _health"
	expect_rows_sane "$key" "$sku" 49 2 "$w"
	retry_creates_one "$key" "$sku" 49 2 "$body" "$url" "$w"
	req GET "$url$MOUNT/$oid" -u "$ALICE"
	expect_status 200 "$w: GET after it lifted"

	# --- every chunk delayed ----------------------------------------------
	w="$s 150 ms delay"
	proxy delay 150 >/dev/null
	new_sku sku T44-delay 50
	key=$(unique_key "t44-$s-delay")
	body=$(order_body "$sku" 2)
	t0=$(now_ms)
	post_order "$url" "$key" "$body"
	expect_within "$w: POST" $(($(now_ms) - t0))
	expect_status_in "$w" 201 503
	proxy pass >/dev/null
	expect_rows_sane "$key" "$sku" 50 2 "$w"
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: retry"
	expect_sql_value "$w: one order after the retry" 1 "$(orders_for "$key")"
done

wait_healthy "after the faults"
expect_sql_value "no PROCESSING row committed" 0 \
    "$(sql "SELECT COUNT(*) FROM idempotency_records WHERE status = 'PROCESSING'
    AND idem_key LIKE 't44-%' AND created_at >= '$START_TS'")"
expect_no_asan_reports "db faults"
finish
