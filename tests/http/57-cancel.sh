#!/usr/bin/env bash
# POST /orders/{orderId}/cancel (contract section 4a): one key, one cancel.
#  - a cancel answers 200 with the order CANCELLED (as GET then shows it,
#    byte for byte) and puts every item's quantity back once;
#  - the same key replays byte for byte and restocks nothing more; an
#    empty body and {} are the same request; another reason is 409
#    IDEMPOTENCY_KEY_REUSED;
#  - another key on a cancelled order: 409 ORDER_ALREADY_CANCELLED,
#    recorded and replayed; another principal's order: 404
#    ORDER_NOT_FOUND, recorded;
#  - bad requests get their specific 4xx and leave nothing in the DB (a
#    malformed order id is a 404, recorded as an unknown order's);
#    other methods 405 with Allow: POST;
#  - 8 parallel cancels with one key: one restock, one body; a cancel
#    racing 12 creates on the same SKU: the stock stays consistent
#    (available + the quantity of every live order = what was stocked).
# Through lighttpd and Apache proxy_fcgi, with fresh keys and SKUs of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

stock_of() {
	sql "SELECT available FROM stock WHERE sku = '$1'"
}

# make_order URL SKU_C SKU_D: 3 x C (100) and 2 x D (7); prints the id.
make_order() {
	post "$1" "$ALICE" "$(unique_key t57-create)" '{"currency":"KRW","items":[{"sku":"'"$2"'","qty":3},{"sku":"'"$3"'","qty":2}],"amount":314,"note":"n"}'
	[[ $STATUS == 201 ]] || fail "create an order to cancel" "status $STATUS"
	printf '%s' "$BODY" | jq -r .orderId
}

ledger_of() {	# PRINCIPAL KEY
	sql "SELECT COUNT(*), MIN(operation), MIN(status), MIN(response_status),
	    IFNULL(MIN(resource_id), '-') FROM idempotency_records
	    WHERE principal_id = '$1' AND idem_key = '$2'"
}

order_status() {
	sql "SELECT status, cancelled_at IS NOT NULL FROM orders WHERE id = ${1#o-}"
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	if [[ $3 == "$2" ]]; then ok "$1 = $2"; else fail "$1" "expected '$2', got '$3'"; fi
}

# race DIR N FUNCTION [ARGS...]: "FUNCTION DIR I ARGS..." for I in
# 0..N-1, released together from a barrier (a FIFO); wait for all.
race() {
	local dir=$1 n=$2 fn=$3 i fd t pids=()
	shift 3
	mkdir -p "$dir"
	mkfifo "$dir/go"
	exec {fd}<>"$dir/go"
	for ((i = 0; i < n; i++)); do
		(
			: >"$dir/$i.ready"
			read -r _ <"$dir/go"
			"$fn" "$dir" "$i" "$@"
		) &
		pids+=($!)
	done
	for ((t = 0; t < 1000; t++)); do
		[[ $(find "$dir" -name '*.ready' | wc -l) -ge $n ]] && break
		sleep 0.01
	done
	printf '%*s' "$n" '' | tr ' ' '\n' >&"$fd"
	wait "${pids[@]}"
	exec {fd}>&-
}

# one_cancel DIR I URL KEY ORDER_ID: status in DIR/I.code, body, headers.
one_cancel() {
	curl -s -S -o "$1/$2.body" -D "$1/$2.head" -w '%{http_code}' \
	    --max-time 50 -u "$ALICE" -H "Idempotency-Key: $4" \
	    -H 'Content-Type: application/json' --data-binary '{"reason":"race"}' \
	    "$3$MOUNT/$5/cancel" >"$1/$2.code" 2>"$1/$2.err"
}

