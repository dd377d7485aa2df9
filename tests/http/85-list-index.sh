#!/usr/bin/env bash
# GET /orders reads a page from the index on (principal_id, id), never
# by scanning other principals' rows (or all of the principal's own).
# Principal X has 1500 orders, every tenth id of 15000; the other nine
# in ten are another principal's, and so are 1500 newer ones, all with an
# item.  Reading X's orders newer or older than a cursor by the principal
# alone walks every order of X's on the way; reading a page's id range
# from order_items reads nine other principals' items for each of X's.
# Then:
#  - EXPLAIN of the page's id read uses orders_principal_id, no filesort;
#  - each of four pages (the first, after a cursor, before a cursor, 100
#    after a cursor) answers the right orders, and the rows the server
#    read for it (the sum of Handler_read_*, server-wide, minus what a
#    request that reads no order costs; the least of three tries) stay
#    under 6 x limit + 100 (a page of 100 reads about 560: ids, orders,
#    items, the sort of the joined rows), far below what a scan reads
#    (740 rows for a page of 5 after the middle of X's orders before
#    the statements named their index; the page of 100 read from
#    order_items would add 900 other principals' items and orders).
# The rows are inserted and deleted by SQL; requests go straight to the
# FastCGI socket, with X as REMOTE_USER.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

unique_name X t85-x
unique_name O t85-o
unique_name SKU T85-SKU

cleanup() {
	sql "DELETE i FROM order_items i JOIN orders o ON o.id = i.order_id
	    WHERE o.principal_id LIKE 't85-%';
	    DELETE FROM orders WHERE principal_id LIKE 't85-%';
	    DELETE FROM stock WHERE sku LIKE 'T85-SKU-%'" ||
	    fail "clean up the t85 rows" "DELETE failed"
}
cleanup
set_stock "$SKU" KRW 100 0

# Far above every id the ledger will hand out while this runs.
base=$(sql "SELECT GREATEST((SELECT IFNULL(MAX(id), 0) FROM orders),
    (SELECT AUTO_INCREMENT FROM information_schema.TABLES
     WHERE table_schema = DATABASE() AND table_name = 'idempotency_records'))
    + 100000000")
sql "INSERT INTO orders (id, principal_id, idempotency_key, currency, amount,
	shipping, note, status, created_at)
    SELECT $base + seq, IF(seq <= 15000 AND seq MOD 10 = 0, '$X', '$O'), CONCAT('k-', seq),
	'KRW', 100, 'standard', '', 'CREATED', UTC_TIMESTAMP(6) FROM seq_1_to_16500;
    INSERT INTO order_items (order_id, sku, qty, unit_price)
    SELECT id, '$SKU', 1, 100 FROM orders WHERE principal_id IN ('$X', '$O')" ||
    fail "fill" "INSERT failed"
sql "ANALYZE TABLE orders, order_items" >/dev/null
expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = '$X'" 1500 "X's orders"

# ---- EXPLAIN: the index, no sort -------------------------------------------
expect_eq() {	# WHAT EXPECTED ACTUAL
	if [[ $3 == "$2" ]]; then ok "$1 = $2"; else fail "$1" "expected '$2', got '$3'"; fi
}
for cur in "" "AND id <= $((base + 7510))" "AND id >= $((base + 100))"; do
	dir=DESC
	[[ $cur == *">="* ]] && dir=ASC
	plan=$(sql "EXPLAIN SELECT id FROM orders FORCE INDEX (orders_principal_id)
	    WHERE principal_id = '$X' $cur ORDER BY id $dir LIMIT 6")
	expect_eq "EXPLAIN of the page's ids ${cur:-without a cursor}: the index" \
	    orders_principal_id "$(cut -f6 <<<"$plan")"
	[[ $plan != *filesort* ]] && ok "EXPLAIN of the page's ids ${cur:-without a cursor}: no filesort" ||
	    fail "EXPLAIN of the page's ids ${cur:-without a cursor}" "sorts: $plan"
done

# reads: the sum of Handler_read_* so far, server-wide.
reads() {
	sql "SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS
	    WHERE VARIABLE_NAME LIKE 'HANDLER_READ%'" </dev/null
}
# cost URI: the least, over three tries, of the rows read around one
# request of X to URI (the status read itself included).
cost() {
	local i a b best=
	for i in 1 2 3; do
		a=$(reads)
		fcgi_req GET "$1" REMOTE_USER="$X" >/dev/null
		b=$(reads)
		[[ -z $best || $((b - a)) -lt $best ]] && best=$((b - a))
	done
	echo "$best"
}

fcgi_req GET "$MOUNT/_health"
expect_status 200 "health"
idle=$(cost "$MOUNT/_health")
x() {	# N...: X's orders base + 10 N, as ids
	local n out=
	for n in "$@"; do out+=" o-$((base + 10 * n))"; done
	echo "${out# }"
}
while IFS='|' read -r what limit uri want; do
	fcgi_req GET "$uri" REMOTE_USER="$X"
	expect_status 200 "$what"
	got=$(jq -r '[.data[].orderId] | join(" ")' <<<"$BODY" 2>/dev/null)
	expect_eq "$what: ids" "$want" "$got"
	c=$(cost "$uri")
	if [[ $c =~ ^-?[0-9]+$ && $((c - idle)) -lt $((6 * limit + 100)) ]]; then
		ok "$what: $((c - idle)) rows read (a request without orders: $idle)"
	else
		fail "$what: rows read" "$((c - idle)) ($c - $idle) >= $((6 * limit + 100)): a scan of other principals' rows or of all of X's"
	fi
done <<EOT
the newest page|5|$MOUNT?limit=5|$(x 1500 1499 1498 1497 1496)
after $(x 751)|5|$MOUNT?limit=5&starting_after=$(x 751)|$(x 750 749 748 747 746)
before $(x 10)|5|$MOUNT?limit=5&ending_before=$(x 10)|$(x 15 14 13 12 11)
100 after $(x 1200)|100|$MOUNT?limit=100&starting_after=$(x 1200)|$(x $(seq 1199 -1 1100))
EOT
# The other principal's order as a cursor: refused, and cheaply.
fcgi_req GET "$MOUNT?limit=5&starting_after=o-$((base + 1501))" REMOTE_USER="$X"	# an O order
expect_problem 400 VALIDATION_FAILED "X's cursor at the other principal's order"

cleanup
finish
