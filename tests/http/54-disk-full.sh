#!/usr/bin/env bash
# The database runs out of space.  A private MariaDB of this script, its
# InnoDB system tablespace capped (innodb_file_per_table = OFF,
# innodb_data_file_path = ibdata1:12M:autoextend:max:32M: InnoDB itself
# answers 1114 "The table ... is full" when the cap is reached, on any
# filesystem, no mount needed), behind a responder pool swapped onto it
# whose own log (stderr) is /dev/full, so that every log line fails with
# ENOSPC:
#  - a filler table takes the space, then orders with 490-byte notes are
#    created until one is refused: that one answers 503
#    DATABASE_UNAVAILABLE with Retry-After, a detail saying the database is
#    out of space, and nothing written (no order, no ledger row for its
#    key, the stock of its SKU unchanged); the same key again while the
#    space is still gone: the same 503, still nothing written;
#  - the pool keeps serving while neither the database nor its log can
#    write: health, a GET of an earlier order, a replay of an earlier key;
#    its master and workers are the ones that started (nothing exited);
#  - the filler dropped (space freed): the same key creates exactly one
#    order (through the other server), and a replay gives it back.
# The stack's own pool and database are not touched; the swapped pool is
# replaced by the stack's own at exit and the private MariaDB stopped.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"
. "$(dirname -- "$0")/../lib/dbfaults.sh"

T54_DIR=$T_TMP/mariadb
T54_CNF=$T54_DIR/my.cnf
# The pool drops to its own user: the socket must be where it can reach.
T54_SOCK=$RUNDIR/t54-mysqld.sock
T54_PIDFILE=$RUNDIR/t54-mysqld.pid
T54_ERR=$LOGDIR/t54-mariadb.err
T54_MAX_MB=32
NOTE=$(printf 'n%.0s' $(seq 490))

t54_root() {
	mariadb --defaults-file="$T54_CNF" "$@"
}

# sql "STATEMENT": the helpers' queries go to the private database.
sql() {
	t54_root -N -B idemorders -e "$1"
}

t54_stop() {
	local pid i
	pid=$(cat "$T54_PIDFILE" 2>/dev/null) || return 0
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	rm -f "$T54_PIDFILE" "$T54_SOCK"
}

cleanup() {
	pool_restore
	t54_stop
	rm -rf "$T_TMP"
}
trap cleanup EXIT

# A MariaDB of our own whose InnoDB can grow to T54_MAX_MB and no more,
# on a unix socket only (no port to share with other stacks).
t54_start() {
	local i
	mkdir -p "$T54_DIR/db"
	cat >"$T54_CNF" <<EOF
[client]
socket = $T54_SOCK
user = root

[mariadbd]
datadir = $T54_DIR/db
socket = $T54_SOCK
skip-networking
pid-file = $T54_PIDFILE
log-error = $T54_ERR
user = root
character-set-server = utf8mb4
skip-name-resolve
innodb_buffer_pool_size = 32M
innodb_log_file_size = 16M
innodb_file_per_table = OFF
innodb_data_file_path = ibdata1:12M:autoextend:max:${T54_MAX_MB}M
innodb_autoextend_increment = 1
EOF
	if ! mariadb-install-db --defaults-file="$T54_CNF" --user=root \
	    --auth-root-authentication-method=normal --skip-test-db \
	    >"$T_TMP/install.log" 2>&1; then
		fail "private MariaDB" "mariadb-install-db: $(tail -n 5 "$T_TMP/install.log" | tr '\n' ' ')"
		return 1
	fi
	: >"$T54_ERR"
	setsid mariadbd --defaults-file="$T54_CNF" </dev/null \
	    >>"$T54_ERR" 2>&1 9>&- &
	for ((i = 0; i < 300; i++)); do
		mariadb-admin --defaults-file="$T54_CNF" --connect-timeout=2 \
		    ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	if ! mariadb-admin --defaults-file="$T54_CNF" ping >/dev/null 2>&1; then
		fail "private MariaDB" "did not come up: $(tail -n 5 "$T54_ERR" | tr '\n' ' ')"
		return 1
	fi
	ok "private MariaDB on $T54_SOCK, InnoDB capped at ${T54_MAX_MB} MB"
}

