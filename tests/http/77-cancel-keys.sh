#!/usr/bin/env bash
# A cancel key names one cancel for ever, and a malformed order id is a
# recorded answer (contract section 4a):
#  - a key that cancelled order A, its ledger row purged (deleted as the
#    retention job deletes a tombstone), sent again to cancel order B:
#    410 IDEMPOTENCY_KEY_EXPIRED naming A (Link to it), B stays CREATED,
#    nothing restocked, no ledger row left; the same against an order
#    that is already cancelled: the same 410, nothing recorded;
#  - an order id that does not parse: the body is checked first (400,
#    nothing recorded); with a good body, 404 ORDER_NOT_FOUND recorded
#    FAILED_FINAL and replayed; another malformed id with that key is
#    another request (409 IDEMPOTENCY_KEY_REUSED).
# Through lighttpd and Apache proxy_fcgi, with fresh keys and SKUs.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	if [[ $3 == "$2" ]]; then ok "$1 = $2"; else fail "$1" "expected '$2', got '$3'"; fi
}
stock_of() { sql "SELECT available FROM stock WHERE sku = '$1'"; }
order_status() { sql "SELECT status FROM orders WHERE id = ${1#o-}"; }
ledger_of() {	# KEY: rows, status, response status of alice's cancel key
	sql "SELECT COUNT(*), IFNULL(MIN(status), '-'),
	    IFNULL(MIN(response_status), '-') FROM idempotency_records
	    WHERE principal_id = 'alice' AND operation = 'cancel-order'
	    AND idem_key = '$1'"
}
# make_order URL SKU: 2 units at 100; prints the id.
make_order() {
	post "$1" "$ALICE" "$(unique_key t77-create)" '{"currency":"KRW","items":[{"sku":"'"$2"'","qty":2}],"amount":200}'
	[[ $STATUS == 201 ]] || fail "create an order to cancel" "status $STATUS"
	printf '%s' "$BODY" | jq -r .orderId
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	C=$(unique_key "T77-$s")
	set_stock "$C" KRW 100 20

	# ---- a purged cancel key cancels nothing else ---------------------
	a=$(make_order "$url" "$C")
	b=$(make_order "$url" "$C")
	k=$(unique_key "t77-$s-purged")
	cancel "$url" "$ALICE" "$k" "$a" '{"reason":"first"}'
	expect_status 200 "$s cancel $a with K"
	expect_eq "$s after cancelling $a: stock" 18 "$(stock_of "$C")"
	sql "DELETE FROM idempotency_records WHERE principal_id = 'alice'
	    AND operation = 'cancel-order' AND idem_key = '$k'"
	expect_eq "$s K's ledger row purged" "0	-	-" "$(ledger_of "$k")"
	w="$s K (purged) sent to cancel $b"
	cancel "$url" "$ALICE" "$k" "$b" '{"reason":"first"}'
	expect_problem 410 IDEMPOTENCY_KEY_EXPIRED "$w"
	expect_body_json .orderId "$a" "$w"
	expect_header link "<$MOUNT/$a>; rel=\"related\"" "$w"
	expect_header should-retry false "$w"
	expect_eq "$w: $b" CREATED "$(order_status "$b")"
	expect_eq "$w: $a" CANCELLED "$(order_status "$a")"
	expect_eq "$w: stock" 18 "$(stock_of "$C")"
	expect_eq "$w: ledger" "0	-	-" "$(ledger_of "$k")"

	# Against an order that is already cancelled: the same 410, no record.
	cancel "$url" "$ALICE" "$(unique_key "t77-$s-other")" "$b" ''
	expect_status 200 "$s cancel $b with another key"
	w="$s K (purged) sent to the cancelled $b"
	cancel "$url" "$ALICE" "$k" "$b" ''
	expect_problem 410 IDEMPOTENCY_KEY_EXPIRED "$w"
	expect_body_json .orderId "$a" "$w"
	expect_eq "$w: ledger" "0	-	-" "$(ledger_of "$k")"
	expect_eq "$w: stock" 20 "$(stock_of "$C")"

	# ---- an order id that does not parse: recorded --------------------
	k=$(unique_key "t77-$s-malformed")
	w="$s cancel of x-1"
	cancel "$url" "$ALICE" "$k" x-1 'reason=x'
	expect_problem 400 MALFORMED_JSON "$w, a body that is not JSON"
	expect_eq "$w, a body that is not JSON: ledger" "0	-	-" "$(ledger_of "$k")"
	cancel "$url" "$ALICE" "$k" x-1 '{}'
	expect_problem 404 ORDER_NOT_FOUND "$w"
	first=$BODY
	expect_header should-retry false "$w"
	expect_eq "$w: ledger" "1	FAILED_FINAL	404" "$(ledger_of "$k")"
	cancel "$url" "$ALICE" "$k" x-1 ''
	expect_problem 404 ORDER_NOT_FOUND "$w, again (no body = {})"
	expect_header idempotent-replayed true "$w, again"
	[[ $BODY == "$first" ]] && ok "$w, again: the same bytes" ||
	    fail "$w, again: body" "'$BODY' != '$first'"
	cancel "$url" "$ALICE" "$k" o-0 '{}'
	expect_problem 409 IDEMPOTENCY_KEY_REUSED "$s the same key for o-0"
	expect_eq "$s the same key for o-0: ledger" "1	FAILED_FINAL	404" "$(ledger_of "$k")"
done

finish
