#!/usr/bin/env bash
# Backup and restore as docs/sysadmin.md's "Backup and restore" has them, on a
# MariaDB of its own with the binary log on (mariadbd on a private
# socket), with a private serve and `idemorders audit`:
#  - orders A (before the backup); the backup: mariadb-dump
#    --single-transaction --flush-logs --master-data=2 (one consistent
#    snapshot of the ledger and the orders; the binary log starts a new
#    file at its point); orders B after it;
#  - a restore to the backup's point (the dump alone): audit is clean
#    (ledger and orders agree), the A keys replay, and a B key retried
#    is not a replay: a new order (its first one is gone with the
#    restore) -- what a restore to an earlier point does to keys in
#    flight;
#  - point-in-time recovery: the dump, then the binary log since it
#    (mariadb-binlog | mariadb): every B order is back, a B key retried
#    replays the same order, audit is clean;
#  - the ledger alone restored to the earlier point (the orders not):
#    audit exits 1 and names order_without_ledger.
# About 16 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

priv=$(mktemp -d /var/tmp/idemorders-backup.XXXXXX)
chmod 0755 "$priv"
MY_PID=
cleanup() {
	stop_private
	if [[ -n $MY_PID ]]; then
		kill -TERM "$MY_PID" 2>/dev/null
		wait_until 30 sh -c "! kill -0 $MY_PID 2>/dev/null" || kill -KILL "$MY_PID" 2>/dev/null
	fi
	rm -rf "$priv" "$T_TMP"
}
trap cleanup EXIT

# --- the MariaDB, the database, the service ----------------------------------------
MYSOCK=$priv/mysqld.sock
mkdir -p "$priv/binlog"
mariadb-install-db --no-defaults --user=root --datadir="$priv/db" --auth-root-authentication-method=socket \
    --skip-test-db >"$priv/install-db.log" 2>&1 ||
    { fail "mariadb-install-db" "$(tail -n 3 "$priv/install-db.log" | tr '\n' ' ')"; finish; }
mariadbd --no-defaults --user=root --datadir="$priv/db" --socket="$MYSOCK" --skip-networking \
    --log-bin="$priv/binlog/mariadb-bin" --server-id=1 --pid-file="$priv/mysqld.pid" \
    --log-error="$priv/mysqld.err" --innodb-buffer-pool-size=32M </dev/null >/dev/null 2>&1 &
MY_PID=$!
wait_until 30 mariadb-admin --no-defaults -S "$MYSOCK" -uroot ping >/dev/null 2>&1 &&
    ok "a MariaDB of its own with the binary log on (pid $MY_PID)" ||
    { fail "mariadbd" "$(tail -n 3 "$priv/mysqld.err" | tr '\n' ' ')"; finish; }
# my: the mariadb client as root on it.
my() { mariadb --no-defaults -S "$MYSOCK" -uroot "$@"; }
pw=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
install -m 0640 -g idemorders /dev/null "$priv/db-password"
printf '%s\n' "$pw" >"$priv/db-password"
printf "CREATE DATABASE idemorders CHARACTER SET utf8mb4; CREATE USER idemorders@localhost IDENTIFIED BY '%s';
    GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, REFERENCES ON idemorders.* TO idemorders@localhost;\n" \
    "$pw" | my || { fail "database" "cannot create it"; finish; }
{
	grep -E '^(schema_dir|mount|log_level|user) ' "$IDEMORDERS_CONF"
	echo "listen = unix:$priv/sock"
	echo "workers = 2"
	echo "log = stderr"
	echo "db_socket = $MYSOCK"
	echo "db_name = idemorders"
	echo "db_user = idemorders"
	echo "db_password_file = $priv/db-password"
} >"$priv/conf"
printf 'sku,currency,unit_price,available\nBK-1,KRW,1000,1000\n' >"$priv/stock.csv"
"$IDEMORDERS_BIN" migrate -c "$priv/conf" >"$priv/migrate.log" 2>&1 &&
    "$IDEMORDERS_BIN" stock import -c "$priv/conf" "$priv/stock.csv" >>"$priv/migrate.log" 2>&1 ||
    { fail "migrate" "$(tail -n 3 "$priv/migrate.log" | tr '\n' ' ')"; finish; }
serve() { start_private "$IDEMORDERS_BIN" "$priv/conf" "$priv/sock" "$priv/serve.log"; }
serve || finish

ORDER_BODY=$(order_body BK-1 1)
# create KEY: a create on the private socket; sets STATUS, BODY_OUT, REPLAYED.
create() {
	FCGI_SOCKET=$priv/sock FCGI_NO_SECRET=1 fcgi_req -d "$ORDER_BODY" POST "$MOUNT" REMOTE_USER=alice \
	    HTTP_IDEMPOTENCY_KEY="$1" CONTENT_TYPE=application/json >/dev/null
	BODY_OUT=$(cat "$T_TMP/fcgi.body")
	REPLAYED=$(hdr idempotent-replayed)
}
# audit: `idemorders audit` on the private database; AUDIT_RC, AUDIT_OUT.
audit() {
	AUDIT_OUT=$("$IDEMORDERS_BIN" audit -c "$priv/conf" 2>&1)
	AUDIT_RC=$?
}
orders() { my -N -B idemorders -e "SELECT COUNT(*) FROM orders"; }

