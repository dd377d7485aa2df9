#!/usr/bin/env bash
# The shop's customers are the principals, by a bearer token (issue 18):
# the shop's token (RS256 JWT from public/token.php) checked by Apache
# mod_auth_openidc (a resource server, local certificate) and by lighttpd's
# token authorizer (examples/shop/authorizer/bearer.php); sub is REMOTE_USER.
#  - token.php: a token for the signed-in customer, 401 without a session;
#    401 for a session idle past the shop's limit, also after a page was
#    opened with its cookie (issue 26); cookies naming no session leave
#    no session file behind (issue 26);
#  - a valid token: 201, principal = sub in the ledger and the order;
#    replay; GET of the order;
#  - a token for ben: ana's order is 404;
#  - forged signature, another key, expired, not yet valid, another
#    audience, another issuer, alg none, HS256 keyed with the public key,
#    no sub, garbage, no token, Basic credentials: 401 (no Basic
#    challenge), nothing reaches idemorders;
#  - REMOTE_USER / X-Remote-User headers never become the principal.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/shop.sh"

principal_of() {
	echo "SELECT GROUP_CONCAT(CONCAT(r.principal_id, '|', o.principal_id, ':o-', o.id)
	    ORDER BY r.principal_id) FROM idempotency_records r
	    LEFT JOIN orders o ON o.principal_id = r.principal_id
	    AND o.idempotency_key = r.idem_key WHERE r.idem_key = '$1'"
}

# A key of another RSA key, for tokens the shop did not sign.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
    -out "$T_TMP/other.pem" 2>/dev/null
chmod 0644 "$T_TMP/other.pem"

