#!/usr/bin/env bash
# POST /orders creates one order per (principal, Idempotency-Key) (design
# notes, verification steps 1 and 2; contract section 4):
#  - a create answers 201 with Location: /orders/o-N and the order (orderId,
#    status, currency, amount, items with unitPrice, shipping, note,
#    createdAt), and leaves exactly one order, its items, one SUCCEEDED
#    ledger row (response_status 201, resource_id = orderId, the exact body)
#    and the stock decreased once;
#  - the same key with the same body, also written with other whitespace,
#    member order, item order, string escapes, Content-Type parameters or
#    with defaults spelled out, replays: same status, byte-identical body,
#    same Location, Idempotent-Replayed: true, nothing new in the database;
#  - a new key with the same body is a new order;
#  - GET of the Location answers the order.
# Through lighttpd and Apache proxy_fcgi, with fresh keys and SKUs of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

# keep NAME: save the last body and headers under NAME.
keep() {
	cp "$T_TMP/body" "$T_TMP/$1.body"
	cp "$HEADERS" "$T_TMP/$1.headers"
}

# expect_same_body NAME WHAT: the last body is byte-identical to NAME's.
expect_same_body() {
	if cmp -s "$T_TMP/$1.body" "$T_TMP/body"; then
		ok "$2: body byte-identical to the first answer"
	else
		fail "$2: body differs from the first answer" \
		    "first: $(head -c 300 "$T_TMP/$1.body")"
	fi
}

# expect_match VALUE REGEX WHAT
expect_match() {
	if [[ $1 =~ $2 ]]; then
		ok "$3: '$1' matches $2"
	else
		fail "$3" "'$1' does not match $2"
	fi
}

# body_sha256: of the last body, hex.
body_sha256() {
	sha256sum <"$T_TMP/body" | awk '{ print $1 }'
}

orders_for() {	# principal key
	echo "SELECT COUNT(*) FROM orders WHERE principal_id = '$1' AND idempotency_key = '$2'"
}
ledger_for() {	# principal key
	echo "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = '$1' AND idem_key = '$2'"
}
stock_of() {
	echo "SELECT available FROM stock WHERE sku = '$1'"
}

