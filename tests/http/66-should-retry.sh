#!/usr/bin/env bash
# Should-Retry (contract section 4): every answer to a POST, create and
# cancel, input errors included, carries Should-Retry: true exactly where
# sending the same key and body again may get another answer (503s, 409
# REQUEST_STATUS_UNCONFIRMED, out_of_stock = retryable), false where it
# cannot (201/200, replays, recorded final rejections, input errors,
# 409 key reused, 410, 404 ORDER_NOT_FOUND); Retry-After comes with
# true (on a 409 or 503), never with false.  GET never carries it.
# Through lighttpd and Apache, with keys and SKUs of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

# retry WANT WHAT: the answer's status line was checked; Should-Retry is
# WANT, and Retry-After (from the same table) comes with true on a 409 or
# 503, never with false.
retry() {
	local after
	expect_header should-retry "$1" "$2"
	after=$(hdr retry-after)
	if [[ $1 == false ]]; then
		[[ -z $after ]] && ok "$2: no Retry-After" ||
		    fail "$2: Retry-After" "'$after' with Should-Retry: false"
	elif [[ $STATUS == 409 || $STATUS == 503 ]]; then
		[[ $after =~ ^[1-9][0-9]*$ ]] && ok "$2: Retry-After $after" ||
		    fail "$2: Retry-After" "expected seconds, got '$after'"
	fi
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	sku=$(unique_key "T58-$s")
	set_stock "$sku" KRW 100 1
	body="{\"currency\":\"KRW\",\"items\":[{\"sku\":\"$sku\",\"qty\":1}],\"amount\":100}"

	key=$(unique_key "t58-$s-create")
	post "$url" "$ALICE" "$key" "$body"
	expect_status 201 "$s create"
	retry false "$s create 201"
	oid=$(jq -r .orderId <<<"$BODY")
	post "$url" "$ALICE" "$key" "$body"
	expect_header idempotent-replayed true "$s replay"
	retry false "$s replay"
	post "$url" "$ALICE" "$key" "${body/\"amount\":100/\"amount\":200}"
	expect_problem 409 IDEMPOTENCY_KEY_REUSED "$s another body"
	retry false "$s key reused"

	# A recorded final rejection, and its replay (the SKU has no stock left).
	k2=$(unique_key "t58-$s-oos")
	post "$url" "$ALICE" "$k2" "$body"
	expect_problem 409 OUT_OF_STOCK "$s recorded out of stock"
	retry false "$s recorded OUT_OF_STOCK"
	post "$url" "$ALICE" "$k2" "$body"
	expect_status 409 "$s recorded out of stock replayed"
	retry false "$s OUT_OF_STOCK replayed"
	k3=$(unique_key "t58-$s-amount")
	post "$url" "$ALICE" "$k3" "${body/\"amount\":100/\"amount\":7}"
	expect_problem 422 AMOUNT_MISMATCH "$s amount mismatch"
	retry false "$s recorded AMOUNT_MISMATCH"

	# Input errors, before any key is claimed.
	post "$url" "$ALICE" "$(unique_key "t58-$s-json")" '{"currency":'
	expect_problem 400 MALFORMED_JSON "$s malformed JSON"
	retry false "$s MALFORMED_JSON"
	req POST "$url$MOUNT" -u "$ALICE" -H 'Content-Type: application/json' \
	    --data-binary "$body"
	expect_problem 400 IDEMPOTENCY_KEY_MISSING "$s no key"
	retry false "$s IDEMPOTENCY_KEY_MISSING"
	req POST "$url$MOUNT" -u "$ALICE" -H "Idempotency-Key: $(unique_key "t58-$s-type")" \
	    -H 'Content-Type: text/plain' --data-binary "$body"
	expect_problem 415 UNSUPPORTED_MEDIA_TYPE "$s text/plain"
	retry false "$s UNSUPPORTED_MEDIA_TYPE"

	# Transient and unconfirmed: another answer may come.
	post "$url" "$ALICE" "$(unique_key "t58-$s-busy")" "$body" \
	    -H 'X-Idemorders-Fault: before_ledger_insert=transient'
	expect_problem 503 RETRY_LIMIT_REACHED "$s deadlocks every attempt"
	retry true "$s RETRY_LIMIT_REACHED"
	post "$url" "$ALICE" "$key" "$body" -H 'X-Idemorders-Fault: conflict_read=null'
	expect_problem 409 REQUEST_STATUS_UNCONFIRMED "$s owner unseen"
	retry true "$s REQUEST_STATUS_UNCONFIRMED"

	# Expired: never done again.
	sql "UPDATE idempotency_records SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR
	    WHERE principal_id = 'alice' AND idem_key = '$key'"
	post "$url" "$ALICE" "$key" "$body"
	expect_problem 410 IDEMPOTENCY_KEY_EXPIRED "$s expired key"
	retry false "$s IDEMPOTENCY_KEY_EXPIRED"

	# Cancel: 200, its replay, 404 recorded, a transient failure.
	ck=$(unique_key "t58-$s-cancel")
	cancel "$url" "$ALICE" "$ck" "$oid" '{}'
	expect_status 200 "$s cancel"
	retry false "$s cancel 200"
	cancel "$url" "$ALICE" "$ck" "$oid" '{}'
	expect_header idempotent-replayed true "$s cancel replay"
	retry false "$s cancel replay"
	cancel "$url" "$ALICE" "$(unique_key "t58-$s-none")" o-999999999999 '{}'
	expect_problem 404 ORDER_NOT_FOUND "$s cancel of no order"
	retry false "$s cancel ORDER_NOT_FOUND"
	cancel "$url" "$ALICE" "$(unique_key "t58-$s-cbusy")" "$oid" '{}' \
	    -H 'X-Idemorders-Fault: before_ledger_insert=transient'
	expect_status 503 "$s cancel deadlocks every attempt"
	retry true "$s cancel 503"

	# GET is not a POST: no Should-Retry.
	req GET "$url$MOUNT/$oid" -u "$ALICE"
	expect_status 200 "$s GET"
	expect_no_header should-retry "$s GET"
done
finish
