#!/usr/bin/env bash
# Two relays on one database share the events (contract section 4b):
# a second `idemorders relay` next to the stack's, the receiver answering
# every delivery after 100 ms; 12 orders, 6 of them cancelled (18
# events): orders 1-4 while the stack's relay is held (the second alone
# delivers them), 5-8 while the second is held (the stack's alone), 9-12
# while both run (a relay that claims ahead may take a whole burst):
#  - every event delivered, each exactly once (the leases kept the two
#    relays from sending one event twice);
#  - no event was ever in flight twice at once: at the receiver, no try
#    of an id began before the one before it was answered;
#  - both relays delivered some (each alone, then both at once);
#  - per order, order.created answered 2xx before order.cancelled was
#    sent;
#  - each relay counts its deliveries in rows of its own
#    (event_deliveries): both have rows, and they add up to 18 more.
# Then a relay claims ahead more than it can start at once: a third one,
# relay_concurrency 1, webhook_timeout 4 s (a lease of 9 s), takes three
# new events (two of them ahead) while the stack's relay is held, and the first
# three deliveries are answered after 3.3 s: the third, started after two
# such, would still be in flight when its lease passes and the stack's
# relay takes it over.  It must not start an event whose lease has too
# little left, and gives its lease back instead:
#  - all three delivered, none in flight twice at once;
#  - the third relay gave back leases it did not start.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/webhooks.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

body='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000,"note":"t91"}'
RELAY2_LOG=$T_TMP/relay2.log
RELAY2=

RELAY3_LOG=$T_TMP/relay3.log
RELAY3=

trap 'release2; stop_pid RELAY2; stop_pid RELAY3; release_relay; receiver_stop; rm -rf "$T_TMP"' EXIT

webhooks_install
relay=$(relay_pid) || { fail "relay" "the stack runs no relay"; finish; }
receiver_start
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" enable >"$T_TMP/enable.out" 2>&1 ||
    fail "events enable" "$(cat "$T_TMP/enable.out")"
receiver_control '{"status":200,"delayMs":100}'
"$IDEMORDERS_BIN" relay -c "$IDEMORDERS_CONF" </dev/null >"$RELAY2_LOG" 2>&1 &
RELAY2=$!
started() { grep -q "relay: delivering events to" "$RELAY2_LOG"; }
wait_until 20 started && ok "a second relay runs (pid $RELAY2) next to the stack's ($relay)" ||
    { fail "second relay" "$(tail -n 5 "$RELAY2_LOG")"; finish; }

# Whatever earlier runs left pending goes first (its own counts).
none_pending() { [[ $(sql "SELECT COUNT(*) FROM events WHERE state = 'pending'") == 0 ]]; }
wait_until 60 none_pending || fail "baseline" "events still pending"
counted() { sql "SELECT IFNULL(SUM(n), 0) FROM event_deliveries WHERE outcome = 'delivered'"; }
# tries_of IDS OUT: the receiver's log lines of the webhook-ids IDS (one
# a line), as one JSON array in OUT.  overlaps FILE: how many tries in it
# began before the try of the same id before them was answered.
tries_of() {
	jq -R . <<<"$1" | jq -s . >"$2.ids"
	jq -s --slurpfile ids "$2.ids" 'map(select(.id as $i | $ids[0] | index($i)))' \
	    "$RECEIVER_LOG" >"$2"
}
overlaps() {
	jq '[group_by(.id)[] | sort_by(.at) | . as $t | range(1; length) | select($t[.].at < $t[. - 1].answeredAt)] | length' "$1"
}
before=$(counted)

HELD2=
hold2() { kill -STOP "$RELAY2" && HELD2=1; }
release2() { [[ -z $HELD2 ]] || kill -CONT "$RELAY2"; HELD2=; }
# The events of the orders so far all delivered (none held by a relay).
so_far_delivered() {
	local l
	l=$(IFS=,; echo "${orders[*]//o-/}")
	[[ $(sql "SELECT COUNT(*) FROM events WHERE order_id IN ($l) AND state <> 'delivered'") == 0 ]]
}
orders=()
hold_relay
for i in $(seq 1 12); do
	if ((i == 5 || i == 9)); then
		wait_until 60 so_far_delivered || fail "orders before $i" "not all delivered"
		if ((i == 5)); then
			release_relay
			hold2
		else
			release2
		fi
	fi
	post_order "$LIGHTTPD_URL" "$(unique_key "t91-$i")" "$body"
	[[ $STATUS == 201 ]] || { fail "create $i" "status $STATUS"; continue; }
	o=$(jq -r .orderId "$T_TMP/body")
	orders+=("$o")
	if ((i % 2 == 0)); then
		post_cancel "$LIGHTTPD_URL" "$(unique_key "t91-c-$i")" "$o"
		[[ $STATUS == 200 ]] || fail "cancel $o" "status $STATUS"
	fi
done
in_list=$(IFS=,; echo "${orders[*]//o-/}")
ids=$(sql "SELECT webhook_id FROM events WHERE order_id IN ($in_list)")
nev=$(echo "$ids" | grep -c .)
[[ $nev == 18 ]] && ok "18 events written" || fail "events" "$nev rows"
all_delivered() {
	[[ $(sql "SELECT COUNT(*) FROM events WHERE order_id IN ($in_list) AND state = 'delivered'") == "$nev" ]]
}
wait_until 60 all_delivered && ok "every event delivered" ||
    fail "deliveries" "$(sql "SELECT state, COUNT(*) FROM events WHERE order_id IN ($in_list) GROUP BY state" | tr '\n' ' ')"

