#!/usr/bin/env bash
# Rotating the service's own database password (db_password_file) with
# idemorders-db-password, the tool the package installs
# (debian/idemorders-db-password), under load, without a failed request:
#  - a private serve logs in as an account of its own on the stack's
#    MariaDB (idemorders_rot@localhost), its password in a file;
#  - four loaders create orders through its socket throughout;
#  - begin: the file holds a new password, the account accepts both; a
#    worker killed now is respawned by the master with the password it
#    loaded (the old one) and still logs in; SIGHUP (systemctl reload
#    idemorders): new workers with the new one;
#  - end: the account accepts the new password only (a login with the old
#    one is refused, with the new one accepted); a reload after it serves;
#  - every create answered 201 and the database holds exactly those
#    orders; a second end, or a begin while one is under way, is refused.
# About 80 s on two busy cores (the loaders must answer at each step).
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

TOOL=$REPO/debian/idemorders-db-password
# The tool runs idemorders check-config: the stack's binary.
PATH=$(dirname -- "$IDEMORDERS_BIN"):$PATH
MYCNF=$REPO/var/$IDEMORDERS_STACK/my.cnf
ACC=idemorders_rot
priv=$(mktemp -d /tmp/idemorders-dbpw.XXXXXX)
chmod 0755 "$priv"
LOAD_PIDS=()
cleanup() {
	local p
	touch "$priv/load.stop"
	for p in "${LOAD_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	stop_private
	mariadb --defaults-file="$MYCNF" -e "DROP USER IF EXISTS $ACC@localhost" >/dev/null 2>&1
	rm -rf "$priv" "$T_TMP"
}
trap cleanup EXIT

