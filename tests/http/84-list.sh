#!/usr/bin/env bash
# GET /orders (contract section 3): the principal's own orders, newest
# first, in pages.
#  - limit (1-100, default 20), starting_after / ending_before (an order
#    id of the principal's), has_more, Link rel="next" / rel="prev";
#    following the links walks the orders in order; every order in a
#    page is byte for byte what GET /orders/{orderId} answers;
#  - HEAD answers the headers of GET; PUT/DELETE 405 with Allow;
#    no principal 401;
#  - bad input is a 400 VALIDATION_FAILED naming the parameter: limit 0,
#    101, not a number, twice; a cursor that is malformed, unknown,
#    another principal's; both cursors; an unknown parameter; and reads
#    write nothing;
#  - every principal kind: Basic (lighttpd, Apache), the shop's session
#    and its bearer token (lighttpd and Apache each): a customer sees
#    their own orders, never another's.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/shop.sh"

# ids_of: the page's order ids, space-separated.
ids_of() {
	jq -r '[.data[].orderId] | join(" ")' <<<"$BODY" 2>/dev/null
}

expect_eq() {	# WHAT EXPECTED ACTUAL
	if [[ $3 == "$2" ]]; then ok "$1 = $2"; else fail "$1" "expected '$2', got '$3'"; fi
}

# link REL: the target of the Link header's relation REL, empty if none.
link() {
	hdr link | tr ',' '\n' | sed -n 's/^ *<\([^>]*\)>; rel="'"$1"'"$/\1/p'
}

ledger_rows() {
	sql "SELECT COUNT(*) FROM idempotency_records"
}

unique_name SKU T84-SKU
set_stock "$SKU" KRW 100 1000
for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	ids=()
	for i in 1 2 3 4 5; do
		post "$url" "$ALICE" "$(unique_key "t84-$s-$i")" '{"currency":"KRW","items":[{"sku":"'"$SKU"'","qty":'"$i"'}],"amount":'"$((100 * i))"',"note":"list '"$i"'"}'
		[[ $STATUS == 201 ]] || fail "$s create order $i" "status $STATUS: $BODY"
		ids+=("$(jq -r .orderId <<<"$BODY")")
	done
	o1=${ids[0]} o2=${ids[1]} o3=${ids[2]} o4=${ids[3]} o5=${ids[4]}

	# ---- the first page ------------------------------------------------------
	req GET "$url$MOUNT?limit=3" -u "$ALICE"
	expect_status 200 "$s first page"
	expect_media_type application/json "$s first page"
	expect_header cache-control no-store "$s first page"
	expect_eq "$s first page ids" "$o5 $o4 $o3" "$(ids_of)"
	expect_body_json .has_more true "$s first page"
	expect_eq "$s first page Link next" "$MOUNT?limit=3&starting_after=$o3" "$(link next)"
	expect_eq "$s first page Link prev" "" "$(link prev)"
	first=$(jq -c '.data[0]' <<<"$BODY")
	req GET "$url$MOUNT/$o5" -u "$ALICE"
	expect_eq "$s the page shows $o5 as GET /orders/$o5 does" "$BODY" "$first"

	# ---- follow rel="next", then back with rel="prev" ------------------------
	req GET "$url$(printf '%s' "$MOUNT?limit=3&starting_after=$o3" | sed 's/limit=3/limit=2/')" -u "$ALICE"
	expect_status 200 "$s starting_after $o3"
	expect_eq "$s starting_after $o3 ids" "$o2 $o1" "$(ids_of)"
	expect_eq "$s starting_after $o3 Link prev" "$MOUNT?limit=2&ending_before=$o2" "$(link prev)"
	next=$(link next)
	if [[ $(jq -r .has_more <<<"$BODY") == true ]]; then
		expect_eq "$s starting_after $o3 Link next" "$MOUNT?limit=2&starting_after=$o1" "$next"
	else
		expect_eq "$s starting_after $o3: no more, no Link next" "" "$next"
	fi
	req GET "$url$MOUNT?limit=2&ending_before=$o2" -u "$ALICE"
	expect_status 200 "$s ending_before $o2"
	expect_eq "$s ending_before $o2 ids (newest first)" "$o4 $o3" "$(ids_of)"
	expect_body_json .has_more true "$s ending_before $o2 ($o5 is newer)"
	expect_eq "$s ending_before $o2 Link next" "$MOUNT?limit=2&starting_after=$o3" "$(link next)"
	expect_eq "$s ending_before $o2 Link prev" "$MOUNT?limit=2&ending_before=$o4" "$(link prev)"
	req GET "$url$MOUNT?limit=5&ending_before=$o4" -u "$ALICE"
	expect_eq "$s ending_before $o4 ids" "$o5" "$(ids_of)"
	expect_body_json .has_more false "$s ending_before $o4"
	expect_eq "$s ending_before $o4 Link prev" "" "$(link prev)"
	req GET "$url$MOUNT?ending_before=$o5" -u "$ALICE"
	expect_eq "$s ending_before the newest: empty page" "" "$(ids_of)"
	expect_body_json .has_more false "$s ending_before the newest"
	expect_no_header link "$s ending_before the newest"

	# ---- the default limit, a cancelled order, percent-encoding, HEAD -----
	cancel "$url" "$ALICE" "$(unique_key "t84-$s-cancel")" "$o4" '{"reason":"list"}'
	[[ $STATUS == 200 ]] || fail "$s cancel $o4" "status $STATUS: $BODY"
	req GET "$url$MOUNT" -u "$ALICE"
	expect_status 200 "$s default limit"
	n=$(jq '.data | length' <<<"$BODY")
	[[ $n -ge 5 && $n -le 20 ]] && ok "$s default limit: $n orders (5..20)" ||
	    fail "$s default limit" "$n orders"
	expect_eq "$s default limit: the newest five" "$o5 $o4 $o3 $o2 $o1" "$(ids_of | cut -d' ' -f1-5)"
	expect_eq "$s $o4 shown CANCELLED" CANCELLED "$(jq -r '.data[1].status' <<<"$BODY")"
	req GET "$url$MOUNT?%6cimit=1&starting%5Fafter=${o4/o-/o%2D}" -u "$ALICE"
	expect_eq "$s percent-encoded parameters" "$o3" "$(ids_of)"
	req HEAD "$url$MOUNT?limit=1" -u "$ALICE"
	expect_status 200 "$s HEAD"
	expect_media_type application/json "$s HEAD"
	# (curl --head writes the header block where the body would go)
	[[ $BODY != *'"data"'* ]] && ok "$s HEAD: no body" || fail "$s HEAD: body" "$BODY"
	[[ -n $(link next) ]] && ok "$s HEAD: the Link header" || fail "$s HEAD: Link" "none"

	# ---- another principal, other methods, no principal --------------------
	req GET "$url$MOUNT?limit=100" -u "$BOB"
	expect_status 200 "$s bob's list"
	page=" $(ids_of) "
	[[ $page != *" $o5 "* && $page != *" $o1 "* ]] && ok "$s bob's list holds none of alice's" ||
	    fail "$s bob's list" "holds alice's orders: $page"
	req GET "$url$MOUNT?starting_after=$o3" -u "$BOB"
	expect_problem 400 VALIDATION_FAILED "$s bob's cursor at alice's order"
	[[ $(jq -r .detail <<<"$BODY") == *starting_after* ]] && ok "$s detail names starting_after" ||
	    fail "$s detail" "$BODY"
	for m in PUT DELETE PATCH; do
		req "$m" "$url$MOUNT" -u "$ALICE"
		expect_problem 405 METHOD_NOT_ALLOWED "$s $m /orders"
		expect_header allow "GET, HEAD, POST" "$s $m /orders"
	done
	req GET "$url$MOUNT"
	expect_status 401 "$s no principal"

	# ---- bad input: 400 naming the parameter, nothing written --------------
	before=$(ledger_rows)
	while IFS='|' read -r q param; do
		req GET "$url$MOUNT?$q" -u "$ALICE"
		expect_problem 400 VALIDATION_FAILED "$s ?$q"
		d=$(jq -r .detail <<<"$BODY" 2>/dev/null)
		[[ $d == *"$param"* ]] && ok "$s ?$q: detail names $param" ||
		    fail "$s ?$q: detail" "'$d' does not name $param"
	done <<EOT
