#!/usr/bin/env bash
# The demo shop (examples/shop) in a real browser: headless Debian
# Chromium driven by puppeteer-core (tests/browser/*.test.mjs), through
# lighttpd and Apache, with the session shop (the PHP session is the
# identity, through the session authorizer) and with the bearer shop (the
# page holds a token): sign in, cart, checkout, a real double click, a
# lost answer and a reload, one checkout paid by the script (its answer
# lost) and then without JavaScript in another tab, and the other way
# round (one key, one order), a worker crash, another customer's order, a
# signed-out customer, a plain-HTTP origin that is not localhost, and the
# server-side path through clients/php; and an order page's "Cancel this
# order" (one key made by the server with the page): a double click, a
# lost answer and a reload, the form without JavaScript then the script,
# each restocked once (the stock row's available and restocked, one
# cancel ledger row), and another customer's order page a 404; and "My
# orders" (the list, newest first and paged, a Cancel button per order):
# a double click, a lost answer and a reload then the form without
# JavaScript and a second tab, and a sign-out in between, each one cancel
# (one ledger row, restocked once, one order.cancelled event); and the
# shop's warehouse (warehouse.php), fed by a relay of its own while the
# test runs: a new order's page and "My orders" say packed once its
# signed order.created arrived (one row per webhook-id, packed once).
# Judged by the page and by the database.  Screenshots go to
# $LOGDIR/browser/.  Each top-level test counts as one check, as in
# 81-client-js.sh.  puppeteer-core (pinned) is installed under var/ on the
# first run.  A few minutes; up to 15 on a busy machine (76 tests, each a
# page or more in Chromium).
# time-limit: 900
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/node.sh"

PUPPETEER_VERSION=24.43.1
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
NODE_DIR=$REPO/var/$IDEMORDERS_STACK/node
tap=$T_TMP/tap

export SHOP_LIGHTTPD_URL SHOP_APACHE_URL BEARER_LIGHTTPD_URL BEARER_APACHE_URL
export LIGHTTPD_URL APACHE_URL DEV LOGDIR CHROMIUM NODE_DIR
# The relay to the shop's warehouse (tools/dev up writes its config): the
# stack's binary, run as the user the config belongs to.
export RELAY_BIN=$RUNDIR/bin/idemorders WAREHOUSE_RELAY_CONF=$RUNDIR/idemorders-warehouse.conf
POOL_USER=$(stat -c %G "$WAREHOUSE_RELAY_CONF" 2>/dev/null) || POOL_USER=
export POOL_USER
if [[ ! -x $RELAY_BIN || -z $POOL_USER ]]; then
	fail "warehouse relay" "$RELAY_BIN or $WAREHOUSE_RELAY_CONF is missing (tools/dev up writes them)"
	finish
fi

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

# BROWSER_TESTS (a pattern): only the tests whose name matches, while
# working on one page; unset in the suite.
export BROWSER_TESTS
timeout -k 5 840 node --test --test-concurrency=1 --test-reporter=tap \
    "$REPO"/tests/browser/*.test.mjs >"$tap" 2>&1
rc=$?
node_tap_judge "$tap" "$rc" || finish
echo "       screenshots: $LOGDIR/browser/"
finish
