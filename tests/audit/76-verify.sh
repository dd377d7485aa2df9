#!/usr/bin/env bash
# verify/idemorders-verify, the QA kit, against the test stack: it passes
# through lighttpd and Apache, with --db-defaults (judged by rows too) and
# without (HTTP alone, which it says), check 8 (a cancel: its lost answer
# retried, replayed, eight at once) included, its two cancelled orders
# restocked once each; it refuses to run without a test
# SKU, with an unknown one or without enough stock; and it FAILS check 5,
# naming it, against a responder configured with out_of_stock = retryable
# (its rejections are not replayed), behind a lighttpd of its own.
# Credentials other than --user: Basic written as a raw --header (and
# from a file, @FILE) passes everywhere and is never printed in full;
# refused credentials (either principal's) stop it with exit 2 before
# anything is written; cookie files are sent (a stand-in server logs the
# requests).  With the demo shop's vhosts: the customers ana and ben by
# their PHP sessions (cookie files from the sign-in form) and by bearer
# tokens from token.php, through lighttpd and Apache; a made-up session
# and a forged token are refused.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

VERIFY=$REPO/verify/idemorders-verify
priv=$(mktemp -d /tmp/idemorders-76.XXXXXX)
chmod 0755 "$priv"
PLPID= CAP_PID=
cleanup() {
	[[ -n $PLPID ]] && kill "$PLPID" 2>/dev/null
	[[ -n $CAP_PID ]] && kill "$CAP_PID" 2>/dev/null
	stop_private
	rm -rf "$priv" "$T_TMP"
}
trap cleanup EXIT

conf_value() {
	sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" "$IDEMORDERS_CONF" | tail -n 1
}
DBDEF=$T_TMP/db.cnf
{
	echo "[client]"
	echo "user = $(conf_value db_user)"
	pw=$(conf_value db_password)
	pwfile=$(conf_value db_password_file)
	[[ -z $pw && -n $pwfile ]] && pw=$(head -n 1 "$pwfile")
	echo "password = $pw"
	echo "socket = $(conf_value db_socket)"
	echo "database = $(conf_value db_name)"
} >"$DBDEF"
chmod 0600 "$DBDEF"

# verify WHAT ARGS...: run it; VRC, VOUT.
verify() {
	local what=$1
	shift
	VOUT=$(timeout 300 "$VERIFY" "$@" 2>&1)
	VRC=$?
	printf '%s\n' "$VOUT" | sed 's/^/    | /'
}

