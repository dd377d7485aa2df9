# tests/chaos/order-helpers.sh -- helpers shared by the failure-table,
# retry-limit, crash and chaos tests (tests/http/4*.sh).  Source it after
# tests/lib/http.sh:
#
#	. "$(dirname -- "$0")/../lib/http.sh"
#	. "$(dirname -- "$0")/../chaos/order-helpers.sh"
#
#   new_sku VAR PREFIX AVAILABLE [PRICE]
#                                      insert a fresh KRW SKU, set VAR to
#                                      its name (a failure is counted)
#   order_body SKU QTY [PRICE]         a valid create-order body
#   post_order URL KEY BODY [FAULT] [USER]
#                                      POST URL/orders via req()
#   bg_post OUT URL KEY BODY [FAULT]   the same in the background: OUT.status,
#                                      OUT.headers, OUT.body, OUT.ms
#   bg_load OUT                        load a bg_post result as STATUS, BODY,
#                                      HEADERS
#   post_cancel URL KEY ORDER_ID [FAULT]
#                                      POST URL/orders/ORDER_ID/cancel as
#                                      alice ({"reason":"test"}) via req()
#   bg_cancel OUT URL KEY ORDER_ID [FAULT]
#                                      the same in the background (bg_load)
#   cancel_ledger KEY                  "COUNT<TAB>status" of the key's
#                                      cancel-order ledger rows ("0<TAB>-")
#   order_state ORDER_ID               its status; restocked_of SKU
#   ledger_rows KEY  ledger_status KEY  ledger_field KEY COLUMN
#   orders_for KEY   order_of KEY       stock_of SKU
#   expect_gateway_error [WHAT]        a web server's error, not the app's
#   expect_nothing_committed KEY SKU AVAILABLE WHAT
#   expect_one_order KEY SKU AVAILABLE ORDER_ID WHAT
#   log_attempts LOGFILE KEY           attempts=N of the key's last log line
#   sleeping_worker                    the worker of the test stack's pool
#                                      sleeping in a fault point
#   private_conf FILE SOCKET [KEY=VALUE...]
#                                      a responder config on the test DB
#   start_private BIN CONF SOCKET LOG  start a private `serve`; sets PRIV_PID
#   stop_private                       SIGTERM it, wait, clean up
#
# It sources tests/lib/pool.sh (pool_workers, pool_wait_full, pool_swap,
# pool_restore: the pool on the stack's socket).

# shellcheck source=tests/lib/pool.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../lib/pool.sh"

