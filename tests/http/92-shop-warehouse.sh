#!/usr/bin/env bash
# The demo shop's warehouse (examples/shop/public/warehouse.php), the
# endpoint the relay delivers order events to, as a relay would call it:
# curl POSTs signed as Standard Webhooks sign (webhook-id,
# webhook-timestamp, webhook-signature v1 = base64 HMAC-SHA256 of
# id.timestamp.body under the shop's whsec_ secret), through the shop's
# lighttpd and Apache:
#  - a genuine order.created is answered 2xx and packs the order once: one
#    row for its webhook-id and one packed row, in the shop's own database;
#  - the same webhook-id again is answered 2xx and does nothing more;
#  - several v1 signatures (a secret being replaced): one match is enough;
#  - an order.cancelled is recorded and does not pack or unpack anything;
#  - a tampered body, a timestamp 10 minutes old, a signature made with
#    another secret, a missing signature and a GET are refused (4xx) and
#    leave no row.
# Order ids of its own (o- and the script's start in ns, beyond any real
# order's), so it never touches an order of another script.
. "$(dirname -- "$0")/../lib/http.sh"

SHOP_DB=idemshop
SECRET_FILE=$RUNDIR/shop-webhook.secret
if [[ ! -r $SECRET_FILE ]]; then
	fail "shop secret" "$SECRET_FILE is missing: the stack has no warehouse secret"
	finish
fi
key_hex=$(sed 's/^whsec_//' "$SECRET_FILE" | base64 -d | od -An -tx1 -v | tr -d ' \n')
other_hex=$(head -c 32 /dev/urandom | od -An -tx1 -v | tr -d ' \n')
oid_base=$(date +%s%N)
oid_seq=0

# sign HEXKEY ID TS BODY: the v1 signature.
sign() {
	printf '%s.%s.%s' "$2" "$3" "$4" |
	    openssl dgst -sha256 -mac HMAC -macopt "hexkey:$1" -binary | base64 -w0
}

# deliver URL ID TS SIGNATURES BODY: POST it to the warehouse.
deliver() {
	req POST "$1/warehouse.php" -H 'Content-Type: application/json' \
	    -H "webhook-id: $2" -H "webhook-timestamp: $3" \
	    ${4:+-H "webhook-signature: $4"} --data-binary "$5"
}

# event TYPE ORDER_ID: a body as the relay sends it.
event() {
	printf '{"type":"%s","timestamp":"%s","data":{"orderId":"%s","status":"CREATED","currency":"KRW","amount":6000}}' \
	    "$1" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$2"
}

# rows ID ORDER_ID: "webhook rows<TAB>packed rows" in the shop's database.
rows() {
	sql "SELECT (SELECT COUNT(*) FROM $SHOP_DB.warehouse_webhooks WHERE webhook_id = '$1'),
	    (SELECT COUNT(*) FROM $SHOP_DB.warehouse_packed WHERE order_id = '$2')"
}

# refused WHAT: a 4xx, and nothing recorded for $id and $oid.
refused() {
	local r
	if [[ $STATUS == 4[0-9][0-9] ]]; then
		ok "$1: refused ($STATUS: $BODY)"
	else
		fail "$1" "expected 4xx, got $STATUS: $BODY"
	fi
	r=$(rows "$id" "$oid")
	if [[ $r == "0	0" ]]; then
		ok "$1: nothing recorded"
	else
		fail "$1: recorded" "webhook and packed rows: '$r'"
	fi
}

# new_ids: a fresh webhook-id ($id) and order id ($oid).
new_ids() {
	unique_name id msg_t92
	oid_seq=$((oid_seq + 1))
	oid=o-$((oid_base + oid_seq))
}

for shop in "lighttpd $SHOP_LIGHTTPD_URL" "apache $SHOP_APACHE_URL"; do
	s=${shop%% *} url=${shop#* }

	new_ids
	body=$(event order.created "$oid")
	ts=$(date +%s)
	deliver "$url" "$id" "$ts" "v1,$(sign "$key_hex" "$id" "$ts" "$body")" "$body"
	expect_status 200 "$s: a genuine order.created"
	expect_sql "SELECT (SELECT COUNT(*) FROM $SHOP_DB.warehouse_webhooks WHERE webhook_id = '$id'),
	    (SELECT COUNT(*) FROM $SHOP_DB.warehouse_packed WHERE order_id = '$oid' AND webhook_id = '$id')" \
	    "1	1" "$s: its webhook-id recorded and the order packed, once"
	# The relay's redelivery: the same id, a new timestamp and signature.
	ts=$(date +%s)
	deliver "$url" "$id" "$ts" "v1,$(sign "$key_hex" "$id" "$ts" "$body")" "$body"
	expect_status 200 "$s: the same webhook-id again"
	r=$(rows "$id" "$oid")
	[[ $r == "1	1" ]] && ok "$s: still one row each" ||
	    fail "$s: the same webhook-id again" "webhook and packed rows: '$r'"
	# Its cancel: recorded, the packed row stays as it was.
	cid=${id}-c
	cbody=$(event order.cancelled "$oid")
	deliver "$url" "$cid" "$ts" "v1,$(sign "$key_hex" "$cid" "$ts" "$cbody")" "$cbody"
	expect_status 200 "$s: its order.cancelled"
	expect_sql "SELECT (SELECT COUNT(*) FROM $SHOP_DB.warehouse_webhooks WHERE webhook_id = '$cid'),
	    (SELECT COUNT(*) FROM $SHOP_DB.warehouse_packed WHERE order_id = '$oid')" \
	    "1	1" "$s: the cancel recorded, nothing packed twice"

	# Two signatures, the first made with another secret.
	new_ids
	body=$(event order.created "$oid")
	ts=$(date +%s)
	deliver "$url" "$id" "$ts" "v1,$(sign "$other_hex" "$id" "$ts" "$body") v1,$(sign "$key_hex" "$id" "$ts" "$body")" "$body"
	expect_status 200 "$s: two v1 signatures, the second one right"
	expect_sql "SELECT COUNT(*) FROM $SHOP_DB.warehouse_packed WHERE order_id = '$oid'" 1 \
	    "$s: packed once"

	# A tampered body: signed for one order, sent for another.
	new_ids
	ts=$(date +%s)
	deliver "$url" "$id" "$ts" "v1,$(sign "$key_hex" "$id" "$ts" "$(event order.created o-1)")" \
	    "$(event order.created "$oid")"
	refused "$s: a tampered body"

	# Signed right, 10 minutes ago (a replay of a captured delivery).
	new_ids
	body=$(event order.created "$oid")
	ts=$(($(date +%s) - 600))
	deliver "$url" "$id" "$ts" "v1,$(sign "$key_hex" "$id" "$ts" "$body")" "$body"
	refused "$s: a timestamp 10 minutes old"

	# Signed with another secret.
	new_ids
	body=$(event order.created "$oid")
	ts=$(date +%s)
	deliver "$url" "$id" "$ts" "v1,$(sign "$other_hex" "$id" "$ts" "$body")" "$body"
	refused "$s: a signature made with another secret"

	# No signature at all; a GET.
	new_ids
	body=$(event order.created "$oid")
	deliver "$url" "$id" "$(date +%s)" "" "$body"
	refused "$s: no webhook-signature"
	req GET "$url/warehouse.php"
	expect_status 405 "$s: GET"
done
finish