# expect_pass WHAT N...: a PASS line for each check N given; "skip7": a
# SKIP line for check 7 that names --db-defaults.
expect_pass() {
	local what=$1 n
	shift
	for n in "$@"; do
		if [[ $n == skip7 ]]; then
			grep -qE '^SKIP 7 .*--db-defaults' <<<"$VOUT" &&
			    ok "$what: check 7 not judged, said so" ||
			    fail "$what: check 7" "no SKIP 7 line naming --db-defaults"
			continue
		fi
		grep -qE "^PASS $n [a-z]" <<<"$VOUT" && ok "$what: PASS $n" ||
		    fail "$what: check $n" "$(grep -E "^[A-Z]+ $n " <<<"$VOUT")"
	done
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")$MOUNT

	w="$s, --db-defaults"
	new_sku sku T7Y 100
	verify "$w" --base "$url" --user "$ALICE" --other-user "$BOB" --sku "$sku" \
	    --db-defaults "$DBDEF"
	[[ $VRC == 0 ]] && ok "$w: exit 0" || fail "$w: exit status" "$VRC"
	expect_pass "$w" 1 2 3 4 5 6 7 8
	grep -q 'CREATES up to' <<<"$VOUT" && ok "$w: says up front that it creates orders" ||
	    fail "$w: warning" "no 'CREATES up to' line"
	grep -qE '^PASS 1 .*rows: 1 order, ledger SUCCEEDED o-' <<<"$VOUT" &&
	    ok "$w: check 1 judged by rows" || fail "$w: check 1 rows" "no rows note"
	grep -qE '^PASS 5 .*OUT_OF_STOCK \(98 of 97\) recorded FAILED_FINAL' <<<"$VOUT" &&
	    ok "$w: OUT_OF_STOCK judged" || fail "$w: check 5" "no OUT_OF_STOCK judgement"
	grep -qE '^PASS 5 .*crash before COMMIT \([0-9]+\): nothing kept' <<<"$VOUT" &&
	    ok "$w: crash before COMMIT judged" || fail "$w: check 5" "no crash judgement"
	grep -qE '^PASS 8 .*lost answer \([0-9]+\), the retry got the stored 200.*rows: one SUCCEEDED cancel row each, stock back to 96' <<<"$VOUT" &&
	    ok "$w: the cancel's lost answer and its rows judged" ||
	    fail "$w: check 8" "$(grep -E '^[A-Z]+ 8 ' <<<"$VOUT")"
	expect_sql_value "$w: its cancelled orders, each restocked once" "2 2" \
	    "$(sql "SELECT COUNT(*), SUM(o.cancel_key LIKE 'verify-%-cancel')
	    FROM orders o JOIN order_items i ON i.order_id = o.id
	    WHERE i.sku = '$sku' AND o.status = 'CANCELLED'" | tr '\t' ' ')"
	expect_sql_value "$w: restocked of $sku" 2 "$(sql "SELECT restocked FROM stock WHERE sku = '$sku'")"
	grep -qE '8 passed, 0 failed, 0 not judged$' <<<"$VOUT" &&
	    ok "$w: summary" || fail "$w: summary" "$(tail -n 1 <<<"$VOUT")"
	expect_sql_value "$w: stock of $sku after it" 96 "$(stock_of "$sku")"
	expect_sql_value "$w: its orders, all under its prefix" \
	    "6 6" "$(sql "SELECT COUNT(*), SUM(idempotency_key LIKE 'verify-%')
	    FROM orders o JOIN order_items i ON i.order_id = o.id WHERE i.sku = '$sku'" | tr '\t' ' ')"
	[[ -n ${FIRST_SKU:-} ]] || { FIRST_SKU=$sku FIRST_OUT=$VOUT; }

	w="$s, HTTP alone"
	new_sku sku T7Y 100
	verify "$w" --base "$url" --user "$ALICE" --other-user "$BOB" --sku "$sku"
	[[ $VRC == 0 ]] && ok "$w: exit 0" || fail "$w: exit status" "$VRC"
	expect_pass "$w" 1 2 3 4 5 6 skip7 8
	grep -qE '^PASS 1 .*\[HTTP only\]$' <<<"$VOUT" && ok "$w: check 1 marked [HTTP only]" ||
	    fail "$w: [HTTP only]" "not marked"
	grep -qE 'judged by HTTP alone \(no --db-defaults\): 1 2 3 4 5 6 8$' <<<"$VOUT" &&
	    ok "$w: the summary names the checks judged by HTTP alone" ||
	    fail "$w: summary" "$(tail -n 1 <<<"$VOUT")"
	grep -q "KRW 1000 a unit (learnt" <<<"$VOUT" && ok "$w: price learnt by HTTP" ||
	    fail "$w: price" "not learnt"
	expect_sql_value "$w: stock of $sku after it" 96 "$(stock_of "$sku")"
done

# --- refusals ---------------------------------------------------------------
url=$LIGHTTPD_URL$MOUNT
verify "no --sku" --base "$url" --user "$ALICE" --other-user "$BOB"
[[ $VRC == 2 && $VOUT == *"refusing to run without --sku"* ]] &&
    ok "no --sku: refused, exit 2" || fail "no --sku" "exit $VRC"
verify "unknown SKU" --base "$url" --user "$ALICE" --other-user "$BOB" --sku T7Y-none-$RUN_TAG
[[ $VRC == 2 && $VOUT == *"no SKU T7Y-none-$RUN_TAG"* ]] &&
    ok "unknown SKU over HTTP: refused, exit 2" || fail "unknown SKU" "exit $VRC"
verify "unknown SKU" --base "$url" --user "$ALICE" --other-user "$BOB" \
    --sku T7Y-none-$RUN_TAG --db-defaults "$DBDEF"
[[ $VRC == 2 && $VOUT == *"no SKU T7Y-none-$RUN_TAG in the stock table"* ]] &&
    ok "unknown SKU, rows: refused, exit 2" || fail "unknown SKU, rows" "exit $VRC"
new_sku sku T7Y-low 2
verify "low stock" --base "$url" --user "$ALICE" --other-user "$BOB" --sku "$sku" \
    --db-defaults "$DBDEF"
LOW_OUT=$VOUT
[[ $VRC == 2 && $VOUT == *"has 2 units available, 5 needed"* ]] &&
    ok "2 units, rows: refused, exit 2" || fail "low stock" "exit $VRC"
expect_sql_value "low stock: nothing ordered" 2 "$(stock_of "$sku")"
new_sku sku T7Y-none 0
verify "no stock" --base "$url" --user "$ALICE" --other-user "$BOB" --sku "$sku"
[[ $VRC == 2 && $VOUT == *"is out of stock"*"restock it first"* ]] &&
    ok "0 units over HTTP: refused, exit 2" || fail "no stock" "exit $VRC"
expect_sql_value "no stock: no order" 0 \
    "$(sql "SELECT COUNT(*) FROM order_items WHERE sku = '$sku'")"

# --- one truth: what it orders, as the tool, docs/sysadmin.md and the man page say
# The three say it in one sentence: "creates up to N real orders of one
# unit ..., cancels N of them again ...: N units must be available, and
# at most N stay sold". numbers: those four from the text on stdin
# (number words as digits, lines joined).
numbers() {
	tr -s ' \t\n' ' ' | sed -E 's/\bone\b/1/gI; s/\btwo\b/2/gI; s/\bthree\b/3/gI; s/\bfour\b/4/gI;
	    s/\bfive\b/5/gI; s/\bsix\b/6/gI; s/\bseven\b/7/gI; s/\beight\b/8/gI; s/\bnine\b/9/gI' |
	    sed -nE 's/.*creates up to ([0-9]+) real orders of 1 unit.*cancels ([0-9]+) of them again.*[^0-9]([0-9]+) units must be available, and at most ([0-9]+) stay sold.*/\1 \2 \3 \4/Ip'
}
# What a run did (the first --db-defaults one, 100 units): its orders,
# the cancelled ones, the units sold; the units it needs: what it
# refused 2 units for, and a run with exactly that many passes.
did="$(sql "SELECT COUNT(*) FROM orders o JOIN order_items i ON i.order_id = o.id
    WHERE i.sku = '$FIRST_SKU'") $(sql "SELECT COUNT(*) FROM orders o JOIN order_items i
    ON i.order_id = o.id WHERE i.sku = '$FIRST_SKU' AND o.status = 'CANCELLED'")"
need=$(sed -nE 's/.*has 2 units available, ([0-9]+) needed.*/\1/p' <<<"$LOW_OUT")
did="$did ${need:-?} $((100 - $(stock_of "$FIRST_SKU")))"
new_sku sku T7Y-exact "${need:-0}"
verify "exactly the units it needs" --base "$LIGHTTPD_URL$MOUNT" --user "$ALICE" --other-user "$BOB" \
    --sku "$sku" --db-defaults "$DBDEF"
[[ $VRC == 0 ]] && ok "a run with exactly the $need units it says it needs: exit 0" ||
    fail "a run with $need units" "exit $VRC: $(grep -E '^(FAIL|SKIP) ' <<<"$VOUT" | tr '\n' ' ')"
for src in tool docs/sysadmin.md "idemorders-verify(1)"; do
	case $src in
	tool) said=$(grep 'CREATES up to' -A3 <<<"$FIRST_OUT" | sed 's/^[^:]*: //' | numbers) ;;
	docs/sysadmin.md) said=$(awk '/^## After a deploy/ { on = 1; next } on && /^## / { exit } on' \
	    "$REPO/docs/sysadmin.md" | numbers) ;;
	*) said=$(MANPAGER=cat MANWIDTH=1000 man -l "$REPO/man/idemorders-verify.1" 2>/dev/null | numbers) ;;
	esac
	[[ -n $said && $said == "$did" ]] &&
	    ok "$src says what a run does: up to $(cut -d' ' -f1 <<<"$did") orders, $(cut -d' ' -f2 <<<"$did") cancelled, $(cut -d' ' -f3 <<<"$did") units needed, $(cut -d' ' -f4 <<<"$did") sold" ||
	    fail "$src on what a run orders" "says (orders cancelled needed sold) '${said:-no such sentence}', a run did '$did'"
