#!/usr/bin/env bash
# `idemorders audit` reports every breach of the exactly-once invariants.
# On a database of its own on the test server (earlier scripts age and
# delete ledger rows by hand in the shared one), a private responder of
# the stack's build takes orders over its FastCGI socket; the audit is
# clean (exit 0, text and --json); then each breach is planted by SQL, one
# at a time, seen reported by name (exit 1, text and --json), and undone,
# the audit clean again after each.  The purged-key rule: an order without
# a ledger row is allowed only when older than key_retention +
# tombstone_retention, never with tombstone_retention = 0.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

PDB=idemorders_t75
priv=$(mktemp -d /tmp/idemorders-75.XXXXXX)
chmod 0755 "$priv"
cleanup() {
	stop_private
	"$DEV" sql "DROP DATABASE IF EXISTS $PDB" >/dev/null 2>&1
	rm -rf "$priv" "$T_TMP"
}
trap cleanup EXIT

# psql "STATEMENTS": SQL on the private database, as root.
psql() {
	"$DEV" sql "USE $PDB; $1"
}

# --- a database of its own, migrated, with two SKUs -------------------------
dbuser=$(sed -n 's/^[[:space:]]*db_user[[:space:]]*=[[:space:]]*//p' "$IDEMORDERS_CONF" | tail -n 1)
if "$DEV" sql "DROP DATABASE IF EXISTS $PDB; CREATE DATABASE $PDB;
    GRANT ALL PRIVILEGES ON $PDB.* TO '$dbuser'@'localhost';
    GRANT ALL PRIVILEGES ON $PDB.* TO '$dbuser'@'127.0.0.1'" >/dev/null; then
	ok "database $PDB created"
else
	fail "database $PDB" "cannot create it"
	finish
fi
CONF=$priv/idemorders.conf
private_conf "$CONF" "$priv/sock" workers=2 db_name="$PDB" \
    schema_dir="$REPO/schema"
if "$IDEMORDERS_BIN" migrate -c "$CONF" >"$priv/migrate.log" 2>&1; then
	ok "migrate $PDB"
else
	fail "migrate" "$(tail -n 3 "$priv/migrate.log" | tr '\n' ' ')"
	finish
fi
psql "INSERT INTO stock (sku, currency, unit_price, available) VALUES
    ('T75-A', 'KRW', 1000, 100), ('T75-B', 'KRW', 1000, 5)"
start_private "$IDEMORDERS_BIN" "$CONF" "$priv/sock" "$priv/serve.log" || finish

# pfcgi USER KEY BODY: POST to the private responder.
pfcgi() {
	FCGI_SOCKET=$priv/sock fcgi_req -d "$3" POST "$MOUNT" REMOTE_USER="$1" \
	    CONTENT_TYPE=application/json HTTP_IDEMPOTENCY_KEY="$2"
}

declare -A OID
for k in a1 a2 a3; do
	pfcgi alice "t75-$k" "$(order_body T75-A 2)"
	expect_status 201 "alice order t75-$k"
	OID[$k]=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
done
pfcgi alice t75-a1 "$(order_body T75-A 2)"
expect_header idempotent-replayed true "alice t75-a1 replayed"
pfcgi bob t75-b1 "$(order_body T75-A 1)"
expect_status 201 "bob order t75-b1"
OID[b1]=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
pfcgi alice t75-r1 '{"currency":"KRW","items":[{"sku":"T75-A","qty":1}],"amount":1}'
expect_problem 422 AMOUNT_MISMATCH "alice rejected t75-r1"

# audit [CONF]: run it; AUDIT_RC, AUDIT_OUT (text), AUDIT_JSON.
audit() {
	local conf=${1:-$CONF}
	AUDIT_OUT=$("$IDEMORDERS_BIN" audit -c "$conf" 2>"$T_TMP/audit.err")
	AUDIT_RC=$?
	AUDIT_JSON=$("$IDEMORDERS_BIN" audit -c "$conf" --json 2>>"$T_TMP/audit.err")
	AUDIT_JRC=$?
}

