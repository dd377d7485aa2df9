#!/usr/bin/env bash
# `idemorders relay` (contract section 4b): the stack's relay delivers
# every event to a receiver built on the published Standard Webhooks
# verifier (npm standardwebhooks), which checks each delivery:
#  - a create and a cancel arrive verified, in order, with the webhook-id
#    and the payload of their event rows; the rows become delivered;
#  - the receiver refuses a tampered body, an old timestamp and a wrong
#    secret (and takes the untouched delivery sent again);
#  - the receiver down, then up: every event is delivered, each order's
#    order.created before its order.cancelled;
#  - 500: retried until delivered; 429 with Retry-After: 2: the next try
#    waits at least 2 s; an answer slower than webhook_timeout (2 s):
#    given up and sent again with the same webhook-id;
#  - the relay killed (SIGKILL) while a delivery is in flight: after its
#    lease, the event is delivered with the same webhook-id;
#  - an event older than event_max_age that fails is dead, listed by
#    `idemorders events list --state dead`, sent by `events redeliver`;
#  - 410 Gone: the endpoint is disabled (nothing more is sent) until
#    `idemorders events enable`; then the event goes out;
#  - SIGHUP reloads the configuration; SIGTERM: a delivery in flight
#    finishes before the relay exits;
#  - _health answers 200 while the receiver is down.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/webhooks.sh"

body='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000,"note":"t59"}'

# new_order: create one (lighttpd); prints its id.
new_order() {
	post "$LIGHTTPD_URL" "$ALICE" "$(unique_key t59)" "$body"
	[[ $STATUS == 201 ]] || fail "create" "status $STATUS"
	jq -r .orderId "$T_TMP/body"
}

# cancel_order ID
cancel_order() {
	req POST "$LIGHTTPD_URL$MOUNT/$1/cancel" -u "$ALICE" \
	    -H "Idempotency-Key: $(unique_key t59-cancel)" \
	    -H 'Content-Type: application/json' --data-binary '{}'
	[[ $STATUS == 200 ]] || fail "cancel $1" "status $STATUS"
}

# wid ORDER SEQ: the webhook-id of that event.
wid() {
	sql "SELECT webhook_id FROM events WHERE order_id = ${1#o-} AND seq = $2"
}

state_is() {	# WEBHOOK_ID STATE
	[[ $(event_state "$1") == "$2" ]]
}

# tries ID: the verified deliveries of ID the receiver saw.
tries() {
	jq -c --arg id "$1" 'select(.id == $id and .verified)' "$RECEIVER_LOG"
}

webhooks_install
if pid=$(relay_pid); then
	ok "the stack's relay runs (pid $pid)"
else
	fail "relay" "the stack runs no relay ($RELAY_PIDFILE)"
	finish
fi
receiver_start
# An endpoint an earlier run left disabled (410) takes events again.
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" enable >"$T_TMP/enable.out" 2>&1 ||
    fail "events enable" "$(cat "$T_TMP/enable.out")"

# --- a create and a cancel, verified, in order
o1=$(new_order)
cancel_order "$o1"
w1=$(wid "$o1" 1) w2=$(wid "$o1" 2)
if wait_until 20 delivered_ok "$w2" && delivered_ok "$w1"; then
	ok "order.created and order.cancelled of $o1 delivered and verified"
else
	fail "deliveries of $o1" "$(cat "$RECEIVER_LOG")"
fi
n1=$(jq -r --arg id "$w1" 'select(.id == $id and .verified) | .n' "$RECEIVER_LOG" | head -n 1)
n2=$(jq -r --arg id "$w2" 'select(.id == $id and .verified) | .n' "$RECEIVER_LOG" | head -n 1)
[[ -n $n1 && -n $n2 && $n1 -lt $n2 ]] && ok "order.created arrived before order.cancelled" ||
    fail "order of $o1's events" "created #$n1, cancelled #$n2"
if jq -s -e --arg id "$w2" --arg o "$o1" 'any(.[]; .id == $id and .type == "order.cancelled" and .orderId == $o and .orderStatus == "CANCELLED")' \
    "$RECEIVER_LOG" >/dev/null; then
	ok "the receiver read order.cancelled of $o1, CANCELLED"
