#!/usr/bin/env bash
# `idemorders check-config` says what is wrong with the database
# settings, in the server's own words: the stack's configuration passes;
# a wrong password names the refusal (1045, "Access denied"); a port
# where nothing listens names the failed connect.  Each exits 1 and
# prints the configuration's path with the reason.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

trap 'rm -rf "$T_TMP"' EXIT

# conf_with FILE KEY=VALUE...: the stack's configuration without its
# database password and address settings, then these lines.
conf_with() {
	local out=$1 kv
	shift
	{
		grep -vE '^[[:space:]]*(db_password|db_password_file|db_socket|db_host|db_port)[[:space:]]*=' "$IDEMORDERS_CONF"
		echo "db_socket = $RUNDIR/mysqld.sock"
		for kv in "$@"; do
			echo "${kv%%=*} = ${kv#*=}"
		done
	} >"$out"
}

out=$("$IDEMORDERS_BIN" check-config -c "$IDEMORDERS_CONF" 2>&1)
rc=$?
[[ $rc == 0 && $out == *"configuration OK, database reachable"* ]] &&
    ok "the stack's configuration: OK" || fail "check-config" "exit $rc: $out"

printf 'not-the-password\n' >"$T_TMP/wrong-password"
chmod 0600 "$T_TMP/wrong-password"
conf_with "$T_TMP/wrong.conf" "db_password_file=$T_TMP/wrong-password"
out=$(timeout 20 "$IDEMORDERS_BIN" check-config -c "$T_TMP/wrong.conf" 2>&1)
rc=$?
[[ $rc == 1 ]] && ok "wrong password: exit 1" || fail "wrong password: exit" "exit $rc: $out"
[[ $out == *"wrong.conf: database: Access denied for user"*"(1045)"* ]] &&
    ok "wrong password: the server's refusal and its number" ||
    fail "wrong password: message" "printed '$out'"

conf_with "$T_TMP/closed.conf" "db_password=x"
sed -i '/^db_socket/d' "$T_TMP/closed.conf"
echo "db_host = 127.0.0.1" >>"$T_TMP/closed.conf"
echo "db_port = 9" >>"$T_TMP/closed.conf"
out=$(timeout 20 "$IDEMORDERS_BIN" check-config -c "$T_TMP/closed.conf" 2>&1)
rc=$?
[[ $rc == 1 ]] && ok "nothing listening: exit 1" || fail "nothing listening: exit" "exit $rc: $out"
[[ $out == *"database: Can't connect"*"(2002)"* ]] &&
    ok "nothing listening: the failed connect and its number" ||
    fail "nothing listening: message" "printed '$out'"
finish
