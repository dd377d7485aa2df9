#!/usr/bin/env bash
# The failure table of the design notes ("중단 지점별 원장·주문 상태 비교"),
# one row at a time, through lighttpd and Apache, with the fault points of
# the test build (contract section 7).  Each row checks what was committed
# (ledger rows and status, orders for the key, stock of a SKU of its own)
# and what a retry with the same key answers.
#
#   crash before the ledger insert / after it / after the order insert /
#     after the stock decrease / before COMMIT  -> nothing committed; the
#     retry creates exactly one order
#   drop (or crash) after COMMIT               -> SUCCEEDED and one order; the
#     retry replays 201 with Idempotent-Replayed: true and the same orderId
#   same key twice at once (window widened)    -> one ledger row, one order,
#     every client the same answer
#   same key, other fingerprint                -> 409, the original kept
#   final rejection after partial writes       -> FAILED_FINAL only, no
#     order, stock unchanged; the retry replays the error
#   terminal row past expires_at, tombstone    -> 410 with the orderId and
#     a Link; no new order
# and the same for a cancel (POST /orders/{orderId}/cancel):
#   crash before the ledger insert / after it / after the restock /
#     before COMMIT                            -> nothing committed (order
#     CREATED, stock as it was); the retry cancels, restocking once
#   drop (or crash) after COMMIT               -> CANCELLED, restocked once;
#     the retry replays 200 byte for byte, restocking nothing
#   a deadlock before COMMIT                   -> retried inside the
#     request: 200 after two attempts, restocked once
#   a final rejection injected inside it       -> 409 ORDER_NOT_CANCELLABLE
#     recorded FAILED_FINAL, order CREATED, nothing restocked; replayed
#   the cancel's key expired                   -> 410 naming the order
#     ("a new key for a new cancel"); nothing restocked
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

