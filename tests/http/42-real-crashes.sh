#!/usr/bin/env bash
# Real crashes, not simulated ones:
#  - a worker SIGKILLed in the middle of its transaction (held open by
#    after_order_insert=sleep3000): MariaDB rolls it back; a request with
#    the same key, started meanwhile and waiting on the key, then goes on
#    and creates exactly one order; the killed request's client retries and
#    gets that order replayed;
#  - a worker SIGKILLed after its SUCCEEDED ledger update, before COMMIT:
#    nothing committed, the retry creates one order;
#  - the same two for a cancel (killed after its restock, the same key
#    waiting on the other server; killed before COMMIT): rolled back, then
#    exactly one restock, the killed client's retry replays 200;
#  - MariaDB killed (SIGKILL) and restarted during a burst of requests
#    whose clients retry with the same keys until they get an answer that
#    is not 5xx: afterwards each key has one order, every 201 names it, no
#    order lacks a SUCCEEDED ledger row and no SUCCEEDED row lacks its
#    order, and stock is conserved.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

other_server() { [[ $1 == lighttpd ]] && echo apache || echo lighttpd; }

# --- SIGKILL in the middle of the transaction ---------------------------------
for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	pool_wait_full 40 || fail "$s pool" "fewer workers than configured"

	w="$s SIGKILL after the order insert, same key waiting"
	new_sku sku T42-kill 50
	key=$(unique_key "t42-$s-kill")
	body=$(order_body "$sku" 2)
	o=$T_TMP/kill-$s
	bg_post "$o-a" "$url" "$key" "$body" after_order_insert=sleep3000
	if ! victim=$(sleeping_worker); then
		fail "$w" "no worker sleeps in after_order_insert"
		wait
		continue
	fi
	ok "$w: worker $victim is inside the transaction"
	bg_post "$o-b" "$(url_of "$(other_server "$s")")" "$key" "$body"
	sleep 0.7
	waits=$(sql "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS")
	[[ ${waits:-0} -ge 1 ]] && ok "$w: the second request waits on a lock" ||
	    fail "$w: lock wait" "INNODB_LOCK_WAITS has ${waits:-no} rows"
	expect_sql_value "$w: nothing committed yet" 0 "$(ledger_rows "$key")"
	kill -KILL "$victim"
	wait
	bg_load "$o-a"
	expect_gateway_error "$w: killed request"
	bg_load "$o-b"
	expect_status 201 "$w: waiting request"
	expect_no_header idempotent-replayed "$w: waiting request (it made the order)"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	expect_one_order "$key" "$sku" 48 "$oid" "$w"
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: the killed client's retry"
	expect_header idempotent-replayed true "$w: the killed client's retry"
	expect_body_json .orderId "$oid" "$w: the killed client's retry"
	expect_one_order "$key" "$sku" 48 "$oid" "$w, after the retry"

	w="$s SIGKILL before COMMIT"
	new_sku sku T42-kill2 50
	key=$(unique_key "t42-$s-kill2")
	body=$(order_body "$sku" 2)
	bg_post "$o-c" "$url" "$key" "$body" before_commit=sleep3000
	if victim=$(sleeping_worker); then
		kill -KILL "$victim"
		wait
		bg_load "$o-c"
		expect_gateway_error "$w"
		expect_nothing_committed "$key" "$sku" 50 "$w"
		post_order "$url" "$key" "$body"
		expect_status 201 "$w: retry"
		expect_no_header idempotent-replayed "$w: retry"
		oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
		expect_one_order "$key" "$sku" 48 "$oid" "$w: retry"
	else
		fail "$w" "no worker sleeps in before_commit"
		wait
	fi

	# A cancel: the worker SIGKILLed after its restock, before COMMIT,
	# while the same key waits on the other server.
	w="$s SIGKILL mid-cancel, same key waiting"
	new_sku sku T42-cancel 50
	post_order "$url" "$(unique_key "t42-$s-cancel-order")" "$(order_body "$sku" 2)"
	expect_status 201 "$w: the order"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	key=$(unique_key "t42-$s-cancel")
	bg_cancel "$o-d" "$url" "$key" "$oid" after_stock_decrease=sleep3000
	if victim=$(sleeping_worker); then
		ok "$w: worker $victim has restocked, uncommitted"
		bg_cancel "$o-e" "$(url_of "$(other_server "$s")")" "$key" "$oid"
		sleep 0.7
		expect_sql_value "$w: nothing committed yet" "0	-" "$(cancel_ledger "$key")"
		expect_sql_value "$w: stock before the kill" 48 "$(stock_of "$sku")"
		kill -KILL "$victim"
		wait
		bg_load "$o-d"
		expect_gateway_error "$w: killed request"
		bg_load "$o-e"
		expect_status 200 "$w: waiting request"
		expect_no_header idempotent-replayed "$w: waiting request (it cancelled)"
		expect_body_json .status CANCELLED "$w: waiting request"
		post_cancel "$url" "$key" "$oid"
		expect_status 200 "$w: the killed client's retry"
		expect_header idempotent-replayed true "$w: the killed client's retry"
		expect_sql_value "$w: cancel ledger" "1	SUCCEEDED" "$(cancel_ledger "$key")"
		expect_sql_value "$w: order" CANCELLED "$(order_state "$oid")"
		expect_sql_value "$w: stock restocked once" 50 "$(stock_of "$sku")"
		expect_sql_value "$w: restocked" 2 "$(restocked_of "$sku")"
	else
		fail "$w" "no worker sleeps in after_stock_decrease"
		wait
	fi

	w="$s SIGKILL before a cancel's COMMIT"
	new_sku sku T42-cancel2 50
	post_order "$url" "$(unique_key "t42-$s-cancel2-order")" "$(order_body "$sku" 2)"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	key=$(unique_key "t42-$s-cancel2")
	bg_cancel "$o-f" "$url" "$key" "$oid" before_commit=sleep3000
	if victim=$(sleeping_worker); then
		kill -KILL "$victim"
		wait
		bg_load "$o-f"
		expect_gateway_error "$w"
		expect_sql_value "$w: cancel ledger" "0	-" "$(cancel_ledger "$key")"
		expect_sql_value "$w: order" CREATED "$(order_state "$oid")"
		expect_sql_value "$w: stock" 48 "$(stock_of "$sku")"
		post_cancel "$url" "$key" "$oid"
		expect_status 200 "$w: retry"
		expect_no_header idempotent-replayed "$w: retry"
		expect_sql_value "$w: retry: order" CANCELLED "$(order_state "$oid")"
		expect_sql_value "$w: retry: stock restocked once" 50 "$(stock_of "$sku")"
		expect_sql_value "$w: retry: restocked" 2 "$(restocked_of "$sku")"
	else
		fail "$w" "no worker sleeps in before_commit"
		wait
	fi