declare -A FIRST
for k in a-1 a-2 a-3; do
	create "bk-$k"
	FIRST[$k]=$BODY_OUT
	[[ $STATUS == 201 ]] || fail "order $k" "status $STATUS"
done
ok "orders A (3) before the backup"

# --- the backup --------------------------------------------------------------------
if my_dump=$(mariadb-dump --no-defaults -S "$MYSOCK" -uroot --single-transaction --flush-logs \
    --master-data=2 --databases idemorders 2>"$priv/dump.err" >"$priv/backup.sql"; echo $?) &&
    [[ $my_dump == 0 ]]; then
	ok "mariadb-dump --single-transaction --flush-logs --master-data=2: $(wc -c <"$priv/backup.sql") bytes"
else
	fail "mariadb-dump" "$(cat "$priv/dump.err")"
	finish
fi
# Where the binary log goes on from (the dump's own comment).
pos=$(sed -nE "s/^-- CHANGE MASTER TO MASTER_LOG_FILE='([^']+)', MASTER_LOG_POS=([0-9]+);/\1 \2/p" "$priv/backup.sql")
[[ -n $pos ]] && ok "the dump names its binary log position: $pos" || fail "dump" "no CHANGE MASTER comment"
# The ledger alone, as a careless partial backup would have it.
mariadb-dump --no-defaults -S "$MYSOCK" -uroot --single-transaction idemorders idempotency_records \
    >"$priv/ledger-only.sql"

for k in b-1 b-2; do
	create "bk-$k"
	FIRST[$k]=$BODY_OUT
	[[ $STATUS == 201 ]] || fail "order $k" "status $STATUS"
done
ok "orders B (2) after the backup"
n_all=$(orders)
my -e "FLUSH BINARY LOGS"
binlogs=$(my -N -B -e "SHOW BINARY LOGS" | awk -v f="${pos% *}" '$1 >= f { print $1 }' | head -n -1)

# restore [PITR]: stop serve, drop the database, load the dump (and with
# PITR the binary logs since it), start serve.
restore() {
	local f files=()
	stop_private
	my -e "DROP DATABASE idemorders" && my <"$priv/backup.sql" || return 1
	if [[ -n ${1:-} ]]; then
		for f in $binlogs; do files+=("$priv/binlog/$f"); done
		mariadb-binlog --no-defaults --start-position="${pos#* }" "${files[@]}" | my || return 1
	fi
	serve
}

# --- a restore to the backup's point ---------------------------------------------------
restore && ok "restored the dump alone (the backup's point)" || fail "restore" "failed"
expect_sql_value "orders after the restore: A only" 3 "$(orders)"
audit
[[ $AUDIT_RC == 0 ]] && ok "audit after the restore: clean (ledger and orders agree)" ||
    fail "audit after the restore" "exit $AUDIT_RC: $AUDIT_OUT"
create bk-a-1
[[ $STATUS == 201 && $REPLAYED == true && $BODY_OUT == "${FIRST[a-1]}" ]] &&
    ok "a key from before the backup: the same order replayed" ||
    fail "A replay" "$STATUS replayed=$REPLAYED $BODY_OUT"
create bk-b-1
[[ $STATUS == 201 && $REPLAYED != true ]] &&
    ok "a key from after the backup, retried: not a replay, a new order ($(jq -r .orderId <<<"$BODY_OUT"); first it was $(jq -r .orderId <<<"${FIRST[b-1]}"))" ||
    fail "B retry after the restore" "$STATUS replayed=$REPLAYED $BODY_OUT"

# --- point-in-time recovery -------------------------------------------------------------
restore pitr && ok "restored the dump, then the binary log since it ($binlogs)" ||
    fail "point-in-time recovery" "failed"
expect_sql_value "orders after the recovery: A and B" "$n_all" "$(orders)"
audit
[[ $AUDIT_RC == 0 ]] && ok "audit after the recovery: clean" ||
    fail "audit after the recovery" "exit $AUDIT_RC: $AUDIT_OUT"
create bk-b-1
[[ $STATUS == 201 && $REPLAYED == true && $BODY_OUT == "${FIRST[b-1]}" ]] &&
    ok "a key from after the backup, retried: the same order replayed" ||
    fail "B replay after the recovery" "$STATUS replayed=$REPLAYED $BODY_OUT (first: ${FIRST[b-1]})"

# --- the ledger alone at the earlier point -----------------------------------------------
stop_private
my idemorders <"$priv/ledger-only.sql"
audit
[[ $AUDIT_RC == 1 && $AUDIT_OUT == *order_without_ledger* ]] &&
    ok "the ledger alone restored to the backup: audit exit 1, $(grep -m1 -o 'order_without_ledger[^,;]*' <<<"$AUDIT_OUT")" ||
    fail "audit, ledger alone restored" "exit $AUDIT_RC: $AUDIT_OUT"

finish