other_server() { [[ $1 == lighttpd ]] && echo apache || echo lighttpd; }

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")

	# --- crash inside the transaction: nothing is committed ------------
	for pt in before_ledger_insert after_ledger_insert after_order_insert \
	    after_stock_decrease before_commit; do
		w="$s crash at $pt"
		new_sku sku T40-crash 50 || continue
		key=$(unique_key "t40-$s-crash-$pt")
		body=$(order_body "$sku" 2)
		post_order "$url" "$key" "$body" "$pt=crash"
		expect_gateway_error "$w"
		expect_nothing_committed "$key" "$sku" 50 "$w"

		post_order "$url" "$key" "$body"
		expect_status 201 "$w, retry"
		expect_no_header idempotent-replayed "$w, retry"
		oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
		expect_header location "$MOUNT/$oid" "$w, retry"
		expect_one_order "$key" "$sku" 48 "$oid" "$w, after the retry"

		post_order "$url" "$key" "$body"
		expect_status 201 "$w, second retry"
		expect_header idempotent-replayed true "$w, second retry"
		expect_body_json .orderId "$oid" "$w, second retry"
		expect_sql_value "$w, after the second retry: orders" 1 "$(orders_for "$key")"
		expect_sql_value "$w, after the second retry: stock" 48 "$(stock_of "$sku")"
	done

	# --- committed, then the answer is lost --------------------------------
	for act in drop crash; do
		w="$s $act after_commit"
		new_sku sku T40-lost 50 || continue
		key=$(unique_key "t40-$s-$act-after-commit")
		body=$(order_body "$sku" 2)
		post_order "$url" "$key" "$body" "after_commit=$act"
		expect_gateway_error "$w"
		oid=$(order_of "$key")
		expect_one_order "$key" "$sku" 48 "$oid" "$w"
		[[ $oid == o-* ]] || fail "$w" "no order for the key"

		post_order "$url" "$key" "$body"
		expect_status 201 "$w, retry"
		expect_header idempotent-replayed true "$w, retry"
		expect_body_json .orderId "$oid" "$w, retry"
		expect_header location "$MOUNT/$oid" "$w, retry"
		expect_body_json '.items[0].sku' "$sku" "$w, retry"
		expect_one_order "$key" "$sku" 48 "$oid" "$w, after the retry"
		req GET "$url$MOUNT/$oid" -u "$ALICE"
		expect_status 200 "$w: GET $oid"
	done

	# --- the same key at once: the unique key decides ----------------------
	# The first request sleeps 5 s inside its transaction, after its
	# ledger insert; once it is there (a worker sleeps), three more start
	# (two through this server, one through the other) and wait on the
	# key.
	pool_wait_full 40 || fail "$s pool" "fewer workers than configured"
	w="$s same key at once"
	new_sku sku T40-race 50
	key=$(unique_key "t40-$s-race")
	body=$(order_body "$sku" 3)
	o=$T_TMP/race-$s
	bg_post "$o-a" "$url" "$key" "$body" after_ledger_insert=sleep5000
	sleeping_worker >/dev/null ||
	    fail "$w: first" "no worker asleep after its ledger insert"
	bg_post "$o-b1" "$url" "$key" "$body"
	bg_post "$o-b2" "$(url_of "$(other_server "$s")")" "$key" "$body"
	bg_post "$o-b3" "$url" "$key" "$body"
	# The three wait on the first's uncommitted key row.
	lock_waits() {
		waits=$(sql "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS")
		[[ ${waits:-0} -ge 3 ]]
	}
	wait_until 10 lock_waits && ok "$w: the later requests wait on the key ($waits lock waits)" ||
	    fail "$w: lock wait" "INNODB_LOCK_WAITS has ${waits:-no} rows, expected 3"
	expect_sql_value "$w: nothing committed while the first sleeps" 0 "$(ledger_rows "$key")"
	wait
	bg_load "$o-a"
	expect_status 201 "$w: first"
	expect_no_header idempotent-replayed "$w: first"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	for b in b1 b2 b3; do
		bg_load "$o-$b"
		expect_status 201 "$w: $b"
		expect_header idempotent-replayed true "$w: $b"
		expect_body_json .orderId "$oid" "$w: $b"
		expect_same_body "$o-a.body" "$o-$b.body" "$w: $b"
		ms=$(cat "$o-$b.ms")
		# It started while the first slept and waited for its commit.
		if [[ $ms -ge 500 ]]; then
			ok "$w: $b waited for the first (${ms} ms)"
		else
			fail "$w: $b waited" "answered in ${ms} ms: the race window was missed"
		fi
	done
	expect_one_order "$key" "$sku" 47 "$oid" "$w"

	# --- same key, another body: 409, the original kept -------------------
	w="$s same key, other body"
	new_sku sku T40-reuse 50
	key=$(unique_key "t40-$s-reuse")
	body=$(order_body "$sku" 2)
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: first"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	fp=$(ledger_field "$key" request_fingerprint)
	for other in "$(order_body "$sku" 3)" \
	    "{\"currency\":\"KRW\",\"items\":[{\"sku\":\"$sku\",\"qty\":2}],\"amount\":2000,\"note\":\"x\"}" \
	    "{\"currency\":\"KRW\",\"items\":[{\"sku\":\"$sku\",\"qty\":2}],\"amount\":2000,\"shipping\":\"express\"}"; do
		post_order "$url" "$key" "$other"
		expect_problem 409 IDEMPOTENCY_KEY_REUSED "$w ($other)"
		expect_body_json '.orderId // "none"' none "$w: the stored answer is not shown"
		expect_no_header idempotent-replayed "$w"
	done
	expect_sql_value "$w: ledger fingerprint kept" "$fp" "$(ledger_field "$key" request_fingerprint)"
	expect_one_order "$key" "$sku" 48 "$oid" "$w"
	# The same body, spelt differently, is the same request.
	post_order "$url" "$key" "{ \"amount\": 2000, \"items\": [ {\"qty\":2, \"sku\":\"$sku\"} ], \"currency\":\"KRW\", \"shipping\":\"standard\" }"
	expect_status 201 "$w: the original body, reordered"
	expect_header idempotent-replayed true "$w: the original body, reordered"
	expect_body_json .orderId "$oid" "$w: the original body, reordered"

	# --- a final rejection after partial writes: FAILED_FINAL only --------
	for pt in after_order_insert after_stock_decrease before_commit; do
		w="$s final at $pt"
		new_sku sku T40-final 50 || continue
		key=$(unique_key "t40-$s-final-$pt")
		body=$(order_body "$sku" 2)
		post_order "$url" "$key" "$body" "$pt=final"
		expect_problem 409 OUT_OF_STOCK "$w"
		expect_no_header idempotent-replayed "$w"
		cp "$T_TMP/body" "$T_TMP/final-$s-$pt"
		expect_sql_value "$w: ledger rows" 1 "$(ledger_rows "$key")"
		expect_sql_value "$w: ledger status" FAILED_FINAL "$(ledger_status "$key")"
		expect_sql_value "$w: ledger response_status" 409 "$(ledger_field "$key" response_status)"
		expect_sql_value "$w: ledger resource_id" NULL "$(ledger_field "$key" resource_id)"
		expect_sql_value "$w: orders for the key" 0 "$(orders_for "$key")"
		expect_sql_value "$w: stock unchanged" 50 "$(stock_of "$sku")"
		expect_sql_value "$w: no order line for the SKU" 0 \
		    "$(sql "SELECT COUNT(*) FROM order_items WHERE sku = '$sku'")"

		post_order "$url" "$key" "$body"
		expect_problem 409 OUT_OF_STOCK "$w, retry"
		expect_header idempotent-replayed true "$w, retry"
		expect_same_body "$T_TMP/final-$s-$pt" "$T_TMP/body" "$w, retry"
		expect_sql_value "$w, after the retry: orders" 0 "$(orders_for "$key")"
		expect_sql_value "$w, after the retry: stock" 50 "$(stock_of "$sku")"
		expect_sql_value "$w, after the retry: ledger" FAILED_FINAL "$(ledger_status "$key")"
	done

	# --- a late retry after expiry: 410, never a new order ----------------
	for how in lazy tombstone; do
		w="$s expired key ($how)"
		new_sku sku T40-exp 50
		key=$(unique_key "t40-$s-exp-$how")
		body=$(order_body "$sku" 2)
		post_order "$url" "$key" "$body"
		expect_status 201 "$w: first"
		oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
		if [[ $how == lazy ]]; then
			# Terminal, past expires_at by the database's clock; the
			# retention job has not run.
			sql "UPDATE idempotency_records SET expires_at =
			    UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE principal_id
			    = 'alice' AND operation = 'create-order' AND idem_key =
			    '$key'"
		else
			# What `idemorders expire` leaves: a tombstone.
			sql "UPDATE idempotency_records SET status = 'EXPIRED',
			    response_body = NULL, response_headers = NULL,
			    expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND,
			    updated_at = UTC_TIMESTAMP(6) WHERE principal_id =
			    'alice' AND operation = 'create-order' AND idem_key =
			    '$key'"
		fi
		post_order "$url" "$key" "$body"
		expect_problem 410 IDEMPOTENCY_KEY_EXPIRED "$w: same body"
		expect_body_json .orderId "$oid" "$w: same body"
		expect_body_json '.detail | test("new key for a new order")' true "$w: detail"
		link=$(hdr link)
		if [[ $link == *"<$MOUNT/$oid>"* ]]; then
			ok "$w: Link $link"
		else
			fail "$w: Link" "expected <$MOUNT/$oid>, got '$link'"
		fi
		expect_no_header idempotent-replayed "$w: same body"
		expect_sql_value "$w, same body: orders" 1 "$(orders_for "$key")"
		expect_sql_value "$w, same body: the key's order" "$oid" "$(order_of "$key")"
		expect_sql_value "$w, same body: stock" 48 "$(stock_of "$sku")"
		# Another body on the expired key: expiry is final whatever the
		# body, so the same 410 naming the original order.
		post_order "$url" "$key" "$(order_body "$sku" 5)"
		expect_problem 410 IDEMPOTENCY_KEY_EXPIRED "$w: other body"
		expect_body_json .orderId "$oid" "$w: other body"
		expect_sql_value "$w, other body: orders" 1 "$(orders_for "$key")"
		expect_sql_value "$w, other body: stock" 48 "$(stock_of "$sku")"
		expect_sql_value "$w, other body: ledger rows" 1 "$(ledger_rows "$key")"
	done

	# A FAILED_FINAL row past expires_at: 410 without an order to name.
	w="$s expired rejection"
	new_sku sku T40-expf 50
	key=$(unique_key "t40-$s-expf")
	body=$(order_body "$sku" 2)
	post_order "$url" "$key" "$body" after_stock_decrease=final
	expect_status 409 "$w: first"
	sql "UPDATE idempotency_records SET expires_at = UTC_TIMESTAMP(6) -
	    INTERVAL 1 SECOND WHERE principal_id = 'alice' AND operation =
	    'create-order' AND idem_key = '$key'"
	post_order "$url" "$key" "$body"
	expect_problem 410 IDEMPOTENCY_KEY_EXPIRED "$w"
	expect_body_json '.orderId // "none"' none "$w"
	expect_no_header link "$w"
	expect_sql_value "$w: orders" 0 "$(orders_for "$key")"
	expect_sql_value "$w: stock" 50 "$(stock_of "$sku")"
