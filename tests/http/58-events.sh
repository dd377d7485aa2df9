#!/usr/bin/env bash
# The transactional outbox (contract section 4b): every committed create
# writes one order.created event and every committed cancel one
# order.cancelled, in the order change's own transaction:
#  - its payload is the order as GET /orders/{id} shows it then, byte for
#    byte; its webhook-id is msg_ and 32 hex digits, one per event;
#  - a replay, a conflict (another body), a final rejection, an input
#    error and a cancel of a cancelled order write none;
#  - a create stopped before its COMMIT (a crash there) leaves no event;
#    one whose answer is dropped after COMMIT has its event;
#  - the audit finds every order with its events, and reports an event
#    without its order;
#  - `idemorders expire` purges delivered events older than
#    event_retention, never a pending or dead one.
# Through lighttpd and Apache proxy_fcgi, with fresh keys of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

# events_of ORDER_ID: "type seq principal state webhook_id" lines.
events_of() {
	sql "SELECT type, seq, principal_id, state IN ('pending', 'delivered'),
	    webhook_id FROM events WHERE order_id = ${1#o-} ORDER BY seq"
}

# events_of_key PRINCIPAL KEY: the events written by that key's claim.
events_of_key() {
	sql "SELECT COUNT(*) FROM events e JOIN idempotency_records r
	    ON r.id = e.id WHERE r.principal_id = '$1' AND r.idem_key = '$2'"
}

# payload_is ORDER_ID SEQ WHAT: the event's payload is the body GET
# answers now (in $T_TMP/get), byte for byte.
payload_is() {
	local got
	req GET "$url$MOUNT/$1" -u "$ALICE"
	cp "$T_TMP/body" "$T_TMP/get"
	got=$(sql "SELECT HEX(payload) FROM events WHERE order_id = ${1#o-} AND seq = $2")
	if [[ -n $got && $got == "$(od -An -tx1 -v "$T_TMP/get" | tr -d ' \n' | tr a-f A-F)" ]]; then
		ok "$3: the payload is GET's body, byte for byte"
	else
		fail "$3: payload" "'$(printf '%s' "$got" | xxd -r -p)' != '$(cat "$T_TMP/get")'"
	fi
}

TAB=$'\t'
body='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000,"note":"t58"}'
since=$(($(date +%s) - 1))
for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	key=$(unique_key "t58-$s")
	post "$url" "$ALICE" "$key" "$body"
	expect_status 201 "$s: create"
	oid=$(jq -r .orderId "$T_TMP/body")
	ev=$(events_of "$oid")
	re="^order\\.created${TAB}1${TAB}alice${TAB}1${TAB}msg_[0-9a-f]{32}\$"
	if [[ $(wc -l <<<"$ev") == 1 && $ev =~ $re ]]; then
		ok "$s: the create wrote one order.created event for alice ($(cut -f5 <<<"$ev"))"
	else
		fail "$s: create's event" "got '$ev'"
	fi
	wid=$(cut -f5 <<<"$ev")
	payload_is "$oid" 1 "$s: order.created"

	post "$url" "$ALICE" "$key" "$body"
	expect_header idempotent-replayed true "$s: replay"
	post "$url" "$ALICE" "$key" "${body/t58/other}"
	expect_problem 409 IDEMPOTENCY_KEY_REUSED "$s: conflict"
	expect_sql "SELECT COUNT(*), MIN(webhook_id) FROM events WHERE order_id = ${oid#o-}" \
	    "1	$wid" "$s: after a replay and a conflict, still the one event"

	ckey=$(unique_key "t58-cancel-$s")
	cancel "$url" "$ALICE" "$ckey" "$oid" '{"reason":"t58"}'
	expect_status 200 "$s: cancel"
	ev=$(events_of "$oid")
	re="^order\\.cancelled${TAB}2${TAB}alice${TAB}1${TAB}msg_[0-9a-f]{32}\$"
	if [[ $(wc -l <<<"$ev") == 2 && $(sed -n 2p <<<"$ev") =~ $re &&
	    $(sed -n 2p <<<"$ev" | cut -f5) != "$wid" && $(sed -n 1p <<<"$ev" | cut -f5) == "$wid" ]]; then
		ok "$s: the cancel wrote one order.cancelled event with a webhook-id of its own"
	else
		fail "$s: cancel's event" "got '$ev'"
	fi
	payload_is "$oid" 2 "$s: order.cancelled"
	if jq -e '.status == "CANCELLED" and (.cancelledAt | length) > 0' "$T_TMP/get" >/dev/null; then
		ok "$s: order.cancelled's payload shows the order CANCELLED"
	else
		fail "$s: cancelled payload" "$(cat "$T_TMP/get")"
	fi
	cancel "$url" "$ALICE" "$ckey" "$oid" '{"reason":"t58"}'
	expect_header idempotent-replayed true "$s: cancel replay"
	cancel "$url" "$ALICE" "$ckey" "$oid" '{"reason":"another"}'
	expect_problem 409 IDEMPOTENCY_KEY_REUSED "$s: cancel conflict"
	k2=$(unique_key "t58-again-$s")
	cancel "$url" "$ALICE" "$k2" "$oid" '{}'
	expect_problem 409 ORDER_ALREADY_CANCELLED "$s: cancel of a cancelled order"
	expect_sql "SELECT COUNT(*) FROM events WHERE order_id = ${oid#o-}" 2 \
	    "$s: replays, conflicts and a rejected cancel wrote no event"
	expect_sql "SELECT COUNT(*) FROM events e JOIN idempotency_records r ON r.id = e.id
	    WHERE r.principal_id = 'alice' AND r.idem_key = '$k2'" 0 \
	    "$s: the rejected cancel's claim has no event"

	# Final rejections and input errors.
	for bad in '{"currency":"KRW","items":[{"sku":"NO-SUCH","qty":1}],"amount":1}' \
	    '{"currency":"KRW","items":[{"sku":"Z-00","qty":1}],"amount":1000}' \
	    '{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":1}'; do
		k=$(unique_key "t58-reject-$s")
		post "$url" "$ALICE" "$k" "$bad"
		[[ $STATUS == 409 || $STATUS == 422 ]] || fail "$s: rejection" "status $STATUS for $bad"
		post "$url" "$ALICE" "$k" "$bad"
		expect_header idempotent-replayed true "$s: replayed rejection"
		expect_sql "SELECT COUNT(*) FROM idempotency_records r JOIN events e ON e.id = r.id
		    WHERE r.principal_id = 'alice' AND r.idem_key = '$k'" 0 \
		    "$s: the final rejection $(jq -r .code "$T_TMP/body") wrote no event"
	done
	n0=$(sql "SELECT COUNT(*) FROM events")
	post "$url" "$ALICE" "$(unique_key "t58-bad-$s")" '{"currency":"KRW"'
	expect_problem 400 MALFORMED_JSON "$s: malformed body"
	expect_sql "SELECT COUNT(*) >= 0 AND COUNT(*) = $n0 FROM events" 1 \
	    "$s: an input error wrote no event"
done

# Faults (a fault-injection build): a crash before COMMIT leaves no
# order and no event; an answer dropped after COMMIT, both.
url=$LIGHTTPD_URL
key=$(unique_key t58-crash)
post "$url" "$ALICE" "$key" "$body" -H 'X-Idemorders-Fault: before_commit=crash'
expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice' AND idempotency_key = '$key'" 0 \
    "a crash before COMMIT: no order"
expect_sql "SELECT COUNT(*) FROM events e JOIN idempotency_records r ON r.id = e.id
    WHERE r.idem_key = '$key'" 0 "a crash before COMMIT: no event"
key=$(unique_key t58-drop)
post "$url" "$ALICE" "$key" "$body" -H 'X-Idemorders-Fault: after_commit=drop'
expect_sql "SELECT COUNT(*) FROM orders o JOIN events e ON e.order_id = o.id AND e.seq = 1
    WHERE o.principal_id = 'alice' AND o.idempotency_key = '$key'" 1 \
    "an answer dropped after COMMIT: the order has its event"

# The audit: every order of this script has its events, no event lacks
# its order; an event whose order does not exist is reported.
audit() {
	"$IDEMORDERS_BIN" audit -c "$IDEMORDERS_CONF" --since "@$since" >"$T_TMP/audit.out" 2>&1
}
if audit && grep -q '^ok      order_without_event: 0' "$T_TMP/audit.out" &&
    grep -q '^ok      event_without_order: 0' "$T_TMP/audit.out"; then
	ok "audit: every order since the start has its events, every event its order"
else
	fail "audit" "$(grep -A3 BREACH "$T_TMP/audit.out" | head -n 12)"
fi
sql "INSERT INTO events (id, webhook_id, type, order_id, seq, principal_id,
    payload, created_at, state, next_attempt_at) SELECT MAX(id) + 1000000,
    'msg_t58_orphan_$$', 'order.created', 999999999, 1, 'alice', '{}',
    UTC_TIMESTAMP(6), 'dead', UTC_TIMESTAMP(6) FROM idempotency_records"