# cancel_or_create DIR I URL SKU ORDER_ID PREFIX: racer 0 cancels the
# order, the others create an order of one unit each.
cancel_or_create() {
	if [[ $2 == 0 ]]; then
		one_cancel "$1" 0 "$3" "$6-cancel" "$5"
		return
	fi
	curl -s -S -o "$1/$2.body" -D "$1/$2.head" -w '%{http_code}' \
	    --max-time 50 -u "$ALICE" -H "Idempotency-Key: $6-$2" \
	    -H 'Content-Type: application/json' \
	    --data-binary '{"currency":"KRW","items":[{"sku":"'"$4"'","qty":1}],"amount":100}' \
	    "$3$MOUNT" >"$1/$2.code" 2>"$1/$2.err"
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	run=$(unique_key "T57-$s")
	C=$run-C
	D=$run-D
	set_stock "$C" KRW 100 50
	set_stock "$D" KRW 7 50

	# ---- a cancel, its replay, another body --------------------------
	oid=$(make_order "$url" "$C" "$D")
	expect_eq "$s order created: stock of C" 47 "$(stock_of "$C")"
	key=$(unique_key "t57-$s-cancel")
	what="$s cancel $oid"
	cancel "$url" "$ALICE" "$key" "$oid" '{"reason":"changed my mind"}'
	expect_status 200 "$what"
	expect_media_type application/json "$what"
	expect_header idempotency-key "$key" "$what"
	expect_no_header idempotent-replayed "$what"
	expect_body_json .orderId "$oid" "$what"
	expect_body_json .status CANCELLED "$what"
	expect_body_json '.cancelledAt | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")' true "$what"
	expect_body_json '[.items[] | "\(.sku)x\(.qty)"] | join(",")' "${C}x3,${D}x2" "$what"
	first=$BODY
	expect_eq "$what: stock of C" 50 "$(stock_of "$C")"
	expect_eq "$what: stock of D" 50 "$(stock_of "$D")"
	expect_sql "SELECT restocked FROM stock WHERE sku = '$C'" 3 "$what: restocked C"
	expect_eq "$what: order" "CANCELLED	1" "$(order_status "$oid")"
	expect_eq "$what: ledger" "1	cancel-order	SUCCEEDED	200	$oid" "$(ledger_of alice "$key")"

	req GET "$url$MOUNT/$oid" -u "$ALICE"
	expect_status 200 "$s GET $oid"
	[[ $BODY == "$first" ]] && ok "$s GET $oid: the cancel's body, byte for byte" ||
	    fail "$s GET $oid: body" "'$BODY' != '$first'"

	cancel "$url" "$ALICE" "$key" "$oid" '{ "reason" : "changed my mind" }'
	expect_status 200 "$what: replay"
	expect_header idempotent-replayed true "$what: replay"
	[[ $BODY == "$first" ]] && ok "$what: replay has the same bytes" ||
	    fail "$what: replay body" "'$BODY' != '$first'"
	expect_eq "$what: replay: stock of C" 50 "$(stock_of "$C")"

	cancel "$url" "$ALICE" "$key" "$oid" '{"reason":"another"}'
	expect_problem 409 IDEMPOTENCY_KEY_REUSED "$what: another reason"
	expect_eq "$what: another reason: stock of C" 50 "$(stock_of "$C")"

	# ---- another key on the cancelled order --------------------------
	key2=$(unique_key "t57-$s-again")
	req POST "$url$MOUNT/$oid/cancel" -u "$ALICE" -H "Idempotency-Key: $key2" \
	    -H 'Content-Type:' --data-binary ''
	expect_problem 409 ORDER_ALREADY_CANCELLED "$s another key on $oid"
	again=$BODY
	expect_eq "$s another key: ledger" "1	cancel-order	FAILED_FINAL	409	-" "$(ledger_of alice "$key2")"
	cancel "$url" "$ALICE" "$key2" "$oid" '{}'
	expect_status 409 "$s another key, replayed ({} = no body)"
	expect_header idempotent-replayed true "$s another key, replayed"
	[[ $BODY == "$again" ]] && ok "$s another key: replay has the same bytes" ||
	    fail "$s another key: replay body" "'$BODY' != '$again'"
	expect_eq "$s another key: stock of C" 50 "$(stock_of "$C")"

	# ---- another principal, bad requests ----------------------------
	oid2=$(make_order "$url" "$C" "$D")
	key=$(unique_key "t57-$s-bob")
	cancel "$url" "$BOB" "$key" "$oid2" ''
	expect_problem 404 ORDER_NOT_FOUND "$s bob cancels alice's $oid2"
	expect_eq "$s bob: ledger" "1	cancel-order	FAILED_FINAL	404	-" "$(ledger_of bob "$key")"
	expect_eq "$s bob: alice's order" "CREATED	0" "$(order_status "$oid2")"
	expect_eq "$s bob: stock of C" 47 "$(stock_of "$C")"

	bad=$(unique_key "t57-$s-bad")
	req POST "$url$MOUNT/$oid2/cancel" -u "$ALICE" -H 'Content-Type: application/json' --data-binary '{}'
	expect_problem 400 IDEMPOTENCY_KEY_MISSING "$s cancel without a key"
	req POST "$url$MOUNT/$oid2/cancel" -u "$ALICE" -H 'Idempotency-Key: a b' -H 'Content-Type: application/json' --data-binary '{}'
	expect_problem 400 IDEMPOTENCY_KEY_INVALID "$s cancel with a bad key"
	req POST "$url$MOUNT/$oid2/cancel" -u "$ALICE" -H "Idempotency-Key: $bad" \
	    -H 'Content-Type: text/plain' --data-binary '{}'
	expect_problem 415 UNSUPPORTED_MEDIA_TYPE "$s cancel as text/plain"
	cancel "$url" "$ALICE" "$bad" "$oid2" 'reason=x'
	expect_problem 400 MALFORMED_JSON "$s cancel, not JSON"
	cancel "$url" "$ALICE" "$bad" "$oid2" '["reason"]'
	expect_problem 400 MALFORMED_JSON "$s cancel, not an object"
	cancel "$url" "$ALICE" "$bad" "$oid2" '{"reason":5}'
	expect_problem 400 VALIDATION_FAILED "$s cancel, reason a number"
	expect_body_json '.detail | contains("reason")' true "$s cancel, reason a number"
	cancel "$url" "$ALICE" "$bad" "$oid2" '{"why":"x"}'
	expect_problem 400 VALIDATION_FAILED "$s cancel, unknown member"
	cancel "$url" "$ALICE" "$bad" "$oid2" "{\"reason\":\"$(printf 'x%.0s' {1..501})\"}"
	expect_problem 400 VALIDATION_FAILED "$s cancel, reason of 501 bytes"
	# A malformed id is answered by the transaction (recorded: 77).
	cancel "$url" "$ALICE" "$(unique_key "t57-$s-malformed")" "x-1" '{}'
	expect_problem 404 ORDER_NOT_FOUND "$s cancel of a malformed id"
	expect_eq "$s bad requests: ledger rows of their key" "0	NULL	NULL	NULL	-" "$(ledger_of alice "$bad")"
	expect_eq "$s bad requests: the order" "CREATED	0" "$(order_status "$oid2")"
	for m in GET PUT DELETE; do
		req "$m" "$url$MOUNT/$oid2/cancel" -u "$ALICE"
		expect_problem 405 METHOD_NOT_ALLOWED "$s $m on a cancel"
		expect_header allow POST "$s $m on a cancel"
	done

	# A reason of exactly 500 bytes, without a body afterwards: the same.
	key=$(unique_key "t57-$s-500")
	cancel "$url" "$ALICE" "$key" "$oid2" "{\"reason\":\"$(printf 'y%.0s' {1..500})\"}"
	expect_status 200 "$s cancel with a reason of 500 bytes"
	expect_eq "$s reason of 500 bytes: stock of C" 50 "$(stock_of "$C")"

	# ---- 8 parallel cancels, one key --------------------------------
	oid3=$(make_order "$url" "$C" "$D")
	key=$(unique_key "t57-$s-race")
	dir=$T_TMP/race-$s
	n=8
	what="$s $n parallel cancels of $oid3 with one key"
	race "$dir" "$n" one_cancel "$url" "$key" "$oid3"
	codes=$(for f in "$dir"/*.code; do cat "$f"; echo; done)
	expect_eq "$what: answers 200" "$n" "$(printf '%s\n' "$codes" | grep -cx 200)"
	expect_eq "$what: distinct bodies" 1 "$(sha256sum "$dir"/*.body | cut -d' ' -f1 | sort -u | wc -l)"
	replays=$(cat "$dir"/*.head | tr -d '\r' | grep -ic '^idempotent-replayed: true$')
	expect_eq "$what: replayed answers" $((n - 1)) "$replays"
	expect_eq "$what: stock of C" 50 "$(stock_of "$C")"
	expect_eq "$what: stock of D" 50 "$(stock_of "$D")"
	expect_eq "$what: ledger" "1	cancel-order	SUCCEEDED	200	$oid3" "$(ledger_of alice "$key")"

	# ---- a cancel racing creates on the same SKU ---------------------
	E=$run-E
	set_stock "$E" KRW 100 10
	post "$url" "$ALICE" "$(unique_key t57-create)" '{"currency":"KRW","items":[{"sku":"'"$E"'","qty":5}],"amount":500}'
	oid4=$(printf '%s' "$BODY" | jq -r .orderId)
	dir=$T_TMP/mixed-$s
	n=13
	what="$s a cancel of $oid4 racing 12 creates on $E"
	race "$dir" "$n" cancel_or_create "$url" "$E" "$oid4" "$(unique_key "t57-$s-mixed")"
	expect_eq "$what: the cancel" 200 "$(cat "$dir/0.code")"
	created=0 refused=0 other=
	for ((i = 1; i < n; i++)); do
		c=$(cat "$dir/$i.code")
		if [[ $c == 201 ]]; then
			created=$((created + 1))
		elif [[ $c == 409 && $(jq -r .code "$dir/$i.body") == OUT_OF_STOCK ]]; then
			refused=$((refused + 1))
		else
			other+="$c "
		fi
	done
	expect_eq "$what: answers other than 201 or 409 OUT_OF_STOCK" "" "$other"
	[[ $created -ge 5 ]] && ok "$what: $created creates, $refused out of stock" ||
	    fail "$what: creates" "only $created of 12 (5 units were free before the cancel)"
	expect_eq "$what: stock of E" $((10 - created)) "$(stock_of "$E")"
	expect_sql "SELECT s.available + IFNULL((SELECT SUM(i.qty) FROM order_items i
	    JOIN orders o ON o.id = i.order_id WHERE i.sku = s.sku
	    AND o.status = 'CREATED'), 0) FROM stock s WHERE s.sku = '$E'" 10 \
	    "$what: available + live orders"
	expect_sql "SELECT s.available + (SELECT SUM(qty) FROM order_items WHERE sku = s.sku)
	    - s.restocked FROM stock s WHERE s.sku = '$E'" 10 "$what: available + ordered - restocked"
done

finish
