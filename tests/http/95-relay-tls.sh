#!/usr/bin/env bash
# The relay over HTTPS (contract section 4b: TLS with certificate
# checks): a receiver built on npm standardwebhooks, over TLS with a
# certificate of a CA made here, and a second relay on the stack's
# database delivering to it (the stack's own relay held meanwhile):
#  - without webhook_ca_file the CA is unknown: the delivery fails with
#    curl's certificate error and nothing reaches the receiver;
#  - with webhook_ca_file, a certificate for another name fails too;
#  - with webhook_ca_file and the right name, the event is delivered
#    and verified, with its webhook-id;
#  - check-config refuses webhook_ca_file beside an http:// URL.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"
. "$(dirname -- "$0")/../lib/webhooks.sh"

body='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000,"note":"t95"}'
TLS_PORT=$((WEBHOOK_PORT + 7))
TLS_LOG=$T_TMP/tls-receiver.jsonl
RELAY2_LOG=$T_TMP/relay2.log
TLS_PID= RELAY2=

trap 'stop_pid RELAY2; stop_pid TLS_PID; release_relay; rm -rf "$T_TMP"' EXIT

# start_tls_receiver CERT: the receiver over TLS with CERT (and its key).
start_tls_receiver() {
	stop_pid TLS_PID
	RECEIVER_TLS_CERT=$1 RECEIVER_TLS_KEY=${1%.pem}.key \
	    NODE_PATH=$WEBHOOKS_NODE_DIR/node_modules node "$REPO/tests/lib/webhook-receiver.cjs" \
	    "$TLS_PORT" "$WEBHOOK_SECRET_FILE" "$TLS_LOG" >>"$T_TMP/tls-receiver.out" 2>&1 &
	TLS_PID=$!
	listening() { curl -sk -o /dev/null "https://127.0.0.1:$TLS_PORT/_health"; }
	wait_until 10 listening && kill -0 "$TLS_PID" 2>/dev/null ||
	    { fail "TLS receiver" "$(tail -n 5 "$T_TMP/tls-receiver.out")"; finish; }
}

# start_relay2 CONF: a relay delivering to the TLS receiver.
start_relay2() {
	stop_pid RELAY2
	: >"$RELAY2_LOG"
	"$IDEMORDERS_BIN" relay -c "$1" </dev/null >"$RELAY2_LOG" 2>&1 &
	RELAY2=$!
	started() { grep -q "relay: delivering events to" "$RELAY2_LOG"; }
	wait_until 20 started || { fail "relay on $1" "$(tail -n 5 "$RELAY2_LOG")"; finish; }
}

# --- a CA, a certificate for 127.0.0.1 and one for another name
ca=$T_TMP/ca
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=idemorders-test-ca \
    -keyout "$ca.key" -out "$ca.pem" 2>"$T_TMP/openssl.err" ||
    { fail "openssl: CA" "$(cat "$T_TMP/openssl.err")"; finish; }
cert() {	# NAME SAN
	openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$T_TMP/$1.key" \
	    -out "$T_TMP/$1.csr" 2>>"$T_TMP/openssl.err" &&
	openssl x509 -req -in "$T_TMP/$1.csr" -CA "$ca.pem" -CAkey "$ca.key" \
	    -CAcreateserial -days 2 -extfile <(printf 'subjectAltName=%s\n' "$2") \
	    -out "$T_TMP/$1.pem" 2>>"$T_TMP/openssl.err"
}
cert loopback IP:127.0.0.1 && cert other DNS:other.example ||
    { fail "openssl: certificates" "$(cat "$T_TMP/openssl.err")"; finish; }

# --- the relay's configurations: the stack's, with the https:// URL
url=https://127.0.0.1:$TLS_PORT/webhook
sed "s|^webhook_url = .*|webhook_url = $url|" "$IDEMORDERS_CONF" >"$T_TMP/no-ca.conf"
cp "$T_TMP/no-ca.conf" "$T_TMP/ca.conf"
echo "webhook_ca_file = $ca.pem" >>"$T_TMP/ca.conf"
sed "s|^webhook_url = .*|webhook_url = http://127.0.0.1:$TLS_PORT/webhook|" "$T_TMP/ca.conf" >"$T_TMP/http-ca.conf"
"$IDEMORDERS_BIN" check-config -c "$T_TMP/ca.conf" >"$T_TMP/check.out" 2>&1 &&
    ok "check-config takes webhook_ca_file with an https:// URL" ||
    fail "check-config ca.conf" "$(cat "$T_TMP/check.out")"
