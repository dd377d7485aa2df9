#!/usr/bin/env bash
# The same key with a different request is refused (design notes,
# verification step 4; contract section 4): any change of amount, SKU,
# qty, currency, shipping or note answers 409 IDEMPOTENCY_KEY_REUSED as
# application/problem+json, never shows the stored response, creates no
# order and leaves the ledger row and the stock as they were; the original
# request still replays afterwards.
# Through lighttpd and Apache proxy_fcgi, with fresh keys and SKUs of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

keep() {
	cp "$T_TMP/body" "$T_TMP/$1.body"
}

expect_same_body() {
	if cmp -s "$T_TMP/$1.body" "$T_TMP/body"; then
		ok "$2: body byte-identical to the first answer"
	else
		fail "$2: body differs from the first answer" \
		    "first: $(head -c 300 "$T_TMP/$1.body")"
	fi
}

orders_for() {
	echo "SELECT COUNT(*) FROM orders WHERE principal_id = '$1' AND idempotency_key = '$2'"
}
ledger_row() {
	echo "SELECT COUNT(*), MIN(status), MIN(response_status), MIN(resource_id),
	    MIN(request_fingerprint), MIN(SHA2(response_body, 256))
	    FROM idempotency_records WHERE principal_id = '$1' AND idem_key = '$2'"
}
stock_of() {
	echo "SELECT available FROM stock WHERE sku = '$1'"
}

# expect_reused WHAT ORDER_ID: a 409 IDEMPOTENCY_KEY_REUSED that shows
# nothing of the stored answer.
expect_reused() {
	local what=$1 oid=$2
	expect_problem 409 IDEMPOTENCY_KEY_REUSED "$what"
	expect_header idempotency-key "$key" "$what"
	expect_no_header idempotent-replayed "$what"
	expect_no_header location "$what"
	expect_body_json 'has("orderId") or has("items") or has("createdAt")' false "$what"
	expect_body_json '[.type, .title, .detail] | map(type == "string" and length > 0) | all' \
	    true "$what: type, title and detail"
	if [[ $BODY == *"$oid"* ]]; then
		fail "$what: the stored response is not shown" "the body names $oid"
	else
		ok "$what: the body does not name $oid"
	fi
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	A=T31-$s-A
	B=T31-$s-B
	U=T31-$s-U
	set_stock "$A" KRW 1000 50
	set_stock "$B" KRW 300 50
	set_stock "$U" USD 250 50

	key=$(unique_key "t31-$s")
	body='{"currency":"KRW","items":[{"sku":"'"$A"'","qty":2}],"amount":2000,"shipping":"standard","note":"first"}'
	what="$s create"
	post "$url" "$ALICE" "$key" "$body"
	expect_status 201 "$what"
	keep first
	oid=$(printf '%s' "$BODY" | jq -r '.orderId' 2>/dev/null)
	[[ $oid =~ ^o-[1-9][0-9]*$ ]] && ok "$what: orderId $oid" ||
	    fail "$what: orderId" "got '$oid'"
	row=$(sql "$(ledger_row alice "$key")")
	[[ $row == "1	SUCCEEDED	201	$oid	"* ]] && ok "$what: ledger row SUCCEEDED 201 $oid" ||
	    fail "$what: ledger row" "got '$row'"
	expect_sql "$(stock_of "$A")" 48 "$what: stock of $A"

	# The same key with other requests: each is refused.
	changed=(
	    '{"currency":"KRW","items":[{"sku":"'"$A"'","qty":2}],"amount":2001,"shipping":"standard","note":"first"}'
	    '{"currency":"KRW","items":[{"sku":"'"$A"'","qty":3}],"amount":3000,"shipping":"standard","note":"first"}'
	    '{"currency":"KRW","items":[{"sku":"'"$B"'","qty":2}],"amount":600,"shipping":"standard","note":"first"}'
	    '{"currency":"KRW","items":[{"sku":"'"$A"'","qty":2},{"sku":"'"$B"'","qty":1}],"amount":2300,"shipping":"standard","note":"first"}'
	    '{"currency":"USD","items":[{"sku":"'"$U"'","qty":2}],"amount":500,"shipping":"standard","note":"first"}'
	    '{"currency":"KRW","items":[{"sku":"'"$A"'","qty":2}],"amount":2000,"shipping":"express","note":"first"}'
	    '{"currency":"KRW","items":[{"sku":"'"$A"'","qty":2}],"amount":2000,"shipping":"standard","note":"First"}'
	    '{"currency":"KRW","items":[{"sku":"'"$A"'","qty":2}],"amount":2000}'
	    '{"currency":"KRW","items":[{"sku":"'"$A"'","qty":2}],"amount":2000,"shipping":"standard","note":"first "}'
	)
	names=("amount changed" "qty and amount changed" "item changed"
	    "item added" "currency and item changed" "shipping changed"
	    "note changed (case)" "note omitted (default \"\")"
	    "note changed (trailing space)")
	for i in "${!changed[@]}"; do
		what="$s same key, ${names[$i]}"
		post "$url" "$ALICE" "$key" "${changed[$i]}"
		expect_reused "$what" "$oid"
	done

	what="$s after the refused requests"
	expect_sql "$(orders_for alice "$key")" 1 "$what: still one order"
	expect_sql "$(ledger_row alice "$key")" "$row" "$what: the ledger row is unchanged"
	expect_sql "$(stock_of "$A")" 48 "$what: stock of $A unchanged"
	expect_sql "$(stock_of "$B")" 50 "$what: stock of $B unchanged"
	expect_sql "$(stock_of "$U")" 50 "$what: stock of $U unchanged"

	# The original request still replays.
	what="$s same key, the original body again"
	post "$url" "$ALICE" "$key" "$body"
	expect_status 201 "$what"
	expect_same_body first "$what"
	expect_header idempotent-replayed true "$what"
	expect_header location "$MOUNT/$oid" "$what"
	expect_header idempotency-key "$key" "$what"
	expect_header cache-control no-store "$what"
	expect_sql "$(orders_for alice "$key")" 1 "$what: still one order"
	expect_sql "$(stock_of "$A")" 48 "$what: stock of $A unchanged"

	# A refused body is itself a valid order: with a fresh key it creates
	# one.
	key2=$(unique_key "t31-$s-fresh")
	what="$s the refused amount-changed body with a fresh key"
	post "$url" "$ALICE" "$key2" '{"currency":"KRW","items":[{"sku":"'"$A"'","qty":3}],"amount":3000,"shipping":"standard","note":"first"}'
	expect_status 201 "$what"
	expect_no_header idempotent-replayed "$what"
	expect_sql "$(orders_for alice "$key2")" 1 "$what: one order"
	expect_sql "$(stock_of "$A")" 45 "$what: stock of $A"
done

finish
