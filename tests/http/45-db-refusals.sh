#!/usr/bin/env bash
# The database refuses a statement: each must give the application's 5xx
# (problem+json; 503 with Retry-After where retrying helps), leave nothing
# half-written, and let the same key create exactly one order once the
# fault is lifted:
#  - each table's write privilege revoked in turn (idempotency_records
#    INSERT, then UPDATE; orders INSERT; order_items INSERT; stock
#    UPDATE): table grants instead of the database grant, one privilege
#    taken away, FLUSH PRIVILEGES, and the pool reloaded (SIGHUP) so that
#    its workers prepare afresh;
#  - prepares refused server-wide: max_prepared_stmt_count = 0 (1461):
#    the 5xx with nothing written, or, when the create needs no
#    server-side prepare, 201 with everything written;
#  - a read-only server: read_only = ON (1290): 503 with Retry-After,
#    while a finished key still replays;
#  - too many connections: max_connections = 10, every slot taken
#    (1040): 503 with Retry-After.
# Every global setting and grant is restored on exit, from a root session
# opened at the start (so that max_connections cannot lock it out).
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"
. "$(dirname -- "$0")/../lib/dbfaults.sh"

APP_HOSTS="localhost 127.0.0.1"
DB=$(sed -n 's/^[[:space:]]*db_name[[:space:]]*=[[:space:]]*//p' "$IDEMORDERS_CONF" | tail -n 1)
DBU=$(sed -n 's/^[[:space:]]*db_user[[:space:]]*=[[:space:]]*//p' "$IDEMORDERS_CONF" | tail -n 1)
TABLES=$(sql "SHOW TABLES")

# A root session kept open for the whole script: root_exec "SQL;" runs
# statements on it and waits for them.
mkfifo "$T_TMP/root.in"
mariadb --defaults-file="$REPO/var/$IDEMORDERS_STACK/my.cnf" -N -B --unbuffered --force \
    <"$T_TMP/root.in" >"$T_TMP/root.out" 2>&1 &
ROOT_PID=$!
exec 8>"$T_TMP/root.in"
SYNC=0
root_exec() {
	local i
	SYNC=$((SYNC + 1))
	printf '%s\nSELECT "sync-%d";\n' "$1" "$SYNC" >&8
	for ((i = 0; i < 300; i++)); do
		grep -q "^sync-$SYNC\$" "$T_TMP/root.out" && return 0
		kill -0 "$ROOT_PID" 2>/dev/null || break
		sleep 0.1
	done
	fail "root session" "no answer to: $1 ($(tail -n 3 "$T_TMP/root.out" | tr '\n' ' '))"
	return 1
}

ORIG_PREP=$(db_root_sql "SELECT @@GLOBAL.max_prepared_stmt_count")
ORIG_MAXCONN=$(db_root_sql "SELECT @@GLOBAL.max_connections")

# The grants as they were: ALL on the database, nothing per table.
grants_restore() {
	local h t s=
	for h in $APP_HOSTS; do
		for t in $TABLES; do
			s+="REVOKE ALL PRIVILEGES ON \`$DB\`.\`$t\` FROM '$DBU'@'$h';"$'\n'
		done
	done
	# A REVOKE of a grant that is not there fails; the session goes on
	# (--force).
	root_exec "$s"
	s=
	for h in $APP_HOSTS; do
		s+="GRANT ALL PRIVILEGES ON \`$DB\`.* TO '$DBU'@'$h';"$'\n'
	done
	root_exec "${s}FLUSH PRIVILEGES;"
}

settings_restore() {
	root_exec "SET GLOBAL read_only = OFF;
SET GLOBAL max_prepared_stmt_count = $ORIG_PREP;
SET GLOBAL max_connections = $ORIG_MAXCONN;"
}