done

# --- credentials other than --user: headers and cookie files ----------------
# basic_header NAME:PASSWORD: Basic auth written as a raw header.
basic_header() {
	printf 'Authorization: Basic %s' "$(printf '%s' "$1" | base64 -w0)"
}
SECRET_A=$(printf '%s' "$ALICE" | base64 -w0)
SECRET_B=$(printf '%s' "$BOB" | base64 -w0)
# no_secret WHAT VALUE...: none of the values shows up in its output.
no_secret() {
	local what=$1 v
	shift
	for v in "$@"; do
		if grep -qF -- "$v" <<<"$VOUT"; then
			fail "$what: a credential is printed" "the output holds '${v:0:6}...'"
			return
		fi
	done
	ok "$what: no credential printed in full"
}
for s in $HTTP_SERVERS; do
	url=$(url_of "$s")$MOUNT
	w="$s, --header/--other-header (Basic as a raw header), --db-defaults"
	new_sku sku T7Y-hdr 100
	verify "$w" --base "$url" --header "$(basic_header "$ALICE")" \
	    --other-header "$(basic_header "$BOB")" --sku "$sku" --db-defaults "$DBDEF"
	[[ $VRC == 0 ]] && ok "$w: exit 0" || fail "$w: exit status" "$VRC"
	expect_pass "$w" 1 2 3 4 5 6 7 8
	grep -qE "principals alice and bob \(read from the database\)" <<<"$VOUT" &&
	    ok "$w: the principals read from the rows" ||
	    fail "$w: principals" "no line naming alice and bob"
	grep -qE 'as Authorization: Basic <hidden, [0-9]+ characters>' <<<"$VOUT" &&
	    ok "$w: the header shown masked" || fail "$w: masked header" "not shown"
	no_secret "$w" "$SECRET_A" "$SECRET_B"
	expect_sql_value "$w: stock of $sku after it" 96 "$(stock_of "$sku")"