# The receiver's log of these events.
tries_of "$ids" "$T_TMP/ours.json"
twice=$(jq '[group_by(.id)[] | select(map(select(.verified and .status == 200)) | length != 1)] | length' "$T_TMP/ours.json")
[[ $twice == 0 ]] && ok "each event answered 2xx exactly once" ||
    fail "exactly once" "$twice events were not: $(jq -c '[group_by(.id)[] | select(length != 1) | map({id, status, at})]' "$T_TMP/ours.json" | head -c 600)"
overlap=$(overlaps "$T_TMP/ours.json")
[[ $overlap == 0 ]] && ok "no event was in flight twice at once" ||
    fail "in flight twice" "$overlap overlapping tries"
n2=$(for w in $ids; do grep -c "event $w .*delivered, HTTP" "$RELAY2_LOG"; done | awk '{ s += $1 } END { print s + 0 }')
[[ $n2 -ge 1 && $n2 -lt $nev ]] && ok "both relays delivered some: the second $n2 of $nev" ||
    fail "sharing" "the second relay delivered $n2 of $nev"
host=$(hostname | cut -c1-40)
rows=$(sql "SELECT COUNT(*) FROM event_deliveries WHERE outcome = 'delivered' AND relay IN ('$host/$relay', '$host/$RELAY2')")
moved=$(($(counted) - before))
[[ $rows == 2 && $moved == 18 ]] && ok "event_deliveries: a row for each relay, delivered +$moved" ||
    fail "event_deliveries" "$rows rows, delivered +$moved: $(sql "SELECT * FROM event_deliveries" | tr '\n' ' ')"
bad=0
for o in "${orders[@]}"; do
	c=$(jq -r --arg o "$o" 'map(select(.orderId == $o and .type == "order.created" and .status == 200)) | .[0].answeredAt // empty' "$T_TMP/ours.json")
	x=$(jq -r --arg o "$o" 'map(select(.orderId == $o and .type == "order.cancelled")) | sort_by(.at) | .[0].at // empty' "$T_TMP/ours.json")
	[[ -n $c ]] || bad=1
	[[ -z $x || $c -le $x ]] || bad=1
done
[[ $bad == 0 ]] && ok "per order: order.created answered before order.cancelled was sent" ||
    fail "per-order order" "$(jq -c 'map({orderId, type, at, answeredAt})' "$T_TMP/ours.json" | head -c 800)"
receiver_control '{}'
stop_pid RELAY2
grep -q "relay: stopped" "$RELAY2_LOG" && ok "the second relay stopped on SIGTERM" ||
    fail "second relay" "$(tail -n 3 "$RELAY2_LOG")"

# Claimed ahead: started only with lease enough left.
grep -v -E '^(webhook_timeout|relay_concurrency|log_level) ' "$IDEMORDERS_CONF" >"$T_TMP/relay3.conf"
printf 'webhook_timeout = 4s\nrelay_concurrency = 1\nlog_level = info\n' >>"$T_TMP/relay3.conf"
hold_relay
ahead=()
for i in 1 2 3; do
	post_order "$LIGHTTPD_URL" "$(unique_key "t91-a-$i")" "$body"
	[[ $STATUS == 201 ]] && ahead+=("$(jq -r .orderId "$T_TMP/body")") ||
	    fail "create ahead $i" "status $STATUS"
done
a_list=$(IFS=,; echo "${ahead[*]//o-/}")
receiver_control '{"status":200,"delayMs":3300,"count":3}'
"$IDEMORDERS_BIN" relay -c "$T_TMP/relay3.conf" </dev/null >"$RELAY3_LOG" 2>&1 &
RELAY3=$!
claimed3() {
	[[ $(sql "SELECT COUNT(*) FROM events WHERE order_id IN ($a_list) AND lease_owner LIKE '%/$RELAY3/%'") == 3 ]]
}
wait_until 30 claimed3 && ok "the third relay holds all three (claimed ahead of its one slot)" ||
    fail "claim ahead" "$(sql "SELECT id, lease_owner FROM events WHERE order_id IN ($a_list)" | tr '\n' ' ')"
release_relay
a_delivered() {
	[[ $(sql "SELECT COUNT(*) FROM events WHERE order_id IN ($a_list) AND state = 'delivered'") == 3 ]]
}
wait_until 90 a_delivered && ok "the three events delivered" ||
    fail "deliveries ahead" "$(sql "SELECT state, attempts, last_error FROM events WHERE order_id IN ($a_list)" | tr '\n' ' ')"
# (a try is logged when answered: the third relay's, if any, once it stopped)
stop_pid RELAY3
tries_of "$(sql "SELECT webhook_id FROM events WHERE order_id IN ($a_list)")" "$T_TMP/a_ours.json"
overlap=$(overlaps "$T_TMP/a_ours.json")
[[ $overlap == 0 ]] && ok "claimed ahead, no event was in flight twice at once" ||
    fail "in flight twice (claimed ahead)" "$overlap overlapping tries: $(jq -c 'map({id, at, answeredAt})' "$T_TMP/a_ours.json")"
grep -q "relay: gave back the leases of" "$RELAY3_LOG" &&
    ok "the third relay gave back the leases it could not start in time" ||
    fail "leases given back" "$(grep -E 'lease|event msg_' "$RELAY3_LOG" | tail -n 5)"
receiver_control '{}'
finish
