#!/usr/bin/env bash
# The stock rows are locked only inside the create's last round trip,
# never while the answer of the first one travels back and the responder
# judges the rules (fault after_judge=sleepN holds a create right there):
#  - another session locks the SKU's row at once (no lock wait) while the
#    create sleeps there, and the create still makes its order;
#  - what that session changes meanwhile is judged again under the lock:
#    stock taken away (409 OUT_OF_STOCK, recorded, replayed), the price
#    changed (422 AMOUNT_MISMATCH), the currency changed (422
#    CURRENCY_MISMATCH), the row deleted (422 UNKNOWN_SKU); stock taken
#    but enough left still makes the order from what is left.
# Nothing of a rejected create stays but its FAILED_FINAL row; the stock
# is what the other session left.  Through lighttpd and Apache.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

# held URL KEY BODY: a create held 3 s after judging, in the background
# (answer in $T_TMP/held.*); true once a worker sleeps there.
held() {
	bg_post "$T_TMP/held" "$1" "$2" "$3" after_judge=sleep3000
	sleeping_worker >/dev/null
}

# lock_now SKU: lock the SKU's row from another session, giving up after
# one second; prints what the server answered.
lock_now() {
	sql "SET SESSION innodb_lock_wait_timeout = 1;
	    START TRANSACTION;
	    SELECT available FROM stock WHERE sku = '$1' FOR UPDATE;
	    ROLLBACK" 2>&1
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")

	w="$s the row unlocked while the create is judged"
	new_sku sku T38-free 10
	key=$(unique_key "t38-$s-free")
	if held "$url" "$key" "$(order_body "$sku" 2)"; then
		ok "$w: a worker sleeps after judging"
	else
		fail "$w" "no worker sleeps at after_judge"
	fi
	got=$(lock_now "$sku")
	[[ $got == 10 ]] && ok "$w: another session locks the row at once" ||
	    fail "$w: another session's lock" "got '$got'"
	wait
	bg_load "$T_TMP/held"
	expect_status 201 "$w: the held create"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	expect_one_order "$key" "$sku" 8 "$oid" "$w"

	# change NAME SQL STATUS CODE STOCK: while a create of 2 units (10 in
	# stock, price 1000) is held after judging, run SQL on its SKU; the
	# create answers STATUS (CODE) and the SKU ends with STOCK.
	change() {
		local name=$1 change=$2 status=$3 code=$4 stock=$5 w sku key body
		w="$s $name while the create is judged"
		new_sku sku "T38-$name" 10
		key=$(unique_key "t38-$s-$name")
		body=$(order_body "$sku" 2)
		held "$url" "$key" "$body" ||
		    fail "$w" "no worker sleeps at after_judge"
		sql "${change//@SKU@/$sku}" >/dev/null ||
		    fail "$w" "the change failed"
		wait
		bg_load "$T_TMP/held"
		expect_status "$status" "$w"
		if [[ $status == 201 ]]; then
			oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
			expect_one_order "$key" "$sku" "$stock" "$oid" "$w"
			return
		fi
		expect_body_json .code "$code" "$w"
		expect_sql_value "$w: no order" 0 "$(orders_for "$key")"
		expect_sql_value "$w: FAILED_FINAL recorded" FAILED_FINAL \
		    "$(ledger_status "$key")"
		expect_sql_value "$w: stock as the other session left it" \
		    "$stock" "$(stock_of "$sku")"
		local first=$BODY
		post_order "$url" "$key" "$body"
		expect_status "$status" "$w: the retry"
		expect_header idempotent-replayed true "$w: the retry"
		[[ $BODY == "$first" ]] && ok "$w: the retry replays the body" ||
		    fail "$w: the retry's body" "differs: $BODY"
	}
	change sold "UPDATE stock SET available = 1 WHERE sku = '@SKU@'" \
	    409 OUT_OF_STOCK 1
	change repriced "UPDATE stock SET unit_price = 1100 WHERE sku = '@SKU@'" \
	    422 AMOUNT_MISMATCH 10
	change recurrenced "UPDATE stock SET currency = 'USD' WHERE sku = '@SKU@'" \
	    422 CURRENCY_MISMATCH 10
	change deleted "DELETE FROM stock WHERE sku = '@SKU@'" \
	    422 UNKNOWN_SKU ''
	change enough "UPDATE stock SET available = 3 WHERE sku = '@SKU@'" \
	    201 - 1
done
finish