done

# Headers from a file (--header @FILE, as curl -H @FILE), mixed with
# --other-user; HTTP alone.
hf=$T_TMP/alice.headers
{ basic_header "$ALICE"; printf '\nX-QA-Run: %s\n' "$RUN_TAG"; } >"$hf"
w="lighttpd, --header @FILE and --other-user, HTTP alone"
new_sku sku T7Y-hdrfile 100
verify "$w" --base "$LIGHTTPD_URL$MOUNT" --header "@$hf" --other-user "$BOB" --sku "$sku"
[[ $VRC == 0 ]] && ok "$w: exit 0" || fail "$w: exit status" "$VRC"
expect_pass "$w" 1 2 3 4 5 6 skip7 8
no_secret "$w" "$SECRET_A" "bob-secret"
expect_sql_value "$w: stock of $sku after it" 96 "$(stock_of "$sku")"

# Credentials the web server refuses: exit 2 before anything is written,
# naming the option whose credentials were refused.
new_sku sku T7Y-badcred 100
for who in first other; do
	w="wrong password as a raw header ($who)"
	if [[ $who == first ]]; then
		verify "$w" --base "$APACHE_URL$MOUNT" --header "$(basic_header alice:wrong)" \
		    --other-header "$(basic_header "$BOB")" --sku "$sku" --db-defaults "$DBDEF"
		opt=--header
	else
		verify "$w" --base "$LIGHTTPD_URL$MOUNT" --user "$ALICE" \
		    --other-header "$(basic_header bob:wrong)" --sku "$sku"
		opt=--other-header
	fi
	[[ $VRC == 2 ]] && ok "$w: exit 2" || fail "$w: exit status" "$VRC, expected 2"
	grep -qE -- "credentials of $opt refused: 401" <<<"$VOUT" &&
	    ok "$w: says whose credentials were refused" ||
	    fail "$w: message" "no 'credentials of $opt refused: 401'"
	no_secret "$w" "$(printf alice:wrong | base64 -w0)" "$(printf bob:wrong | base64 -w0)" "$SECRET_A" "$SECRET_B"
	pfx=$(sed -n 's/^idemorders-verify: \(verify-[0-9a-f]*\)-\*;.*/\1/p' <<<"$VOUT")
	expect_sql_value "$w: no ledger row under its keys ${pfx:-?}-*" 0 \
	    "$(sql "SELECT COUNT(*) FROM idempotency_records WHERE idem_key LIKE '${pfx:-?}-%'")"
