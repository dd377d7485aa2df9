#!/usr/bin/env bash
# Cuts at growing byte offsets of what MariaDB answers after the ledger
# insert (the SAVEPOINT, the stock rows locked FOR UPDATE, the order
# batch, the ledger update, COMMIT), through the fault proxy
# (tests/dbproxy/dbproxy), the web servers in turn: each answer is 201
# (the order committed) or 503 with Retry-After, the rows are sane (at
# most one order per key, stock conserved on both lines, the ledger row
# SUCCEEDED exactly when there is an order), and the same key afterwards
# creates exactly one order or replays it.  Then the same for a cancel,
# at fewer offsets: 200 or 503, the order CANCELLED exactly when its
# cancel ledger row SUCCEEDED (and restocked exactly then), and the same
# key afterwards cancels with exactly one restock.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"
. "$(dirname -- "$0")/../lib/dbfaults.sh"

DEADLINE_S=3
BOUND_MS=$((DEADLINE_S * 1000 + 3000))
two_line_orders T48

trap proxy_cleanup EXIT

proxy_start || finish
pool_swap --proxy workers=4 request_deadline=${DEADLINE_S}s || finish
wait_healthy "through the proxy"
warm_statements T48

# --- cuts at growing offsets after the ledger insert, the servers in turn --
s=apache
for n in 12 20 40 60 90 120 150 220 280 400; do
	[[ $s == lighttpd ]] && s=apache || s=lighttpd
	url=$(url_of "$s")
	o=$T_TMP/$s
	w="$s cut after $n bytes from the ledger insert on"
	new_sku sku T48-sweep 50
	key=$(unique_key "t48-$s-sweep-$n")
	body=$(order_body "$sku" 2)
	s2=$(stock_of "$SKU2")
	parked_cut "$o-sweep" "$url" "$key" "$body" \
	    after_ledger_insert=sleep1500 cut-after-bytes "$n" server
	if [[ $n -le 150 ]]; then
		[[ $CUT == 1 ]] && ok "$w: the proxy cut" ||
		    fail "$w: cut" "the proxy cut nothing"
	else
		echo "note   $w: cut happened: $CUT"
	fi
	if expect_status_in "$w" 201 503 && [[ $STATUS == 503 ]]; then
		expect_503_retry "$w"
	fi
	expect_rows_sane "$key" "$sku" 50 2 "$w"
	n_orders=$(orders_for "$key")
	expect_sql_value "$w: $SKU2 conserved" $((s2 - n_orders)) "$(stock_of "$SKU2")"
	post_order "$url" "$key" "$body"
	expect_status 201 "$w: retry"
	expect_sql_value "$w: one order after the retry" 1 "$(orders_for "$key")"
	expect_sql_value "$w: stock after the retry" 48 "$(stock_of "$sku")"
done

# --- the same for a cancel: cuts after its ledger insert (the order row
# and stock rows locked, the restock batch, COMMIT) --------------------------
for n in 12 40 90 150 280; do
	[[ $s == lighttpd ]] && s=apache || s=lighttpd
	url=$(url_of "$s")
	o=$T_TMP/$s
	w="$s cancel, cut after $n bytes from the ledger insert on"
	new_sku sku T48-cancel 50
	post_order "$url" "$(unique_key "t48-$s-cancel-$n-order")" "$(order_body "$sku" 2)"
	expect_status 201 "$w: the order"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	key=$(unique_key "t48-$s-cancel-$n")
	settle_reads
	c0=$(proxy_stat cuts)
	bg_cancel "$o-cancel" "$url" "$key" "$oid" after_ledger_insert=sleep1500
	pid=$!
	sleeping_worker >/dev/null ||
	    echo "note   $w: no worker seen sleeping; arming anyway"
	proxy cut-after-bytes "$n" server >/dev/null
	wait "$pid"
	proxy pass >/dev/null
	bg_load "$o-cancel"
	echo "note   $w: cut happened: $([[ $(proxy_stat cuts) -gt $c0 ]] && echo 1 || echo 0)"
	if expect_status_in "$w" 200 503 && [[ $STATUS == 503 ]]; then
		expect_503_retry "$w"
	fi
	# Judged by the rows: CANCELLED exactly when the cancel's ledger row
	# SUCCEEDED, and restocked exactly then.
	st=$(order_state "$oid")
	if [[ $st == CANCELLED ]]; then
		expect_sql_value "$w: cancelled, cancel ledger" "1	SUCCEEDED" "$(cancel_ledger "$key")"
		expect_sql_value "$w: cancelled, stock" 50 "$(stock_of "$sku")"
	else
		expect_sql_value "$w: not cancelled, order" CREATED "$st"
		[[ $(cancel_ledger "$key") != *SUCCEEDED* && $(cancel_ledger "$key") != *PROCESSING* ]] &&
		    ok "$w: not cancelled, no SUCCEEDED/PROCESSING cancel row" ||
		    fail "$w: cancel ledger" "$(cancel_ledger "$key") for an order $st"
		expect_sql_value "$w: not cancelled, stock" 48 "$(stock_of "$sku")"
	fi
	[[ $STATUS == 200 ]] && expect_sql_value "$w: a 200 only for a committed cancel" CANCELLED "$st"
	post_cancel "$url" "$key" "$oid"
	expect_status 200 "$w: retry"
	expect_sql_value "$w: after the retry: order" CANCELLED "$(order_state "$oid")"
	expect_sql_value "$w: after the retry: cancel ledger" "1	SUCCEEDED" "$(cancel_ledger "$key")"
	expect_sql_value "$w: after the retry: stock restocked once" 50 "$(stock_of "$sku")"
	expect_sql_value "$w: after the retry: restocked" 2 "$(restocked_of "$sku")"
done

wait_healthy "after the cuts"
expect_no_asan_reports "cut sweep"
finish
