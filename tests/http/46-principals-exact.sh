#!/usr/bin/env bash
# Principals compare byte for byte, with no padding (contract section 5):
# "alice " (a trailing space), "alice" + U+00A0 (no-break space) and
# "Alice" are three principals other than "alice".  Through lighttpd and
# Apache (users of the stack's htpasswd) and straight on the FastCGI
# socket (cgi-fcgi, REMOTE_USER as given):
#  - each look-alike POSTing alice's key with alice's body gets an order
#    of its own (201, not a replay, not 409 IDEMPOTENCY_KEY_REUSED);
#  - each has its own ledger row and order, stored with its exact bytes;
#  - GET of alice's order by a look-alike is 404 ORDER_NOT_FOUND, and of
#    a look-alike's order by alice too.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

NBSP=$(printf '\302\240')
NAMES=("alice " "alice$NBSP" "Alice")
PASSWORDS=(alice-space-secret alice-nbsp-secret Alice-secret)
LABELS=("alice+space" "alice+nbsp" "Alice")

hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n' | tr '[:lower:]' '[:upper:]'; }

# principals_of KEY: the hex of each principal with a ledger row / an
# order for KEY, sorted (hex: no collation can merge them here).
ledger_principals() {
	sql "SELECT HEX(principal_id) FROM idempotency_records WHERE
	    idem_key = '$1' ORDER BY 1" | tr '\n' ' '
}
order_principals() {
	sql "SELECT HEX(principal_id) FROM orders WHERE
	    idempotency_key = '$1' ORDER BY 1" | tr '\n' ' '
}
expected_principals() {
	local n
	for n in alice "${NAMES[@]}"; do hex "$n"; echo; done | LC_ALL=C sort | tr '\n' ' '
}

# fcgi_post USER KEY BODY: POST straight on the socket.
fcgi_post() {
	fcgi_req -d "$3" POST "$MOUNT" REMOTE_USER="$1" AUTH_TYPE=Basic \
	    CONTENT_TYPE=application/json HTTP_IDEMPOTENCY_KEY="$2"
}
fcgi_get() {
	fcgi_req GET "$MOUNT/$2" REMOTE_USER="$1" AUTH_TYPE=Basic
}

for via in lighttpd apache socket; do
	new_sku sku T46-$via 100
	key=$(unique_key "t46-$via")
	body=$(order_body "$sku" 1)
	if [[ $via == socket ]]; then
		fcgi_post alice "$key" "$body"
	else
		url=$(url_of "$via")
		post_order "$url" "$key" "$body"
	fi
	expect_status 201 "$via alice"
	a_oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	for i in 0 1 2; do
		name=${NAMES[$i]} w="$via ${LABELS[$i]}"
		if [[ $via == socket ]]; then
			fcgi_post "$name" "$key" "$body"
		else
			post_order "$url" "$key" "$body" "" "$name:${PASSWORDS[$i]}"
		fi
		expect_status 201 "$w: alice's key and body, an order of its own"
		expect_no_header idempotent-replayed "$w"
		oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
		[[ -n $oid && $oid != null && $oid != "$a_oid" ]] &&
		    ok "$w: its own order $oid" ||
		    fail "$w: its own order" "orderId '$oid' (alice's is $a_oid)"
		if [[ $via == socket ]]; then
			fcgi_get "$name" "$a_oid"
		else
			req GET "$url$MOUNT/$a_oid" -u "$name:${PASSWORDS[$i]}"
		fi
		expect_problem 404 ORDER_NOT_FOUND "$w: GET alice's order"
		if [[ -n $oid && $oid != null && $oid != "$a_oid" ]]; then
			if [[ $via == socket ]]; then
				fcgi_get alice "$oid"
			else
				req GET "$url$MOUNT/$oid" -u "$ALICE"
			fi
			expect_problem 404 ORDER_NOT_FOUND "$via alice: GET the order of ${LABELS[$i]}"
		fi
	done
	expect_sql_value "$via: one ledger row per principal, exact bytes" \
	    "$(expected_principals)" "$(ledger_principals "$key")"
	expect_sql_value "$via: one order per principal, exact bytes" \
	    "$(expected_principals)" "$(order_principals "$key")"
	expect_sql_value "$via: stock" 96 "$(stock_of "$sku")"
done
finish
