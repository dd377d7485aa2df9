#!/usr/bin/env bash
# The relay's deliveries by outcome on GET /orders/_metrics
# (idemorders_event_deliveries_total{outcome=...}, a counter), parsed by
# a real Prometheus exposition parser (python3-prometheus-client): with
# nothing else pending, each outcome moves by exactly the deliveries
# this script causes:
#  - one event delivered at once:               delivered +1
#  - one answered 500 twice, then delivered:    retry +2, delivered +1
#  - one answered 410, then `events enable`:    gone +1, delivered +1
#  - one 4 days old answered 500, redelivered:  dead +1, delivered +1
# The stack's config is restored (and the pool reloaded) on exit.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/webhooks.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

PY=/usr/bin/python3
CONF_SAVED=$T_TMP/idemorders.conf.orig
MASTER=$(cat "$SERVE_PIDFILE" 2>/dev/null)
body='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000,"note":"t90"}'

if ! "$PY" -c 'import prometheus_client.parser' 2>"$T_TMP/py.err"; then
	fail "python3-prometheus-client" "$(cat "$T_TMP/py.err")"
	finish
fi
cat >"$T_TMP/parse.py" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families

for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        labels = ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))
        print("%s{%s} %d" % (s.name, labels, s.value))
    print("TYPE %s %s" % (fam.name, fam.type))
EOF

new_order() {
	post_order "$LIGHTTPD_URL" "$(unique_key t90)" "$body"
	[[ $STATUS == 201 ]] || fail "create" "status $STATUS"
	jq -r .orderId "$T_TMP/body"
}
state_is() { [[ $(event_state "$1") == "$2" ]]; }

# The pool's workers, then SIGHUP: wait until every one is new.
children() { pgrep -P "$MASTER" | LC_ALL=C sort; }
reload_pool() {
	local old i
	old=$(children)
	kill -HUP "$MASTER"
	for ((i = 0; i < 150; i++)); do
		[[ -n $(children) && -z $(LC_ALL=C comm -12 <(echo "$old") <(children)) ]] && return 0
		sleep 0.1
	done
	return 1
}
restore() {
	if [[ -f $CONF_SAVED ]] && ! cmp -s "$CONF_SAVED" "$IDEMORDERS_CONF"; then
		cat "$CONF_SAVED" >"$IDEMORDERS_CONF"
		reload_pool >/dev/null 2>&1
	fi
	release_relay
	receiver_stop
	rm -rf "$T_TMP"
}
cp "$IDEMORDERS_CONF" "$CONF_SAVED"
trap restore EXIT

# scrape OUT: the parsed metrics (lighttpd).
scrape() {
	req GET "$LIGHTTPD_URL$MOUNT/_metrics"
	[[ $STATUS == 200 ]] || { fail "scrape" "status $STATUS"; return 1; }
	"$PY" "$T_TMP/parse.py" <"$T_TMP/body" >"$1" 2>"$T_TMP/parse.err" ||
	    fail "the exposition parses" "$(cat "$T_TMP/parse.err")"
}
value() {	# FILE SAMPLE
	awk -v s="$2" '$1 == s { print $2 }' "$1"
}
outcome() { value "$1" "idemorders_event_deliveries_total{outcome=\"$2\"}"; }
none_pending() {
	scrape "$T_TMP/m0" && [[ $(value "$T_TMP/m0" 'idemorders_events_pending{}') == 0 ]]
}

webhooks_install
relay_pid >/dev/null || { fail "relay" "the stack runs no relay"; finish; }
receiver_start
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" enable >"$T_TMP/enable.out" 2>&1 ||
    fail "events enable" "$(cat "$T_TMP/enable.out")"
{ grep -v '^[[:space:]]*metrics[[:space:]]*=' "$CONF_SAVED"; echo "metrics = on"; } >"$T_TMP/conf.new"
cat "$T_TMP/conf.new" >"$IDEMORDERS_CONF"
reload_pool || fail "reload" "the pool did not reload"

# Whatever earlier runs left pending is delivered first.
wait_until 60 none_pending && ok "nothing pending: the baseline" ||
    fail "baseline" "$(grep events_pending "$T_TMP/m0")"
grep -q '^TYPE idemorders_event_deliveries counter$' "$T_TMP/m0" &&
    ok "idemorders_event_deliveries_total parses as a counter" ||
    fail "counter" "$(grep -i deliver "$T_TMP/m0")"
declare -A before
for o in delivered retry dead gone; do
	before[$o]=$(outcome "$T_TMP/m0" "$o")
	[[ -n ${before[$o]} ]] || fail "outcome $o" "no sample"
done

ws=()
o=$(new_order)
ws+=("$(sql "SELECT webhook_id FROM events WHERE order_id = ${o#o-}")")
fault_next '{"status":500,"count":2}'
ws+=("$W")
wait_until 30 state_is "$W" delivered || fail "500s" "$(event_state "$W")"
fault_next '{"status":410,"count":1}'
ws+=("$W")
disabled() { [[ $(sql "SELECT COUNT(*) FROM event_endpoints WHERE disabled_at IS NOT NULL") == 1 ]]; }
wait_until 20 disabled || fail "410" "no disabled endpoint"
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" enable >"$T_TMP/enable.out" 2>&1 ||
    fail "events enable" "$(cat "$T_TMP/enable.out")"
hold_relay
o=$(new_order)
w=$(sql "SELECT webhook_id FROM events WHERE order_id = ${o#o-}")
ws+=("$w")
sql "UPDATE events SET created_at = created_at - INTERVAL 4 DAY WHERE webhook_id = '$w'"
receiver_control "{\"status\":500,\"count\":1,\"id\":\"$w\"}"
release_relay
wait_until 30 state_is "$w" dead || fail "dead letter" "$(event_state "$w")"
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" redeliver "$w" >"$T_TMP/redo.out" 2>&1 ||
    fail "events redeliver" "$(cat "$T_TMP/redo.out")"
all_delivered() {
	local w
	for w in "${ws[@]}"; do
		state_is "$w" delivered || return 1
	done
}
wait_until 30 all_delivered && ok "the four events are delivered" ||
    fail "deliveries" "$(for w in "${ws[@]}"; do event_state "$w"; done | tr '\n' ' ')"
sql "UPDATE events SET created_at = created_at + INTERVAL 4 DAY WHERE webhook_id = '$w'"

scrape "$T_TMP/m1"
declare -A want=([delivered]=4 [retry]=2 [dead]=1 [gone]=1)
for o in delivered retry dead gone; do
	d=$(($(outcome "$T_TMP/m1" "$o") - before[$o]))
	[[ $d == "${want[$o]}" ]] &&
	    ok "idemorders_event_deliveries_total{outcome=\"$o\"} moved by $d" ||
	    fail "outcome $o" "moved by $d, not ${want[$o]}"
done
finish
