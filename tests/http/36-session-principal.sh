#!/usr/bin/env bash
# The shop's customers are the principals, by their PHP session (issue 18):
# the shop's lighttpd (mod_fastcgi authorizer) and Apache (mod_authnz_fcgi)
# ask examples/shop/authorizer/session.php who the customer is and pass it
# to idemorders as REMOTE_USER.
#  - ana signed in: POST /orders creates with principal customer-1001 in
#    the ledger and the order; the same key replays; GET shows her order;
#  - ben: ana's order is 404 to him; ana's key is his own key;
#  - no cookie, a garbage cookie, an unknown session id, a deleted
#    (expired) session, an idle one past gc_maxlifetime, a session without
#    a customer: 401, no Basic challenge, nothing reaches idemorders, and
#    no session is created for an unknown id;
#  - REMOTE_USER / X-Remote-User headers sent by the client never become
#    the principal;
#  - /orders/_health needs no session; the page and the JS client are
#    served with their media types.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/shop.sh"

principal_of() {	# key -> "ledger principal|order principal" lines
	echo "SELECT GROUP_CONCAT(CONCAT(r.principal_id, '|', o.principal_id, ':o-', o.id)
	    ORDER BY r.principal_id) FROM idempotency_records r
	    LEFT JOIN orders o ON o.principal_id = r.principal_id
	    AND o.idempotency_key = r.idem_key WHERE r.idem_key = '$1'"
}

