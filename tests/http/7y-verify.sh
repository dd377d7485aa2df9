#!/usr/bin/env bash
# tools/idemorders-verify, the QA kit, against the test stack: it passes
# through lighttpd and Apache, with --db-defaults (judged by rows too) and
# without (HTTP alone, which it says); it refuses to run without a test
# SKU, with an unknown one or without enough stock; and it FAILS check 5,
# naming it, against a responder configured with out_of_stock = retryable
# (its rejections are not replayed), behind a lighttpd of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

VERIFY=$REPO/tools/idemorders-verify
priv=$(mktemp -d /tmp/idemorders-7y.XXXXXX)
chmod 0755 "$priv"
PLPID=
cleanup() {
	[[ -n $PLPID ]] && kill "$PLPID" 2>/dev/null
	stop_private
	rm -rf "$priv" "$T_TMP"
}
trap cleanup EXIT

conf_value() {
	sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" "$IDEMORDERS_CONF" | tail -n 1
}
DBDEF=$T_TMP/db.cnf
{
	echo "[client]"
	echo "user = $(conf_value db_user)"
	pw=$(conf_value db_password)
	pwfile=$(conf_value db_password_file)
	[[ -z $pw && -n $pwfile ]] && pw=$(head -n 1 "$pwfile")
	echo "password = $pw"
	echo "socket = $(conf_value db_socket)"
	echo "database = $(conf_value db_name)"
} >"$DBDEF"
chmod 0600 "$DBDEF"

# verify WHAT ARGS...: run it; VRC, VOUT.
verify() {
	local what=$1
	shift
	VOUT=$(timeout 300 "$VERIFY" "$@" 2>&1)
	VRC=$?
	printf '%s\n' "$VOUT" | sed 's/^/    | /'
}

