# tests/lib/shop.sh -- the demo shop's customers in the HTTP tests: a
# signed-in session, tokens, and "nothing reached idemorders".
# Sourced after tests/lib/http.sh and tests/lib/orders.sh.
# shellcheck shell=bash

SHOP_SESSIONS=$RUNDIR/shop-sessions
SHOP_JWT=$RUNDIR/shop-jwt
SHOP_INI=$RUNDIR/shop.ini
ANA=customer-1001	# ana / ana-secret
BEN=customer-1002	# ben / ben-secret

# shop_ini KEY: a value of the shop's config.
shop_ini() {
	sed -n "s/^$1 = //p" "$SHOP_INI"
}

# shop_login URL NAME JAR: sign NAME in through the shop's login.php
# (POST user, password; 303 to /), the session cookie in cookie jar JAR.
# Without the shop's pages, a session file like the one login.php writes.
shop_login() {
	local url=$1 name=$2 jar=$3 code id principal
	rm -f "$jar"
	code=$(curl -s -o /dev/null -w '%{http_code}' -c "$jar" -b "$jar" \
	    --max-time 20 --data-urlencode "user=$name" \
	    --data-urlencode "password=$name-secret" "$url/login.php" || true)
	if [[ $code == 303 ]] && grep -q 'idemshop' "$jar"; then
		return 0
	fi
	if [[ $code != 404 ]]; then
		fail "$url sign in as $name" "login.php answered $code"
		return 1
	fi
	case $name in
	ana)	principal=$ANA ;;
	ben)	principal=$BEN ;;
	*)	fail "sign in" "no customer $name"; return 1 ;;
	esac
	id=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	shop_session_file "$id" "seen|i:$(date +%s);customer|s:${#principal}:\"$principal\";name|s:${#name}:\"$name\";"
	printf '127.0.0.1\tFALSE\t/\tFALSE\t0\tidemshop\t%s\n' "$id" >"$jar"
}

# shop_session_file ID DATA: a session file as PHP's files handler writes it.
shop_session_file() {
	printf '%s' "$2" >"$SHOP_SESSIONS/sess_$1"
	chown www-data:www-data "$SHOP_SESSIONS/sess_$1"
	chmod 0600 "$SHOP_SESSIONS/sess_$1"
}

# session_idle ID SECONDS: session ID as if its customer's last page was
# SECONDS ago: the stamp the pages keep in it (seen) and its file's
# mtime set back (the file keeps its owner and mode).
session_idle() {
	local f=$SHOP_SESSIONS/sess_$1 data
	data=$(cat "$f") || return 1
	printf '%s' "$(sed -E "s/(^|;|\})seen\|i:[0-9]+;/\1seen|i:$(($(date +%s) - $2));/" <<<"$data")" >"$f"
	touch -d "-$2 seconds" "$f"
}

# session_files: how many session files there are.
session_files() {
	find "$SHOP_SESSIONS" -type f | wc -l
}

# csrf_of URL JAR: the CSRF token a page of the shop at URL renders for
# the session in cookie jar JAR.
csrf_of() {
	curl -s --max-time 20 -b "$2" "$1/" |
	    sed -n 's/.*name="csrf" value="\([0-9a-f]*\)".*/\1/p' | head -n 1
}

# session_id_of JAR: the session id in cookie jar JAR.
session_id_of() {
	awk '$6 == "idemshop" { print $7 }' "$1" | tail -n 1
}

# spost URL KEY BODY [curl args...]: POST /orders without Basic auth.
spost() {
	local url=$1 key=$2 body=$3
	shift 3
	req POST "$url$MOUNT" -H "Idempotency-Key: $key" \
	    -H 'Content-Type: application/json' --data-binary "$body" "$@"
}

# refused WHAT KEY: the last answer refused the request at the web server:
# 401, no Basic challenge (no password prompt), and the request with KEY
# never reached idemorders (no ledger row, no order, no log line).
refused() {
	local what=$1 key=$2 v
	expect_status 401 "$what"
	v=$(hdr www-authenticate)
	if [[ $v == [Bb]asic* ]]; then
		fail "$what: no Basic challenge" "WWW-Authenticate: $v"
	else
		ok "$what: no Basic challenge"
	fi
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE idem_key = '$key'" 0 \
	    "$what: no ledger row"
	expect_sql "SELECT COUNT(*) FROM orders WHERE idempotency_key = '$key'" 0 \
	    "$what: no order"
	expect_absent "$what: idemorders never saw it" "$LOGDIR/idemorders.log" \
	    -F -- "key=$key "
}

# mint_token CLAIMS_JSON [KEY_FILE [ALG [KID]]]: a JWT signed like the
# shop's (RS256 with the shop's key by default).  ALG "none": unsigned;
# "HS256": an HMAC keyed with the shop's PUBLIC key (the algorithm
# confusion attack).
mint_token() {
	local claims=$1 keyf=${2:-$SHOP_JWT/private.pem} alg=${3:-RS256}
	local kid=${4:-$(cat "$SHOP_JWT/kid")}
	php -r '
		require $argv[1];
		[, , $claims, $keyf, $alg, $kid, $pub] = $argv;
		$c = json_decode($claims, true);
		$now = time();
		foreach ($c as $k => $v) {
			if (is_string($v) && preg_match("/^now([+-][0-9]+)?$/", $v, $m)) {
				$c[$k] = $now + (int)($m[1] ?? 0);
			}
		}
		if ($alg === "RS256") {
			echo jwt_sign($c, $keyf, $kid);
			exit;
		}
		$h = jwt_b64url_encode(json_encode(["alg" => $alg, "typ" => "JWT", "kid" => $kid]));
		$b = jwt_b64url_encode(json_encode($c));
		$s = $alg === "none" ? "" : jwt_b64url_encode(hash_hmac("sha256", "$h.$b", file_get_contents($pub), true));
		echo "$h.$b.$s";
	' "$REPO/examples/shop/authorizer/jwt.php" "$claims" "$keyf" "$alg" "$kid" \
	    "$SHOP_JWT/public.pem"
}

# claims SUB [EXTRA_JQ]: the shop's claims for SUB, valid for 5 minutes,
# changed by the jq filter EXTRA_JQ.
claims() {
	jq -cn --arg iss "$(shop_ini jwt_issuer)" --arg aud "$(shop_ini jwt_audience)" \
	    --arg sub "$1" '{iss: $iss, sub: $sub, aud: $aud, iat: "now",
	    exp: "now+300"} | '"${2:-.}"
}