done

# --- MariaDB killed and restarted during a burst -------------------------------
pool_wait_full 40 || fail "pool" "fewer workers than configured"
NKEYS=24
ROUNDS=3
new_sku sku_a T42-burst-a 1000
new_sku sku_b T42-burst-b 1000
skus=("$sku_a" "$sku_b")
burst=$T_TMP/burst
mkdir -p "$burst"
declare -a KEYS BODIES

# client I: send key I ROUNDS times (the first with a widened transaction),
# each time retrying with backoff until the answer is neither 5xx, nor no
# answer, nor 409 REQUEST_IN_PROGRESS / REQUEST_STATUS_UNCONFIRMED.
# Final answers go to $burst/I as "status replayed orderId code".
client() {
	local i=$1 url=$2 key=${KEYS[$1]} body=${BODIES[$1]} r n st code oid rep
	local delay ms start fh f=$burst/$1.tmp
	for ((r = 1; r <= ROUNDS; r++)); do
		start=$SECONDS
		fh=()
		[[ $r == 1 ]] && fh=(-H 'X-Idemorders-Fault: after_order_insert=sleep300')
		for ((n = 1; ; n++)); do
			st=$(curl -s -o "$f.body" -D "$f.hdr" -w '%{http_code}' \
			    --max-time 40 -u "$ALICE" -H "Idempotency-Key: $key" \
			    -H 'Content-Type: application/json' "${fh[@]}" \
			    --data-binary "$body" "$url$MOUNT" 2>/dev/null) || st=000
			code=$(jq -r '.code // ""' "$f.body" 2>/dev/null)
			echo "$st $code" >>"$burst/$i.all"
			case $st/$code in
			000/*|5*|409/REQUEST_IN_PROGRESS|409/REQUEST_STATUS_UNCONFIRMED)
				if ((SECONDS - start > 90)); then
					echo "GAVEUP - - -" >>"$burst/$i"
					break
				fi
				# Exponential backoff with full jitter, 200 ms .. 3 s.
				delay=$((n < 4 ? 100 << n : 3000))
				ms=$((RANDOM % delay))
				sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
				continue ;;
			esac
			oid=$(jq -r '.orderId // "-"' "$f.body" 2>/dev/null)
			rep=$(tr -d '\r' <"$f.hdr" | grep -ci '^idempotent-replayed: true')
			echo "$st $rep ${oid:--} ${code:--}" >>"$burst/$i"
			break
		done
		sleep "0.$((RANDOM % 5))"
	done
	rm -f "$f.body" "$f.hdr"
}

for ((i = 0; i < NKEYS; i++)); do
	KEYS[$i]=$(unique_key "t42-burst-$i")
	BODIES[$i]=$(order_body "${skus[$((i % 2))]}" $((1 + i % 3)))
done
t0=$SECONDS
for ((i = 0; i < NKEYS; i++)); do
	s=lighttpd
	((i % 2)) && s=apache
	client "$i" "$(url_of "$s")" &
	sleep 0.1
	if [[ $i == 8 ]]; then
		# A third of the way in: kill -9 MariaDB and start it again.
		"$DEV" chaos restart-db >"$burst/restart.log" 2>&1 &
		restarter=$!
	fi
done
wait "$restarter"
rc=$?
[[ $rc == 0 ]] && ok "MariaDB killed and restarted during the burst" ||
    fail "MariaDB restart" "status $rc: $(tail -n 5 "$burst/restart.log" | tr '\n' ' ')"
wait
# The restart must have hit the burst: some request answered 5xx or
# nothing (else the invariants below held without the fault).
nreq=$(cat "$burst"/*.all 2>/dev/null | wc -l)
nhit=$(cat "$burst"/*.all 2>/dev/null | awk '$1 !~ /^(201|409)$/' | wc -l)
[[ $nhit -gt 0 ]] &&
    ok "burst done in $((SECONDS - t0)) s: $nreq requests, $nhit answered 5xx or nothing" ||
    fail "burst" "the MariaDB restart hit none of its $nreq requests"

wait_healthy "after the restart"

# The invariants, per key and overall.
klist=
for ((i = 0; i < NKEYS; i++)); do klist+=${klist:+,}"'${KEYS[$i]}'"; done
bad=0
for ((i = 0; i < NKEYS; i++)); do
	k=${KEYS[$i]}
	n=$(grep -c . "$burst/$i" 2>/dev/null)
	if [[ $n != "$ROUNDS" ]] || grep -q GAVEUP "$burst/$i"; then
		fail "burst key $i" "$n final answers: $(tr '\n' ';' <"$burst/$i" 2>/dev/null)"
		bad=1
		continue
	fi
	oids=$(awk '$1 == 201 { print $3 }' "$burst/$i" | sort -u)
	other=$(awk '$1 != 201' "$burst/$i")
	dbo=$(order_of "$k")
	if [[ -n $other ]]; then
		fail "burst key $i" "answers other than 201: $other"
		bad=1
	elif [[ $(echo "$dbo" | grep -c .) != 1 ]]; then
		fail "burst key $i" "orders in the database: '$dbo'"
		bad=1
	elif [[ $oids != "$dbo" ]]; then
		fail "burst key $i" "201 answers name '$oids', the database '$dbo'"
		bad=1
	elif [[ $(awk '$2 == 0' "$burst/$i" | wc -l) -gt 1 ]]; then
		fail "burst key $i" "more than one answer without Idempotent-Replayed"
		bad=1
	fi
done
[[ $bad == 0 ]] && ok "burst: every key has exactly one order, named by each of its 201 answers"

expect_sql "SELECT COUNT(*) FROM orders o LEFT JOIN idempotency_records r
    ON r.principal_id = o.principal_id AND r.operation = 'create-order' AND
    r.idem_key = o.idempotency_key AND r.status = 'SUCCEEDED' AND
    r.resource_id = CONCAT('o-', o.id)
    WHERE o.principal_id = 'alice' AND o.idempotency_key IN ($klist)
    AND r.id IS NULL" 0 "burst: orders without their SUCCEEDED ledger row"
expect_sql "SELECT COUNT(*) FROM idempotency_records r LEFT JOIN orders o
    ON o.principal_id = r.principal_id AND o.idempotency_key = r.idem_key
    AND CONCAT('o-', o.id) = r.resource_id
    WHERE r.principal_id = 'alice' AND r.idem_key IN ($klist)
    AND r.status = 'SUCCEEDED' AND o.id IS NULL" 0 \
    "burst: SUCCEEDED ledger rows without their order"
expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id =
    'alice' AND idem_key IN ($klist) AND status <> 'SUCCEEDED'" 0 \
    "burst: ledger rows not SUCCEEDED"
for sk in "${skus[@]}"; do
	expect_sql "SELECT 1000 - COALESCE((SELECT SUM(qty) FROM order_items
	    WHERE sku = '$sk'), 0) - available FROM stock WHERE sku = '$sk'" 0 \
	    "burst: stock of $sk conserved (initial - ordered - available)"
done
expect_sql "SELECT COUNT(*) FROM orders o WHERE o.idempotency_key IN ($klist)
    AND (SELECT COUNT(*) FROM order_items i WHERE i.order_id = o.id) <> 1" 0 \
    "burst: every order has its one line"

pool_wait_full 40 || fail "pool after the burst" "fewer workers than configured"
finish
