#!/usr/bin/env bash
# The JavaScript client (clients/js/idemorders-client.mjs): node --test on
# the retry policy with a scripted fetch and on the client against this
# stack (lighttpd and Apache, fault injection: a drop and a crash after
# COMMIT end in one order, 409 IDEMPOTENCY_KEY_REUSED is sent once, 503
# waits Retry-After; a cancel restocks once, replays, and another key gets
# 409 ORDER_ALREADY_CANCELLED; a cancel whose answer is lost is retried
# with its key and restocks once).  Each top-level test counts as one check; skipped,
# cancelled or todo tests are failures here.  Node 18 or later (Debian 12
# ships 18).  About 10 s.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/node.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

export LIGHTTPD_URL APACHE_URL DEV LOGDIR
dir=$REPO/clients/js
tap=$T_TMP/tap

if ! command -v node >/dev/null; then
	fail "node" "node is not installed (Debian: nodejs)"
	finish
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [[ ${major:-0} -lt 18 ]]; then
	fail "node" "node $(node --version) is too old: the client needs 18 or later"
	finish
fi
timeout -k 5 300 node --test --test-reporter=tap "$dir"/test/*.test.mjs \
    >"$tap" 2>&1
rc=$?
node_tap_judge "$tap" "$rc" || finish
pool_wait_full 40 || fail "pool" "fewer workers than configured after the crashes"
finish
