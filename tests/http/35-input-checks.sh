#!/usr/bin/env bash
# The request checks of POST /orders (contract section 3) answer before any
# database write: none of them leaves a ledger row for its key.
#  - Idempotency-Key: missing 400 IDEMPOTENCY_KEY_MISSING; empty, over 255
#    bytes or not visible ASCII 400 IDEMPOTENCY_KEY_INVALID; 255 bytes is
#    accepted; the RFC 8941 string "abc" names the same key as bare abc;
#  - Content-Type other than application/json: 415 UNSUPPORTED_MEDIA_TYPE;
#  - body over 64 KiB: 413 PAYLOAD_TOO_LARGE (64 KiB exactly is accepted);
#  - not JSON, not an object, trailing garbage, bad UTF-8: 400
#    MALFORMED_JSON;
#  - schema violations: 400 VALIDATION_FAILED with a detail naming the
#    field (and the limits themselves are accepted).
# Every answer to POST echoes the Idempotency-Key it was sent and has
# Cache-Control: no-store.
# Through lighttpd and Apache proxy_fcgi, with fresh keys and SKUs of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

ledger_count() {	# key
	echo "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'
	    AND idem_key = '$1'"
}

# expect_detail_names WORD WHAT
expect_detail_names() {
	local d
	d=$(printf '%s' "$BODY" | jq -r '.detail // empty' 2>/dev/null)
	if [[ -n $d && $d == *"$1"* ]]; then
		ok "$2: detail names $1"
	else
		fail "$2: detail" "expected it to name '$1', got '$d'"
	fi
}

# expect_unrecorded KEY WHAT: no ledger row, no order for KEY.
expect_unrecorded() {
	expect_sql "$(ledger_count "$1")" 0 "$2: no ledger row"
}

# post_json URL KEY BODY [curl args...]
post_json() {
	local url=$1 key=$2 body=$3
	shift 3
	req POST "$url$MOUNT" -u "$ALICE" -H "Idempotency-Key: $key" \
	    -H 'Content-Type: application/json' --data-binary "$body" "$@"
}

# refused URL NAME STATUS CODE WORD BODY: a well-keyed request whose body
# is refused; checks the problem, the echo, the detail and the ledger.
refused() {
	local url=$1 name=$2 status=$3 code=$4 word=$5 body=$6 key what
	key=$(unique_key "t35-$s-$name")
	what="$s $name"
	post_json "$url" "$key" "$body"
	expect_problem "$status" "$code" "$what"
	expect_header idempotency-key "$key" "$what"
	[[ -n $word ]] && expect_detail_names "$word" "$what"
	expect_unrecorded "$key" "$what"
}

# accepted URL NAME BODY [CONTENT-TYPE]: a valid request, created; a BODY
# of @FILE sends the file.
accepted() {
	local url=$1 name=$2 body=$3 ct=${4:-application/json} key what
	key=$(unique_key "t35-$s-$name")
	what="$s $name"
	req POST "$url$MOUNT" -u "$ALICE" -H "Idempotency-Key: $key" \
	    -H "Content-Type: $ct" --data-binary "$body"
	expect_status 201 "$what"
	expect_header idempotency-key "$key" "$what"
	expect_header cache-control no-store "$what"
	expect_sql "$(ledger_count "$key")" 1 "$what: one ledger row"
}