else
	fail "payload" "$(tries "$w2")"
fi
wait_until 5 state_is "$w2" delivered &&
    ok "the event rows are delivered" || fail "event state" "$(event_state "$w2")"

# --- the verifier refuses what was not signed with the secret, or not
# lately: the body of a delivered event (rebuilt from its row, as the
# relay builds it), signed by the npm library, then altered.
sig_of() {	# ID TIMESTAMP BODY [SECRET]: a signature by the npm library
	NODE_PATH=$WEBHOOKS_NODE_DIR/node_modules node -e '
	    const { Webhook } = require("standardwebhooks");
	    const [id, ts, body, secret] = process.argv.slice(1);
	    console.log(new Webhook(secret).sign(id, new Date(ts * 1000), body));' \
	    "$1" "$2" "$3" "${4:-$(cat "$WEBHOOK_SECRET_FILE")}"
}
send() {	# ID TIMESTAMP SIGNATURE BODY: the receiver's answer
	curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST "$RECEIVER_URL/webhook" \
	    -H 'Content-Type: application/json' -H "webhook-id: $1" \
	    -H "webhook-timestamp: $2" -H "webhook-signature: $3" --data-binary "$4"
}
payload=$(sql "SELECT CONCAT('{\"type\":\"', type, '\",\"timestamp\":\"',
    DATE_FORMAT(created_at, '%Y-%m-%dT%H:%i:%sZ'), '\",\"data\":', payload, '}')
    FROM events WHERE webhook_id = '$w1'")
now=$(date +%s)
good=$(sig_of "$w1" "$now" "$payload")
[[ $(send "$w1" "$now" "$good" "$payload") == 200 ]] &&
    ok "the receiver takes a correctly signed delivery sent again" ||
    fail "good signature" "refused"
[[ $(send "$w1" "$now" "$good" "${payload/CREATED/CANCELLED}") == 400 ]] &&
    ok "the receiver refuses a tampered body" || fail "tampered body" "accepted"
old=$((now - 600))
[[ $(send "$w1" "$old" "$(sig_of "$w1" "$old" "$payload")" "$payload") == 400 ]] &&
    ok "the receiver refuses a timestamp 10 minutes old" || fail "old timestamp" "accepted"
wrong="whsec_$(head -c 32 /dev/zero | base64)"
[[ $(send "$w1" "$now" "$(sig_of "$w1" "$now" "$payload" "$wrong")" "$payload") == 400 ]] &&
    ok "the receiver refuses a signature made with another secret" ||
    fail "wrong secret" "accepted"

# --- the receiver down, then up
receiver_stop
ids=()
for _ in 1 2 3; do
	o=$(new_order)
	cancel_order "$o"
	ids+=("$o")