limit=0|limit
limit=101|limit
limit=abc|limit
limit=|limit
limit=07|limit
limit=-1|limit
limit=1&limit=2|limit
limit|limit
starting_after=x|starting_after
starting_after=o-0|starting_after
starting_after=o-99999999999999|starting_after
starting_after=$o3&starting_after=$o2|starting_after
ending_before=o-|ending_before
ending_before=o-99999999999999|ending_before
starting_after=$o3&ending_before=$o1|ending_before
sort=asc|sort
limit=2&expand%5B%5D=x|expand[]
EOT
	expect_eq "$s the reads wrote no ledger row" "$before" "$(ledger_rows)"
done

# ---- the shop's customers: by session and by bearer token --------------
for s in lighttpd apache; do
	case $s in
	lighttpd)	surl=$SHOP_LIGHTTPD_URL burl=$BEARER_LIGHTTPD_URL ;;
	apache)		surl=$SHOP_APACHE_URL burl=$BEARER_APACHE_URL ;;
	esac
	ana=$T_TMP/ana-$s.jar ben=$T_TMP/ben-$s.jar
	shop_login "$surl" ana "$ana" || continue
	shop_login "$surl" ben "$ben" || continue
	spost "$surl" "$(unique_key "t84-$s-ana")" '{"currency":"KRW","items":[{"sku":"'"$SKU"'","qty":1}],"amount":100}' -b "$ana"
	expect_status 201 "$s session: ana creates"
	a_oid=$(jq -r .orderId <<<"$BODY")
	req GET "$surl$MOUNT?limit=1" -b "$ana"
	expect_status 200 "$s session: ana's list"
	expect_eq "$s session: ana's newest order" "$a_oid" "$(ids_of)"
	req GET "$surl$MOUNT?limit=100" -b "$ben"
	expect_status 200 "$s session: ben's list"
	[[ " $(ids_of) " != *" $a_oid "* ]] && ok "$s session: ben does not see ana's order" ||
	    fail "$s session: ben's list" "holds $a_oid"
	req GET "$surl$MOUNT?starting_after=$a_oid" -b "$ben"
	expect_problem 400 VALIDATION_FAILED "$s session: ben's cursor at ana's order"
	req GET "$surl$MOUNT"
	expect_status 401 "$s session: no cookie"

	bjar=$T_TMP/ana-bearer-$s.jar
	shop_login "$burl" ana "$bjar" || continue
	req GET "$burl/token.php" -b "$bjar"
	tok=$(jq -r .access_token <<<"$BODY" 2>/dev/null)
	req GET "$burl$MOUNT?limit=100" -H "Authorization: Bearer $tok"
	expect_status 200 "$s bearer: ana's list"
	[[ " $(ids_of) " == *" $a_oid "* ]] && ok "$s bearer: ana's list holds $a_oid" ||
	    fail "$s bearer: ana's list" "$(ids_of)"
	req GET "$burl$MOUNT?limit=1" -H "Authorization: Bearer not-a-token"
	expect_status 401 "$s bearer: a bad token"
done

finish