done

# --- cancels ------------------------------------------------------------------

# cancel_order URL KEY ORDER_ID [FAULT]
cancel_order() {
	local args=(-u "$ALICE" -H "Idempotency-Key: $2"
	    -H 'Content-Type: application/json' --data-binary '{"reason":"t40"}')
	[[ -n ${4:-} ]] && args+=(-H "X-Idemorders-Fault: $4")
	req POST "$1$MOUNT/$3/cancel" "${args[@]}"
}
cancel_rows() {
	sql "SELECT COUNT(*), IFNULL(MIN(status), '-') FROM idempotency_records
	    WHERE principal_id = 'alice' AND operation = 'cancel-order' AND
	    idem_key = '$1'"
}
# ordered URL SKU: a fresh order of 2 units of SKU; its id.
ordered() {
	post_order "$1" "$(unique_key t40-cancel-order)" "$(order_body "$2" 2)"
	printf '%s' "$BODY" | jq -r .orderId 2>/dev/null
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")

	# --- a crash inside the cancel: nothing committed ------------------
	for pt in before_ledger_insert after_ledger_insert after_stock_decrease \
	    before_commit; do
		w="$s cancel, crash at $pt"
		new_sku sku T40-cancel 50 || continue
		oid=$(ordered "$url" "$sku")
		key=$(unique_key "t40-$s-cancel-crash-$pt")
		cancel_order "$url" "$key" "$oid" "$pt=crash"
		expect_gateway_error "$w"
		expect_sql_value "$w: cancel ledger rows" "0	-" "$(cancel_rows "$key")"
		expect_sql_value "$w: order" CREATED "$(order_state "$oid")"
		expect_sql_value "$w: stock" 48 "$(stock_of "$sku")"

		cancel_order "$url" "$key" "$oid"
		expect_status 200 "$w, retry"
		expect_no_header idempotent-replayed "$w, retry"
		expect_body_json .status CANCELLED "$w, retry"
		first=$BODY
		expect_sql_value "$w, after the retry: cancel ledger" "1	SUCCEEDED" "$(cancel_rows "$key")"
		expect_sql_value "$w, after the retry: stock" 50 "$(stock_of "$sku")"
		cancel_order "$url" "$key" "$oid"
		expect_header idempotent-replayed true "$w, second retry"
		[[ $BODY == "$first" ]] && ok "$w, second retry: the same bytes" ||
		    fail "$w, second retry: body" "'$BODY' != '$first'"
		expect_sql_value "$w, after the second retry: stock" 50 "$(stock_of "$sku")"
	done

	# --- committed, then the answer is lost --------------------------------
	for act in drop crash; do
		w="$s cancel, $act after_commit"
		new_sku sku T40-cancel-lost 50 || continue
		oid=$(ordered "$url" "$sku")
		key=$(unique_key "t40-$s-cancel-$act")
		cancel_order "$url" "$key" "$oid" "after_commit=$act"
		expect_gateway_error "$w"
		expect_sql_value "$w: cancel ledger" "1	SUCCEEDED" "$(cancel_rows "$key")"
		expect_sql_value "$w: order" CANCELLED "$(order_state "$oid")"
		expect_sql_value "$w: stock" 50 "$(stock_of "$sku")"
		cancel_order "$url" "$key" "$oid"
		expect_status 200 "$w, retry"
		expect_header idempotent-replayed true "$w, retry"
		expect_body_json .orderId "$oid" "$w, retry"
		expect_sql_value "$w, after the retry: stock" 50 "$(stock_of "$sku")"
		req GET "$url$MOUNT/$oid" -u "$ALICE"
		expect_body_json .status CANCELLED "$w: GET $oid"
	done

	# --- a final rejection injected inside the cancel: the cancel's own --
	# code (ORDER_NOT_CANCELLABLE), recorded FAILED_FINAL, nothing
	# restocked, the order still CREATED; the retry replays the error.
	for pt in after_judge after_stock_decrease before_commit; do
		w="$s cancel, final at $pt"
		new_sku sku T40-cancel-final 50 || continue
		oid=$(ordered "$url" "$sku")
		key=$(unique_key "t40-$s-cancel-final-$pt")
		cancel_order "$url" "$key" "$oid" "$pt=final"
		expect_problem 409 ORDER_NOT_CANCELLABLE "$w"
		cp "$T_TMP/body" "$T_TMP/cancel-final-$s-$pt"
		expect_sql_value "$w: cancel ledger" "1	FAILED_FINAL" "$(cancel_rows "$key")"
		expect_sql_value "$w: order" CREATED "$(order_state "$oid")"
		expect_sql_value "$w: stock" 48 "$(stock_of "$sku")"
		cancel_order "$url" "$key" "$oid"
		expect_problem 409 ORDER_NOT_CANCELLABLE "$w, retry"
		expect_header idempotent-replayed true "$w, retry"
		expect_same_body "$T_TMP/cancel-final-$s-$pt" "$T_TMP/body" "$w, retry"
		expect_sql_value "$w, after the retry: stock" 48 "$(stock_of "$sku")"
	done

	# --- a deadlock before COMMIT, retried inside the request ----------
	w="$s cancel, a deadlock before COMMIT"
	new_sku sku T40-cancel-dl 50
	oid=$(ordered "$url" "$sku")
	key=$(unique_key "t40-$s-cancel-deadlock")
	cancel_order "$url" "$key" "$oid" before_commit=transient1
	expect_status 200 "$w"
	expect_sql_value "$w: cancel ledger" "1	SUCCEEDED" "$(cancel_rows "$key")"
	expect_sql_value "$w: stock" 50 "$(stock_of "$sku")"

	# --- the cancel's key expired ------------------------------------------
	w="$s cancel, its key expired"
	sql "UPDATE idempotency_records SET expires_at = UTC_TIMESTAMP(6) -
	    INTERVAL 1 SECOND WHERE principal_id = 'alice' AND operation =
	    'cancel-order' AND idem_key = '$key'"
	cancel_order "$url" "$key" "$oid"
	expect_problem 410 IDEMPOTENCY_KEY_EXPIRED "$w"
	expect_body_json '.detail | test("new key for a new cancel")' true "$w: detail"
	expect_body_json '.detail | test("order")' false "$w: detail names no new order"
	expect_body_json .orderId "$oid" "$w"
	expect_header link "<$MOUNT/$oid>; rel=\"related\"" "$w"
	expect_sql_value "$w: stock" 50 "$(stock_of "$sku")"
done

pool_wait_full 40 || fail "pool after the crashes" "fewer workers than configured after 40 s"
finish