RFC3339_UTC='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$'

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	A=T30-$s-A
	B=T30-$s-B
	set_stock "$A" KRW 1500 20
	set_stock "$B" KRW 700 10

	# ---- 1. one create --------------------------------------------------
	key=$(unique_key "t30-$s-create")
	body='{"currency":"KRW","items":[{"sku":"'"$A"'","qty":2},{"sku":"'"$B"'","qty":1}],"amount":3700,"shipping":"express","note":"gift wrap, 한글"}'
	post "$url" "$ALICE" "$key" "$body"
	what="$s create"
	expect_status 201 "$what"
	expect_media_type application/json "$what"
	expect_header cache-control no-store "$what"
	expect_header idempotency-key "$key" "$what"
	expect_no_header idempotent-replayed "$what"
	keep first
	oid=$(printf '%s' "$BODY" | jq -r '.orderId' 2>/dev/null)
	expect_match "$oid" '^o-[1-9][0-9]*$' "$what: orderId"
	expect_header location "$MOUNT/$oid" "$what"
	expect_body_json 'keys | sort | join(",")' \
	    amount,createdAt,currency,items,note,orderId,shipping,status "$what"
	expect_body_json '.status | type == "string" and length > 0' true "$what"
	status_word=$(printf '%s' "$BODY" | jq -r .status 2>/dev/null)
	expect_body_json .currency KRW "$what"
	expect_body_json '.amount | tojson' 3700 "$what"
	expect_body_json '.items | length' 2 "$what"
	expect_body_json '[.items[] | keys | sort | join(",")] | unique | join(";")' \
	    qty,sku,unitPrice "$what"
	expect_body_json ".items | map(select(.sku == \"$A\"))[0] | [.qty, .unitPrice] | tojson" \
	    '[2,1500]' "$what"
	expect_body_json ".items | map(select(.sku == \"$B\"))[0] | [.qty, .unitPrice] | tojson" \
	    '[1,700]' "$what"
	expect_body_json .shipping express "$what"
	expect_body_json .note 'gift wrap, 한글' "$what"
	created=$(printf '%s' "$BODY" | jq -r .createdAt 2>/dev/null)
	expect_match "$created" "$RFC3339_UTC" "$what: createdAt is RFC 3339 UTC"
	first_sha=$(body_sha256)

	# The rows it left.
	expect_sql "$(orders_for alice "$key")" 1 "$what: one order"
	expect_sql "SELECT CONCAT('o-', id), currency, amount, shipping, note
	    FROM orders WHERE principal_id = 'alice' AND idempotency_key = '$key'" \
	    "$oid	KRW	3700	express	gift wrap, 한글" "$what: the order row"
	expect_sql "SELECT GROUP_CONCAT(CONCAT(i.sku, ':', i.qty, ':', i.unit_price)
	    ORDER BY i.sku) FROM order_items i JOIN orders o ON o.id = i.order_id
	    WHERE o.principal_id = 'alice' AND o.idempotency_key = '$key'" \
	    "$A:2:1500,$B:1:700" "$what: the order's items"
	expect_sql "$(ledger_for alice "$key")" 1 "$what: one ledger row"
	expect_sql "SELECT operation, status, response_status, resource_id
	    FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = '$key'" \
	    "create-order	SUCCEEDED	201	$oid" "$what: the ledger row"
	expect_sql "SELECT request_fingerprint REGEXP '^[0-9a-f]{64}\$'
	    FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = '$key'" \
	    1 "$what: the fingerprint is SHA-256 hex"
	expect_sql "SELECT SHA2(response_body, 256) FROM idempotency_records
	    WHERE principal_id = 'alice' AND idem_key = '$key'" "$first_sha" \
	    "$what: the ledger stores the exact body"
	expect_sql "SELECT LOCATE('Location: $MOUNT/$oid', response_headers) > 0
	    FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = '$key'" \
	    1 "$what: the ledger stores the Location header"
	expect_sql "SELECT TIMESTAMPDIFF(MINUTE, created_at, expires_at)
	    BETWEEN 1439 AND 1441 FROM idempotency_records
	    WHERE principal_id = 'alice' AND idem_key = '$key'" 1 \
	    "$what: expires_at is created_at + 24 h"
	expect_sql "$(stock_of "$A")" 18 "$what: stock of $A decreased by 2"
	expect_sql "$(stock_of "$B")" 9 "$what: stock of $B decreased by 1"

	# ---- 2. the same request again, in several spellings ------------------
	variants=(
	    "$body"
	    "$(printf '{\n  "note" : "gift wrap, 한글",\n\t"amount": 3700,\n  "items": [ {"qty": 1, "sku": "%s"},\r\n {"sku":"%s" , "qty":2} ],\n  "shipping":"express", "currency":"KRW"\n}\n' "$B" "$A")"
	    '{"shipping":"express","amount":3700,"currency":"KRW","note":"gift wrap, \ud55c\uae00","items":[{"sku":"'"$A"'","qty":2},{"sku":"'"$B"'","qty":1}]}'
	    '  {"currency":"\u004bRW","items":[{"sku":"'"$B"'","qty":1},{"sku":"'"$A"'","qty":2}],"amount":3700,"shipping":"express","note":"gift wrap, 한글"}  '
	)
	names=(identical whitespace+member+item-order unicode-escapes escaped-currency+item-order)
	for i in "${!variants[@]}"; do
		what="$s replay (${names[$i]})"
		post "$url" "$ALICE" "$key" "${variants[$i]}"
		expect_status 201 "$what"
		expect_same_body first "$what"
		expect_header location "$MOUNT/$oid" "$what"
		expect_header idempotent-replayed true "$what"
		expect_header idempotency-key "$key" "$what"
		expect_header cache-control no-store "$what"
		expect_media_type application/json "$what"
	done
	# A media type parameter and a case variant are still application/json.
	what="$s replay (Content-Type: Application/JSON; charset=utf-8)"
	req POST "$url$MOUNT" -u "$ALICE" -H "Idempotency-Key: $key" \
	    -H 'Content-Type: Application/JSON; charset=utf-8' --data-binary "$body"
	expect_status 201 "$what"
	expect_same_body first "$what"
	expect_header idempotent-replayed true "$what"
	# Other request headers (trace ids, Date) never enter the fingerprint.
	what="$s replay (extra headers)"
	post "$url" "$ALICE" "$key" "$body" -H 'X-Request-Id: t30-other-trace' \
	    -H 'Date: Tue, 15 Sep 2026 10:00:00 GMT' -H 'traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
	expect_status 201 "$what"
	expect_same_body first "$what"
	expect_header idempotent-replayed true "$what"

	what="$s after the replays"
	expect_sql "$(orders_for alice "$key")" 1 "$what: still one order"
	expect_sql "$(ledger_for alice "$key")" 1 "$what: still one ledger row"
	expect_sql "SELECT status, response_status, resource_id FROM idempotency_records
	    WHERE principal_id = 'alice' AND idem_key = '$key'" \
	    "SUCCEEDED	201	$oid" "$what: the ledger row is unchanged"
	expect_sql "$(stock_of "$A")" 18 "$what: stock of $A decreased once"
	expect_sql "$(stock_of "$B")" 9 "$what: stock of $B decreased once"

	# ---- omitted optional fields equal their defaults ---------------------
	key2=$(unique_key "t30-$s-defaults")
	what="$s create without shipping and note"
	post "$url" "$ALICE" "$key2" '{"currency":"KRW","items":[{"sku":"'"$A"'","qty":1}],"amount":1500}'
	expect_status 201 "$what"
	expect_body_json .shipping standard "$what"
	expect_body_json .note "" "$what"
	expect_body_json '.note | type' string "$what"
	keep defaults
	oid2=$(printf '%s' "$BODY" | jq -r '.orderId' 2>/dev/null)
	[[ $oid2 != "$oid" ]] && ok "$what: a new orderId ($oid2)" ||
	    fail "$what: orderId" "same as the first order's ($oid)"
	what="$s same key, defaults spelled out"
	post "$url" "$ALICE" "$key2" '{"note":"","shipping":"standard","amount":1500,"items":[{"qty":1,"sku":"'"$A"'"}],"currency":"KRW"}'
	expect_status 201 "$what"
	expect_same_body defaults "$what"
	expect_header idempotent-replayed true "$what"
	expect_header location "$MOUNT/$oid2" "$what"
	expect_sql "$(orders_for alice "$key2")" 1 "$what: one order"
	expect_sql "$(stock_of "$A")" 17 "$what: stock of $A decreased once more"

	# ---- a new key with the first body is a second, separate order --------
	key3=$(unique_key "t30-$s-again")
	what="$s new key, same body"
	post "$url" "$ALICE" "$key3" "$body"
	expect_status 201 "$what"
	expect_no_header idempotent-replayed "$what"
	oid3=$(printf '%s' "$BODY" | jq -r '.orderId' 2>/dev/null)
	if [[ $oid3 =~ ^o-[1-9][0-9]*$ && $oid3 != "$oid" && $oid3 != "$oid2" ]]; then
		ok "$what: a new order $oid3"
	else
		fail "$what: orderId" "got '$oid3' (earlier: $oid, $oid2)"
	fi
	expect_sql "$(orders_for alice "$key3")" 1 "$what: one order for the new key"
	expect_sql "$(orders_for alice "$key")" 1 "$what: the first key still has one"
	expect_sql "$(stock_of "$A")" 15 "$what: stock of $A"
	expect_sql "$(stock_of "$B")" 8 "$what: stock of $B"

	# ---- GET the Location ---------------------------------------------------
	what="$s GET $MOUNT/$oid"
	req GET "$url$MOUNT/$oid" -u "$ALICE"
	expect_status 200 "$what"
	expect_media_type application/json "$what"
	expect_header cache-control no-store "$what"
	expect_body_json .orderId "$oid" "$what"
	expect_body_json .status "$status_word" "$what"
	expect_body_json .createdAt "$created" "$what"
	got=$(printf '%s' "$BODY" | jq -S -c '.items |= sort_by(.sku)' 2>/dev/null)
	want=$(jq -S -c '.items |= sort_by(.sku)' "$T_TMP/first.body" 2>/dev/null)
	if [[ -n $got && $got == "$want" ]]; then
		ok "$what: the same order as the create answer"
	else
		fail "$what: the order" "expected $want, got $got"
	fi
done

finish
