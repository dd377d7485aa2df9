#!/usr/bin/env bash
# The shop's customers are the principals, by their PHP session (issue 18):
# the shop's lighttpd (mod_fastcgi authorizer) and Apache (mod_fcgid authorizer)
# ask examples/shop/authorizer/session.php who the customer is and pass it
# to idemorders as REMOTE_USER.
#  - ana signed in: POST /orders creates with principal customer-1001 in
#    the ledger and the order; the same key replays; GET shows her order;
#  - ben: ana's order is 404 to him; ana's key is his own key;
#  - no cookie, a garbage cookie, an unknown session id, a deleted
#    (expired) session, an idle one past the shop's idle limit, a session
#    without a customer: 401, no Basic challenge, nothing reaches
#    idemorders, and no session is created for an unknown id;
#  - one idle limit (issue 26): a session idle past it stays refused after
#    a page is opened with its cookie (the page destroys it instead of
#    reviving it), and old session files are removed by the pages'
#    session garbage collector;
#  - signing out (issue 26): GET /logout.php is refused (405) and a POST
#    without the CSRF token too (400), the session still valid; a POST
#    with the token signs out;
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
	# Idle past the idle limit (1800 s), not yet collected.
	cp -p "$T_TMP/sess.saved" "$SHOP_SESSIONS/sess_$id"
	session_idle "$id" 7200
	key=$(unique_key "t36-$s-idle")
	spost "$url" "$key" "$body" -b "$ana"
	refused "$s ana's session idle for 2 hours" "$key"
	# A page opened with the idle session's cookie does not revive it.
	req GET "$url/login.php" -b "$ana"
	expect_status 200 "$s the login page with the idle session's cookie"
	[[ -e $SHOP_SESSIONS/sess_$id ]] && fail "$s the idle session after a page" "sess_$id is still there" ||
	    ok "$s the idle session after a page: destroyed"
	key=$(unique_key "t36-$s-revived")
	spost "$url" "$key" "$body" -b "$ana"
	refused "$s ana's idle session after a page: still refused" "$key"
	# A session without a customer (signed out).
	shop_session_file "$id" "seen|i:$(date +%s);cart|a:0:{}"
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

	# ---- signing out: POST with the CSRF token only -------------------------
	out=$T_TMP/out-$s.jar
	shop_login "$url" ana "$out" || continue
	oid=$(session_id_of "$out")
	signed_in() {	# WHAT: the session in $out still names ana
		req GET "$url$MOUNT/o-999999999" -b "$out"
		expect_problem 404 ORDER_NOT_FOUND "$1: still signed in"
		[[ -s $SHOP_SESSIONS/sess_$oid ]] && ok "$1: the session is still there" ||
		    fail "$1: the session" "sess_$oid is gone or empty"
	}
	req GET "$url/logout.php" -b "$out"
	expect_status 405 "$s GET /logout.php (a link on another site)"
	expect_header allow POST "$s GET /logout.php"
	signed_in "$s after GET /logout.php"
	req POST "$url/logout.php" -b "$out" --data 'x=1'
	expect_status 400 "$s POST /logout.php without the CSRF token"
	signed_in "$s after POST /logout.php without the token"
	req POST "$url/logout.php" -b "$out" --data 'csrf=0123456789abcdef0123456789abcdef'
	expect_status 400 "$s POST /logout.php with a wrong CSRF token"
	signed_in "$s after POST /logout.php with a wrong token"
	csrf=$(csrf_of "$url" "$out")
	[[ $csrf =~ ^[0-9a-f]{32}$ ]] && ok "$s the pages render the CSRF token" ||
	    fail "$s the CSRF token" "'$csrf'"
	req POST "$url/logout.php" -b "$out" --data "csrf=$csrf"
	expect_status 303 "$s POST /logout.php with the CSRF token"
	expect_header location /login.php "$s POST /logout.php with the CSRF token"
	key=$(unique_key "t36-$s-signed-out")
	spost "$url" "$key" "$body" -b "$out"
	refused "$s signed out with the button" "$key"
	[[ -e $SHOP_SESSIONS/sess_$oid ]] && fail "$s signed out" "sess_$oid is still there" ||
	    ok "$s signed out: the session is gone"
done

# ---- old sessions are removed -------------------------------------------------
# The pages run PHP's session garbage collector (1 in session_gc_divisor
# page loads, 1 here); a session idle past the limit goes, a live one stays.
old=t36old$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
shop_session_file "$old" "seen|i:$(($(date +%s) - 10800));customer|s:13:\"$ANA\";"
touch -d '-3 hours' "$SHOP_SESSIONS/sess_$old"
live=$(session_id_of "$T_TMP/ana-apache.jar")
cp -p "$SHOP_INI" "$T_TMP/shop.ini.saved"
echo 'session_gc_divisor = 1' >>"$SHOP_INI"
req GET "$SHOP_LIGHTTPD_URL/"
cat "$T_TMP/shop.ini.saved" >"$SHOP_INI"
expect_status 200 "a page with the garbage collector on every load"
[[ -e $SHOP_SESSIONS/sess_$old ]] && fail "a session idle for 3 hours" "sess_$old was not removed" ||
    ok "a session idle for 3 hours: its file removed"
[[ -e $SHOP_SESSIONS/sess_$live ]] && ok "a live session: kept" ||
    fail "a live session" "sess_$live was removed"

finish