# The service's database and user on it, migrated.
t54_prepare() {
	local db user pwfile pw conf=$T_TMP/migrate.conf
	db=$(sed -n 's/^[[:space:]]*db_name[[:space:]]*=[[:space:]]*//p' "$IDEMORDERS_CONF" | tail -n 1)
	user=$(sed -n 's/^[[:space:]]*db_user[[:space:]]*=[[:space:]]*//p' "$IDEMORDERS_CONF" | tail -n 1)
	pwfile=$(sed -n 's/^[[:space:]]*db_password_file[[:space:]]*=[[:space:]]*//p' "$IDEMORDERS_CONF" | tail -n 1)
	pw=$(head -n 1 "$pwfile")
	[[ $db == idemorders ]] || { fail "db_name" "expected idemorders, got $db"; return 1; }
	t54_root <<EOF || { fail "private database" "CREATE failed"; return 1; }
CREATE DATABASE \`$db\` CHARACTER SET utf8mb4;
CREATE USER '$user'@'localhost' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON \`$db\`.* TO '$user'@'localhost';
EOF
	{
		grep -vE '^[[:space:]]*(db_socket|db_host|db_port)[[:space:]]*=' "$IDEMORDERS_CONF"
		echo "db_socket = $T54_SOCK"
	} >"$conf"
	if "$IDEMORDERS_BIN" migrate -c "$conf" >"$T_TMP/migrate.log" 2>&1; then
		ok "idemorders migrate on the private database"
	else
		fail "idemorders migrate" "$(tail -n 5 "$T_TMP/migrate.log" | tr '\n' ' ')"
		return 1
	fi
}

# t54_fill: take the space with a filler table, in ever smaller chunks,
# until even one row is refused (1114).
t54_fill() {
	local n i err rows
	t54_root idemorders -e "CREATE TABLE t54_filler (id INT
	    AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(2000)) ENGINE=InnoDB" ||
	    { fail "filler" "CREATE TABLE failed"; return 1; }
	for n in 1000 100 10 1; do
		for ((i = 0; i < 200; i++)); do
			err=$(t54_root idemorders -e "INSERT INTO t54_filler
			    (pad) SELECT REPEAT('f', 1000) FROM seq_1_to_$n" 2>&1 |
			    tail -n 1) || break
		done
	done
	rows=$(sql "SELECT COUNT(*) FROM t54_filler")
	if [[ $err == *"1114"*"is full"* ]]; then
		ok "filler: $rows rows, then $err"
	else
		fail "filler" "expected 1114, the last insert said: ${err:-nothing}"
	fi
}

# body_of SKU KEY: an order of one unit with a 490-byte note.
body_of() {
	printf '{"currency":"KRW","items":[{"sku":"%s","qty":1}],"amount":1000,"note":"%s-%s"}' \
	    "$1" "$2" "${NOTE:0:$((490 - ${#2} - 1))}"
}

t54_start || finish
t54_prepare || finish
pool_swap "db_socket=$T54_SOCK" || finish
wait_healthy "on the private database"

INITIAL=1000000
new_sku SKU T54 "$INITIAL" || finish
FIRST_KEY=$(unique_key t54-first)
FIRST_BODY=$(body_of "$SKU" "$FIRST_KEY")
post_order "$LIGHTTPD_URL" "$FIRST_KEY" "$FIRST_BODY"
expect_status 201 "a create before the disk fills"
FIRST_ID=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)

# From here on the pool's own log cannot be written either.
pool_stop
if pool_start "$POOL_BIN" "$T_TMP/pool.conf" /dev/full; then
	ok "the swapped pool restarted with its log (stderr) on /dev/full"
else
	fail "pool on /dev/full" "no socket"
	finish
fi
pool_wait_full 20 || fail "pool on /dev/full" "not every worker came up"
MASTER=$(cat "$SERVE_PIDFILE")
expect_sql_value "the master's stderr" /dev/full "$(readlink "/proc/$MASTER/fd/2")"
WORKERS=$(pool_workers | sort | tr '\n' ' ')
post_order "$APACHE_URL" "$FIRST_KEY" "$FIRST_BODY"
expect_status 201 "a replay with the log on /dev/full"
expect_header idempotent-replayed true "a replay with the log on /dev/full"

t54_fill

# Creates until the database refuses one.
CREATED=0
FULL_KEY=
for ((i = 0; i < 2000; i++)); do
	key=$(unique_key "t54-$i")
	post_order "$LIGHTTPD_URL" "$key" "$(body_of "$SKU" "$key")"
	if [[ $STATUS == 201 ]]; then
		CREATED=$((CREATED + 1))
		continue
	fi
	FULL_KEY=$key
	break
done
if [[ -z $FULL_KEY ]]; then
	fail "the database filled" "$CREATED creates, none refused"
	finish
fi
ok "$CREATED creates, then one refused: $STATUS $(printf '%s' "$BODY" | jq -r .code 2>/dev/null)"
FULL_BODY=$(body_of "$SKU" "$FULL_KEY")
STOCK_BEFORE=$((INITIAL - 1 - CREATED))

expect_full_answer() {
	local what=$1 detail
	expect_503_retry "$what"
	expect_media_type application/problem+json "$what"
	expect_body_json .code DATABASE_UNAVAILABLE "$what"
	expect_header idempotency-key "$FULL_KEY" "$what"
	# The code is the contract's; the detail's wording is not, only
	# that there is one.
	detail=$(printf '%s' "$BODY" | jq -r '.detail // ""' 2>/dev/null)
	if [[ -n $detail ]]; then
		ok "$what: detail: $detail"
	else
		fail "$what: detail" "none"
	fi
	expect_nothing_committed "$FULL_KEY" "$SKU" "$STOCK_BEFORE" "$what"
}
expect_full_answer "the refused create"
grep -E "\[ERROR\].*(is full|No space|error 28)" "$T54_ERR" | tail -n 2 |
    sed 's/^/note   mariadb: /'

post_order "$APACHE_URL" "$FULL_KEY" "$FULL_BODY"
expect_full_answer "the same key while still full"

# Serving goes on: reads, replays, health.
for s in $HTTP_SERVERS; do
	req GET "$(url_of "$s")$MOUNT/_health"
	expect_status 200 "$s health while the database is full"
	req GET "$(url_of "$s")$MOUNT/$FIRST_ID" -u "$ALICE"
	expect_status 200 "$s GET of an earlier order while full"
	post_order "$(url_of "$s")" "$FIRST_KEY" "$FIRST_BODY"
	expect_status 201 "$s replay while full"
	expect_header idempotent-replayed true "$s replay while full"
done

# Space freed: the same key creates exactly one order.  InnoDB reuses
# the dropped table's pages once it has freed them, not at once: the
# client retries as told while the answer is still 503.
t54_root idemorders -e "DROP TABLE t54_filler" &&
    ok "filler dropped: space freed" || fail "filler" "DROP TABLE failed"
for ((i = 0; i < 60; i++)); do
	post_order "$APACHE_URL" "$FULL_KEY" "$FULL_BODY"
	[[ $STATUS == 503 ]] || break
	sleep 0.5
done
[[ $i -gt 0 ]] && echo "note   $i answers 503 while InnoDB freed the space"
expect_status 201 "the same key once space is freed"
oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
expect_one_order "$FULL_KEY" "$SKU" $((STOCK_BEFORE - 1)) "$oid" "once space is freed"
post_order "$LIGHTTPD_URL" "$FULL_KEY" "$FULL_BODY"
expect_status 201 "a replay of the freed key"
expect_header idempotent-replayed true "a replay of the freed key"
expect_body_json .orderId "$oid" "a replay of the freed key"

# Nothing exited: the same master, the same workers.
expect_sql_value "the pool's master" "$MASTER" "$(cat "$SERVE_PIDFILE")"
if kill -0 "$MASTER" 2>/dev/null; then
	ok "the master (pid $MASTER) runs"
else
	fail "the master" "pid $MASTER is gone"
fi
expect_sql_value "the workers" "$WORKERS" "$(pool_workers | sort | tr '\n' ' ')"
wait_healthy "after the disk-full case"

finish