audit
if grep -q "^BREACH  event_without_order: 1" "$T_TMP/audit.out" &&
    grep -q "msg_t58_orphan_$$ order.created o-999999999 no such order" "$T_TMP/audit.out"; then
	ok "audit reports an event whose order does not exist"
else
	fail "audit orphan event" "$(cat "$T_TMP/audit.out")"
fi
sql "DELETE FROM events WHERE webhook_id = 'msg_t58_orphan_$$'"

# Retention: `idemorders expire` purges delivered events older than
# event_retention (7 d), and no pending one, whatever its age.
post "$LIGHTTPD_URL" "$ALICE" "$(unique_key t58-old1)" "$body"
old1=$(jq -r .orderId "$T_TMP/body")
post "$LIGHTTPD_URL" "$ALICE" "$(unique_key t58-old2)" "$body"
old2=$(jq -r .orderId "$T_TMP/body")
# (The order as old as its event, as the audit expects of a purged one.)
sql "UPDATE orders SET created_at = UTC_TIMESTAMP(6) - INTERVAL 9 DAY WHERE id = ${old1#o-}"
sql "UPDATE events SET state = 'delivered', delivered_at = UTC_TIMESTAMP(6) - INTERVAL 8 DAY
    WHERE order_id = ${old1#o-}"
sql "UPDATE events SET state = 'dead', created_at = UTC_TIMESTAMP(6) - INTERVAL 9 DAY
    WHERE order_id = ${old2#o-}"
out=$("$IDEMORDERS_BIN" expire -c "$IDEMORDERS_CONF" 2>&1)
if [[ $out =~ events_purged=([0-9]+)$ && ${BASH_REMATCH[1]} -ge 1 ]]; then
	ok "expire: $out"
else
	fail "expire" "$out"
fi
expect_sql "SELECT COUNT(*) FROM events WHERE order_id = ${old1#o-}" 0 \
    "a delivered event 8 days old is purged"
expect_sql "SELECT COUNT(*) FROM events WHERE order_id = ${old2#o-}" 1 \
    "a dead event 9 days old is kept"
sql "UPDATE events SET state = 'delivered', created_at = UTC_TIMESTAMP(6),
    delivered_at = UTC_TIMESTAMP(6) WHERE order_id = ${old2#o-}"

finish