for s in lighttpd apache; do
	case $s in
	lighttpd)	url=$SHOP_LIGHTTPD_URL ;;
	apache)		url=$SHOP_APACHE_URL ;;
	esac
	P=T36-$s-P
	set_stock "$P" KRW 700 100
	body='{"currency":"KRW","items":[{"sku":"'"$P"'","qty":1}],"amount":700}'
	ana=$T_TMP/ana-$s.jar ben=$T_TMP/ben-$s.jar

	# ---- the health check and the static files need no session ----------
	req GET "$url$MOUNT/_health"
	expect_status 200 "$s health without a session"
	req GET "$url/assets/idemorders-client.mjs"
	expect_status 200 "$s the JS client"
	expect_media_type text/javascript "$s the JS client"
	[[ $BODY == *IdemordersClient* ]] && ok "$s the JS client: the real file" ||
	    fail "$s the JS client" "$(head -c 200 <<<"$BODY")"

	# ---- ana signed in ------------------------------------------------------
	shop_login "$url" ana "$ana" || continue
	key=$(unique_key "t36-$s-ana")
	spost "$url" "$key" "$body" -b "$ana"
	expect_status 201 "$s ana creates"
	expect_header idempotency-key "$key" "$s ana creates"
	a_oid=$(jq -r .orderId <<<"$BODY" 2>/dev/null)
	cp "$T_TMP/body" "$T_TMP/ana.body"
	expect_sql "$(principal_of "$key")" "$ANA|$ANA:$a_oid" "$s ana's key: ledger and order principal"
	spost "$url" "$key" "$body" -b "$ana"
	expect_status 201 "$s ana replays"
	expect_header idempotent-replayed true "$s ana replays"
	cmp -s "$T_TMP/ana.body" "$T_TMP/body" && ok "$s ana replays: the same bytes" ||
	    fail "$s ana replays: body" "$BODY"
	req GET "$url$MOUNT/$a_oid" -b "$ana"
	expect_status 200 "$s ana GETs her order"
	expect_body_json .orderId "$a_oid" "$s ana GETs her order"

	# ---- ben: another customer ------------------------------------------------
	shop_login "$url" ben "$ben" || continue
	req GET "$url$MOUNT/$a_oid" -b "$ben"
	expect_problem 404 ORDER_NOT_FOUND "$s ben GETs ana's order"
	spost "$url" "$key" "$body" -b "$ben"
	expect_status 201 "$s ben with ana's key"
	expect_no_header idempotent-replayed "$s ben with ana's key"
	b_oid=$(jq -r .orderId <<<"$BODY" 2>/dev/null)
	expect_sql "$(principal_of "$key")" "$ANA|$ANA:$a_oid,$BEN|$BEN:$b_oid" \
	    "$s ana's key: two customers, two orders"
	# Headers a client sends never name the principal.
	key=$(unique_key "t36-$s-inject")
	spost "$url" "$key" "$body" -b "$ben" -H "REMOTE_USER: $ANA" \
	    -H "Remote-User: $ANA" -H "X-Remote-User: $ANA" -H "Variable-REMOTE_USER: $ANA"
	expect_status 201 "$s ben with REMOTE_USER headers naming ana"
	i_oid=$(jq -r .orderId <<<"$BODY" 2>/dev/null)
	expect_sql "$(principal_of "$key")" "$BEN|$BEN:$i_oid" "$s injected headers: still ben"

	# ---- refused: nothing reaches idemorders ------------------------------------
	key=$(unique_key "t36-$s-none")
	spost "$url" "$key" "$body"
	refused "$s no cookie" "$key"
	expect_media_type application/problem+json "$s no cookie"
	expect_header cache-control no-store "$s no cookie"
	expect_body_json .code UNAUTHENTICATED "$s no cookie"

	key=$(unique_key "t36-$s-inject-anon")
	spost "$url" "$key" "$body" -H "REMOTE_USER: $ANA" -H "X-Remote-User: $ANA" \
	    -H "Variable-REMOTE_USER: $ANA" -H "Authorization: Basic $(printf 'alice:alice-secret' | base64)"
	refused "$s no cookie, REMOTE_USER headers and alice's Basic credentials" "$key"

	for bad in 'garbage' '../../etc/passwd' "$(printf 'x%.0s' {1..300})" \
	    "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"; do
		key=$(unique_key "t36-$s-garbage")
		spost "$url" "$key" "$body" -b "idemshop=$bad"
		refused "$s cookie idemshop=${bad:0:40}" "$key"
	done
	if ls "$SHOP_SESSIONS" | grep -q "sess_$bad"; then
		fail "$s an unknown session id" "a session file was created for it"
	else
		ok "$s an unknown session id: no session created"
	fi

	# The session file deleted (expired and collected).
	id=$(session_id_of "$ana")
	cp -p "$SHOP_SESSIONS/sess_$id" "$T_TMP/sess.saved"
	rm -f "$SHOP_SESSIONS/sess_$id"
	key=$(unique_key "t36-$s-deleted")
	spost "$url" "$key" "$body" -b "$ana"
	refused "$s ana's session deleted" "$key"
	[[ -e $SHOP_SESSIONS/sess_$id ]] && fail "$s deleted session" "it was re-created" ||
	    ok "$s deleted session: not re-created"
	# Idle past session.gc_maxlifetime (1800 s), not yet collected.
	cp -p "$T_TMP/sess.saved" "$SHOP_SESSIONS/sess_$id"
	touch -d '-2 hours' "$SHOP_SESSIONS/sess_$id"
	key=$(unique_key "t36-$s-idle")
	spost "$url" "$key" "$body" -b "$ana"
	refused "$s ana's session idle for 2 hours" "$key"
	# A session without a customer (signed out).
	shop_session_file "$id" 'cart|a:0:{}'
	key=$(unique_key "t36-$s-anon")
	spost "$url" "$key" "$body" -b "$ana"
	refused "$s a session without a customer" "$key"
	# Back: the same session works again.
	cp -p "$T_TMP/sess.saved" "$SHOP_SESSIONS/sess_$id"
	touch "$SHOP_SESSIONS/sess_$id"
	key=$(unique_key "t36-$s-back")
	spost "$url" "$key" "$body" -b "$ana"
	expect_status 201 "$s ana's session back"
	expect_sql "SELECT principal_id FROM idempotency_records WHERE idem_key = '$key'" \
	    "$ANA" "$s ana's session back: principal"
	expect_sql "SELECT available FROM stock WHERE sku = '$P'" 96 "$s stock: four orders"
done

finish