: "${PRINCIPAL:=alice}"
# The run id in digits only (tests/lib/http.sh's RUN_ID), for tags.
RUN_TAG=${RUN_ID//-/}

# new_sku VAR PREFIX AVAILABLE [PRICE]: insert a fresh SKU (KRW) with
# AVAILABLE units and set VAR to its name (unique_name).  It runs in the
# script's shell, never in $(...): a stock row that cannot be made is a
# counted failure with its reason, and the status is 1 (VAR empty).
new_sku() {
	local _ns_sku _ns_err
	if [[ $# -lt 3 || ! $1 =~ ^[A-Za-z_][A-Za-z0-9_]*$ || ! $3 =~ ^[0-9]+$ ]]; then
		fail "new_sku $*" "usage: new_sku VAR PREFIX AVAILABLE [PRICE]"
		return 1
	fi
	printf -v "$1" '%s' ''
	unique_name _ns_sku "$2" || return 1
	if [[ ${#_ns_sku} -gt 64 ]]; then
		fail "new_sku $_ns_sku" "longer than a SKU may be (64)"
		return 1
	fi
	if ! _ns_err=$(sql "INSERT INTO stock (sku, currency, unit_price, available)
	    VALUES ('$_ns_sku', 'KRW', ${4:-1000}, $3)" 2>&1 >/dev/null); then
		_ns_err=${_ns_err//$'\n'/ }
		fail "new_sku $_ns_sku" "INSERT INTO stock failed: ${_ns_err:0:300}"
		return 1
	fi
	printf -v "$1" '%s' "$_ns_sku"
}

# order_body SKU QTY [PRICE]
order_body() {
	printf '{"currency":"KRW","items":[{"sku":"%s","qty":%d}],"amount":%d}' \
	    "$1" "$2" $(($2 * ${3:-1000}))
}

# post_order URL KEY BODY [FAULT] [USER]
post_order() {
	local url=$1 key=$2 body=$3 fault=${4:-} user=${5:-$ALICE}
	local args=(-u "$user" -H "Idempotency-Key: $key"
	    -H 'Content-Type: application/json' --data-binary "$body")
	[[ -n $fault ]] && args+=(-H "X-Idemorders-Fault: $fault")
	req POST "$url$MOUNT" "${args[@]}"
}

# bg_post OUT URL KEY BODY [FAULT]: start a POST in the background (the
# caller waits); its answer lands in OUT.status, OUT.headers, OUT.body,
# and the time taken in OUT.ms.
bg_post() {
	local out=$1 url=$2 key=$3 body=$4 fault=${5:-}
	local args=(-u "$ALICE" -H "Idempotency-Key: $key"
	    -H 'Content-Type: application/json' --data-binary "$body")
	[[ -n $fault ]] && args+=(-H "X-Idemorders-Fault: $fault")
	(
		t0=$(date +%s%N)
		curl -s -o "$out.body" -D "$out.headers" -w '%{http_code}' \
		    --max-time 60 -X POST "${args[@]}" "$url$MOUNT" \
		    >"$out.status" 2>/dev/null || echo 000 >"$out.status"
		echo $((($(date +%s%N) - t0) / 1000000)) >"$out.ms"
	) &
}

# post_cancel URL KEY ORDER_ID [FAULT]: cancel as alice.
post_cancel() {
	local args=(-u "$ALICE" -H "Idempotency-Key: $2"
	    -H 'Content-Type: application/json' --data-binary '{"reason":"test"}')
	[[ -n ${4:-} ]] && args+=(-H "X-Idemorders-Fault: $4")
	req POST "$1$MOUNT/$3/cancel" "${args[@]}"
}

# bg_cancel OUT URL KEY ORDER_ID [FAULT]: post_cancel in the background,
# its answer in OUT.* as bg_post's.
bg_cancel() {
	local out=$1 url=$2 key=$3 oid=$4 fault=${5:-}
	local args=(-u "$ALICE" -H "Idempotency-Key: $key"
	    -H 'Content-Type: application/json' --data-binary '{"reason":"test"}')
	[[ -n $fault ]] && args+=(-H "X-Idemorders-Fault: $fault")
	(
		t0=$(date +%s%N)
		curl -s -o "$out.body" -D "$out.headers" -w '%{http_code}' \
		    --max-time 60 -X POST "${args[@]}" "$url$MOUNT/$oid/cancel" \
		    >"$out.status" 2>/dev/null || echo 000 >"$out.status"
		echo $((($(date +%s%N) - t0) / 1000000)) >"$out.ms"
	) &
}

cancel_ledger() {
	sql "SELECT COUNT(*), IFNULL(MIN(status), '-') FROM idempotency_records
	    WHERE principal_id = '$(_q "$PRINCIPAL")' AND operation =
	    'cancel-order' AND idem_key = '$(_q "$1")'"
}
order_state() {
	sql "SELECT status FROM orders WHERE id = ${1#o-}"
}
restocked_of() {
	sql "SELECT restocked FROM stock WHERE sku = '$(_q "$1")'"
}

# bg_load OUT: make a bg_post answer the current response.
bg_load() {
	STATUS=$(head -c 3 "$1.status" 2>/dev/null)
	[[ -n $STATUS ]] || STATUS=000
	BODY=$(cat "$1.body" 2>/dev/null)
	_headers_from "$1.headers"
	REQ_DESC="background POST ($(basename "$1"))"
}

_q() { printf '%s' "$1" | sed "s/'/''/g"; }

ledger_rows() {
	sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id =
	    '$(_q "$PRINCIPAL")' AND operation = 'create-order' AND
	    idem_key = '$(_q "$1")'"
}
ledger_status() { ledger_field "$1" status; }
# ledger_field KEY COLUMN: one column of the key's ledger row ("" if none).
ledger_field() {
	sql "SELECT COALESCE($2, 'NULL') FROM idempotency_records WHERE
	    principal_id = '$(_q "$PRINCIPAL")' AND operation = 'create-order'
	    AND idem_key = '$(_q "$1")'"
}
orders_for() {
	sql "SELECT COUNT(*) FROM orders WHERE principal_id =
	    '$(_q "$PRINCIPAL")' AND idempotency_key = '$(_q "$1")'"
}
# order_of KEY: the public id of the key's order(s), one per line.
order_of() {
	sql "SELECT CONCAT('o-', id) FROM orders WHERE principal_id =
	    '$(_q "$PRINCIPAL")' AND idempotency_key = '$(_q "$1")' ORDER BY id"
}
stock_of() {
	sql "SELECT available FROM stock WHERE sku = '$(_q "$1")'"
}
# items_of ORDER_ID: "sku qty" lines of an order.
items_of() {
	sql "SELECT sku, qty FROM order_items WHERE order_id =
	    ${1#o-} ORDER BY sku"
}

# expect_gateway_error [WHAT]: the web server's own error (5xx, not the
# application's problem+json) or no answer at all.
expect_gateway_error() {
	local what=${1:-$REQ_DESC}
	case $STATUS in
	000|500|502|503|504)
		if [[ $(media_type) == application/problem+json ]]; then
			fail "$what: gateway error" "got the application's $STATUS $(printf '%s' "$BODY" | jq -r .code 2>/dev/null)"
		else
			ok "$what: gateway error ($STATUS), no application answer"
		fi ;;
	*)	fail "$what: gateway error" "expected 5xx or no answer, got $STATUS" ;;
	esac
}

# expect_nothing_committed KEY SKU AVAILABLE WHAT
expect_nothing_committed() {
	expect_sql_value "$4: ledger rows" 0 "$(ledger_rows "$1")"
	expect_sql_value "$4: orders for the key" 0 "$(orders_for "$1")"
	expect_sql_value "$4: stock of $2 unchanged" "$3" "$(stock_of "$2")"
}

# expect_one_order KEY SKU AVAILABLE ORDER_ID WHAT: exactly one order for
# KEY (ORDER_ID), a SUCCEEDED ledger row naming it, stock AVAILABLE.
expect_one_order() {
	expect_sql_value "$5: orders for the key" 1 "$(orders_for "$1")"
	expect_sql_value "$5: the key's order" "$4" "$(order_of "$1")"
	expect_sql_value "$5: ledger rows" 1 "$(ledger_rows "$1")"
	expect_sql_value "$5: ledger status" SUCCEEDED "$(ledger_status "$1")"
	expect_sql_value "$5: ledger resource_id" "$4" "$(ledger_field "$1" resource_id)"
	expect_sql_value "$5: stock of $2" "$3" "$(stock_of "$2")"
}

# expect_sql_value WHAT EXPECTED ACTUAL
expect_sql_value() {
	if [[ $3 == "$2" ]]; then
		ok "$1 = $2"
	else
		fail "$1" "expected '$2', got '$3'"
	fi
}

# expect_same_answer OUT_A OUT_B WHAT: same status and byte-identical body.
expect_same_body() {
	if cmp -s "$1" "$2"; then
		ok "$3: body byte for byte the same"
	else
		fail "$3: same body" "$(head -c 200 "$1") vs $(head -c 200 "$2")"
	fi
}

# log_attempts LOGFILE KEY: attempts=N of the last log line of POST KEY.
log_attempts() {
	grep -F " key=$2 attempts=" "$1" 2>/dev/null | tail -n 1 |
	    sed -n 's/.* attempts=\([0-9]*\) .*/\1/p'
}

# wait_log LOGFILE KEY: wait up to 5 s for the key's request line.
wait_log() {
	local i
	for ((i = 0; i < 50; i++)); do
		grep -qF " key=$2 attempts=" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# private_conf FILE SOCKET [KEY=VALUE...]: the test stack's database and
# mount, our own socket and settings.
private_conf() {
	local file=$1 sock=$2 kv
	shift 2
	{
		echo "listen = unix:$sock"
		echo "socket_mode = 0600"
		echo "log = stderr"
		echo "log_level = info"
		grep -E '^[[:space:]]*(db_[a-z_]*|mount|principal_var|user|group)[[:space:]]*=' "$IDEMORDERS_CONF"
		for kv in "$@"; do
			echo "${kv%%=*} = ${kv#*=}"
		done
	} >"$file"
}

PRIV_PID=
PRIV_SOCK=
# start_private BIN CONF SOCKET LOG: start `BIN serve -c CONF`, wait for
# its socket.
start_private() {
	local i
	PRIV_SOCK=$3
	rm -f "$3"
	setsid "$1" serve -c "$2" </dev/null >"$4" 2>&1 &
	PRIV_PID=$!
	for ((i = 0; i < 100; i++)); do
		[[ -S $3 ]] && return 0
		kill -0 "$PRIV_PID" 2>/dev/null || break
		sleep 0.1
	done
	fail "private serve" "no socket $3; log: $(tail -n 5 "$4" | tr '\n' ' ')"
	return 1
}

# stop_private: SIGTERM the private master (its workers follow), wait.
stop_private() {
	local i kids
	[[ -n $PRIV_PID ]] || return 0
	kids=$(pgrep -P "$PRIV_PID" 2>/dev/null)
	kill -TERM "$PRIV_PID" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$PRIV_PID" 2>/dev/null || break
		sleep 0.1
	done
	# shellcheck disable=SC2086
	kill -0 "$PRIV_PID" 2>/dev/null && kill -KILL "$PRIV_PID" $kids 2>/dev/null
	wait "$PRIV_PID" 2>/dev/null
	PRIV_PID=
	[[ -n $PRIV_SOCK ]] && rm -f "$PRIV_SOCK"
}

# sleeping_worker: the stack's pool worker sleeping in a fault point
# (nanosleep: an injected sleepN), waiting up to about 10 s for one
# (worker_asleep: a loaded machine may take seconds to get there).
sleeping_worker() {
	worker_asleep "$(cat "$SERVE_PIDFILE" 2>/dev/null)"
}

# wait_healthy WHEN: health answers 200 on every server within ~20 s.
wait_healthy() {
	local s c i
	for s in $ALL_SERVERS; do
		for ((i = 0; i < 100; i++)); do
			c=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$(url_of "$s")$MOUNT/_health")
			[[ $c == 200 ]] && break
			sleep 0.2
		done
		[[ $c == 200 ]] && ok "$s health 200 $1" ||
		    fail "$s health $1" "answers $c"
	done
}