cleanup() {
	local p
	for p in "${FILLERS[@]}"; do
		kill "$p" 2>/dev/null
	done
	settings_restore
	grants_restore
	root_exec "DROP USER IF EXISTS 't45filler'@'localhost';"
	pool_reload
	exec 8>&-
	wait "$ROOT_PID" 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT

# pool_reload: SIGHUP the pool and wait until every old worker is gone.
pool_reload() {
	local m old p i alive
	m=$(cat "$SERVE_PIDFILE" 2>/dev/null) || return 1
	old=$(pool_workers)
	kill -HUP "$m" 2>/dev/null || return 1
	for ((i = 0; i < 150; i++)); do
		alive=0
		for p in $old; do
			kill -0 "$p" 2>/dev/null &&
			    [[ $(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null) != Z ]] &&
			    alive=1
		done
		[[ $alive == 0 ]] && break
		sleep 0.1
	done
	pool_wait_full 20
	sleep 0.3
}

# revoke_one PRIV TABLE: table grants for every table, PRIV taken from TABLE.
revoke_one() {
	local h t s=
	for h in $APP_HOSTS; do
		s+="REVOKE ALL PRIVILEGES ON \`$DB\`.* FROM '$DBU'@'$h';"$'\n'
		for t in $TABLES; do
			s+="GRANT SELECT, INSERT, UPDATE, DELETE ON \`$DB\`.\`$t\` TO '$DBU'@'$h';"$'\n'
		done
		s+="REVOKE $1 ON \`$DB\`.\`$2\` FROM '$DBU'@'$h';"$'\n'
	done
	root_exec "${s}FLUSH PRIVILEGES;"
}

# expect_app_5xx WHAT [503]: the application's own 5xx (problem+json);
# with 503: exactly 503 with Retry-After.
expect_app_5xx() {
	if [[ ${2:-} == 503 ]]; then
		expect_status 503 "$1"
		[[ -n $(hdr retry-after) ]] && ok "$1: Retry-After $(hdr retry-after)" ||
		    fail "$1: Retry-After" "missing"
	elif [[ $STATUS == 5?? ]]; then
		ok "$1: status $STATUS"
	else
		fail "$1: status" "expected 5xx, got $STATUS"
	fi
	expect_media_type application/problem+json "$1"
}

# fault_case WHAT SERVER APPLY LIFT [503|any]: APPLY, reload the pool,
# POST a new key: the application's 5xx, nothing written (any: or 201
# with the order, its ledger row and the stock change all committed);
# LIFT, reload, the same key: 201 and exactly one order.
fault_case() {
	local what=$1 url apply=$3 lift=$4 want=${5:-} sku key body oid
	url=$(url_of "$2")
	what="$2 $what"
	new_sku sku T45 50
	key=$(unique_key "t45-$2")
	body=$(order_body "$sku" 2)
	if [[ ${AFTER_RELOAD:-0} == 1 ]]; then
		pool_reload
		$apply
	else
		$apply
		pool_reload
	fi
	post_order "$url" "$key" "$body"
	if [[ $want == any && $STATUS == 201 ]]; then
		# Served without the refused feature: then it is all there.
		oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
		ok "$what: 201 $oid (the create needs no server-side prepare)"
		$lift
		expect_one_order "$key" "$sku" 48 "$oid" "$what"
	else
		[[ $want == any ]] && want=
		expect_app_5xx "$what" "$want"
		$lift
		expect_nothing_committed "$key" "$sku" 50 "$what"
	fi
	pool_reload
	post_order "$url" "$key" "$body"
	expect_status 201 "$what: the same key once lifted"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	expect_one_order "$key" "$sku" 48 "$oid" "$what: once lifted"
}

lift_grants() { grants_restore; }
lift_settings() { settings_restore; }

s=lighttpd
for pt in "INSERT idempotency_records" "UPDATE idempotency_records" \
    "INSERT orders" "INSERT order_items" "UPDATE stock"; do
	priv=${pt%% *} table=${pt#* }
	apply_revoke() { revoke_one "$priv" "$table"; }
	fault_case "$priv on $table revoked" "$s" apply_revoke lift_grants
	[[ $s == lighttpd ]] && s=apache || s=lighttpd
done

apply_prep() { root_exec "SET GLOBAL max_prepared_stmt_count = 0;"; }
fault_case "max_prepared_stmt_count = 0" lighttpd apply_prep lift_settings any

apply_ro() { root_exec "SET GLOBAL read_only = ON;"; }
fault_case "read_only = ON" apache apply_ro lift_settings 503

# A finished key replays while nothing can be written: the row read in
# the claim's round trip answers, whatever refused the INSERT.
w="apache read_only = ON, a replay"
new_sku sku T45-ro 50
key=$(unique_key t45-ro-replay)
body=$(order_body "$sku" 2)
post_order "$APACHE_URL" "$key" "$body"
expect_status 201 "$w: the order before"
oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
apply_ro
pool_reload
post_order "$APACHE_URL" "$key" "$body"
expect_status 201 "$w"
expect_header idempotent-replayed true "$w"
expect_body_json .orderId "$oid" "$w"
lift_settings
pool_reload
expect_one_order "$key" "$sku" 48 "$oid" "$w"

# Too many connections: max_connections at its minimum (10), every slot
# taken by sessions of a user of no privileges, then the pool's
# connections killed, so that its workers must connect again.
FILLERS=()
fill_slots() {
	local i p
	for ((i = 0; i < 40; i++)); do
		mariadb --defaults-file="$REPO/var/$IDEMORDERS_STACK/my.cnf" \
		    -u t45filler -N -B -e "SELECT SLEEP(120)" >/dev/null 2>&1 &
		p=$!
		sleep 0.2
		if ! kill -0 "$p" 2>/dev/null; then
			return 0	# refused: every slot is taken
		fi
		FILLERS+=("$p")
	done
	return 1
}
apply_maxconn() {
	local ids
	root_exec "CREATE USER IF NOT EXISTS 't45filler'@'localhost';
SET GLOBAL max_connections = 10;"
	if ! fill_slots; then
		fail "max_connections" "could not take every slot"
		return 1
	fi
	ids=$(db_root_sql "SELECT id FROM information_schema.PROCESSLIST
	    WHERE user = '$DBU'")
	for id in $ids; do
		root_exec "KILL CONNECTION $id;"
	done
	if ! fill_slots; then
		fail "max_connections" "could not take the freed slots"
		return 1
	fi
	ok "max_connections = 10, ${#FILLERS[@]} sessions hold every slot"
}
lift_maxconn() {
	local p
	settings_restore
	for p in "${FILLERS[@]}"; do
		kill "$p" 2>/dev/null
	done
	FILLERS=()
}
AFTER_RELOAD=1 fault_case "max_connections reached" lighttpd apply_maxconn lift_maxconn 503

wait_healthy "after the refusals"
finish