if "$IDEMORDERS_BIN" check-config -c "$T_TMP/http-ca.conf" >"$T_TMP/check.out" 2>&1; then
	fail "check-config" "took webhook_ca_file beside an http:// URL"
else
	grep -q "webhook_ca_file is set but webhook_url is not https://" "$T_TMP/check.out" &&
	    ok "check-config refuses webhook_ca_file beside an http:// URL" ||
	    fail "check-config's reason" "$(cat "$T_TMP/check.out")"
fi

webhooks_install
relay_pid >/dev/null || { fail "relay" "the stack runs no relay"; finish; }
hold_relay
post "$LIGHTTPD_URL" "$ALICE" "$(unique_key t95)" "$body"
[[ $STATUS == 201 ]] || { fail "create" "status $STATUS"; finish; }
o=$(jq -r .orderId "$T_TMP/body")
w=$(sql "SELECT webhook_id FROM events WHERE order_id = ${o#o-} AND seq = 1")
[[ $w =~ ^msg_ ]] || { fail "event of $o" "no webhook-id: '$w'"; finish; }

# failed_with TEXT: the second relay logged a failed try of $w naming TEXT.
failed_with() { grep -q "event $w .*$1" "$RELAY2_LOG"; }
received() { jq -e --arg id "$w" 'select(.id == $id)' "$TLS_LOG" >/dev/null 2>&1; }

# --- the system's CAs only: this CA is unknown
start_tls_receiver "$T_TMP/loopback.pem"
start_relay2 "$T_TMP/no-ca.conf"
if wait_until 20 failed_with "SSL certificate problem"; then
	ok "without webhook_ca_file: $(grep -o "event $w .*SSL certificate problem[^;]*" "$RELAY2_LOG" | head -n 1 | cut -d: -f2- | cut -c1-90)"
else
	fail "unknown CA" "$(tail -n 5 "$RELAY2_LOG")"
fi
stop_pid RELAY2
if received; then
	fail "unknown CA" "the receiver got $w"
else
	ok "nothing reached the receiver over an unverified connection"
fi
[[ $(event_state "$w") == pending ]] && ok "the event is still pending" ||
    fail "after the unknown CA" "state $(event_state "$w")"

# --- the CA known, the certificate for another name
start_tls_receiver "$T_TMP/other.pem"
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" redeliver "$w" >"$T_TMP/redo.out" 2>&1 ||
    fail "events redeliver" "$(cat "$T_TMP/redo.out")"
start_relay2 "$T_TMP/ca.conf"
if wait_until 20 failed_with "does not match\|no alternative certificate subject name"; then
	ok "webhook_ca_file, another name: refused ($(grep -o "no alternative certificate subject name[^;]*\|does not match[^;]*" "$RELAY2_LOG" | head -n 1 | cut -c1-80))"
else
	fail "another name" "$(tail -n 5 "$RELAY2_LOG")"
fi
stop_pid RELAY2
if received; then
	fail "another name" "the receiver got $w"
else
	ok "nothing reached the receiver with a certificate for another name"
fi

# --- the CA known, the right name: delivered and verified
start_tls_receiver "$T_TMP/loopback.pem"
"$IDEMORDERS_BIN" events -c "$IDEMORDERS_CONF" redeliver "$w" >"$T_TMP/redo.out" 2>&1 ||
    fail "events redeliver" "$(cat "$T_TMP/redo.out")"
start_relay2 "$T_TMP/ca.conf"
verified() { jq -e --arg id "$w" 'select(.id == $id and .verified and .status == 200)' "$TLS_LOG" >/dev/null 2>&1; }
if wait_until 30 verified; then
	ok "webhook_ca_file and the right name: $w delivered over TLS, verified by standardwebhooks"
else
	fail "over TLS" "$(tail -n 5 "$RELAY2_LOG")"
fi
done_state() { [[ $(event_state "$w") == delivered ]]; }
wait_until 10 done_state && ok "the event is delivered" || fail "event state" "$(event_state "$w")"
finish