done
expect_sql_value "refused credentials: stock untouched" 100 "$(stock_of "$sku")"
expect_sql_value "refused credentials: no order" 0 \
    "$(sql "SELECT COUNT(*) FROM order_items WHERE sku = '$sku'")"

# Usage: a header without a colon is refused without echoing it; every
# principal needs credentials.
verify "header without a colon" --base "$LIGHTTPD_URL$MOUNT" --header "Bearer $SECRET_A" \
    --other-user "$BOB" --sku "$sku"
[[ $VRC == 2 && $VOUT == *"--header"*"Name: value"* ]] &&
    ok "header without a colon: usage error, exit 2" || fail "header without a colon" "exit $VRC"
no_secret "header without a colon" "$SECRET_A"
verify "no other credentials" --base "$LIGHTTPD_URL$MOUNT" --header "$(basic_header "$ALICE")" --sku "$sku"
[[ $VRC == 2 && $VOUT == *"the other principal"* ]] &&
    ok "no credentials for the other principal: usage error, exit 2" ||
    fail "no other credentials" "exit $VRC"

# Cookie files (--cookie, --other-cookie: Netscape files as curl -c
# writes), against a stand-in server that logs what it is sent and
# refuses everything but _health: the cookies go out, their values are
# never printed, and the refusal is exit 2.
python3 "$REPO/tests/lib/capture-server.py" "$T_TMP/cap.port" "$T_TMP/cap.log" &
CAP_PID=$!
wait_until 10 test -s "$T_TMP/cap.port"
CAP_URL=http://127.0.0.1:$(<"$T_TMP/cap.port")
jar() {	# FILE NAME VALUE: a cookie file with one session cookie for 127.0.0.1
	printf '# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\t%s\t%s\n' "$2" "$3" >"$1"
}
jar "$T_TMP/jar-a" PHPSESSID "sess-a-$RUN_TAG"
jar "$T_TMP/jar-b" PHPSESSID "sess-b-$RUN_TAG"
w="--cookie/--other-cookie, refused"
verify "$w" --base "$CAP_URL$MOUNT" --cookie "$T_TMP/jar-a" --other-cookie "$T_TMP/jar-b" --sku T7Y-x
[[ $VRC == 2 ]] && ok "$w: exit 2" || fail "$w: exit status" "$VRC, expected 2"
grep -qE -- "credentials of --cookie refused: 401" <<<"$VOUT" &&
    ok "$w: says whose credentials were refused" || fail "$w: message" "no 'credentials of --cookie refused: 401'"
