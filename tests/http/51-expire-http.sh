#!/usr/bin/env bash
# Expired keys through HTTP (lighttpd and Apache): a late retry of a key
# past key_retention answers 410 IDEMPOTENCY_KEY_EXPIRED naming the
# original order (body "orderId", Link rel="related") and never creates a
# second order, whatever the body:
#   1. lazily, as soon as expires_at has passed (the job has not run);
#   2. from the EXPIRED tombstone the job left (response body gone);
#   3. after the tombstone was purged (no ledger row): the orders table's
#      UNIQUE (principal_id, idempotency_key) still refuses, and no ledger
#      row is created again, even for a body that would be rejected.
# An expired FAILED_FINAL key (it made no order) answers 410 without
# orderId and without Link.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

SKU=T51-EXP		# a SKU of our own: the demo stock stays untouched
PRICE=100
P=alice

sql "INSERT INTO stock (sku, currency, unit_price, available)
    VALUES ('$SKU', 'KRW', $PRICE, 1000000)
    ON DUPLICATE KEY UPDATE currency = 'KRW', unit_price = $PRICE,
    available = 1000000" || { fail "fixture" "cannot insert stock $SKU"; finish; }

body_for() {	# body_for QTY AMOUNT [SKU]
	printf '{"currency":"KRW","items":[{"sku":"%s","qty":%s}],"amount":%s}' \
	    "${3:-$SKU}" "$1" "$2"
}
SAME=$(body_for 1 100)
# The same order, written differently (member order, whitespace, default
# shipping spelled out): the same fingerprint.
SAME2='{ "amount": 100, "shipping": "standard", "items": [ { "qty": 1, "sku": "'$SKU'" } ], "currency": "KRW" }'
OTHER=$(body_for 2 200)			# another valid order
BADAMOUNT=$(body_for 1 99)		# a final rejection: AMOUNT_MISMATCH
BADSKU=$(body_for 1 100 T51-NOSUCH)	# a final rejection: UNKNOWN_SKU

post() {	# post URL KEY BODY
	req POST "$1$MOUNT" -u "$ALICE" -H 'Content-Type: application/json' \
	    -H "Idempotency-Key: $2" --data-binary "$3"
}

ledger_rows() {	# ledger_rows KEY
	sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = '$P'
	    AND operation = 'create-order' AND idem_key = '$1'"
}
orders_total() { sql "SELECT COUNT(*) FROM orders"; }
orders_for() { sql "SELECT COUNT(*) FROM orders WHERE principal_id = '$P' AND idempotency_key = '$1'"; }
stock_of() { sql "SELECT available FROM stock WHERE sku = '$SKU'"; }

# expect_expired WHAT ORDER_ID KEY: the last answer is 410 naming ORDER_ID
# (empty: no order, so neither orderId nor Link).
expect_expired() {
	local what=$1 oid=$2 key=$3
	expect_problem 410 IDEMPOTENCY_KEY_EXPIRED "$what"
	expect_header idempotency-key "$key" "$what"
	expect_no_header idempotent-replayed "$what"
	expect_no_header location "$what"
	if [[ -n $oid ]]; then
		expect_body_json .orderId "$oid" "$what"
		expect_header link "<$MOUNT/$oid>; rel=\"related\"" "$what"
	else
		expect_body_json 'has("orderId")' false "$what"
		expect_no_header link "$what"
	fi
}

# expect_unchanged WHAT: no order was created and no stock taken since
# the snapshot (ORDERS0, STOCK0), and KEY still has exactly one order.
expect_unchanged() {
	local what=$1 n s k
	n=$(orders_total)
	s=$(stock_of)
	k=$(orders_for "$KEY")
	if [[ $n == "$ORDERS0" && $s == "$STOCK0" && $k == 1 ]]; then
		ok "$what: no new order ($n orders, $k for the key, stock $s)"
	else
		fail "$what: orders" "orders $ORDERS0 -> $n, stock $STOCK0 -> $s, orders for the key $k (want 1)"
	fi
}