# expect_clean WHAT
expect_clean() {
	local n
	audit "${2:-}"
	# As many checks as --json reports, each printed "ok".
	n=$(jq -r '.checks | length' <<<"$AUDIT_JSON" 2>/dev/null)
	if [[ $AUDIT_RC == 0 && $n =~ ^[1-9][0-9]*$ &&
	    $AUDIT_OUT == *"audit: clean ($n checks)"* &&
	    $(grep -c '^ok' <<<"$AUDIT_OUT") == "$n" ]]; then
		ok "$1: audit clean, exit 0"
	else
		fail "$1: audit" "exit $AUDIT_RC: $(tr '\n' ' ' <<<"$AUDIT_OUT") $(cat "$T_TMP/audit.err")"
	fi
	if [[ $AUDIT_JRC == 0 ]] &&
	    jq -e '.clean == true and .breaches == 0 and
	    ([.checks[].count] | length > 0 and all(. == 0))' \
	    <<<"$AUDIT_JSON" >/dev/null 2>&1; then
		ok "$1: audit --json clean, exit 0"
	else
		fail "$1: audit --json" "exit $AUDIT_JRC: $AUDIT_JSON"
	fi
}

# expect_breach WHAT CHECK ID [ONLY]: CHECK reports ID (text and JSON),
# exit 1; with ONLY=only no other check reports anything.
expect_breach() {
	local what=$1 name=$2 id=$3 only=${4:-}
	audit "${5:-}"
	if [[ $AUDIT_RC == 1 ]] && grep -qE "^BREACH +$name: [1-9]" <<<"$AUDIT_OUT" &&
	    grep -qE "^ +$id " <<<"$AUDIT_OUT"; then
		ok "$what: text names $name and $id, exit 1"
	else
		fail "$what: text" "exit $AUDIT_RC: $(tr '\n' '|' <<<"$AUDIT_OUT")"
	fi
	if [[ $AUDIT_JRC == 1 ]] && jq -e --arg c "$name" --arg id "$id" \
	    '.clean == false and .checks[$c].count >= 1 and
	    (.checks[$c].sample | index($id) != null)' <<<"$AUDIT_JSON" >/dev/null 2>&1; then
		ok "$what: --json .checks.$name names $id, exit 1"
	else
		fail "$what: --json" "exit $AUDIT_JRC: $AUDIT_JSON"
	fi
	if [[ $only == only ]]; then
		if jq -e --arg c "$name" '[.checks | to_entries[] |
		    select(.key != $c and .value.count != 0)] | length == 0' \
		    <<<"$AUDIT_JSON" >/dev/null 2>&1; then
			ok "$what: no other check reports"
		else
			fail "$what: other checks" "$AUDIT_JSON"
		fi
	fi
}

expect_clean "orders, a replay and a rejection"

# Ledger row of alice's key K as a new row id in a saved copy.
LEDGER_COLS="principal_id, operation, idem_key, request_fingerprint, status,
    response_status, response_headers, response_body, resource_id,
    created_at, updated_at, expires_at"
lid() {
	psql "SELECT id FROM idempotency_records WHERE principal_id = '$1'
	    AND idem_key = '$2'" | tail -n 1
}

# --- order without its ledger row -------------------------------------------
a2=${OID[a2]}
psql "CREATE TABLE saved AS SELECT id, $LEDGER_COLS FROM idempotency_records
    WHERE principal_id = 'alice' AND idem_key = 't75-a2';
    DELETE FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = 't75-a2'"
expect_breach "ledger row of $a2 deleted" order_without_ledger "$a2" only
# As the retention job would have purged it: older than 24h + 30d.
psql "UPDATE orders SET created_at = created_at - INTERVAL 32 DAY WHERE id = ${a2#o-}"
expect_clean "ledger row of $a2 gone, order 32 days old (a purged key)"
printf 'tombstone_retention = 0\n' | cat "$CONF" - >"$priv/forever.conf"
expect_breach "same with tombstone_retention = 0" order_without_ledger "$a2" only \
    "$priv/forever.conf"
