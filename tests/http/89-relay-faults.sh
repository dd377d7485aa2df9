#!/usr/bin/env bash
# The relay under the faults 59-relay.sh does not drive (contract
# section 4b; the receiver is the npm standardwebhooks one):
#  - the receiver answers a delivery with a TCP reset: the event is sent
#    again with the same webhook-id and delivered, the relay goes on;
#  - the receiver answers with bytes that are not HTTP: the same;
#  - MariaDB killed (SIGKILL) while a delivery is in flight, the receiver
#    answers 200 while it is down: the relay survives, the outcome it
#    could not record is redelivered after the database is back (same
#    webhook-id, at most once more), and the event ends delivered;
#  - a responder crashing after COMMIT, before its answer: the client
#    gets a gateway error, the order's one order.created goes out,
#    verified, once, with the order as GET shows it; the client's retry
#    replays the 201 and writes no event.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/webhooks.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

body='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000,"note":"t89"}'

# new_order: create one (lighttpd); prints its id (fault_next calls it).
new_order() {
	post_order "$LIGHTTPD_URL" "$(unique_key t89)" "$body"
	[[ $STATUS == 201 ]] || fail "create" "status $STATUS"
	jq -r .orderId "$T_TMP/body"
}

# tries ID: the verified deliveries of ID the receiver saw, one a line.
tries() {
	jq -c --arg id "$1" 'select(.id == $id and .verified)' "$RECEIVER_LOG"
}
answers() {	# ID: the receiver's answers to ID, space-separated
	tries "$1" | jq -r .status | tr '\n' ' '
}
state_is() {	# WEBHOOK_ID STATE
	[[ $(event_state "$1") == "$2" ]]
}
in_flight() {	# WEBHOOK_ID
	[[ $(sql "SELECT lease_owner IS NOT NULL AND state = 'pending' FROM events WHERE webhook_id = '$1'") == 1 ]]
}

webhooks_install
if ! relay=$(relay_pid); then
	fail "relay" "the stack runs no relay ($RELAY_PIDFILE)"
	finish
fi
receiver_start
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" enable >"$T_TMP/enable.out" 2>&1 ||
    fail "events enable" "$(cat "$T_TMP/enable.out")"

# --- a TCP reset, then bytes that are not HTTP
for how in reset garbage; do
	fault_next "{\"$how\":true,\"count\":1}"
	w=$W
	if wait_until 20 delivered_ok "$w" && wait_until 5 state_is "$w" delivered; then
		got=$(answers "$w")
		[[ $got == "$how 200 " ]] &&
		    ok "receiver answered $how: sent again, same webhook-id, delivered ($got)" ||
		    fail "$how" "answers: $got"
	else
		fail "$how" "not delivered: $(answers "$w") state $(event_state "$w")"
	fi
done
grep -E "event $W .* attempt 1: .*(HTTP/0\.9|Weird server reply|nsupported)" "$LOGDIR/relay.log" >"$T_TMP/garbage.log" &&
    ok "the relay logged the garbage answer: $(sed 's/.*attempt 1: //' "$T_TMP/garbage.log" | head -n 1)" ||
    fail "relay log" "no error line for $W: $(grep "event $W" "$LOGDIR/relay.log" | head -n 3)"
[[ $(relay_pid) == "$relay" ]] && ok "the relay ($relay) still runs" ||
    fail "relay" "pid $relay is gone"

# --- the database lost while a delivery is in flight: the receiver
# kills mariadbd when the delivery arrives, then answers 200.
db=$(tr -dc '0-9' <"$RUNDIR/db/mariadb.pid")
fault_next "{\"status\":200,\"delayMs\":300,\"count\":1,\"kill\":$db}"
w=$W
wait_until 20 bash -c "! kill -0 $db 2>/dev/null" && ok "mariadbd ($db) killed while $w is in flight" ||
    fail "mariadbd" "$db still runs: $(tries "$w")"
answered() { [[ $(answers "$w") == "200 "* ]]; }
wait_until 15 answered || fail "receiver" "no answer to $w"
unrecorded() { grep -q "event $w: its outcome (delivered) was not recorded" "$LOGDIR/relay.log"; }
wait_until 30 unrecorded && ok "the receiver took $w; the relay could not record it and says so" ||
    fail "relay log" "$(grep "event $w" "$LOGDIR/relay.log")"
"$DEV" chaos restart-db >"$T_TMP/restart.out" 2>&1 ||
    fail "restart-db" "$(tail -n 3 "$T_TMP/restart.out")"
wait_healthy "after the database came back"
if wait_until 30 state_is "$w" delivered; then
	got=$(answers "$w")
	n=$(tries "$w" | jq -s 'map(select(.status == 200)) | length')
	dup=$(tries "$w" | jq -s '.[-1].dup')
	[[ $n == 2 && $dup == true ]] &&
	    ok "after the database came back: $w sent once more, same webhook-id, the receiver saw it as a duplicate ($got)" ||
	    fail "redelivery" "answers $got, last dup $dup"
else
	fail "after the database came back" "$(sql "SELECT state, attempts, lease_until, last_error FROM events WHERE webhook_id = '$w'")"
fi
[[ $(relay_pid) == "$relay" ]] && ok "the relay ($relay) lived through the database's loss" ||
    fail "relay" "pid $relay is gone: $(tail -n 5 "$LOGDIR/relay.log")"
wait_until 30 bash -c "grep -q 'relay: database back' '$LOGDIR/relay.log'" &&
    ok "the relay logged the database back" || fail "relay log" "no 'database back'"

# --- a responder crash between COMMIT and its answer
pool_wait_full 40 || fail "pool" "fewer workers than configured"
key=$(unique_key t89-crash)
post_order "$LIGHTTPD_URL" "$key" "$body" after_commit=crash
expect_gateway_error "create, responder crashed after COMMIT"
post_order "$LIGHTTPD_URL" "$key" "$body"
expect_status 201 "the client's retry"
expect_header idempotent-replayed true "the client's retry"
oid=$(jq -r .orderId "$T_TMP/body")
n=$(sql "SELECT COUNT(*) FROM events WHERE order_id = ${oid#o-}")
[[ $n == 1 ]] && ok "$oid has one event (the retry wrote none)" || fail "events of $oid" "$n rows"
w=$(sql "SELECT webhook_id FROM events WHERE order_id = ${oid#o-} AND seq = 1 AND type = 'order.created'")
if wait_until 20 delivered_ok "$w"; then
	ok "order.created of $oid delivered, verified"
else
	fail "delivery of $oid" "$(answers "$w") state $(event_state "$w")"
fi
wait_until 5 state_is "$w" delivered || fail "event state" "$(event_state "$w")"
[[ $(answers "$w") == "200 " ]] && ok "sent once" || fail "tries of $w" "$(answers "$w")"
req GET "$LIGHTTPD_URL$MOUNT/$oid" -u "$ALICE"
expect_status 200 "GET $oid"
sql "SELECT payload FROM events WHERE webhook_id = '$w'" | jq -S . >"$T_TMP/payload.json"
jq -S . "$T_TMP/body" >"$T_TMP/get.json"
if cmp -s "$T_TMP/payload.json" "$T_TMP/get.json" && [[ $(tries "$w" | jq -r .orderId) == "$oid" ]]; then
	ok "the event carries $oid as committed (as GET shows it)"
else
	fail "payload of $w" "$(diff "$T_TMP/payload.json" "$T_TMP/get.json" | head -n 8)"
fi
finish