done
# While it is down the relay tries, fails, and keeps the events pending.
pending_tried() {
	[[ $(sql "SELECT COUNT(*) FROM events WHERE order_id = ${ids[0]#o-}
	    AND seq = 1 AND state = 'pending' AND attempts >= 2") == 1 ]]
}
wait_until 15 pending_tried && ok "with the receiver down the events stay pending, tried again" ||
    fail "receiver down" "$(sql "SELECT state, attempts, last_error FROM events WHERE order_id = ${ids[0]#o-}")"
req GET "$LIGHTTPD_URL$MOUNT/_health"
expect_status 200 "_health with the receiver down"
receiver_start
all_done() {
	local o
	for o in "${ids[@]}"; do
		delivered_ok "$(wid "$o" 2)" || return 1
	done
}
if wait_until 20 all_done; then
	ok "the receiver up again: every event delivered"
else
	fail "after the outage" "$(sql "SELECT order_id, seq, state, attempts, last_error FROM events WHERE order_id IN ($(IFS=,; echo "${ids[*]//o-/}"))" | tr '\n' ' ')"
fi
bad_order=0
for o in "${ids[@]}"; do
	a=$(jq -r --arg id "$(wid "$o" 1)" 'select(.id == $id and .status == 200) | .n' "$RECEIVER_LOG" | head -n 1)
	b=$(jq -r --arg id "$(wid "$o" 2)" 'select(.id == $id and .verified) | .n' "$RECEIVER_LOG" | head -n 1)
	[[ -n $a && -n $b && $a -lt $b ]] || bad_order=1
done
[[ $bad_order == 0 ]] && ok "per order: order.created delivered before order.cancelled was sent" ||
    fail "per-order order" "$(cat "$RECEIVER_LOG" | tail -n 12)"

# --- 500, then delivered
fault_next '{"status":500,"count":2}'
w=$W
if wait_until 20 delivered_ok "$w"; then
	got=$(tries "$w" | jq -r .status | tr '\n' ' ')
	[[ $got == "500 500 200 " ]] && ok "500 twice, then delivered: $got" || fail "500s" "answers $got"
else
	fail "after 500" "$(tries "$w")"
fi

# --- 429 with Retry-After: 2
fault_next '{"status":429,"retryAfter":"2","count":1}'
w=$W
if wait_until 20 delivered_ok "$w"; then
	gap=$(tries "$w" | jq -s '.[1].at - .[0].answeredAt')
	[[ $gap -ge 2000 ]] && ok "429 Retry-After: 2: the next try came $gap ms later" ||
	    fail "Retry-After" "next try after $gap ms"
else
	fail "after 429" "$(tries "$w")"
fi

# --- an answer slower than the timeout (2 s)
fault_next '{"status":200,"delayMs":3500,"count":1}'
w=$W
# Both tries logged: the first one once the receiver answered it, late.
two_tries() { delivered_ok "$w" && [[ $(tries "$w" | jq -s 'length') -ge 2 ]]; }
if wait_until 25 two_tries; then
	ok "a slow answer past the timeout: sent again with the same webhook-id ($(tries "$w" | jq -s 'length') tries)"
else
	fail "slow receiver" "$(tries "$w")"
fi
grep -q "event $w .*Operation timed out\|event $w .*Timeout" "$LOGDIR/relay.log" &&
    ok "the relay logged the timeout" || fail "relay log" "no timeout line for $w"

# --- SIGKILL while a delivery is in flight
fault_next '{"status":200,"delayMs":8000,"count":1}'
w=$W
# in_flight: the event of $w is claimed and not yet settled.
in_flight() {
	[[ $(sql "SELECT lease_owner IS NOT NULL AND state = 'pending' FROM events WHERE webhook_id = '$w'") == 1 ]]
}
wait_until 10 in_flight || fail "in flight" "the event was not claimed"
pid=$(relay_pid)
kill -KILL "$pid"
wait_until 5 bash -c "! kill -0 $pid 2>/dev/null" && ok "relay $pid killed while delivering $w"
receiver_control '{}'
relay_restart
if wait_until 20 delivered_ok "$w"; then
	ok "after the lease the restarted relay delivered $w again, same webhook-id"
else
	fail "after SIGKILL" "$(sql "SELECT state, attempts, lease_until, last_error FROM events WHERE webhook_id = '$w'")"
fi

# --- 410 Gone disables the endpoint
fault_next '{"status":410,"count":1}'
w=$W
disabled() { [[ $(sql "SELECT COUNT(*) FROM event_endpoints WHERE disabled_at IS NOT NULL") == 1 ]]; }
wait_until 15 disabled && ok "410: the endpoint is recorded disabled" ||
    fail "410" "no disabled endpoint"
o2=$(new_order)
w2=$(wid "$o2" 1)
never_tried() { [[ $(sql "SELECT attempts FROM events WHERE webhook_id = '$w2'") == 0 ]]; }
# An observation window of four poll intervals (500 ms): nothing sent.
wait_until 2 false
never_tried && ! delivered_ok "$w2" && ok "while disabled, nothing is sent" ||
    fail "disabled endpoint" "$(tries "$w2")"
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" enable >"$T_TMP/enable.out" 2>&1 &&
    ok "idemorders events enable: $(cat "$T_TMP/enable.out")" ||
    fail "events enable" "$(cat "$T_TMP/enable.out")"
if wait_until 20 delivered_ok "$w2" && wait_until 10 delivered_ok "$w"; then
	ok "enabled again: the waiting events delivered"
else
	fail "after enable" "$(tries "$w2")"
fi

# --- dead letter: an event older than event_max_age (3 d) that fails is
# dead, listed, and delivered by `idemorders events redeliver`.
hold_relay
o=$(new_order)
w=$(wid "$o" 1)
sql "UPDATE events SET created_at = created_at - INTERVAL 4 DAY WHERE webhook_id = '$w'"
receiver_control "{\"status\":500,\"count\":1,\"id\":\"$w\"}"
release_relay
is_dead() { state_is "$w" dead; }
wait_until 15 is_dead && ok "an event 4 days old answered 500: dead-lettered" ||
    fail "dead letter" "$(sql "SELECT state, attempts, last_error FROM events WHERE webhook_id = '$w'")"
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" list --state dead >"$T_TMP/dead.out" 2>&1
grep -q "^$w	order.created	$o	dead	1	" "$T_TMP/dead.out" &&
    ok "idemorders events list --state dead lists it" || fail "events list" "$(cat "$T_TMP/dead.out")"
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" redeliver "$w" >"$T_TMP/redo.out" 2>&1 ||
    fail "events redeliver" "$(cat "$T_TMP/redo.out")"
wait_until 15 delivered_ok "$w" && wait_until 5 state_is "$w" delivered &&
    ok "idemorders events redeliver: delivered, same webhook-id" ||
    fail "after redeliver" "$(tries "$w")"
# The order of a moment ago is back to its real age for the audit.
sql "UPDATE events SET created_at = created_at + INTERVAL 4 DAY WHERE webhook_id = '$w'"

# --- SIGHUP: the relay reads its configuration again and goes on
pid=$(relay_pid)
kill -HUP "$pid"
reloaded() { grep -q "idemorders\[$pid\] info: relay: configuration reloaded" "$LOGDIR/relay.log"; }
wait_until 10 reloaded && ok "SIGHUP: the relay reloaded its configuration" ||
    fail "SIGHUP" "$(tail -n 3 "$LOGDIR/relay.log")"
o=$(new_order)
w=$(wid "$o" 1)
wait_until 15 delivered_ok "$w" && [[ $(relay_pid) == "$pid" ]] &&
    ok "after the reload the same relay delivers" || fail "after SIGHUP" "$(tries "$w")"

# --- SIGTERM finishes a delivery in flight
fault_next '{"status":200,"delayMs":1200,"count":1}'
w=$W
wait_until 10 in_flight || fail "in flight" "the event was not claimed"
pid=$(relay_pid)
kill -TERM "$pid"
wait_until 10 bash -c "! kill -0 $pid 2>/dev/null"
if delivered_ok "$w" && [[ $(event_state "$w") == delivered ]]; then
	ok "SIGTERM: the delivery in flight finished and was recorded before the relay exited"
else
	fail "SIGTERM" "$(event_state "$w") $(tries "$w")"
fi
relay_restart

# No event of this script was ever seen twice as a first-time success
# without the receiver having answered an earlier try with an error or a
# timeout, and every verified delivery carried a known webhook-id.
# One query for all of them (the log holds every script's deliveries).
jq -r 'select(.verified) | .id' "$RECEIVER_LOG" | sort -u >"$T_TMP/seen"
in_list=$(grep -E '^msg_[0-9a-f]+$' "$T_TMP/seen" | sed "s/.*/'&'/" | paste -sd, -)
sql "SELECT webhook_id FROM events WHERE webhook_id IN (${in_list:-''})" | sort -u >"$T_TMP/known"
unknown=$(comm -23 "$T_TMP/seen" "$T_TMP/known")
[[ -s $T_TMP/seen ]] || fail "verified deliveries" "the receiver log has none"
[[ -z $unknown ]] && ok "every verified delivery names an event row" || fail "unknown ids" "$unknown"
finish
