#!/usr/bin/env bash
# Final business rejections are recorded and replayed (design notes,
# verification step 5; contract section 4, policy out_of_stock = final):
# OUT_OF_STOCK (409), UNKNOWN_SKU (422), CURRENCY_MISMATCH (422) and
# AMOUNT_MISMATCH (422) each leave one FAILED_FINAL ledger row with the
# error's status and body, no order for the key and the stock unchanged;
# the same key replays the same status and byte-identical body with
# Idempotent-Replayed: true, even after a restock; the same key with another
# body is IDEMPOTENCY_KEY_REUSED.
# Through lighttpd and Apache proxy_fcgi, with fresh keys and SKUs of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

stock_of() {
	echo "SELECT available FROM stock WHERE sku = '$1'"
}

# expect_stock WHAT: this server's SKUs hold what they were given.
expect_stock() {
	expect_sql "SELECT GROUP_CONCAT(CONCAT(sku, '=', available) ORDER BY sku)
	    FROM stock WHERE sku IN ('$K', '$L', '$U')" "$K=5,$L=7,$U=3" \
	    "$1: stock unchanged"
}

# rejection SERVER NAME STATUS CODE DETAIL_WORD BODY
rejection() {
	local s=$1 name=$2 status=$3 code=$4 word=$5 body=$6 url key what sha
	url=$(url_of "$s")
	key=$(unique_key "t33-$s-$name")
	what="$s $name"
	post "$url" "$ALICE" "$key" "$body"
	expect_problem "$status" "$code" "$what"
	expect_header idempotency-key "$key" "$what"
	expect_no_header idempotent-replayed "$what"
	expect_no_header location "$what"
	expect_body_json '[.type, .title, .detail] | map(type == "string" and length > 0) | all' \
	    true "$what: type, title and detail"
	expect_body_json "(.detail | contains(\"$word\"))" true "$what: detail names $word"
	cp "$T_TMP/body" "$T_TMP/first.body"
	sha=$(sha256sum <"$T_TMP/body" | awk '{ print $1 }')

	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'
	    AND idempotency_key = '$key'" 0 "$what: no order"
	expect_sql "SELECT COUNT(*), MIN(operation), MIN(status), MIN(response_status),
	    COALESCE(MIN(resource_id), 'NULL') FROM idempotency_records
	    WHERE principal_id = 'alice' AND idem_key = '$key'" \
	    "1	create-order	FAILED_FINAL	$status	NULL" "$what: one FAILED_FINAL ledger row"
	expect_sql "SELECT SHA2(response_body, 256) FROM idempotency_records
	    WHERE principal_id = 'alice' AND idem_key = '$key'" "$sha" \
	    "$what: the ledger stores the exact body"
	expect_stock "$what"

	# The same key, the same body (reformatted): the same answer, replayed.
	what="$s $name, same key again"
	post "$url" "$ALICE" "$key" "$(printf '%s' "$body" | jq .)"
	expect_status "$status" "$what"
	expect_media_type application/problem+json "$what"
	expect_header idempotent-replayed true "$what"
	expect_header idempotency-key "$key" "$what"
	expect_header cache-control no-store "$what"
	if cmp -s "$T_TMP/first.body" "$T_TMP/body"; then
		ok "$what: body byte-identical to the first answer"
	else
		fail "$what: body differs from the first answer" \
		    "first: $(head -c 300 "$T_TMP/first.body")"
	fi
	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'
	    AND idempotency_key = '$key'" 0 "$what: no order"
	expect_sql "SELECT COUNT(*), MIN(status) FROM idempotency_records
	    WHERE principal_id = 'alice' AND idem_key = '$key'" \
	    "1	FAILED_FINAL" "$what: still one FAILED_FINAL ledger row"
	expect_stock "$what"

	# The same key with a valid body is not a way around the rejection.
	what="$s $name, same key with another (valid) body"
	post "$url" "$ALICE" "$key" '{"currency":"KRW","items":[{"sku":"'"$K"'","qty":1}],"amount":1000}'
	expect_problem 409 IDEMPOTENCY_KEY_REUSED "$what"
	expect_header idempotency-key "$key" "$what"
	expect_no_header idempotent-replayed "$what"
	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'
	    AND idempotency_key = '$key'" 0 "$what: no order"
	expect_stock "$what"
	LAST_KEY=$key
	LAST_BODY=$body
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	K=T33-$s-K
	L=T33-$s-L
	U=T33-$s-U
	set_stock "$K" KRW 1000 5
	set_stock "$L" KRW 400 7
	set_stock "$U" USD 300 3
	unknown=T33-$s-no-such-sku

	rejection "$s" out-of-stock 409 OUT_OF_STOCK "$K" \
	    '{"currency":"KRW","items":[{"sku":"'"$K"'","qty":6}],"amount":6000}'
	oos_key=$LAST_KEY oos_body=$LAST_BODY
	rejection "$s" out-of-stock-second-item 409 OUT_OF_STOCK "$L" \
	    '{"currency":"KRW","items":[{"sku":"'"$K"'","qty":5},{"sku":"'"$L"'","qty":8}],"amount":8200}'
	rejection "$s" unknown-sku 422 UNKNOWN_SKU "$unknown" \
	    '{"currency":"KRW","items":[{"sku":"'"$unknown"'","qty":1}],"amount":1000}'
	rejection "$s" unknown-sku-among-known 422 UNKNOWN_SKU "$unknown" \
	    '{"currency":"KRW","items":[{"sku":"'"$K"'","qty":1},{"sku":"'"$unknown"'","qty":1},{"sku":"'"$L"'","qty":1}],"amount":1400}'
	rejection "$s" currency-mismatch 422 CURRENCY_MISMATCH "$U" \
	    '{"currency":"KRW","items":[{"sku":"'"$U"'","qty":1}],"amount":300}'
	rejection "$s" currency-mismatch-mixed 422 CURRENCY_MISMATCH "$U" \
	    '{"currency":"KRW","items":[{"sku":"'"$K"'","qty":1},{"sku":"'"$U"'","qty":1}],"amount":1300}'
	rejection "$s" amount-mismatch 422 AMOUNT_MISMATCH amount \
	    '{"currency":"KRW","items":[{"sku":"'"$K"'","qty":2},{"sku":"'"$L"'","qty":1}],"amount":2399}'
	rejection "$s" amount-mismatch-zero 422 AMOUNT_MISMATCH amount \
	    '{"currency":"USD","items":[{"sku":"'"$U"'","qty":1}],"amount":0}'

	# A restock does not change a final rejection: the key still replays
	# the 409, and no order is made.
	what="$s out-of-stock key after a restock"
	sql "UPDATE stock SET available = 100 WHERE sku = '$K'"
	post "$url" "$ALICE" "$oos_key" "$oos_body"
	expect_problem 409 OUT_OF_STOCK "$what"
	expect_header idempotent-replayed true "$what"
	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'
	    AND idempotency_key = '$oos_key'" 0 "$what: no order"
	expect_sql "$(stock_of "$K")" 100 "$what: stock untouched"
	# The same body with a fresh key now succeeds.
	what="$s out-of-stock body with a fresh key after the restock"
	post "$url" "$ALICE" "$(unique_key "t33-$s-restocked")" "$oos_body"
	expect_status 201 "$what"
	expect_sql "$(stock_of "$K")" 94 "$what: stock"
done

finish
