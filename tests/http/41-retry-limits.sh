#!/usr/bin/env bash
# Retries stay within max_attempts and request_deadline (contract section
# 4, design notes' retryWithSameKey), driven by fault points:
#  - conflict_read=null on a key that has a committed row: the fresh read
#    after the duplicate key sees nothing; retried max_attempts (3) times,
#    then 409 REQUEST_STATUS_UNCONFIRMED with Retry-After;
#  - transient1 at before_commit: one simulated deadlock, then 201 with
#    exactly one order;
#  - transient at after_order_insert: 503 RETRY_LIMIT_REACHED with
#    Retry-After after 3 attempts, nothing committed;
#  - a private responder with request_deadline = 2s and max_attempts = 10:
#    a stock row held FOR UPDATE by another session for 8 s answers 503
#    RETRY_DEADLINE_EXCEEDED in about 2 s; conflict_read=null stops at the
#    deadline too, before its 10 attempts.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

LOG=$LOGDIR/idemorders.log
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# expect_attempts LOG KEY N WHAT: the responder logged attempts=N.
expect_attempts() {
	local n
	wait_log "$1" "$2"
	n=$(log_attempts "$1" "$2")
	expect_sql_value "$4: attempts in the responder log" "$3" "$n"
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")

	# --- conflict_read=null: unconfirmed after max_attempts -----------------
	w="$s conflict_read=null"
	new_sku sku T41-null 50
	key=$(unique_key "t41-$s-null")
	body=$(order_body "$sku" 2)
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: first"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	t0=$(now_ms)
	post_order "$url" "$key" "$body" conflict_read=null
	el=$(($(now_ms) - t0))
	expect_problem 409 REQUEST_STATUS_UNCONFIRMED "$w"
	[[ -n $(hdr retry-after) ]] && ok "$w: Retry-After $(hdr retry-after)" ||
	    fail "$w: Retry-After" "missing"
	expect_no_header idempotent-replayed "$w"
	[[ $el -lt 30000 ]] && ok "$w: answered within the deadline (${el} ms)" ||
	    fail "$w: deadline" "took ${el} ms"
	expect_attempts "$LOG" "$key" 3 "$w"
	expect_one_order "$key" "$sku" 48 "$oid" "$w"
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: retry without the fault"
	expect_header idempotent-replayed true "$w: retry without the fault"
	expect_body_json .orderId "$oid" "$w: retry without the fault"

	# --- transient1 at before_commit: the second attempt commits ------------
	w="$s transient1 at before_commit"
	new_sku sku T41-t1 50
	key=$(unique_key "t41-$s-t1")
	body=$(order_body "$sku" 2)
	post_order "$url" "$key" "$body" before_commit=transient1
	expect_status 201 "$w"
	expect_no_header idempotent-replayed "$w"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	expect_attempts "$LOG" "$key" 2 "$w"
	expect_one_order "$key" "$sku" 48 "$oid" "$w"
	expect_sql_value "$w: order lines" "$sku	2" "$(items_of "$oid")"

	# --- transient everywhere: retry limit, nothing committed ---------------
	for pt in after_ledger_insert after_order_insert before_commit; do
		w="$s transient at $pt"
		new_sku sku T41-tr 50
		key=$(unique_key "t41-$s-tr-$pt")
		body=$(order_body "$sku" 2)
		t0=$(now_ms)
		post_order "$url" "$key" "$body" "$pt=transient"
		el=$(($(now_ms) - t0))
		expect_problem 503 RETRY_LIMIT_REACHED "$w"
		[[ -n $(hdr retry-after) ]] && ok "$w: Retry-After $(hdr retry-after)" ||
		    fail "$w: Retry-After" "missing"
		[[ $el -lt 30000 ]] && ok "$w: answered within the deadline (${el} ms)" ||
		    fail "$w: deadline" "took ${el} ms"
		expect_attempts "$LOG" "$key" 3 "$w"
		expect_nothing_committed "$key" "$sku" 50 "$w"
		post_order "$url" "$key" "$body"
		expect_status 201 "$w: retry without the fault"
		oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
		expect_one_order "$key" "$sku" 48 "$oid" "$w: retry without the fault"
	done
done

# --- a private responder: request_deadline = 2s, max_attempts = 10 ----------
priv=$(mktemp -d /tmp/idemorders-41.XXXXXX)
chmod 0755 "$priv"
holder=
cleanup() {
	[[ -n $holder ]] && kill "$holder" 2>/dev/null
	stop_private
	rm -rf "$priv" "$T_TMP"
}
trap cleanup EXIT

PLOG=$priv/serve.log
private_conf "$priv/idemorders.conf" "$priv/sock" workers=2 \
    request_deadline=2s max_attempts=10 lock_wait_timeout=10s
if start_private "$IDEMORDERS_BIN" "$priv/idemorders.conf" "$priv/sock" "$PLOG"; then
	ok "private responder: request_deadline = 2s, max_attempts = 10"
	# shellcheck disable=SC2034  # fcgi_req talks to $FCGI_SOCKET
	FCGI_SOCKET=$priv/sock

	# pfcgi KEY BODY [FAULT]: POST to the private responder.
	pfcgi() {
		local env=(REMOTE_USER=alice CONTENT_TYPE=application/json
		    HTTP_IDEMPOTENCY_KEY="$1")
		[[ -n ${3:-} ]] && env+=(HTTP_X_IDEMORDERS_FAULT="$3")
		fcgi_req -d "$2" POST "$MOUNT" "${env[@]}"
	}

	# A stock row locked by another session for 8 s.
	w="row held FOR UPDATE beyond the deadline"
	new_sku sku T41-lock 50
	key=$(unique_key t41-lock)
	body=$(order_body "$sku" 2)
	tag=T41hold$RUN_TAG
	sql "SET autocommit = 0; SELECT sku FROM stock WHERE sku = '$sku' FOR UPDATE;
	    SELECT SLEEP(8), '$tag'; ROLLBACK" >/dev/null 2>&1 &
	holder=$!
	held=0
	for ((i = 0; i < 50; i++)); do
		n=$(sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST
		    WHERE INFO LIKE 'SELECT SLEEP(8), ''$tag''%'")
		[[ $n == 1 ]] && { held=1; break; }
		sleep 0.1
	done
	[[ $held == 1 ]] && ok "$w: another session holds $sku" ||
	    fail "$w" "the holding session did not start"
	t0=$(now_ms)
	pfcgi "$key" "$body"
	el=$(($(now_ms) - t0))
	expect_problem 503 RETRY_DEADLINE_EXCEEDED "$w"
	[[ -n $(hdr retry-after) ]] && ok "$w: Retry-After $(hdr retry-after)" ||
	    fail "$w: Retry-After" "missing"
	# The contract's request deadline (2000 ms here): retried until it
	# passes, answered once it has; margins 500 ms before (the last
	# back-off is cut short) and 3000 ms after (a loaded machine).
	if [[ $el -ge 1500 && $el -le 5000 ]]; then
		ok "$w: answered after ${el} ms (deadline 2000 ms, margins -500/+3000 ms)"
	else
		fail "$w: timing" "answered after ${el} ms; expected the deadline 2000 ms (margins -500/+3000 ms)"
	fi
	wait_log "$PLOG" "$key"
	n=$(log_attempts "$PLOG" "$key")
	[[ -n $n && $n -ge 1 && $n -le 10 ]] && ok "$w: $n attempts (at most 10)" ||
	    fail "$w: attempts" "log says '$n'"
	expect_nothing_committed "$key" "$sku" 50 "$w"
	wait "$holder" 2>/dev/null
	holder=
	pfcgi "$key" "$body"
	expect_status 201 "$w: the same key once the lock is gone"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	expect_one_order "$key" "$sku" 48 "$oid" "$w: the same key once the lock is gone"

	# The key held by an uncommitted owner (sleeping 5 s after its
	# ledger insert) for longer than the deadline: the second request
	# gives up within the deadline (409 REQUEST_IN_PROGRESS, or 503
	# RETRY_DEADLINE_EXCEEDED when the statement timeout fires first),
	# with Retry-After.  The owner's own deadline has passed when it
	# wakes: it sends no further statement, rolls back and answers 503
	# RETRY_DEADLINE_EXCEEDED; nothing of it stays, and the same key
	# then creates exactly one order.
	w="key held by an uncommitted owner beyond the deadline"
	new_sku sku T41-own 50
	key=$(unique_key t41-own)
	body=$(order_body "$sku" 2)
	(
		T_TMP=$priv/owner
		mkdir -p "$T_TMP"
		# shellcheck disable=SC2034  # pfcgi writes there
		HEADERS=$T_TMP/headers
		pfcgi "$key" "$body" after_ledger_insert=sleep5000
		echo "$STATUS" >"$priv/owner.status"
		printf '%s' "$BODY" >"$priv/owner.body"
	) &
	owner=$!
	worker_asleep "$PRIV_PID" >/dev/null ||
	    fail "$w: owner" "no worker asleep after its ledger insert"
	t0=$(now_ms)
	pfcgi "$key" "$body"
	el=$(($(now_ms) - t0))
	c=$(printf '%s' "$BODY" | jq -r .code 2>/dev/null)
	case $STATUS/$c in
	409/REQUEST_IN_PROGRESS|503/RETRY_DEADLINE_EXCEEDED)
		ok "$w: $STATUS $c" ;;
	*)	fail "$w" "expected 409 REQUEST_IN_PROGRESS or 503 RETRY_DEADLINE_EXCEEDED, got $STATUS $c" ;;
	esac
	[[ -n $(hdr retry-after) ]] && ok "$w: Retry-After $(hdr retry-after)" ||
	    fail "$w: Retry-After" "missing"
	# Within the contract's request deadline (2000 ms) plus a margin of
	# 2000 ms for a loaded machine, before the owner wakes (5000 ms).
	if [[ $el -le 4000 ]]; then
		ok "$w: answered after ${el} ms (deadline 2000 ms + margin 2000 ms, owner 5000 ms)"
	else
		fail "$w: timing" "answered after ${el} ms (deadline 2000 ms + margin 2000 ms)"
	fi
	wait "$owner"
	STATUS=$(cat "$priv/owner.status" 2>/dev/null)
	BODY=$(cat "$priv/owner.body" 2>/dev/null)
	expect_problem 503 RETRY_DEADLINE_EXCEEDED "$w: the owner, past its deadline"
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE idem_key = '$key'" 0 \
	    "$w: no ledger row left by the owner"
	expect_sql "SELECT available FROM stock WHERE sku = '$sku'" 50 \
	    "$w: stock untouched by the owner"
	pfcgi "$key" "$body"
	expect_status 201 "$w: the same key after the owner gave up"
	expect_no_header idempotent-replayed
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	expect_one_order "$key" "$sku" 48 "$oid" "$w"

	# conflict_read=null with 10 attempts allowed: the deadline ends it.
	w="private conflict_read=null"
	new_sku sku T41-pnull 50
	key=$(unique_key t41-pnull)
	body=$(order_body "$sku" 1)
	pfcgi "$key" "$body"
	expect_status 201 "$w: first"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	t0=$(now_ms)
	pfcgi "$key" "$body" conflict_read=null
	el=$(($(now_ms) - t0))
	expect_problem 409 REQUEST_STATUS_UNCONFIRMED "$w"
	[[ $el -le 5000 ]] && ok "$w: answered after ${el} ms (deadline 2000 ms)" ||
	    fail "$w: timing" "answered after ${el} ms"
	wait_log "$PLOG" "$key"
	n=$(log_attempts "$PLOG" "$key")
	[[ -n $n && $n -ge 2 && $n -le 10 ]] && ok "$w: $n attempts (2..10)" ||
	    fail "$w: attempts" "log says '$n'"
	expect_one_order "$key" "$sku" 49 "$oid" "$w"

	# transient everywhere with 10 attempts and a 2 s deadline: one of the
	# two limits ends it, within the deadline.
	w="private transient at after_order_insert"
	new_sku sku T41-ptr 50
	key=$(unique_key t41-ptr)
	body=$(order_body "$sku" 1)
	t0=$(now_ms)
	pfcgi "$key" "$body" after_order_insert=transient
	el=$(($(now_ms) - t0))
	expect_status 503 "$w"
	c=$(printf '%s' "$BODY" | jq -r .code 2>/dev/null)
	[[ $c == RETRY_LIMIT_REACHED || $c == RETRY_DEADLINE_EXCEEDED ]] &&
	    ok "$w: $c" || fail "$w: code" "got '$c'"
	[[ $el -le 5000 ]] && ok "$w: answered after ${el} ms" ||
	    fail "$w: timing" "answered after ${el} ms"
	wait_log "$PLOG" "$key"
	n=$(log_attempts "$PLOG" "$key")
	[[ -n $n && $n -le 10 ]] && ok "$w: $n attempts (at most 10)" ||
	    fail "$w: attempts" "log says '$n'"
	[[ $c != RETRY_LIMIT_REACHED || $n == 10 ]] ||
	    fail "$w" "RETRY_LIMIT_REACHED after $n of 10 attempts"
	expect_nothing_committed "$key" "$sku" 50 "$w"
fi
stop_private
finish