# expect_pass WHAT N...: a PASS line for each check N given; "skip7": a
# SKIP line for check 7 that names --db-defaults.
expect_pass() {
	local what=$1 n
	shift
	for n in "$@"; do
		if [[ $n == skip7 ]]; then
			grep -qE '^SKIP 7 .*--db-defaults' <<<"$VOUT" &&
			    ok "$what: check 7 not judged, said so" ||
			    fail "$what: check 7" "no SKIP 7 line naming --db-defaults"
			continue
		fi
		grep -qE "^PASS $n [a-z]" <<<"$VOUT" && ok "$what: PASS $n" ||
		    fail "$what: check $n" "$(grep -E "^[A-Z]+ $n " <<<"$VOUT")"
	done
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")$MOUNT

	w="$s, --db-defaults"
	sku=$(new_sku T7Y 100)
	verify "$w" --base "$url" --user "$ALICE" --other-user "$BOB" --sku "$sku" \
	    --db-defaults "$DBDEF"
	[[ $VRC == 0 ]] && ok "$w: exit 0" || fail "$w: exit status" "$VRC"
	expect_pass "$w" 1 2 3 4 5 6 7
	grep -q 'CREATES real orders' <<<"$VOUT" && ok "$w: says up front that it creates orders" ||
	    fail "$w: warning" "no 'CREATES real orders' line"
	grep -qE '^PASS 1 .*rows: 1 order, ledger SUCCEEDED o-' <<<"$VOUT" &&
	    ok "$w: check 1 judged by rows" || fail "$w: check 1 rows" "no rows note"
	grep -qE '^PASS 5 .*OUT_OF_STOCK \(98 of 97\) recorded FAILED_FINAL' <<<"$VOUT" &&
	    ok "$w: OUT_OF_STOCK judged" || fail "$w: check 5" "no OUT_OF_STOCK judgement"
	grep -qE '^PASS 5 .*crash before COMMIT \([0-9]+\): nothing kept' <<<"$VOUT" &&
	    ok "$w: crash before COMMIT judged" || fail "$w: check 5" "no crash judgement"
	grep -qE '7 passed, 0 failed, 0 not judged$' <<<"$VOUT" &&
	    ok "$w: summary" || fail "$w: summary" "$(tail -n 1 <<<"$VOUT")"
	expect_sql_value "$w: stock of $sku after it" 96 "$(stock_of "$sku")"
	expect_sql_value "$w: its orders, all under its prefix" \
	    "4 4" "$(sql "SELECT COUNT(*), SUM(idempotency_key LIKE 'verify-%')
	    FROM orders o JOIN order_items i ON i.order_id = o.id WHERE i.sku = '$sku'" | tr '\t' ' ')"

	w="$s, HTTP alone"
	sku=$(new_sku T7Y 100)
	verify "$w" --base "$url" --user "$ALICE" --other-user "$BOB" --sku "$sku"
	[[ $VRC == 0 ]] && ok "$w: exit 0" || fail "$w: exit status" "$VRC"
	expect_pass "$w" 1 2 3 4 5 6 skip7
	grep -qE '^PASS 1 .*\[HTTP only\]$' <<<"$VOUT" && ok "$w: check 1 marked [HTTP only]" ||
	    fail "$w: [HTTP only]" "not marked"
	grep -qE 'judged by HTTP alone \(no --db-defaults\): 1 2 3 4 5 6$' <<<"$VOUT" &&
	    ok "$w: the summary names the checks judged by HTTP alone" ||
	    fail "$w: summary" "$(tail -n 1 <<<"$VOUT")"
	grep -q "KRW 1000 a unit (learnt" <<<"$VOUT" && ok "$w: price learnt by HTTP" ||
	    fail "$w: price" "not learnt"
	expect_sql_value "$w: stock of $sku after it" 96 "$(stock_of "$sku")"
done

# --- refusals ---------------------------------------------------------------
url=$LIGHTTPD_URL$MOUNT
verify "no --sku" --base "$url" --user "$ALICE" --other-user "$BOB"
[[ $VRC == 2 && $VOUT == *"refusing to run without --sku"* ]] &&
    ok "no --sku: refused, exit 2" || fail "no --sku" "exit $VRC"
verify "unknown SKU" --base "$url" --user "$ALICE" --other-user "$BOB" --sku T7Y-none-$RUN_TAG
[[ $VRC == 2 && $VOUT == *"no SKU T7Y-none-$RUN_TAG"* ]] &&
    ok "unknown SKU over HTTP: refused, exit 2" || fail "unknown SKU" "exit $VRC"
verify "unknown SKU" --base "$url" --user "$ALICE" --other-user "$BOB" \
    --sku T7Y-none-$RUN_TAG --db-defaults "$DBDEF"
[[ $VRC == 2 && $VOUT == *"no SKU T7Y-none-$RUN_TAG in the stock table"* ]] &&
    ok "unknown SKU, rows: refused, exit 2" || fail "unknown SKU, rows" "exit $VRC"
sku=$(new_sku T7Y-low 2)
verify "low stock" --base "$url" --user "$ALICE" --other-user "$BOB" --sku "$sku" \
    --db-defaults "$DBDEF"
[[ $VRC == 2 && $VOUT == *"has 2 units available, 4 needed"* ]] &&
    ok "2 units, rows: refused, exit 2" || fail "low stock" "exit $VRC"
expect_sql_value "low stock: nothing ordered" 2 "$(stock_of "$sku")"
sku=$(new_sku T7Y-none 0)
verify "no stock" --base "$url" --user "$ALICE" --other-user "$BOB" --sku "$sku"
[[ $VRC == 2 && $VOUT == *"is out of stock"*"restock it first"* ]] &&
    ok "0 units over HTTP: refused, exit 2" || fail "no stock" "exit $VRC"
expect_sql_value "no stock: no order" 0 \
    "$(sql "SELECT COUNT(*) FROM order_items WHERE sku = '$sku'")"

# --- a deployment that breaks one expectation: out_of_stock = retryable -----
CONF=$priv/idemorders.conf
private_conf "$CONF" "$priv/sock" workers=2 out_of_stock=retryable \
    socket_mode=0660 socket_group=www-data
start_private "$IDEMORDERS_BIN" "$CONF" "$priv/sock" "$priv/serve.log" || finish
port=$(( ${LIGHTTPD_URL##*:} + 5 ))
mkdir -p "$priv/log"
chown www-data:www-data "$priv/log"
sed -e "s|^server.port .*|server.port = $port|" \
    -e "s|^server.pid-file .*|server.pid-file = \"$priv/lighttpd.pid\"|" \
    -e "s|^server.errorlog .*|server.errorlog = \"$priv/log/error.log\"|" \
    -e "s|^accesslog.filename .*|accesslog.filename = \"$priv/log/access.log\"|" \
    -e "s|\"socket\" *=> *\"$FCGI_SOCKET\"|\"socket\" => \"$priv/sock\"|" \
    "$RUNDIR/lighttpd.conf" >"$priv/lighttpd.conf"
lighttpd -D -f "$priv/lighttpd.conf" </dev/null >"$priv/lighttpd.out" 2>&1 &
PLPID=$!
for ((i = 0; i < 50; i++)); do
	curl -s -o /dev/null "http://127.0.0.1:$port$MOUNT/_health" && break
	sleep 0.1
done
req GET "http://127.0.0.1:$port$MOUNT/_health"
expect_status 200 "lighttpd on :$port in front of the out_of_stock = retryable responder"
w="out_of_stock = retryable"
sku=$(new_sku T7Y-retry 100)
verify "$w" --base "http://127.0.0.1:$port$MOUNT" --user "$ALICE" --other-user "$BOB" \
    --sku "$sku" --db-defaults "$DBDEF"
[[ $VRC == 1 ]] && ok "$w: exit 1" || fail "$w: exit status" "$VRC, expected 1"
grep -qE '^FAIL 5 a final rejection is recorded, a crash keeps nothing: .*OUT_OF_STOCK was not replayed' <<<"$VOUT" &&
    ok "$w: FAIL 5 names the unreplayed OUT_OF_STOCK" ||
    fail "$w: check 5" "$(grep -E '^[A-Z]+ 5 ' <<<"$VOUT")"
grep -qE "^FAIL 5 .*ledger row 'none', expected FAILED_FINAL" <<<"$VOUT" &&
    ok "$w: FAIL 5 says no ledger row was recorded" ||
    fail "$w: check 5 rows" "$(grep -E '^[A-Z]+ 5 ' <<<"$VOUT")"
expect_pass "$w" 1 2 3 4 6 7
grep -qE '6 passed, 1 failed, 0 not judged$' <<<"$VOUT" &&
    ok "$w: summary" || fail "$w: summary" "$(tail -n 1 <<<"$VOUT")"

kill "$PLPID" 2>/dev/null
wait "$PLPID" 2>/dev/null
PLPID=
stop_private
pool_wait_full 40 || fail "pool" "fewer workers than configured"
finish
