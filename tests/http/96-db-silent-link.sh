#!/usr/bin/env bash
# A silent link to the database: a cut that drops its packets and resets
# nothing (nftables on lo, the stack's MariaDB port), with a responder
# pool of its own over TCP (one worker, request_deadline = 20s,
# db_connect_timeout = 2s).  The worker's connection, idle since its
# last request, goes silent; a POST then answers 503
# DATABASE_UNAVAILABLE with Retry-After, nothing stored, long before the
# deadline: it does not wait the deadline out on the dead link.  Once
# the link is back, the same key creates exactly one order, and the
# worker's next idle connection is still used after the keepalive
# probes (a quiet link is not a dead one).
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"
. "$(dirname -- "$0")/../lib/dbfaults.sh"

DEADLINE_S=20
BOUND_MS=12000
TABLE=idemorders_t96_$$

link_back() { nft delete table inet "$TABLE" 2>/dev/null; }
cleanup() {
	link_back
	pool_restore
	rm -rf "$T_TMP"
}
trap cleanup EXIT

# link_cut: drop every packet to and from the database port on lo.
link_cut() {
	nft -f - <<NFT
table inet $TABLE {
	chain out {
		type filter hook output priority 0; policy accept;
		oifname "lo" tcp dport $DB_TCP_PORT drop
		oifname "lo" tcp sport $DB_TCP_PORT drop
	}
}
NFT
}

if ! command -v nft >/dev/null; then
	fail "nft" "nftables is needed (Debian: nftables)"
	finish
fi
pool_swap --tcp workers=1 request_deadline=${DEADLINE_S}s db_connect_timeout=2s || finish
wait_healthy "over TCP, one worker"
url=$(url_of lighttpd)
new_sku sku T96 20

# The worker's connection, used once, then quiet for longer than the
# keepalive's idle time: still used, nothing reconnects.
post_order "$url" "$(unique_key t96-before)" "$(order_body "$sku" 1)"
expect_status 201 "an order before the cut"
sleep 3		# the quiet itself: past the probes' idle time (1 s)
post_order "$url" "$(unique_key t96-quiet)" "$(order_body "$sku" 1)"
expect_status 201 "an order after 3 s of quiet (keepalive probes answered)"
if grep -q "database connect to" "$POOL_LOG"; then
	fail "a quiet link" "the worker reconnected: $(grep "database connect to" "$POOL_LOG" | tail -n 1)"
else
	ok "a quiet link: the worker kept its connection"
fi

# The cut, while the worker's connection is idle.
key=$(unique_key t96-cut)
body=$(order_body "$sku" 2)
s0=$(stock_of "$sku")
if link_cut; then
	ok "database port $DB_TCP_PORT silenced on lo (nftables table $TABLE)"
else
	fail "nft" "the cut could not be made"
	finish
fi
t0=$(now_ms)
post_order "$url" "$key" "$body"
ms=$(($(now_ms) - t0))
link_back
REQ_DESC="POST on a silent link"
expect_problem 503 DATABASE_UNAVAILABLE
expect_header should-retry true
if [[ $ms -lt $BOUND_MS ]]; then
	ok "POST on a silent link: answered in $ms ms, not after the deadline of $DEADLINE_S s"
else
	fail "POST on a silent link: answered after $ms ms" "the bound is $BOUND_MS ms (deadline $DEADLINE_S s)"
fi
expect_nothing_committed "$key" "$sku" "$s0" "after the silent link"

# The link back: the same key creates one order.
post_order "$url" "$key" "$body"
expect_status 201 "the same key after the link is back"
oid=$(jq -r .orderId <<<"$BODY" 2>/dev/null)
expect_one_order "$key" "$sku" $((s0 - 2)) "$oid" "the same key after the link is back"
finish