# The account, its first password in the file, its grants on the stack's
# database; a config of the stack's database settings for it.
pw0=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
install -m 0640 -g idemorders /dev/null "$priv/db-password"
printf '%s\n' "$pw0" >"$priv/db-password"
db=$(sed -n 's/^db_name = //p' "$IDEMORDERS_CONF")
printf "DROP USER IF EXISTS %s@localhost; CREATE USER %s@localhost IDENTIFIED BY '%s';
    GRANT SELECT, INSERT, UPDATE, DELETE ON \`%s\`.* TO %s@localhost;\n" \
    "$ACC" "$ACC" "$pw0" "$db" "$ACC" | mariadb --defaults-file="$MYCNF" ||
    { fail "account" "cannot create $ACC@localhost"; finish; }
{
	grep -E '^(db_socket|db_name|schema_dir|mount|log_level|user) ' "$IDEMORDERS_CONF"
	echo "listen = unix:$priv/sock"
	echo "workers = 3"
	echo "log = stderr"
	echo "db_user = $ACC"
	echo "db_password_file = $priv/db-password"
} >"$priv/conf"
start_private "$IDEMORDERS_BIN" "$priv/conf" "$priv/sock" "$priv/serve.log" || finish

new_sku SKU DBPW 100000 || finish
ORDER_BODY=$(order_body "$SKU" 1)
# create KEY: one create on the private socket; its status.
create() {
	FCGI_SOCKET=$priv/sock FCGI_NO_SECRET=1 fcgi_req -d "$ORDER_BODY" POST "$MOUNT" REMOTE_USER=alice \
	    HTTP_IDEMPOTENCY_KEY="$1" CONTENT_TYPE=application/json >/dev/null
	printf '%s' "$STATUS"
}
st=$(create "dbpw-$RUN_TAG-first")
[[ $st == 201 ]] && ok "a private serve logged in as $ACC@localhost: 201" || fail "private serve" "status $st"

# login PASSWORD: can the account log in with PASSWORD (through an option
# file, never a command line)?
login() {
	{ echo "[client]"; echo "user = $ACC"; echo "password = $1"
	    sed -n 's/^db_socket = /socket = /p' "$IDEMORDERS_CONF"; } >"$priv/login.cnf"
	mariadb --defaults-file="$priv/login.cnf" -N -B -e 'SELECT 1' >/dev/null 2>&1
}

# --- under load ------------------------------------------------------------------
LOADERS=4
for ((n = 0; n < LOADERS; n++)); do
	(
		T_TMP=$priv/loader.$n
		HEADERS=$T_TMP/headers
		mkdir -p "$T_TMP"
		i=0
		while [[ ! -e $priv/load.stop ]]; do
			i=$((i + 1))
			echo "$(create "dbpw-$RUN_TAG-$n-$i") dbpw-$RUN_TAG-$n-$i"
		done
	) >"$priv/load.$n.out" 2>&1 &
	LOAD_PIDS+=("$!")
done
# wait_answers N: until the loaders have N more answers than now.
answers() { cat "$priv"/load.*.out 2>/dev/null | wc -l; }
have_answers() { [[ $(answers) -ge $1 ]]; }
wait_answers() {
	wait_until 30 have_answers $(($(answers) + $1))
}
wait_answers 20 || fail "load" "the loaders get no answers"

if "$TOOL" -c "$priv/conf" --admin-defaults "$MYCNF" begin >"$priv/begin.out" 2>&1; then
	ok "begin: $(head -n 1 "$priv/begin.out")"
else
	fail "begin" "$(cat "$priv/begin.out")"
fi
pw1=$(head -n 1 "$priv/db-password")
[[ $pw1 != "$pw0" && ${#pw1} -ge 32 ]] && ok "begin: the file holds a new password (${#pw1} characters)" ||
    fail "begin: the file" "${#pw1} characters, $([[ $pw1 == "$pw0" ]] && echo unchanged)"
[[ $(stat -c %a "$priv/db-password") == 640 ]] && ok "begin: the file keeps its mode (0640)" ||
    fail "begin: the file's mode" "$(stat -c %a "$priv/db-password")"
login "$pw0" && login "$pw1" && ok "begin: the account accepts the old and the new password" ||
    fail "begin" "old: $(login "$pw0" && echo accepted || echo refused), new: $(login "$pw1" && echo accepted || echo refused)"
"$TOOL" -c "$priv/conf" --admin-defaults "$MYCNF" begin >"$priv/begin2.out" 2>&1 &&
    fail "a second begin" "accepted" ||
    { grep -q 'rotation is under way' "$priv/begin2.out" && ok "a second begin is refused: $(cat "$priv/begin2.out")" ||
    fail "a second begin" "$(cat "$priv/begin2.out")"; }

# A worker that dies now is respawned with the configuration the master
# loaded: the old password, which still logs in.
w=$(pgrep -P "$PRIV_PID" | head -n 1)
kill -KILL "$w"
wait_until 10 sh -c "[ \$(pgrep -P $PRIV_PID | wc -l) -ge 3 ] && ! kill -0 $w 2>/dev/null" &&
    ok "a worker killed between begin and the reload: respawned (old password)" ||
    fail "respawn" "$(pgrep -P "$PRIV_PID" | tr '\n' ' ')"
wait_answers 20 || fail "load after the respawn" "no answers"

kill -HUP "$PRIV_PID"
wait_until 15 grep -q 'configuration reloaded' "$priv/serve.log" &&
    ok "SIGHUP (systemctl reload idemorders): $(grep -m1 -o 'configuration reloaded.*' "$priv/serve.log")" ||
    fail "reload" "$(tail -n 3 "$priv/serve.log" | tr '\n' ' ')"
wait_answers 20 || fail "load after the reload" "no answers"

if "$TOOL" -c "$priv/conf" --admin-defaults "$MYCNF" end >"$priv/end.out" 2>&1; then
	ok "end: $(cat "$priv/end.out")"
else
	fail "end" "$(cat "$priv/end.out")"
fi
! login "$pw0" && login "$pw1" && ok "end: the old password is refused, the new one accepted" ||
    fail "end" "old: $(login "$pw0" && echo accepted || echo refused), new: $(login "$pw1" && echo accepted || echo refused)"
[[ ! -e $priv/db-password.old ]] && ok "end: no copy of the old password left" || fail "end" "db-password.old left"
"$TOOL" -c "$priv/conf" --admin-defaults "$MYCNF" end >"$priv/end2.out" 2>&1 &&
    fail "a second end" "accepted" ||
    { grep -q 'no rotation under way' "$priv/end2.out" && ok "a second end is refused: $(cat "$priv/end2.out")" ||
    fail "a second end" "$(cat "$priv/end2.out")"; }
wait_answers 20 || fail "load after end" "no answers"
# Every worker logs in again: a reload after the end.
n0=$(grep -c 'configuration reloaded' "$priv/serve.log")
kill -HUP "$PRIV_PID"
wait_until 15 sh -c "[ \$(grep -c 'configuration reloaded' '$priv/serve.log') -gt $n0 ]" ||
    fail "second reload" "$(tail -n 3 "$priv/serve.log" | tr '\n' ' ')"
wait_answers 20 || fail "load after the second reload" "no answers"

touch "$priv/load.stop"
for p in "${LOAD_PIDS[@]}"; do wait "$p" 2>/dev/null; done
LOAD_PIDS=()
total=$(cat "$priv"/load.*.out | wc -l)
bad=$(cat "$priv"/load.*.out | grep -vc '^201 ')
[[ $total -gt 0 && $bad -eq 0 ]] && ok "under load: $total creates, all 201" ||
    fail "under load" "$bad of $total not 201: $(grep -hv '^201 ' "$priv"/load.*.out | cut -d' ' -f1 | sort | uniq -c | tr '\n' ' ')"
expect_sql_value "the orders of the run in the database" "$((total - bad + 1))" \
    "$(sql "SELECT COUNT(*) FROM orders WHERE idempotency_key LIKE 'dbpw-$RUN_TAG-%'")"
st=$(create "dbpw-$RUN_TAG-last")
[[ $st == 201 ]] && ok "after the rotation: 201" || fail "after the rotation" "status $st"
grep -qi 'access denied' "$priv/serve.log" && fail "serve's log" "$(grep -i -m1 'access denied' "$priv/serve.log")" ||
    ok "serve's log: no access denied"

finish