psql "UPDATE orders SET created_at = created_at - INTERVAL 30 DAY + INTERVAL 32 DAY - INTERVAL 2 HOUR
    WHERE id = ${a2#o-}"
expect_breach "ledger row of $a2 gone, order 30 days old" order_without_ledger "$a2" only
psql "UPDATE orders SET created_at = created_at + INTERVAL 30 DAY + INTERVAL 2 HOUR
    WHERE id = ${a2#o-}"
psql "INSERT INTO idempotency_records (id, $LEDGER_COLS)
    SELECT id, $LEDGER_COLS FROM saved; DROP TABLE saved"
expect_clean "ledger row of $a2 restored"
# A ledger row that names no order for a key that made one.
psql "UPDATE idempotency_records SET status = 'FAILED_FINAL', resource_id = NULL
    WHERE principal_id = 'alice' AND idem_key = 't75-a2'"
expect_breach "$a2's ledger row FAILED_FINAL" order_without_ledger "$a2" only
psql "UPDATE idempotency_records SET status = 'SUCCEEDED', resource_id = '$a2'
    WHERE principal_id = 'alice' AND idem_key = 't75-a2'"
expect_clean "$a2's ledger row SUCCEEDED again"

# --- two orders for one (principal, key) ------------------------------------
a3=${OID[a3]}
psql "ALTER TABLE orders DROP INDEX orders_principal_key;
    INSERT INTO orders (principal_id, idempotency_key, currency, amount,
    shipping, note, status, created_at) SELECT principal_id,
    idempotency_key, currency, amount, shipping, note, status, created_at
    FROM orders WHERE id = ${a3#o-};
    INSERT INTO order_items (order_id, sku, qty, unit_price)
    SELECT LAST_INSERT_ID(), 'T75-A', 2, 1000"
dup=o-$(psql "SELECT MAX(id) FROM orders" | tail -n 1)
expect_breach "second order $dup for alice t75-a3" duplicate_order_key "$a3"
grep -qE "^ +$a3 .*orders $a3,$dup" <<<"$AUDIT_OUT" &&
    ok "duplicate_order_key lists $a3 and $dup" ||
    fail "duplicate_order_key" "no line listing $a3,$dup: $(tr '\n' '|' <<<"$AUDIT_OUT")"
# A principal that differs only by a trailing space is another principal.
psql "UPDATE orders SET principal_id = 'alice ' WHERE id = ${dup#o-}"
audit
jq -e '.checks.duplicate_order_key.count == 0' <<<"$AUDIT_JSON" >/dev/null &&
    ok "'alice' and 'alice ' are two principals: no duplicate" ||
    fail "duplicate_order_key with 'alice '" "$AUDIT_JSON"
jq -e --arg d "$dup" '.checks.order_without_ledger.sample | index($d) != null' \
    <<<"$AUDIT_JSON" >/dev/null &&
    ok "the 'alice ' order $dup has no ledger row of its own" ||
    fail "order_without_ledger for 'alice '" "$AUDIT_JSON"
psql "DELETE FROM order_items WHERE order_id = ${dup#o-};
    DELETE FROM orders WHERE id = ${dup#o-};
    ALTER TABLE orders ADD UNIQUE KEY orders_principal_key (principal_id, idempotency_key)"
expect_clean "second order deleted, unique key back"

# --- SUCCEEDED row naming another principal's order --------------------------
b1=${OID[b1]}
psql "INSERT INTO idempotency_records ($LEDGER_COLS) VALUES ('alice',
    'create-order', 't75-steal', REPEAT('0', 64), 'SUCCEEDED', 201, '', '',
    '$b1', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 86400 SECOND)"
steal=ledger-$(lid alice t75-steal)
expect_breach "alice's ledger row naming bob's $b1" succeeded_without_order "$steal" only
psql "UPDATE idempotency_records SET resource_id = 'o-99999999'
    WHERE principal_id = 'alice' AND idem_key = 't75-steal'"
expect_breach "a ledger row naming no order" succeeded_without_order "$steal" only
psql "DELETE FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = 't75-steal'"
expect_clean "that ledger row deleted"

# --- order without items -----------------------------------------------------
a1=${OID[a1]}
psql "CREATE TABLE saved AS SELECT * FROM order_items WHERE order_id = ${a1#o-};
    DELETE FROM order_items WHERE order_id = ${a1#o-}"
expect_breach "items of $a1 deleted" order_without_items "$a1" only
# --since: only rows created from then on.
out=$("$IDEMORDERS_BIN" audit -c "$CONF" --since 1h 2>&1)
rc=$?
[[ $rc == 1 && $out == *"audit: rows created since "* && $out == *"BREACH  order_without_items: 1"* ]] &&
    ok "--since 1h: $a1 reported" || fail "--since 1h" "exit $rc: $out"
out=$("$IDEMORDERS_BIN" audit -c "$CONF" --since "@$(($(date +%s) + 5))" --json 2>&1)
rc=$?
[[ $rc == 0 ]] && jq -e '.clean == true and .since > 0' <<<"$out" >/dev/null &&
    ok "--since a moment from now: clean, exit 0" || fail "--since @future" "exit $rc: $out"
"$IDEMORDERS_BIN" audit -c "$CONF" --since yesterday >/dev/null 2>&1
rc=$?
[[ $rc == 2 ]] && ok "--since yesterday: refused, exit 2" || fail "--since yesterday" "exit $rc"
# A moment the database cannot compare with is refused, never "clean".
for when in @99999999999999999999 @2147483648 @4102444800; do
	out=$("$IDEMORDERS_BIN" audit -c "$CONF" --since "$when" 2>&1)
	rc=$?
	[[ $rc == 2 && $out == *"--since \"$when\""* && $out != *clean* ]] &&
	    ok "--since $when: refused, exit 2" || fail "--since $when" "exit $rc: $out"
done
psql "INSERT INTO order_items SELECT * FROM saved; DROP TABLE saved"
expect_clean "items of $a1 restored"

# --- negative stock ----------------------------------------------------------
psql "SET SESSION check_constraint_checks = 0;
    UPDATE stock SET available = -3 WHERE sku = 'T75-B'"
expect_breach "stock T75-B at -3" negative_stock T75-B only
psql "UPDATE stock SET available = 5 WHERE sku = 'T75-B'"
expect_clean "stock T75-B at 5"

# --- a cancel: restocked exactly once, its ledger row names it ---------------
pfcgi alice t75-c "$(order_body T75-A 2)"
expect_status 201 "alice order t75-c"
c=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
FCGI_SOCKET=$priv/sock fcgi_req -d '{"reason":"audit"}' POST "$MOUNT/$c/cancel" \
    REMOTE_USER=alice CONTENT_TYPE=application/json HTTP_IDEMPOTENCY_KEY=t75-cancel
expect_status 200 "alice cancels $c"
expect_clean "a cancelled order"
psql "UPDATE stock SET restocked = restocked + 2 WHERE sku = 'T75-A'"
expect_breach "T75-A restocked twice" restock_mismatch T75-A only
psql "UPDATE stock SET restocked = restocked - 4 WHERE sku = 'T75-A'"
expect_breach "T75-A not restocked" restock_mismatch T75-A only
psql "UPDATE stock SET restocked = restocked + 2
    WHERE sku = 'T75-B'"
expect_breach "T75-B restocked without a cancel" restock_mismatch T75-B
psql "UPDATE stock SET restocked = restocked - 2
    WHERE sku = 'T75-B'"
psql "UPDATE stock SET restocked = restocked + 2 WHERE sku = 'T75-A'"
expect_clean "T75-A restocked once again"
cl=ledger-$(lid alice t75-cancel)
psql "CREATE TABLE saved AS SELECT id, $LEDGER_COLS FROM idempotency_records
    WHERE principal_id = 'alice' AND idem_key = 't75-cancel';
    DELETE FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = 't75-cancel'"
expect_breach "the ledger row of $c's cancel deleted" cancelled_without_ledger "$c" only
psql "INSERT INTO idempotency_records (id, $LEDGER_COLS) SELECT id, $LEDGER_COLS FROM saved;
    DROP TABLE saved"
expect_clean "the ledger row of $c's cancel restored"
psql "UPDATE orders SET cancel_key = 't75-other' WHERE id = ${c#o-}"
expect_breach "$c cancelled by another key than its ledger row's" cancel_without_cancelled_order "$cl"
psql "UPDATE orders SET cancel_key = 't75-cancel' WHERE id = ${c#o-}"
expect_clean "$c cancelled by its key again"

# --- a committed PROCESSING row ----------------------------------------------
psql "INSERT INTO idempotency_records ($LEDGER_COLS) VALUES ('alice',
    'create-order', 't75-proc', REPEAT('0', 64), 'PROCESSING', NULL, NULL,
    NULL, NULL, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6),
    UTC_TIMESTAMP(6) + INTERVAL 86400 SECOND)"
proc=ledger-$(lid alice t75-proc)
expect_breach "committed PROCESSING row" processing_committed "$proc" only
psql "DELETE FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = 't75-proc'"
# An uncommitted one (a request in flight) is legitimate: not reported.
# The session inserts the row, then sleeps in a statement tagged with the
# run id: once that statement shows in the process list, the row is in
# flight; it must still be there after the audit (then the session is
# killed, which rolls the row back).
tag="t75-inflight-$RUN_ID"
psql "BEGIN; INSERT INTO idempotency_records ($LEDGER_COLS)
    VALUES ('alice', 'create-order', 't75-inflight', REPEAT('0', 64),
    'PROCESSING', NULL, NULL, NULL, NULL, UTC_TIMESTAMP(6),
    UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 86400 SECOND);
    SELECT SLEEP(300), '$tag'; ROLLBACK" >/dev/null 2>&1 &
inflight=$!
inflight_conn() {
	"$DEV" sql "SELECT ID FROM information_schema.PROCESSLIST
	    WHERE INFO LIKE 'SELECT SLEEP(300), ''$tag''%'"
}
in_flight() { [[ -n $(inflight_conn) ]]; }
if wait_until 30 in_flight; then
	ok "a PROCESSING row in flight (its session sleeps uncommitted)"
	expect_clean "an uncommitted PROCESSING row (in flight)"
	conn=$(inflight_conn)
	[[ -n $conn ]] && ok "the row was still in flight when the audit ended" ||
	    fail "in-flight row" "its session ended before the audit did"
	[[ -z $conn ]] || "$DEV" sql "KILL $conn" >/dev/null
else
	fail "in-flight row" "the session's sleep never showed in the process list"
	kill "$inflight" 2>/dev/null
fi
wait "$inflight"

# --- expires_at inconsistent with key_retention ------------------------------
lr=ledger-$(lid alice t75-a1)
psql "UPDATE idempotency_records SET expires_at = expires_at - INTERVAL 1 HOUR
    WHERE principal_id = 'alice' AND idem_key = 't75-a1'"
expect_breach "expires_at of t75-a1 an hour early" expires_at_mismatch "$lr" only
printf 'key_retention = 23h\n' | cat "$CONF" - >"$priv/23h.conf"
# Judged against the configuration: with key_retention = 23h that row is
# right and every other one is not.
other=ledger-$(lid alice t75-a2)
expect_breach "key_retention = 23h" expires_at_mismatch "$other" only "$priv/23h.conf"
n=$(psql "SELECT COUNT(*) FROM idempotency_records" | tail -n 1)
jq -e --arg id "$lr" --argjson n "$n" '.checks.expires_at_mismatch.count == $n - 1
    and (.checks.expires_at_mismatch.sample | index($id) == null)' \
    <<<"$AUDIT_JSON" >/dev/null &&
    ok "key_retention = 23h: all $((n - 1)) other rows reported, not $lr" ||
    fail "key_retention = 23h" "$AUDIT_JSON"
psql "UPDATE idempotency_records SET expires_at = expires_at + INTERVAL 1 HOUR
    WHERE principal_id = 'alice' AND idem_key = 't75-a1'"
expect_clean "expires_at of t75-a1 restored"
# After the retention job the tombstones are still consistent.
psql "UPDATE idempotency_records SET created_at = created_at - INTERVAL 2 DAY,
    expires_at = expires_at - INTERVAL 2 DAY"
if "$IDEMORDERS_BIN" expire -c "$CONF" >"$T_TMP/expire.out" 2>&1; then
	ok "expire: $(cat "$T_TMP/expire.out")"
else
	fail "expire" "$(cat "$T_TMP/expire.out")"
fi
expect_sql_value "every ledger row is a tombstone" 0 \
    "$(psql "SELECT COUNT(*) FROM idempotency_records WHERE status <> 'EXPIRED'" | tail -n 1)"
expect_clean "after the retention job"

# --- unknown status ----------------------------------------------------------
psql "INSERT INTO idempotency_records ($LEDGER_COLS) VALUES ('alice',
    'create-order', 't75-odd', REPEAT('0', 64), 'DONE', NULL, NULL, NULL,
    NULL, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6),
    UTC_TIMESTAMP(6) + INTERVAL 86400 SECOND)"