for s in lighttpd apache; do
	case $s in
	lighttpd)	url=$BEARER_LIGHTTPD_URL ;;
	apache)		url=$BEARER_APACHE_URL ;;
	esac
	P=T37-$s-P
	set_stock "$P" KRW 900 100
	body='{"currency":"KRW","items":[{"sku":"'"$P"'","qty":1}],"amount":900}'
	jar=$T_TMP/ana-$s.jar

	req GET "$url$MOUNT/_health"
	expect_status 200 "$s health without a token"

	# ---- token.php ------------------------------------------------------------
	req GET "$url/token.php"
	expect_status 401 "$s token.php without a session"
	shop_login "$url" ana "$jar" || continue
	req GET "$url/token.php" -b "$jar"
	expect_status 200 "$s token.php for ana"
	expect_body_json .token_type Bearer "$s token.php for ana"
	expect_header cache-control no-store "$s token.php for ana"
	tok=$(jq -r .access_token <<<"$BODY")
	ttl=$(jq -r .expires_in <<<"$BODY")
	[[ $ttl =~ ^[0-9]+$ && $ttl -le 900 ]] && ok "$s token.php: expires_in $ttl (short)" ||
	    fail "$s token.php: expires_in" "$ttl"
	payload=$(cut -d. -f2 <<<"$tok" | tr '_-' '/+')
	while (( ${#payload} % 4 )); do payload+='='; done
	payload=$(base64 -d <<<"$payload" 2>/dev/null)
	[[ $(jq -r .sub <<<"$payload") == "$ANA" ]] && ok "$s token.php: sub $ANA" ||
	    fail "$s token.php: sub" "$payload"

	# An idle session gets no token, also after a page opened with it.
	id=$(session_id_of "$jar")
	cp -p "$SHOP_SESSIONS/sess_$id" "$T_TMP/sess.saved"
	session_idle "$id" 7200
	req GET "$url/token.php" -b "$jar"
	expect_status 401 "$s token.php for ana's session idle for 2 hours"
	req GET "$url/login.php" -b "$jar"
	expect_status 200 "$s the login page with the idle session's cookie"
	req GET "$url/token.php" -b "$jar"
	expect_status 401 "$s token.php for the idle session after a page"
	cp -p "$T_TMP/sess.saved" "$SHOP_SESSIONS/sess_$id"
	touch "$SHOP_SESSIONS/sess_$id"

	# Reading is not creating: cookies naming no session leave no file.
	n=$(session_files)
	for i in $(seq 1 20); do
		req GET "$url/token.php" \
		    -b "idemshop=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
		[[ $STATUS == 401 ]] || fail "$s token.php with a bogus cookie" "status $STATUS"
	done
	expect_status 401 "$s token.php with 20 bogus cookies"
	[[ $(session_files) == "$n" ]] && ok "$s token.php with 20 bogus cookies: no session file made" ||
	    fail "$s token.php with 20 bogus cookies" "$n session files before, $(session_files) after"

	# ---- a valid token ----------------------------------------------------------
	key=$(unique_key "t37-$s-ana")
	spost "$url" "$key" "$body" -H "Authorization: Bearer $tok"
	expect_status 201 "$s ana's token creates"
	a_oid=$(jq -r .orderId <<<"$BODY" 2>/dev/null)
	expect_sql "$(principal_of "$key")" "$ANA|$ANA:$a_oid" "$s ana's token: principal = sub"
	spost "$url" "$key" "$body" -H "Authorization: Bearer $tok"
	expect_status 201 "$s ana's token replays"
	expect_header idempotent-replayed true "$s ana's token replays"
	req GET "$url$MOUNT/$a_oid" -H "Authorization: Bearer $tok"
	expect_status 200 "$s ana's token GETs her order"

	# ---- ben's token: not ana's order -----------------------------------------------
	bt=$(mint_token "$(claims "$BEN")")
	req GET "$url$MOUNT/$a_oid" -H "Authorization: Bearer $bt"
	expect_problem 404 ORDER_NOT_FOUND "$s ben's token GETs ana's order"
	key=$(unique_key "t37-$s-inject")
	spost "$url" "$key" "$body" -H "Authorization: Bearer $bt" \
	    -H "REMOTE_USER: $ANA" -H "Remote-User: $ANA" -H "X-Remote-User: $ANA" \
	    -H "Variable-REMOTE_USER: $ANA" -H "OIDC_CLAIM_sub: $ANA"
	expect_status 201 "$s ben's token with headers naming ana"
	b_oid=$(jq -r .orderId <<<"$BODY" 2>/dev/null)
	expect_sql "$(principal_of "$key")" "$BEN|$BEN:$b_oid" "$s injected headers: still ben"

	# ---- refused: nothing reaches idemorders ------------------------------------------
	sig=${tok##*.}
	flip=A; [[ ${sig:0:1} == A ]] && flip=B
	try() {	# WHAT TOKEN
		local key
		key=$(unique_key "t37-$s-refused")
		spost "$url" "$key" "$body" -H "Authorization: Bearer $2"
		refused "$s $1" "$key"
	}
	try "forged signature" "${tok%.*}.$flip${sig:1}"
	try "ana's claims with ben as sub, ana's signature" \
	    "${tok%%.*}.$(cut -d. -f2 <<<"$bt").$sig"
	try "signed by another key" "$(mint_token "$(claims "$ANA")" "$T_TMP/other.pem")"
	try "expired" "$(mint_token "$(claims "$ANA" '.iat = "now-600" | .exp = "now-300"')")"
	# mod_auth_openidc 2.4.12 ignores nbf and takes exp as optional
	# (httpd-conf/apache-bearer.conf): the shop's tokens always have exp.
	if [[ $s == lighttpd ]]; then
		try "not valid yet" "$(mint_token "$(claims "$ANA" '.nbf = "now+600"')")"
		try "no exp" "$(mint_token "$(claims "$ANA" 'del(.exp)')")"
	fi
	try "another audience" "$(mint_token "$(claims "$ANA" '.aud = "someone-else"')")"
	try "another issuer" "$(mint_token "$(claims "$ANA" '.iss = "https://evil.example"')")"
	try "alg none" "$(mint_token "$(claims "$ANA")" "" none)"
	try "HS256 keyed with the public key" "$(mint_token "$(claims "$ANA")" "" HS256)"
	try "no sub" "$(mint_token "$(claims "$ANA" 'del(.sub)')")"
	try "garbage" "not.a.token"
	key=$(unique_key "t37-$s-notoken")
	spost "$url" "$key" "$body" -H "REMOTE_USER: $ANA" -H "X-Remote-User: $ANA"
	refused "$s no token, REMOTE_USER headers" "$key"
	key=$(unique_key "t37-$s-basic")
	spost "$url" "$key" "$body" -u "$ALICE"
	refused "$s Basic credentials" "$key"
	key=$(unique_key "t37-$s-cookie")
	spost "$url" "$key" "$body" -b "$jar"
	refused "$s the session cookie (this vhost wants a token)" "$key"
done

finish
