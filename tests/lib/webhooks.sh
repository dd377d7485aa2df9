# tests/lib/webhooks.sh -- the relay's test receiver (webhook-receiver.cjs,
# on the npm standardwebhooks verifier) for the HTTP test scripts.
# shellcheck shell=bash
# Sourced after tests/lib/http.sh.
#
#   webhooks_install        npm install standardwebhooks into var/ (once)
#   receiver_start          start the receiver on the stack's webhook port;
#                           its log: $RECEIVER_LOG (JSON lines)
#   receiver_stop           stop it
#   receiver_control JSON   set how it answers (see the .cjs)
#   delivered_ok ID         true once ID was answered 2xx, verified
#   relay_pid               the stack's relay's pid
#   relay_restart           start the stack's relay again (tools/dev up)
#   fault_next JSON         a new order (O) whose event (W) alone gets the
#                           control JSON (new_order is the script's)

STANDARDWEBHOOKS_VERSION=1.3.0
WEBHOOKS_NODE_DIR=$REPO/var/node-webhooks
WEBHOOK_SECRET_FILE=${WEBHOOK_SECRET_FILE:-$RUNDIR/webhook.secret}
RELAY_PIDFILE=${RELAY_PIDFILE:-$RUNDIR/relay.pid}
case $IDEMORDERS_STACK in
dev)	WEBHOOK_PORT=$((19050 + ${IDEMORDERS_PORT_OFFSET:-0})) ;;
*)	WEBHOOK_PORT=$((19000 + ${IDEMORDERS_PORT_OFFSET:-0})) ;;
esac
RECEIVER_URL=http://127.0.0.1:$WEBHOOK_PORT
RECEIVER_LOG=$T_TMP/receiver.jsonl
RECEIVER_PID=

webhooks_install() {
	local have
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		fail "node" "node and npm are needed (Debian: nodejs, npm)"
		finish
	fi
	have=$(node -p "try { require('$WEBHOOKS_NODE_DIR/node_modules/standardwebhooks/package.json').version } catch { '' }" 2>/dev/null)
	[[ $have == "$STANDARDWEBHOOKS_VERSION" ]] && return 0
	echo "       installing standardwebhooks@$STANDARDWEBHOOKS_VERSION in ${WEBHOOKS_NODE_DIR#"$REPO"/}"
	mkdir -p "$WEBHOOKS_NODE_DIR"
	[[ -f $WEBHOOKS_NODE_DIR/package.json ]] || echo '{ "private": true }' >"$WEBHOOKS_NODE_DIR/package.json"
	if ! (cd "$WEBHOOKS_NODE_DIR" && timeout 300 npm install --no-audit \
	    --no-fund --loglevel=error "standardwebhooks@$STANDARDWEBHOOKS_VERSION") \
	    >"$T_TMP/npm.out" 2>&1; then
		fail "npm install standardwebhooks@$STANDARDWEBHOOKS_VERSION" "$(tail -n 5 "$T_TMP/npm.out")"
		finish
	fi
}

receiver_up() {
	[[ $(curl -s -o /dev/null -m 2 -w '%{http_code}' "$RECEIVER_URL/_health") == 200 ]]
}

receiver_start() {
	: >>"$RECEIVER_LOG"
	NODE_PATH=$WEBHOOKS_NODE_DIR/node_modules node "$REPO/tests/lib/webhook-receiver.cjs" \
	    "$WEBHOOK_PORT" "$WEBHOOK_SECRET_FILE" "$RECEIVER_LOG" \
	    >>"$T_TMP/receiver.out" 2>&1 &
	RECEIVER_PID=$!
	# Up, and the one just started (not one an earlier script left).
	if wait_until 10 receiver_up && kill -0 "$RECEIVER_PID" 2>/dev/null; then
		ok "the receiver listens on $RECEIVER_URL"
	else
		fail "receiver" "does not answer on $RECEIVER_URL: $(tail -n 5 "$T_TMP/receiver.out")"
		finish
	fi
}

receiver_stop() {
	[[ -n $RECEIVER_PID ]] || return 0
	kill -TERM "$RECEIVER_PID" 2>/dev/null
	wait "$RECEIVER_PID" 2>/dev/null
	RECEIVER_PID=
}

receiver_control() {
	curl -s -f -m 5 -X POST --data-binary "$1" "$RECEIVER_URL/_control" ||
	    fail "receiver control" "$1 refused"
}

delivered_ok() {
	jq -s -e --arg id "$1" 'any(.[]; .id == $id and .verified and .status < 300)' \
	    "$RECEIVER_LOG" >/dev/null 2>&1
}

# The state the relay recorded for the event of ID.
event_state() {
	sql "SELECT state FROM events WHERE webhook_id = '$1'"
}

relay_pid() {
	local pid
	[[ -r $RELAY_PIDFILE ]] || return 1
	pid=$(tr -dc '0-9' <"$RELAY_PIDFILE")
	[[ -n $pid ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
	    grep -q -- ' relay -c ' && echo "$pid"
}

# stop_pid NAME: SIGTERM the process whose pid the variable NAME holds
# (a relay or a receiver a script started), wait for it, clear NAME.
stop_pid() {
	local -n stop_pid_of=$1
	[[ -n $stop_pid_of ]] || return 0
	kill -TERM "$stop_pid_of" 2>/dev/null
	wait "$stop_pid_of" 2>/dev/null
	stop_pid_of=
}

# hold_relay / release_relay: stop the relay's process for a moment (so
# that a control can name an event before its first delivery).
hold_relay() {
	HELD=$(relay_pid) && kill -STOP "$HELD"
}
release_relay() {
	[[ -z ${HELD:-} ]] || kill -CONT "$HELD"
	HELD=
}

# fault_next JSON: a new order whose order.created gets the answer JSON
# (a receiver control without its id) on its first deliveries; sets O
# and W (its webhook-id).
fault_next() {
	hold_relay
	O=$(new_order)
	W=$(sql "SELECT webhook_id FROM events WHERE order_id = ${O#o-} AND seq = 1")
	receiver_control "${1%\}},\"id\":\"$W\"}"
	release_relay
}

relay_restart() {
	"$DEV" up >"$T_TMP/up.out" 2>&1 || fail "tools/dev up" "$(tail -n 5 "$T_TMP/up.out")"
	relay_pid >/dev/null || fail "relay" "not running after tools/dev up"
}

trap 'release_relay; receiver_stop; rm -rf "$T_TMP"' EXIT
