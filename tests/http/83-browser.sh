#!/usr/bin/env bash
# The demo shop (examples/shop) in a real browser: headless Debian
# Chromium driven by puppeteer-core (tests/browser/*.test.mjs), through
# lighttpd and Apache, with the session shop (the PHP session is the
# identity, through the session authorizer) and with the bearer shop (the
# page holds a token): sign in, cart, checkout, a real double click, a
# lost answer and a reload, a worker crash, another customer's order, a
# signed-out customer, a plain-HTTP origin that is not localhost, and the
# server-side path through clients/php.  Judged by the page and by the
# database.  Screenshots go to $LOGDIR/browser/.  Each top-level test
# counts as one check, as in 81-client-js.sh.  puppeteer-core (pinned) is
# installed under var/ on the first run.  About a minute.
. "$(dirname -- "$0")/../lib/http.sh"

PUPPETEER_VERSION=24.43.1
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
NODE_DIR=$REPO/var/$IDEMORDERS_STACK/node
tap=$T_TMP/tap

case $IDEMORDERS_STACK in
dev)	_shop=(8083 8084 8085 8086) ;;
*)	_shop=(18083 18084 18085 18086) ;;
esac
_off=${IDEMORDERS_PORT_OFFSET:-0}
: "${SHOP_LIGHTTPD_URL:=http://127.0.0.1:$((_shop[0] + _off))}"
: "${SHOP_APACHE_URL:=http://127.0.0.1:$((_shop[1] + _off))}"
: "${BEARER_LIGHTTPD_URL:=http://127.0.0.1:$((_shop[2] + _off))}"
: "${BEARER_APACHE_URL:=http://127.0.0.1:$((_shop[3] + _off))}"
export SHOP_LIGHTTPD_URL SHOP_APACHE_URL BEARER_LIGHTTPD_URL BEARER_APACHE_URL
export LIGHTTPD_URL APACHE_URL DEV LOGDIR CHROMIUM NODE_DIR

# count WORD: the "# WORD N" total of the TAP output.
count() {
	sed -n "s/^# $1 \([0-9]*\)$/\1/p" "$tap" | tail -n 1
}

if [[ ! -x $CHROMIUM ]]; then
	fail "chromium" "$CHROMIUM is missing (Debian: chromium)"
	finish
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	fail "node" "node and npm are needed (Debian: nodejs, npm)"
	finish
fi
have=$(node -p "try { require('$NODE_DIR/node_modules/puppeteer-core/package.json').version } catch { '' }" 2>/dev/null)
if [[ $have != "$PUPPETEER_VERSION" ]]; then
	echo "       installing puppeteer-core@$PUPPETEER_VERSION in ${NODE_DIR#"$REPO"/}"
	mkdir -p "$NODE_DIR"
	[[ -f $NODE_DIR/package.json ]] || echo '{ "private": true }' >"$NODE_DIR/package.json"
	if ! (cd "$NODE_DIR" && PUPPETEER_SKIP_DOWNLOAD=1 timeout 300 npm install \
	    --no-audit --no-fund --loglevel=error "puppeteer-core@$PUPPETEER_VERSION") \
	    >"$T_TMP/npm.out" 2>&1; then
		fail "npm install puppeteer-core@$PUPPETEER_VERSION" "$(tail -n 5 "$T_TMP/npm.out")"
		finish
	fi
fi
mkdir -p "$LOGDIR/browser"

timeout -k 5 480 node --test --test-concurrency=1 --test-reporter=tap \
    "$REPO"/tests/browser/*.test.mjs >"$tap" 2>&1
rc=$?
grep -E '^(not )?ok ' "$tap" | sed 's/^/       /'
if grep -q '^not ok ' "$tap"; then
	echo "       --- node --test output ---"
	sed 's/^/       /' "$tap" | head -n 400
fi
pass=$(count pass) fails=$(count fail)
if [[ -z $pass || -z $fails ]]; then
	fail "node --test" "no totals in its output (status $rc)"
	sed 's/^/       /' "$tap" | head -n 60
	finish
fi
cancelled=$(count cancelled) skipped=$(count skipped) todo=$(count todo)
other=$((${cancelled:-0} + ${skipped:-0} + ${todo:-0}))
PASSED=$pass
FAILED=$((fails + other))
[[ $other -gt 0 ]] && echo "FAIL   $other test(s) skipped, cancelled or todo: none may be here"
if [[ $rc -ne 0 && $FAILED -eq 0 ]]; then
	fail "node --test" "exit status $rc with no failing test"
fi
echo "       screenshots: $LOGDIR/browser/"
finish