run_job() {
	local out
	if out=$("$DEV" expire 2>&1); then
		ok "expire job ran: $out"
	else
		fail "expire job" "failed: $out"
	fi
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")

	# --- a key that made an order -----------------------------------------
	KEY=$(unique_key "t51-$s")
	post "$url" "$KEY" "$SAME"
	expect_status 201 "$s create"
	OID=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	if [[ $OID == o-* ]]; then
		ok "$s create: orderId $OID"
	else
		fail "$s create: orderId" "got '$OID'"
		continue
	fi
	post "$url" "$KEY" "$SAME2"
	expect_status 201 "$s replay before expiry"
	expect_header idempotent-replayed true "$s replay before expiry"
	expect_body_json .orderId "$OID" "$s replay before expiry"
	ORDERS0=$(orders_total)
	STOCK0=$(stock_of)

	# 1. Past expires_at, before the job: lazy expiry.
	sql "UPDATE idempotency_records SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR
	    WHERE principal_id = '$P' AND idem_key = '$KEY'"
	post "$url" "$KEY" "$SAME"
	expect_expired "$s lazy expiry, same body" "$OID" "$KEY"
	post "$url" "$KEY" "$SAME2"
	expect_expired "$s lazy expiry, same order written differently" "$OID" "$KEY"
	post "$url" "$KEY" "$OTHER"
	expect_expired "$s lazy expiry, other body" "$OID" "$KEY"
	expect_unchanged "$s lazy expiry"

	# 2. The job made a tombstone.
	run_job
	expect_sql "SELECT status, response_body IS NULL, response_headers IS NULL,
	    resource_id FROM idempotency_records WHERE principal_id = '$P'
	    AND idem_key = '$KEY'" "EXPIRED	1	1	$OID" \
	    "$s tombstone: EXPIRED, response body and headers gone, resource kept"
	post "$url" "$KEY" "$SAME"
	expect_expired "$s tombstone, same body" "$OID" "$KEY"
	post "$url" "$KEY" "$OTHER"
	expect_expired "$s tombstone, other body" "$OID" "$KEY"
	post "$url" "$KEY" "$BADAMOUNT"
	expect_expired "$s tombstone, a body that would be rejected" "$OID" "$KEY"
	expect_unchanged "$s tombstone"
	expect_sql "SELECT status FROM idempotency_records WHERE principal_id = '$P'
	    AND idem_key = '$KEY'" EXPIRED "$s tombstone stays a tombstone"
	# The Link leads to the order, which is still there.
	req GET "$url$MOUNT/$OID" -u "$ALICE"
	expect_status 200 "$s GET the linked order"
	expect_body_json .orderId "$OID" "$s GET the linked order"

	# 3. The tombstone purged, as the job does after tombstone_retention.
	sql "DELETE FROM idempotency_records WHERE principal_id = '$P' AND idem_key = '$KEY'"
	post "$url" "$KEY" "$SAME"
	expect_expired "$s purged, same body" "$OID" "$KEY"
	post "$url" "$KEY" "$OTHER"
	expect_expired "$s purged, other body" "$OID" "$KEY"
	post "$url" "$KEY" "$BADAMOUNT"
	expect_expired "$s purged, wrong amount" "$OID" "$KEY"
	post "$url" "$KEY" "$BADSKU"
	expect_expired "$s purged, unknown SKU" "$OID" "$KEY"
	post "$url" "$KEY" "$SAME"
	expect_expired "$s purged, same body again" "$OID" "$KEY"
	expect_unchanged "$s purged"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = '$P'
	    AND idem_key = '$KEY'" 0 "$s purged: no ledger row created again"
	# An order younger than key_retention (24 h here) cannot have lost
	# its ledger row to the purge: each such 410 is logged as an error
	# with the key.  Made older than key_retention, it is the normal
	# purge: no error.
	n=$(grep -c "error.*key $KEY of principal $P: order $OID .*has no ledger row" \
	    "$LOGDIR/idemorders.log")
	[[ $n -ge 5 ]] && ok "$s purged within key_retention: $n error lines naming the key" ||
	    fail "$s purged within key_retention: error log" "$n lines for key $KEY"
	sql "UPDATE orders SET created_at = created_at - INTERVAL 2 DAY
	    WHERE principal_id = '$P' AND idempotency_key = '$KEY'"
	post "$url" "$KEY" "$SAME"
	expect_expired "$s purged, order past key_retention" "$OID" "$KEY"
	m=$(grep -c "error.*key $KEY of principal $P: order $OID .*has no ledger row" \
	    "$LOGDIR/idemorders.log")
	[[ $m == "$n" ]] && ok "$s purged past key_retention: no error logged" ||
	    fail "$s purged past key_retention" "$((m - n)) more error lines"

	# --- a key that made no order (FAILED_FINAL) ---------------------------
	FKEY=$(unique_key "t51-failed-$s")
	post "$url" "$FKEY" "$BADAMOUNT"
	expect_problem 422 AMOUNT_MISMATCH "$s final rejection"
	post "$url" "$FKEY" "$BADAMOUNT"
	expect_status 422 "$s final rejection replayed"
	expect_header idempotent-replayed true "$s final rejection replayed"
	n0=$(orders_total)
	sql "UPDATE idempotency_records SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR
	    WHERE principal_id = '$P' AND idem_key = '$FKEY'"
	post "$url" "$FKEY" "$BADAMOUNT"
	expect_expired "$s FAILED_FINAL lazy expiry" "" "$FKEY"
	post "$url" "$FKEY" "$SAME"
	expect_expired "$s FAILED_FINAL lazy expiry, a valid body" "" "$FKEY"
	run_job
	expect_sql "SELECT status, response_body IS NULL, response_headers IS NULL,
	    IFNULL(resource_id, '-') FROM idempotency_records WHERE principal_id = '$P'
	    AND idem_key = '$FKEY'" "EXPIRED	1	1	-" \
	    "$s FAILED_FINAL tombstone"
	post "$url" "$FKEY" "$BADAMOUNT"
	expect_expired "$s FAILED_FINAL tombstone" "" "$FKEY"
	post "$url" "$FKEY" "$SAME"
	expect_expired "$s FAILED_FINAL tombstone, a valid body" "" "$FKEY"
	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = '$P'
	    AND idempotency_key = '$FKEY'" 0 "$s FAILED_FINAL key: still no order"
	n=$(orders_total)
	[[ $n == "$n0" ]] && ok "$s FAILED_FINAL key: no new order anywhere" ||
	    fail "$s FAILED_FINAL key: orders" "$n0 -> $n"
done

finish
