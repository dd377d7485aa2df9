#!/usr/bin/env bash
# A cancel locks stock only to restock it, and never restocks a part of
# an order (contract section 4a):
#  - a cancel judged on the order row alone: another key against an
#    already cancelled order, held before its COMMIT (fault
#    before_commit=sleepN), leaves the SKU's stock row free: another
#    session locks it at once; the cancel still answers 409
#    ORDER_ALREADY_CANCELLED, recorded;
#  - an order whose item has lost its stock row: the cancel is refused
#    with 500 STOCK_ROW_MISSING, nothing committed (no ledger row, the
#    order CREATED, the other item's stock as it was), and
#    `idemorders audit` reports the item (item_without_stock); with the
#    row back, the same key cancels the whole order.
# Through lighttpd and Apache proxy_fcgi, with fresh keys and SKUs.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

# lock_now SKU: lock the SKU's row from another session, giving up after
# one second; prints what the server answered.
lock_now() {
	sql "SET SESSION innodb_lock_wait_timeout = 1;
	    START TRANSACTION;
	    SELECT available FROM stock WHERE sku = '$1' FOR UPDATE;
	    ROLLBACK" 2>&1
}
cancel_rows() {
	sql "SELECT COUNT(*), IFNULL(MIN(status), '-') FROM idempotency_records
	    WHERE principal_id = 'alice' AND operation = 'cancel-order'
	    AND idem_key = '$1'"
}
since=$(date +%s)

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")

	# ---- a rejected cancel holds no stock lock ------------------------
	w="$s another key against a cancelled order, held before COMMIT"
	new_sku sku T78-lock 10 || continue
	post_order "$url" "$(unique_key t78-create)" "$(order_body "$sku" 2)"
	oid=$(printf '%s' "$BODY" | jq -r .orderId)
	post_cancel "$url" "$(unique_key "t78-$s-first")" "$oid"
	expect_status 200 "$s cancel $oid"
	key=$(unique_key "t78-$s-again")
	bg_cancel "$T_TMP/held" "$url" "$key" "$oid" before_commit=sleep3000
	if sleeping_worker >/dev/null; then
		ok "$w: a worker sleeps there"
	else
		fail "$w" "no worker sleeps at before_commit"
	fi
	got=$(lock_now "$sku")
	[[ $got == 10 ]] && ok "$w: another session locks the SKU's row at once" ||
	    fail "$w: another session's lock" "got '$(tr '\n' ' ' <<<"$got")'"
	wait
	bg_load "$T_TMP/held"
	expect_problem 409 ORDER_ALREADY_CANCELLED "$w"
	expect_sql_value "$w: recorded" "1	FAILED_FINAL" "$(cancel_rows "$key")"
	expect_sql_value "$w: stock" 10 "$(stock_of "$sku")"

	# ---- an item without its stock row: refused, nothing committed ----
	w="$s cancel of an order whose item lost its stock row"
	new_sku c T78-C 10 100 || continue
	new_sku d T78-D 10 100 || continue
	post_order "$url" "$(unique_key t78-create)" '{"currency":"KRW","items":[{"sku":"'"$c"'","qty":2},{"sku":"'"$d"'","qty":3}],"amount":500}'
	expect_status 201 "$w: the order"
	oid=$(printf '%s' "$BODY" | jq -r .orderId)
	sql "DELETE FROM stock WHERE sku = '$d'"
	key=$(unique_key "t78-$s-missing")
	post_cancel "$url" "$key" "$oid"
	expect_problem 500 STOCK_ROW_MISSING "$w"
	expect_body_json ".detail | contains(\"$d\")" true "$w: detail names the SKU"
	expect_header should-retry true "$w"
	expect_sql_value "$w: no ledger row" "0	-" "$(cancel_rows "$key")"
	expect_sql_value "$w: order" CREATED "$(order_state "$oid")"
	expect_sql_value "$w: stock of the other item" 8 "$(stock_of "$c")"
	out=$("$IDEMORDERS_BIN" audit -c "$IDEMORDERS_CONF" --since "@$since" --json 2>&1)
	jq -e --arg id "$oid" '.clean == false and
	    .checks.item_without_stock.count >= 1 and
	    (.checks.item_without_stock.sample | index($id) != null)' \
	    <<<"$out" >/dev/null 2>&1 &&
	    ok "$w: audit reports item_without_stock $oid" ||
	    fail "$w: audit" "$(tr '\n' ' ' <<<"$out" | head -c 600)"
	# The row back (as an operator restores it): the same key cancels.
	sql "INSERT INTO stock (sku, currency, unit_price, available)
	    VALUES ('$d', 'KRW', 100, 7)"
	post_cancel "$url" "$key" "$oid"
	expect_status 200 "$w: with the row back, the same key"
	expect_sql_value "$w: with the row back: stock of $c" 10 "$(stock_of "$c")"
	expect_sql_value "$w: with the row back: stock of $d" 10 "$(stock_of "$d")"
	expect_sql_value "$w: with the row back: ledger" "1	SUCCEEDED" "$(cancel_rows "$key")"
done

finish