grep -qx "Cookie: PHPSESSID=sess-a-$RUN_TAG" "$T_TMP/cap.log" &&
    ok "$w: the cookie of the file was sent" || fail "$w: cookie" "not in the request: $(grep -i '^cookie' "$T_TMP/cap.log")"
grep -q '^POST' "$T_TMP/cap.log" && fail "$w: POST sent" "a POST after the refusal" ||
    ok "$w: no POST after the refusal"
no_secret "$w" "sess-a-$RUN_TAG" "sess-b-$RUN_TAG"
: >"$T_TMP/cap.log"
w="--header and --other-cookie-jar, refused"
verify "$w" --base "$CAP_URL$MOUNT" --header "Authorization: Bearer tok-$RUN_TAG" \
    --other-cookie-jar "$T_TMP/jar-b" --sku T7Y-x
[[ $VRC == 2 && $VOUT == *"credentials of --header refused: 401"* ]] &&
    ok "$w: exit 2, refused" || fail "$w" "exit $VRC"
grep -qx "Authorization: Bearer tok-$RUN_TAG" "$T_TMP/cap.log" &&
    ok "$w: the bearer header was sent" || fail "$w: header" "not in the request"
no_secret "$w" "tok-$RUN_TAG"
grep -qE 'as Authorization: Bearer <hidden, [0-9]+ characters>' <<<"$VOUT" &&
    ok "$w: the bearer token shown masked" || fail "$w: masked" "not shown"
kill "$CAP_PID" 2>/dev/null
wait "$CAP_PID" 2>/dev/null
CAP_PID=