odd=ledger-$(lid alice t75-odd)
expect_breach "ledger row with status DONE" unknown_status "$odd" only
psql "DELETE FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = 't75-odd'"
expect_clean "that row deleted"

# --- a check that waits longer than db_connect_timeout -----------------------
# The checks have no read deadline (a scan of a large ledger may run for
# minutes before its first row): db_connect_timeout bounds the connect
# only.  Another session holds the orders table locked; the first check
# waits for it (seen in the process list), still waits past
# db_connect_timeout = 1s, and finishes once the session is killed.
sed 's/^db_connect_timeout = .*//' "$CONF" >"$priv/slow.conf"
echo "db_connect_timeout = 1s" >>"$priv/slow.conf"
ltag="t75-lock-$RUN_ID"
"$DEV" sql "USE $PDB; LOCK TABLES orders WRITE; SELECT SLEEP(300), '$ltag'; UNLOCK TABLES" \
    >/dev/null 2>&1 &
locker=$!
locker_conn() {
	"$DEV" sql "SELECT ID FROM information_schema.PROCESSLIST
	    WHERE INFO LIKE 'SELECT SLEEP(300), ''$ltag''%'" 2>/dev/null
}
locked() { [[ -n $(locker_conn) ]]; }
# The audit's own connection waits on the table lock.
audit_blocked() {
	[[ $("$DEV" sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST
	    WHERE DB = '$PDB' AND ID <> CONNECTION_ID() AND
	    STATE LIKE 'Waiting for table%'" 2>/dev/null) -ge 1 ]]
}
w="audit with a check longer than db_connect_timeout"
if wait_until 30 locked; then
	"$IDEMORDERS_BIN" audit -c "$priv/slow.conf" >"$T_TMP/slow.out" 2>"$T_TMP/slow.err" &
	auditor=$!
	if wait_until 30 audit_blocked; then
		ok "$w: the audit waits on the locked table"
		# The fault lasts longer than db_connect_timeout (1 s): the
		# audit is still waiting, not cut off.
		sleep 1.5
		audit_blocked && kill -0 "$auditor" 2>/dev/null &&
		    ok "$w: still waiting past db_connect_timeout = 1s" ||
		    fail "$w" "no longer waiting 1.5 s later: $(tail -n 2 "$T_TMP/slow.err" | tr '\n' ' ')"
	else
		fail "$w" "the audit never waited on the lock"
	fi
	conn=$(locker_conn)
	[[ -z $conn ]] || "$DEV" sql "KILL $conn" >/dev/null
	wait "$auditor"
	rc=$?
	if [[ $rc == 0 ]] && grep -q '^audit: clean' "$T_TMP/slow.out"; then
		ok "$w: ran clean once the lock was gone"
	else
		fail "$w" "exit $rc: $(tail -n 2 "$T_TMP/slow.err" "$T_TMP/slow.out" | tr '\n' ' ')"
	fi
else
	fail "$w" "the locking session never slept"
	kill "$locker" 2>/dev/null
fi
wait "$locker"

# --- exit 2 on errors --------------------------------------------------------
sed 's/^db_name = .*/db_name = idemorders_t75_none/' "$CONF" >"$priv/nodb.conf"
"$IDEMORDERS_BIN" audit -c "$priv/nodb.conf" >/dev/null 2>"$T_TMP/err"
rc=$?
[[ $rc == 2 ]] && grep -q 'cannot connect' "$T_TMP/err" &&
    ok "no such database: exit 2 ($(head -c 100 "$T_TMP/err"))" ||
    fail "no such database" "exit $rc: $(cat "$T_TMP/err")"
"$IDEMORDERS_BIN" audit -c "$priv/none.conf" >/dev/null 2>&1
rc=$?
[[ $rc == 2 ]] && ok "no such config: exit 2" || fail "no such config" "exit $rc"
"$IDEMORDERS_BIN" audit --bogus -c "$CONF" >/dev/null 2>&1
rc=$?
[[ $rc == 2 ]] && ok "unknown option: exit 2" || fail "unknown option" "exit $rc"
"$DEV" audit --json >/dev/null 2>&1
rc=$?
[[ $rc == 0 || $rc == 1 ]] && ok "tools/dev audit --json runs on the stack (exit $rc)" ||
    fail "tools/dev audit" "exit $rc"

stop_private
finish