# repeat STRING N: STRING N times.
repeat() {
	local out='' i
	for ((i = 0; i < $2; i++)); do out+=$1; done
	printf '%s' "$out"
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	V=T35-$s-V
	set_stock "$V" KRW 100 1000000
	valid='{"currency":"KRW","items":[{"sku":"'"$V"'","qty":1}],"amount":100}'

	# ---- Idempotency-Key ---------------------------------------------------
	before=$(sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'")
	what="$s no Idempotency-Key"
	req POST "$url$MOUNT" -u "$ALICE" -H 'Content-Type: application/json' \
	    --data-binary "$valid"
	expect_problem 400 IDEMPOTENCY_KEY_MISSING "$what"
	expect_no_header idempotency-key "$what"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'" \
	    "$before" "$what: no new ledger row"

	what="$s empty Idempotency-Key"
	req POST "$url$MOUNT" -u "$ALICE" -H 'Idempotency-Key;' \
	    -H 'Content-Type: application/json' --data-binary "$valid"
	if [[ $s == lighttpd ]]; then
		# lighttpd passes no HTTP_* variable for an empty header
		# (http_cgi_headers() skips empty values): the responder
		# sees no key at all.  The empty key itself is checked on the
		# socket below.
		expect_status 400 "$what"
		expect_body_json .code IDEMPOTENCY_KEY_MISSING "$what (dropped by lighttpd)"
		expect_header cache-control no-store "$what"
	else
		expect_problem 400 IDEMPOTENCY_KEY_INVALID "$what"
		expect_header idempotency-key "" "$what"
	fi
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'" \
	    "$before" "$what: no new ledger row"

	what="$s Idempotency-Key of blanks"
	req POST "$url$MOUNT" -u "$ALICE" -H 'Idempotency-Key:    	 ' \
	    -H 'Content-Type: application/json' --data-binary "$valid"
	# Blanks only: the web server may drop the header (then MISSING);
	# what it must never be is a key.
	if [[ $STATUS == 400 && $(printf '%s' "$BODY" | jq -r .code 2>/dev/null) =~ ^IDEMPOTENCY_KEY_(INVALID|MISSING)$ ]]; then
		ok "$what: 400 $(printf '%s' "$BODY" | jq -r .code)"
	else
		fail "$what" "expected 400 IDEMPOTENCY_KEY_INVALID or _MISSING"
	fi
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'" \
	    "$before" "$what: no new ledger row"

	what="$s quoted empty Idempotency-Key"
	post_json "$url" '""' "$valid"
	expect_problem 400 IDEMPOTENCY_KEY_INVALID "$what"
	expect_header idempotency-key '""' "$what"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'" \
	    "$before" "$what: no new ledger row"

	k=$(unique_key "t35-$s-len")
	k256=$k$(repeat x $((256 - ${#k})))
	k255=${k256:0:255}
	what="$s 256-byte Idempotency-Key"
	post_json "$url" "$k256" "$valid"
	expect_problem 400 IDEMPOTENCY_KEY_INVALID "$what"
	expect_header idempotency-key "$k256" "$what"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'
	    AND idem_key LIKE '$k%'" 0 "$what: no ledger row"
	what="$s 256-byte quoted Idempotency-Key"
	post_json "$url" "\"$k256\"" "$valid"
	expect_problem 400 IDEMPOTENCY_KEY_INVALID "$what"
	what="$s 255-byte Idempotency-Key"
	post_json "$url" "$k255" "$valid"
	expect_status 201 "$what"
	expect_header idempotency-key "$k255" "$what"
	expect_header cache-control no-store "$what"
	expect_sql "SELECT COUNT(*), MIN(LENGTH(idem_key)), MIN(status) FROM idempotency_records
	    WHERE principal_id = 'alice' AND idem_key = '$k255'" "1	255	SUCCEEDED" \
	    "$what: one ledger row with the whole key"
	post_json "$url" "$k255" "$valid"
	expect_status 201 "$what, again"
	expect_header idempotent-replayed true "$what, again"

	k=$(unique_key "t35-$s-sp")
	what="$s Idempotency-Key with a space inside"
	post_json "$url" "${k}a b" "$valid"
	expect_problem 400 IDEMPOTENCY_KEY_INVALID "$what"
	expect_header idempotency-key "${k}a b" "$what"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'
	    AND idem_key LIKE '$k%'" 0 "$what: no ledger row"
	k=$(unique_key "t35-$s-utf8")
	what="$s Idempotency-Key with non-ASCII bytes"
	post_json "$url" "${k}-ключ" "$valid"
	expect_problem 400 IDEMPOTENCY_KEY_INVALID "$what"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'
	    AND idem_key LIKE '$k%'" 0 "$what: no ledger row"
	k=$(unique_key "t35-$s-badq")
	what="$s quoted Idempotency-Key with data after the quote"
	post_json "$url" "\"$k\"x" "$valid"
	expect_problem 400 IDEMPOTENCY_KEY_INVALID "$what"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'
	    AND idem_key LIKE '%$k%'" 0 "$what: no ledger row"

	# Bare, then quoted: one key.
	k=$(unique_key "t35-$s-bare")
	what="$s bare key $k"
	post_json "$url" "$k" "$valid"
	expect_status 201 "$what"
	expect_no_header idempotent-replayed "$what"
	cp "$T_TMP/body" "$T_TMP/bare.body"
	what="$s the same key quoted"
	post_json "$url" "\"$k\"" "$valid"
	expect_status 201 "$what"
	expect_header idempotent-replayed true "$what"
	expect_header idempotency-key "\"$k\"" "$what"
	cmp -s "$T_TMP/bare.body" "$T_TMP/body" && ok "$what: byte-identical body" ||
	    fail "$what: body differs" "$(head -c 300 "$T_TMP/bare.body")"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'
	    AND idem_key IN ('$k', '\"$k\"')" 1 "$what: one ledger row"
	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'
	    AND idempotency_key IN ('$k', '\"$k\"')" 1 "$what: one order"
	# Quoted, then bare: the ledger holds the unquoted key.
	k=$(unique_key "t35-$s-quoted")
	what="$s quoted key \"$k\""
	post_json "$url" "\"$k\"" "$valid"
	expect_status 201 "$what"
	expect_header idempotency-key "\"$k\"" "$what"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'
	    AND idem_key = '$k'" 1 "$what: the ledger row holds the bare key"
	what="$s the same key bare"
	post_json "$url" "$k" "$valid"
	expect_status 201 "$what"
	expect_header idempotent-replayed true "$what"
	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'
	    AND idempotency_key = '$k'" 1 "$what: one order"

	# ---- Content-Type ------------------------------------------------------
	for ct in text/plain application/x-www-form-urlencoded \
	    application/jsonx application/json-patch+json text/json; do
		k=$(unique_key "t35-$s-ct")
		what="$s Content-Type: $ct"
		req POST "$url$MOUNT" -u "$ALICE" -H "Idempotency-Key: $k" \
		    -H "Content-Type: $ct" --data-binary "$valid"
		expect_problem 415 UNSUPPORTED_MEDIA_TYPE "$what"
		expect_header idempotency-key "$k" "$what"
		expect_unrecorded "$k" "$what"
	done
	k=$(unique_key "t35-$s-noct")
	what="$s no Content-Type"
	req POST "$url$MOUNT" -u "$ALICE" -H "Idempotency-Key: $k" \
	    -H 'Content-Type:' --data-binary "$valid"
	expect_problem 415 UNSUPPORTED_MEDIA_TYPE "$what"
	expect_header idempotency-key "$k" "$what"
	expect_unrecorded "$k" "$what"
	accepted "$url" ct-params "$valid" 'application/json; charset=utf-8'
	accepted "$url" ct-upper-case "$valid" 'APPLICATION/JSON'

	# ---- body size ---------------------------------------------------------
	# A valid order padded with blanks to exactly N bytes.
	pad_to() {
		local n=$1 b=$valid
		printf '%s' "$b"
		head -c $((n - ${#b})) /dev/zero | tr '\0' ' '
	}
	pad_to 65537 >"$T_TMP/big"
	k=$(unique_key "t35-$s-big")
	what="$s body of 65537 bytes"
	req POST "$url$MOUNT" -u "$ALICE" -H "Idempotency-Key: $k" \
	    -H 'Content-Type: application/json' --data-binary @"$T_TMP/big"
	expect_problem 413 PAYLOAD_TOO_LARGE "$what"
	expect_header idempotency-key "$k" "$what"
	expect_unrecorded "$k" "$what"
	pad_to $((1024 * 1024)) >"$T_TMP/huge"
	k=$(unique_key "t35-$s-huge")
	what="$s body of 1 MiB"
	req POST "$url$MOUNT" -u "$ALICE" -H "Idempotency-Key: $k" \
	    -H 'Content-Type: application/json' --data-binary @"$T_TMP/huge"
	expect_problem 413 PAYLOAD_TOO_LARGE "$what"
	expect_unrecorded "$k" "$what"
	pad_to 65536 >"$T_TMP/max"
	[[ $(wc -c <"$T_TMP/max") -eq 65536 ]] || fail "$s 64 KiB body" "built $(wc -c <"$T_TMP/max") bytes"
	accepted "$url" body-64KiB @"$T_TMP/max"

	# ---- malformed JSON ----------------------------------------------------
	refused "$url" truncated 400 MALFORMED_JSON "" '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":1}],"amount":'
	refused "$url" trailing-garbage 400 MALFORMED_JSON "" "$valid x"
	refused "$url" two-objects 400 MALFORMED_JSON "" "$valid$valid"
	refused "$url" trailing-comma 400 MALFORMED_JSON "" '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":1}],"amount":100,}'
	refused "$url" single-quotes 400 MALFORMED_JSON "" "{'currency':'KRW','items':[{'sku':'$V','qty':1}],'amount':100}"
	refused "$url" comment 400 MALFORMED_JSON "" '{"currency":"KRW",/* c */"items":[{"sku":"'"$V"'","qty":1}],"amount":100}'
	refused "$url" array 400 MALFORMED_JSON "" '[]'
	refused "$url" string 400 MALFORMED_JSON "" '"order"'
	refused "$url" number 400 MALFORMED_JSON "" '100'
	refused "$url" empty-body 400 MALFORMED_JSON "" ''
	refused "$url" bad-utf8 400 MALFORMED_JSON "" "$(printf '{"currency":"KRW","items":[{"sku":"%s","qty":1}],"amount":100,"note":"\xff\xfe"}' "$V")"
	refused "$url" nan 400 MALFORMED_JSON "" '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":1}],"amount":NaN}'

	# ---- schema violations --------------------------------------------------
	item='{"sku":"'"$V"'","qty":1}'
	refused "$url" unknown-member 400 VALIDATION_FAILED coupon '{"currency":"KRW","items":['"$item"'],"amount":100,"coupon":"FREE"}'
	refused "$url" unknown-item-member 400 VALIDATION_FAILED price '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":1,"price":100}],"amount":100}'
	refused "$url" qty-0 400 VALIDATION_FAILED 'items[0].qty' '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":0}],"amount":0}'
	refused "$url" qty-negative 400 VALIDATION_FAILED 'items[0].qty' '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":-1}],"amount":100}'
	refused "$url" qty-10001 400 VALIDATION_FAILED 'items[0].qty' '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":10001}],"amount":1000100}'
	refused "$url" qty-2.0 400 VALIDATION_FAILED 'items[0].qty' '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":2.0}],"amount":200}'
	refused "$url" qty-2e0 400 VALIDATION_FAILED 'items[0].qty' '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":2e0}],"amount":200}'
	refused "$url" qty-string 400 VALIDATION_FAILED 'items[0].qty' '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":"2"}],"amount":200}'
	refused "$url" qty-missing 400 VALIDATION_FAILED 'items[0].qty' '{"currency":"KRW","items":[{"sku":"'"$V"'"}],"amount":100}'
	refused "$url" qty-second-item 400 VALIDATION_FAILED 'items[1].qty' '{"currency":"KRW","items":['"$item"',{"sku":"'$V'-2","qty":0}],"amount":100}'
	many=$(for i in $(seq -w 0 100); do printf '{"sku":"%s-%s","qty":1},' "$V" "$i"; done)
	refused "$url" 101-items 400 VALIDATION_FAILED items '{"currency":"KRW","items":['"${many%,}"'],"amount":10100}'
	refused "$url" no-items 400 VALIDATION_FAILED items '{"currency":"KRW","items":[],"amount":0}'
	refused "$url" items-missing 400 VALIDATION_FAILED items '{"currency":"KRW","amount":0}'
	refused "$url" items-object 400 VALIDATION_FAILED items '{"currency":"KRW","items":'"$item"',"amount":100}'
	refused "$url" item-not-object 400 VALIDATION_FAILED 'items[0]' '{"currency":"KRW","items":["'"$V"'"],"amount":100}'
	refused "$url" duplicate-sku 400 VALIDATION_FAILED 'items[1].sku' '{"currency":"KRW","items":['"$item"',{"sku":"'"$V"'","qty":2}],"amount":300}'
	refused "$url" sku-missing 400 VALIDATION_FAILED 'items[0].sku' '{"currency":"KRW","items":[{"qty":1}],"amount":100}'
	refused "$url" sku-bad-char 400 VALIDATION_FAILED 'items[0].sku' '{"currency":"KRW","items":[{"sku":"A 10","qty":1}],"amount":6000}'
	refused "$url" sku-empty 400 VALIDATION_FAILED 'items[0].sku' '{"currency":"KRW","items":[{"sku":"","qty":1}],"amount":6000}'
	refused "$url" sku-65-chars 400 VALIDATION_FAILED 'items[0].sku' '{"currency":"KRW","items":[{"sku":"'"$(repeat S 65)"'","qty":1}],"amount":6000}'
	refused "$url" sku-number 400 VALIDATION_FAILED 'items[0].sku' '{"currency":"KRW","items":[{"sku":10,"qty":1}],"amount":6000}'
	refused "$url" currency-missing 400 VALIDATION_FAILED currency '{"items":['"$item"'],"amount":100}'
	refused "$url" currency-lower 400 VALIDATION_FAILED currency '{"currency":"krw","items":['"$item"'],"amount":100}'
	refused "$url" currency-4-letters 400 VALIDATION_FAILED currency '{"currency":"KRWX","items":['"$item"'],"amount":100}'
	refused "$url" currency-null 400 VALIDATION_FAILED currency '{"currency":null,"items":['"$item"'],"amount":100}'
	refused "$url" amount-missing 400 VALIDATION_FAILED amount '{"currency":"KRW","items":['"$item"']}'
	refused "$url" amount-negative 400 VALIDATION_FAILED amount '{"currency":"KRW","items":['"$item"'],"amount":-100}'
	refused "$url" amount-over-1e15 400 VALIDATION_FAILED amount '{"currency":"KRW","items":['"$item"'],"amount":1000000000000001}'
	refused "$url" amount-fraction 400 VALIDATION_FAILED amount '{"currency":"KRW","items":['"$item"'],"amount":100.0}'
	refused "$url" amount-exponent 400 VALIDATION_FAILED amount '{"currency":"KRW","items":['"$item"'],"amount":1e2}'
	refused "$url" amount-string 400 VALIDATION_FAILED amount '{"currency":"KRW","items":['"$item"'],"amount":"100"}'
	refused "$url" amount-twice 400 VALIDATION_FAILED amount '{"currency":"KRW","items":['"$item"'],"amount":100,"amount":100}'
	refused "$url" shipping-unknown 400 VALIDATION_FAILED shipping '{"currency":"KRW","items":['"$item"'],"amount":100,"shipping":"overnight"}'
	refused "$url" shipping-null 400 VALIDATION_FAILED shipping '{"currency":"KRW","items":['"$item"'],"amount":100,"shipping":null}'
	refused "$url" note-501 400 VALIDATION_FAILED note '{"currency":"KRW","items":['"$item"'],"amount":100,"note":"'"$(repeat n 501)"'"}'
	refused "$url" note-number 400 VALIDATION_FAILED note '{"currency":"KRW","items":['"$item"'],"amount":100,"note":5}'

	# ---- the limits themselves are valid ------------------------------------
	accepted "$url" qty-10000 '{"currency":"KRW","items":[{"sku":"'"$V"'","qty":10000}],"amount":1000000}'
	accepted "$url" note-500-chars '{"currency":"KRW","items":['"$item"'],"amount":100,"note":"'"$(repeat 한 500)"'"}'
	expect_body_json '.note | length' 500 "$s note-500-chars"
	W=T35-$s-W
	W=$W$(repeat w $((64 - ${#W})))
	set_stock "$W" KRW 7 10
	accepted "$url" sku-64-chars '{"currency":"KRW","items":[{"sku":"'"$W"'","qty":1}],"amount":7}'
	expect_body_json '.items[0].sku | length' 64 "$s sku-64-chars"
	values=
	for i in $(seq -w 0 99); do values+="('$V-$i','KRW',1,10),"; done
	sql "INSERT INTO stock (sku, currency, unit_price, available) VALUES ${values%,}
	    ON DUPLICATE KEY UPDATE currency = 'KRW', unit_price = 1, available = 10" ||
	    fail "set up 100 SKUs" "INSERT failed"
	many=$(for i in $(seq -w 0 99); do printf '{"sku":"%s-%s","qty":1},' "$V" "$i"; done)
	accepted "$url" 100-items '{"currency":"KRW","items":['"${many%,}"'],"amount":100}'
	expect_body_json '.items | length' 100 "$s 100-items"
done

# ---- straight on the socket: what a web server may not pass on -----------
base_env=(REMOTE_USER=alice CONTENT_TYPE=application/json)
valid='{"currency":"KRW","items":[{"sku":"T35-lighttpd-V","qty":1}],"amount":100}'
before=$(sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'")
fcgi_req -d "$valid" POST "$MOUNT" "${base_env[@]}" HTTP_IDEMPOTENCY_KEY=
expect_problem 400 IDEMPOTENCY_KEY_INVALID "socket, empty key"
expect_detail_names empty "socket, empty key"
fcgi_req -d "$valid" POST "$MOUNT" "${base_env[@]}" "HTTP_IDEMPOTENCY_KEY=   "
expect_problem 400 IDEMPOTENCY_KEY_INVALID "socket, key of blanks"
fcgi_req -d "$valid" POST "$MOUNT" "${base_env[@]}" "HTTP_IDEMPOTENCY_KEY=$(printf 'ab\001cd')"
expect_problem 400 IDEMPOTENCY_KEY_INVALID "socket, key with a control character"
fcgi_req -d "$valid" POST "$MOUNT" "${base_env[@]}"
expect_problem 400 IDEMPOTENCY_KEY_MISSING "socket, no key"
k=$(unique_key "t35-socket-ct")
fcgi_req -d "$valid" POST "$MOUNT" REMOTE_USER=alice HTTP_IDEMPOTENCY_KEY="$k"
expect_problem 415 UNSUPPORTED_MEDIA_TYPE "socket, no CONTENT_TYPE"
expect_header idempotency-key "$k" "socket, no CONTENT_TYPE"
expect_unrecorded "$k" "socket, no CONTENT_TYPE"
expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice'" \
    "$before" "socket checks: no new ledger row"

finish