# --- the demo shop's customers: a PHP session, a bearer token ---------------
# Through the test stack's shop vhosts (session authorizer) and bearer
# vhosts: cookies from signing in with the shop's form (curl -c), tokens
# from its token page; a made-up session and a forged token are refused
# before anything is written.
# b64url TEXT: base64url without padding.
b64url() {
	printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='
}
# The sign-in form is the shop's (examples/shop/public/login.php): the
# customers' own sessions and tokens need it; the refusals do not.
SHOP_FORM=
[[ -f $REPO/examples/shop/public/login.php ]] && SHOP_FORM=1
if [[ -n ${SHOP_LIGHTTPD_URL:-} && -n ${BEARER_LIGHTTPD_URL:-} ]]; then
	# sign_in JAR USER PASSWORD URL: the shop's form; print the status.
	sign_in() {
		rm -f "$1"
		curl -sS -o /dev/null -w '%{http_code}' -c "$1" \
		    -d "user=$2" -d "password=$3" "$4/login.php"
	}
	# session_of JAR: the session id in JAR.
	session_of() {
		awk '$6 == "idemshop" { print $7 }' "$1"
	}
	for s in $HTTP_SERVERS; do
		v=SHOP_${s^^}_URL shop=${!v}
		v=BEARER_${s^^}_URL bearer=${!v}
		# Refused whatever the shop's pages: a session nobody signed in
		# to, an unsigned token (alg none) for customer-1001.
		new_sku sku T7Y-refused 100
		printf '# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tidemshop\t%s\n' \
		    "madeup$RUN_TAG" >"$T_TMP/nobody.jar"
		w="$s shop, a made-up session"
		verify "$w" --base "$shop$MOUNT" --cookie "$T_TMP/nobody.jar" \
		    --other-cookie "$T_TMP/nobody.jar" --sku "$sku" --db-defaults "$DBDEF"
		[[ $VRC == 2 && $VOUT == *"credentials of --cookie refused: 401"* ]] &&
		    ok "$w: refused, exit 2" || fail "$w" "exit $VRC"
		now=$(date +%s)
		none=$(b64url '{"alg":"none","typ":"JWT"}').$(b64url "{\"sub\":\"customer-1001\",\"exp\":$((now + 300)),\"iat\":$now}").
		w="$s bearer, an unsigned token (alg none)"
		verify "$w" --base "$bearer$MOUNT" --header "Authorization: Bearer $none" \
		    --other-header "Authorization: Bearer $none" --sku "$sku" --db-defaults "$DBDEF"
		[[ $VRC == 2 && $VOUT == *"credentials of --header refused: 401"* ]] &&
		    ok "$w: refused, exit 2" || fail "$w" "exit $VRC"
		no_secret "$w" "$none"
		expect_sql_value "$s: refused: stock untouched" 100 "$(stock_of "$sku")"
		expect_sql_value "$s: refused: no order" 0 \
		    "$(sql "SELECT COUNT(*) FROM order_items WHERE sku = '$sku'")"
		[[ -n $SHOP_FORM ]] || continue

		st_a=$(sign_in "$T_TMP/ana.jar" ana ana-secret "$shop")
		st_b=$(sign_in "$T_TMP/ben.jar" ben ben-secret "$shop")
		[[ $st_a == 303 && $st_b == 303 ]] && ok "$s shop: ana and ben signed in" ||
		    fail "$s shop: sign in" "login.php answered $st_a and $st_b"
		sess_a=$(session_of "$T_TMP/ana.jar") sess_b=$(session_of "$T_TMP/ben.jar")

		w="$s shop, --cookie/--other-cookie (PHP sessions), --db-defaults"
		new_sku sku T7Y-sess 100
		verify "$w" --base "$shop$MOUNT" --cookie "$T_TMP/ana.jar" \
		    --other-cookie "$T_TMP/ben.jar" --sku "$sku" --db-defaults "$DBDEF"
		[[ $VRC == 0 ]] && ok "$w: exit 0" || fail "$w: exit status" "$VRC"
		expect_pass "$w" 1 2 3 4 5 6 7 8
		grep -q 'principals customer-1001 and customer-1002 (read from the database)' <<<"$VOUT" &&
		    ok "$w: the customers are the principals" ||
		    fail "$w: principals" "no line naming customer-1001 and customer-1002"
		no_secret "$w" "${sess_a:-none}" "${sess_b:-none}"
		expect_sql_value "$w: stock of $sku after it" 96 "$(stock_of "$sku")"

		w="$s bearer, --header @FILE/--other-header (tokens from token.php), --db-defaults"
		tok_a=$(curl -sS -b "$T_TMP/ana.jar" "$bearer/token.php" | jq -r '.access_token // empty')
		tok_b=$(curl -sS -b "$T_TMP/ben.jar" "$bearer/token.php" | jq -r '.access_token // empty')
		[[ -n $tok_a && -n $tok_b ]] && ok "$w: two tokens" || fail "$w: tokens" "token.php gave none"
		printf 'Authorization: Bearer %s\n' "$tok_a" >"$T_TMP/ana.headers"
		new_sku sku T7Y-bearer 100
		verify "$w" --base "$bearer$MOUNT" --header "@$T_TMP/ana.headers" \
		    --other-header "Authorization: Bearer $tok_b" --sku "$sku" --db-defaults "$DBDEF"
		[[ $VRC == 0 ]] && ok "$w: exit 0" || fail "$w: exit status" "$VRC"
		expect_pass "$w" 1 2 3 4 5 6 7 8
		grep -q 'principals customer-1001 and customer-1002 (read from the database)' <<<"$VOUT" &&
		    ok "$w: the customers are the principals" ||
		    fail "$w: principals" "no line naming customer-1001 and customer-1002"
		no_secret "$w" "${tok_a:-none}" "${tok_b:-none}" "${tok_a:0:40}"
		expect_sql_value "$w: stock of $sku after it" 96 "$(stock_of "$sku")"

		# A real token with a changed signature.
		new_sku sku T7Y-forged 100
		sig=${tok_a##*.} c=A
		[[ ${sig:10:1} == A ]] && c=B
		w="$s bearer, a forged signature"
		verify "$w" --base "$bearer$MOUNT" --header "Authorization: Bearer ${tok_a%.*}.${sig:0:10}$c${sig:11}" \
		    --other-header "Authorization: Bearer $tok_b" --sku "$sku" --db-defaults "$DBDEF"
		[[ $VRC == 2 && $VOUT == *"credentials of --header refused: 401"* ]] &&
		    ok "$w: refused, exit 2" || fail "$w" "exit $VRC"
		no_secret "$w" "${tok_a:-none}" "${tok_b:-none}"
		expect_sql_value "$s: refused: stock untouched" 100 "$(stock_of "$sku")"
		expect_sql_value "$s: refused: no order" 0 \
		    "$(sql "SELECT COUNT(*) FROM order_items WHERE sku = '$sku'")"
	done
fi

# --- a deployment that breaks one expectation: out_of_stock = retryable -----
CONF=$priv/idemorders.conf
private_conf "$CONF" "$priv/sock" workers=2 out_of_stock=retryable \
    socket_mode=0660 socket_group=www-data
start_private "$IDEMORDERS_BIN" "$CONF" "$priv/sock" "$priv/serve.log" || finish
# A free port (the stack's neighbours are the shop's and bearer vhosts).
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$priv/log"
chown www-data:www-data "$priv/log"
sed -e "s|^server.port .*|server.port = $port|" \
    -e "s|^server.pid-file .*|server.pid-file = \"$priv/lighttpd.pid\"|" \
    -e "s|^server.errorlog .*|server.errorlog = \"$priv/log/error.log\"|" \
    -e "s|^accesslog.filename .*|accesslog.filename = \"$priv/log/access.log\"|" \
    -e "s|\"socket\" *=> *\"$FCGI_SOCKET\"|\"socket\" => \"$priv/sock\"|" \
    "$RUNDIR/lighttpd.conf" >"$priv/lighttpd.conf"
lighttpd -D -f "$priv/lighttpd.conf" </dev/null >"$priv/lighttpd.out" 2>&1 &
PLPID=$!
for ((i = 0; i < 50; i++)); do
	curl -s -o /dev/null "http://127.0.0.1:$port$MOUNT/_health" && break
	sleep 0.1
done
req GET "http://127.0.0.1:$port$MOUNT/_health"
expect_status 200 "lighttpd on :$port in front of the out_of_stock = retryable responder"
w="out_of_stock = retryable"
new_sku sku T7Y-retry 100
verify "$w" --base "http://127.0.0.1:$port$MOUNT" --user "$ALICE" --other-user "$BOB" \
    --sku "$sku" --db-defaults "$DBDEF"
[[ $VRC == 1 ]] && ok "$w: exit 1" || fail "$w: exit status" "$VRC, expected 1"
grep -qE '^FAIL 5 a final rejection is recorded, a crash keeps nothing: .*OUT_OF_STOCK was not replayed' <<<"$VOUT" &&
    ok "$w: FAIL 5 names the unreplayed OUT_OF_STOCK" ||
    fail "$w: check 5" "$(grep -E '^[A-Z]+ 5 ' <<<"$VOUT")"
grep -qE "^FAIL 5 .*ledger row 'none', expected FAILED_FINAL" <<<"$VOUT" &&
    ok "$w: FAIL 5 says no ledger row was recorded" ||
    fail "$w: check 5 rows" "$(grep -E '^[A-Z]+ 5 ' <<<"$VOUT")"
expect_pass "$w" 1 2 3 4 6 7 8
grep -qE '7 passed, 1 failed, 0 not judged$' <<<"$VOUT" &&
    ok "$w: summary" || fail "$w: summary" "$(tail -n 1 <<<"$VOUT")"

kill "$PLPID" 2>/dev/null
wait "$PLPID" 2>/dev/null
PLPID=
stop_private
pool_wait_full 40 || fail "pool" "fewer workers than configured"
finish
