#!/usr/bin/env bash
# The scope of a key is (principal, "create-order", key), compared byte for
# byte (contract sections 3, 4 and 5):
#  - bob using alice's key gets his own order (same body or another one):
#    two orders, two ledger rows, no replay, no conflict;
#  - GET of alice's order: 200 for alice, 404 ORDER_NOT_FOUND for bob with
#    a body identical to the one for an unknown id;
#  - keys are case-sensitive: Key-1 and key-1 are two keys, two orders.
# Through lighttpd and Apache proxy_fcgi, with fresh keys and SKUs of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

stock_of() {
	echo "SELECT available FROM stock WHERE sku = '$1'"
}

orders_of() {	# key -> "principal:o-N" lines
	echo "SELECT GROUP_CONCAT(CONCAT(principal_id, ':o-', id) ORDER BY principal_id)
	    FROM orders WHERE idempotency_key = '$1'"
}

ledger_of() {	# key -> "principal:status:resource" lines
	echo "SELECT GROUP_CONCAT(CONCAT(principal_id, ':', status, ':', resource_id)
	    ORDER BY principal_id) FROM idempotency_records WHERE idem_key = '$1'"
}

order_id() {
	printf '%s' "$BODY" | jq -r '.orderId' 2>/dev/null
}

# created WHAT: a fresh 201, not a replay.
created() {
	expect_status 201 "$1"
	expect_no_header idempotent-replayed "$1"
	expect_header idempotency-key "$key" "$1"
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	P=T34-$s-P
	set_stock "$P" KRW 500 100
	body='{"currency":"KRW","items":[{"sku":"'"$P"'","qty":1}],"amount":500}'

	# ---- one key, two principals, the same body ---------------------------
	key=$(unique_key "t34-$s-shared")
	post "$url" "$ALICE" "$key" "$body"
	created "$s alice with key K"
	a_oid=$(order_id)
	cp "$T_TMP/body" "$T_TMP/alice.body"
	post "$url" "$BOB" "$key" "$body"
	created "$s bob with alice's key K, same body"
	b_oid=$(order_id)
	if [[ $b_oid =~ ^o-[1-9][0-9]*$ && $b_oid != "$a_oid" ]]; then
		ok "$s bob's order $b_oid is not alice's $a_oid"
	else
		fail "$s bob's order" "bob got '$b_oid', alice has '$a_oid'"
	fi
	expect_sql "$(orders_of "$key")" "alice:$a_oid,bob:$b_oid" "$s key K: two orders"
	expect_sql "$(ledger_of "$key")" "alice:SUCCEEDED:$a_oid,bob:SUCCEEDED:$b_oid" \
	    "$s key K: two ledger rows"
	expect_sql "$(stock_of "$P")" 98 "$s key K: stock decreased twice"

	# Each replays their own.
	post "$url" "$ALICE" "$key" "$body"
	expect_status 201 "$s alice again with K"
	expect_header idempotent-replayed true "$s alice again with K"
	expect_body_json .orderId "$a_oid" "$s alice again with K"
	cmp -s "$T_TMP/alice.body" "$T_TMP/body" &&
	    ok "$s alice again with K: byte-identical body" ||
	    fail "$s alice again with K: body differs" "$(head -c 300 "$T_TMP/alice.body")"
	post "$url" "$BOB" "$key" "$body"
	expect_status 201 "$s bob again with K"
	expect_header idempotent-replayed true "$s bob again with K"
	expect_body_json .orderId "$b_oid" "$s bob again with K"
	expect_sql "$(orders_of "$key")" "alice:$a_oid,bob:$b_oid" "$s key K after replays"

	# ---- one key, two principals, different bodies: no conflict -----------
	key=$(unique_key "t34-$s-shared2")
	post "$url" "$ALICE" "$key" "$body"
	created "$s alice with key K2"
	a2=$(order_id)
	post "$url" "$BOB" "$key" '{"currency":"KRW","items":[{"sku":"'"$P"'","qty":3}],"amount":1500,"shipping":"express"}'
	created "$s bob with alice's key K2, another body"
	expect_body_json '.amount | tojson' 1500 "$s bob with alice's key K2, another body"
	b2=$(order_id)
	expect_sql "$(orders_of "$key")" "alice:$a2,bob:$b2" "$s key K2: two orders"
	expect_sql "$(ledger_of "$key")" "alice:SUCCEEDED:$a2,bob:SUCCEEDED:$b2" \
	    "$s key K2: two ledger rows"
	expect_sql "$(stock_of "$P")" 94 "$s key K2: stock"

	# ---- GET: the owner only ----------------------------------------------
	what="$s GET alice's $a_oid as alice"
	req GET "$url$MOUNT/$a_oid" -u "$ALICE"
	expect_status 200 "$what"
	expect_media_type application/json "$what"
	expect_header cache-control no-store "$what"
	expect_body_json .orderId "$a_oid" "$what"
	expect_body_json '.amount | tojson' 500 "$what"
	expect_body_json ".items | map(select(.sku == \"$P\"))[0] | [.qty, .unitPrice] | tojson" \
	    '[1,500]' "$what"

	what="$s GET alice's $a_oid as bob"
	req GET "$url$MOUNT/$a_oid" -u "$BOB"
	expect_problem 404 ORDER_NOT_FOUND "$what"
	expect_no_header location "$what"
	if [[ $BODY == *'"amount"'* || $BODY == *'"items"'* ]]; then
		fail "$what: shows nothing of the order" "$BODY"
	else
		ok "$what: shows nothing of the order"
	fi
	cp "$T_TMP/body" "$T_TMP/foreign.body"
	foreign_ct=$(hdr content-type)
	what="$s GET an unknown id as bob"
	req GET "$url$MOUNT/o-999999999" -u "$BOB"
	expect_problem 404 ORDER_NOT_FOUND "$what"
	if cmp -s "$T_TMP/foreign.body" "$T_TMP/body"; then
		ok "$s bob: alice's order and an unknown id answer byte-identical bodies"
	else
		fail "$s bob: alice's order and an unknown id answer different bodies" \
		    "alice's: $(cat "$T_TMP/foreign.body")"
	fi
	[[ $(hdr content-type) == "$foreign_ct" ]] &&
	    ok "$s bob: the same Content-Type for both" ||
	    fail "$s bob: Content-Type" "'$foreign_ct' vs '$(hdr content-type)'"
	# Other ids no order has: the same answer.
	for id in o-0 o-01 o-99999999999999999999999 "o-${a_oid#o-}0000000"; do
		what="$s GET $MOUNT/$id as bob"
		req GET "$url$MOUNT/$id" -u "$BOB"
		expect_problem 404 ORDER_NOT_FOUND "$what"
		cmp -s "$T_TMP/foreign.body" "$T_TMP/body" &&
		    ok "$what: the same body as for alice's order" ||
		    fail "$what: body differs from the one for alice's order" \
		    "alice's: $(cat "$T_TMP/foreign.body")"
	done
	what="$s GET bob's $b_oid as alice"
	req GET "$url$MOUNT/$b_oid" -u "$ALICE"
	expect_problem 404 ORDER_NOT_FOUND "$what"
	what="$s GET bob's $b_oid as bob"
	req GET "$url$MOUNT/$b_oid" -u "$BOB"
	expect_status 200 "$what"
	expect_body_json .orderId "$b_oid" "$what"

	# ---- keys are case-sensitive --------------------------------------------
	base=$(unique_key "ey-$s")
	k_upper=K$base
	k_lower=k$base
	key=$k_upper
	post "$url" "$ALICE" "$k_upper" "$body"
	created "$s alice with key $k_upper"
	up_oid=$(order_id)
	key=$k_lower
	post "$url" "$ALICE" "$k_lower" "$body"
	created "$s alice with key $k_lower (same body)"
	low_oid=$(order_id)
	if [[ $low_oid =~ ^o-[1-9][0-9]*$ && $low_oid != "$up_oid" ]]; then
		ok "$s $k_upper and $k_lower made two orders ($up_oid, $low_oid)"
	else
		fail "$s case-sensitive keys" "$k_upper -> '$up_oid', $k_lower -> '$low_oid'"
	fi
	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'
	    AND idempotency_key IN ('$k_upper', '$k_lower')" 2 "$s case-sensitive keys: orders"
	expect_sql "SELECT GROUP_CONCAT(CONCAT(idem_key, ':', resource_id) ORDER BY idem_key)
	    FROM idempotency_records WHERE principal_id = 'alice'
	    AND idem_key IN ('$k_upper', '$k_lower')" \
	    "$k_upper:$up_oid,$k_lower:$low_oid" "$s case-sensitive keys: ledger rows"
	# A third spelling with another body is a third key, not a conflict.
	key=K${base^^}
	post "$url" "$ALICE" "$key" '{"currency":"KRW","items":[{"sku":"'"$P"'","qty":2}],"amount":1000}'
	created "$s alice with key $key (another body)"
	expect_sql "$(stock_of "$P")" 90 "$s case-sensitive keys: stock"
	# And each still replays its own order.
	post "$url" "$ALICE" "$k_lower" "$body"
	expect_status 201 "$s alice again with $k_lower"
	expect_header idempotent-replayed true "$s alice again with $k_lower"
	expect_body_json .orderId "$low_oid" "$s alice again with $k_lower"
done

finish
