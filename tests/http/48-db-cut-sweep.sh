#!/usr/bin/env bash
# Cuts at growing byte offsets of what MariaDB answers after the ledger
# insert (the SAVEPOINT, the stock rows locked FOR UPDATE, the order
# batch, the ledger update, COMMIT), through the fault proxy
# (tests/dbproxy/dbproxy), the web servers in turn: each answer is 201
# (the order committed) or 503 with Retry-After, the rows are sane (at
# most one order per key, stock conserved on both lines, the ledger row
# SUCCEEDED exactly when there is an order), and the same key afterwards
# creates exactly one order or replays it.
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
	sku=$(new_sku T48-sweep 50)
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

wait_healthy "after the cuts"
expect_no_asan_reports "cut sweep"
finish
