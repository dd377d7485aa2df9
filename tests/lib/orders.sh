# tests/lib/orders.sh -- order helpers shared by the HTTP test scripts.
# Sourced after tests/lib/http.sh.

# post URL USER KEY BODY [curl args...]: POST /orders with a JSON body.
post() {
	local url=$1 user=$2 key=$3 body=$4
	shift 4
	req POST "$url$MOUNT" -u "$user" -H "Idempotency-Key: $key" \
	    -H 'Content-Type: application/json' --data-binary "$body" "$@"
}

# cancel URL USER KEY ORDER_ID BODY [curl args...]: POST /orders/{id}/cancel.
cancel() {
	local url=$1 user=$2 key=$3 oid=$4 body=$5
	shift 5
	req POST "$url$MOUNT/$oid/cancel" -u "$user" -H "Idempotency-Key: $key" \
	    -H 'Content-Type: application/json' --data-binary "$body" "$@"
}

# create_and_replay URL USER KEY BODY REPLAY_BODY WHAT: a create (201),
# then REPLAY_BODY (the same order, written otherwise or not) with the
# same key: 201 again, Idempotent-Replayed: true, the same bytes.
create_and_replay() {
	local url=$1 user=$2 key=$3 body=$4 again=$5 what=$6 first
	post "$url" "$user" "$key" "$body"
	expect_status 201 "$what: create"
	first=$BODY
	post "$url" "$user" "$key" "$again"
	expect_status 201 "$what: replay"
	expect_header idempotent-replayed true "$what: replay"
	[[ $BODY == "$first" ]] && ok "$what: replay has the same bytes" ||
	    fail "$what: replay body" "'$BODY' != '$first'"
}

# set_stock SKU CURRENCY PRICE AVAILABLE: create or reset a stock row.
set_stock() {
	sql "INSERT INTO stock (sku, currency, unit_price, available)
	    VALUES ('$1', '$2', $3, $4) ON DUPLICATE KEY UPDATE
	    currency = VALUES(currency), unit_price = VALUES(unit_price),
	    available = VALUES(available)" ||
	    fail "set up stock $1" "INSERT failed"
}
