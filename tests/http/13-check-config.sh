#!/usr/bin/env bash
# `idemorders check-config` says what is wrong with the database
# settings, in the server's own words: the stack's configuration passes;
# a wrong password names the refusal (1045, "Access denied"); a port
# where nothing listens names the failed connect.  Each exits 1 and
# prints the configuration's path with the reason.  Then the command
# line of every command: a usage or configuration error exits 2 with a
# message naming it, -h prints the command's own usage and exits 0.
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
		echo "db_socket = $RUNDIR/db/mysqld.sock"
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
# --- who may connect and what a request can claim: refused by check-config
# as by serve, with the line and what to do -------------------------------

# refused NAME WANT FILE: check-config of FILE exits 2 printing WANT.
refused() {
	local out rc
	out=$(timeout 20 "$IDEMORDERS_BIN" check-config -c "$3" 2>&1)
	rc=$?
	[[ $rc == 2 && $out =~ $2 ]] && ok "check-config refuses $1: $(head -c 200 <<<"$out")" ||
	    fail "check-config: $1" "exit $rc (want 2 and /$2/): $(head -c 300 <<<"$out")"
}

conf_with "$T_TMP/tcp.conf" "db_password=x" "listen=127.0.0.1:9000"
grep -v '^frontend_secret_file' "$T_TMP/tcp.conf" >"$T_TMP/tcp-nosecret.conf"
line=$(grep -n '^listen = 127' "$T_TMP/tcp-nosecret.conf" | cut -d: -f1)
refused "a loopback TCP listen without frontend_secret_file" \
    "tcp-nosecret.conf:$line: listen = 127.0.0.1:9000 is a TCP socket: every local user can connect to it.*set frontend_secret_file" \
    "$T_TMP/tcp-nosecret.conf"
conf_with "$T_TMP/pvar.conf" "principal_var=PATH_INFO"
refused "principal_var = PATH_INFO" "principal_var may not be PATH_INFO" "$T_TMP/pvar.conf"
conf_with "$T_TMP/svar.conf" "frontend_secret_var=SERVER_NAME"
refused "frontend_secret_var = SERVER_NAME" "frontend_secret_var may not be SERVER_NAME" "$T_TMP/svar.conf"
printf 'short\n' >"$T_TMP/short.secret"
chmod 0600 "$T_TMP/short.secret"
conf_with "$T_TMP/weak.conf" "frontend_secret_file=$T_TMP/short.secret"
refused "a 5-character frontend secret" "short.secret has 5 characters; it needs at least 32" "$T_TMP/weak.conf"

# The relay's endpoint and its Standard Webhooks secret.
echo "whsec_$(head -c 16 /dev/urandom | base64)" >"$T_TMP/short.whsec"
echo "$(head -c 32 /dev/urandom | base64)" >"$T_TMP/bare.whsec"
chmod 0600 "$T_TMP/short.whsec" "$T_TMP/bare.whsec"
conf_with "$T_TMP/wh-short.conf" "webhook_secret_file=$T_TMP/short.whsec"
refused "a 16-byte webhook secret" "short.whsec: the webhook secret is too short: 16 bytes once decoded, at least 24" "$T_TMP/wh-short.conf"
conf_with "$T_TMP/wh-bare.conf" "webhook_secret_file=$T_TMP/bare.whsec"
refused "a webhook secret without whsec_" 'bare.whsec: a webhook secret begins with "whsec_"' "$T_TMP/wh-bare.conf"
conf_with "$T_TMP/wh-url.conf" "webhook_url=ftp://127.0.0.1/hook"
refused "webhook_url = ftp://..." "webhook_url must be an http:// or https:// URL" "$T_TMP/wh-url.conf"
conf_with "$T_TMP/wh-nosecret.conf"
sed -i '/^webhook_secret_file/d' "$T_TMP/wh-nosecret.conf"
refused "webhook_url without webhook_secret_file" "webhook_url and webhook_secret_file go together" "$T_TMP/wh-nosecret.conf"
conf_with "$T_TMP/wh-none.conf" "db_password=x"
sed -i '/^webhook_/d' "$T_TMP/wh-none.conf"
out=$(timeout 10 "$IDEMORDERS_BIN" relay -c "$T_TMP/wh-none.conf" 2>&1 </dev/null)
rc=$?
[[ $rc == 2 && $out == *"sets no webhook_url"* ]] && ok "relay without webhook_url: exit 2, $out" ||
    fail "relay without webhook_url" "exit $rc: $out"

# --- the command line: 2 for a usage or configuration error --------------

# cli NAME WANT_RC WANT_TEXT ARGS...: run idemorders ARGS (at most 10 s,
# stdin closed) and expect its exit status and WANT_TEXT in its output.
cli() {
	local name=$1 want_rc=$2 want=$3 out rc
	shift 3
	out=$(timeout 10 "$IDEMORDERS_BIN" "$@" </dev/null 2>&1)
	rc=$?
	[[ $rc == "$want_rc" && $out == *"$want"* ]] &&
	    ok "$name: exit $rc, \"$want\"" ||
	    fail "$name" "exit $rc (want $want_rc and \"$want\"): $(head -c 300 <<<"$out")"
}

cli "an unknown command" 2 'unknown command "frobnicate"' frobnicate
cli "no command" 2 'usage: idemorders COMMAND'
cli "migrate --json" 2 'idemorders migrate: unknown option --json' \
    migrate --json -c "$IDEMORDERS_CONF"
cli "serve --batch 5" 2 'idemorders serve: unknown option --batch' \
    serve --batch 5 -c "$IDEMORDERS_CONF"
cli "check-config --dry-run" 2 'idemorders check-config: unknown option --dry-run' \
    check-config --dry-run -c "$IDEMORDERS_CONF"
cli "expire --batch 0" 2 'idemorders expire: --batch must be from 1 to 1000000' \
    expire --batch 0 -c "$IDEMORDERS_CONF"
cli "expire --pause 2m" 2 'idemorders expire: --pause must be a duration from 0 to 60s (e.g. 200ms)' \
    expire --pause 2m -c "$IDEMORDERS_CONF"
cli "expire --pause 5" 2 'idemorders expire: --pause must be a duration from 0 to 60s (e.g. 200ms)' \
    expire --pause 5 -c "$IDEMORDERS_CONF"
cli "expire -c without its file" 2 'idemorders expire: option -c needs an argument' \
    expire -c
cli "stock frob" 2 'usage: idemorders stock' stock frob -c "$IDEMORDERS_CONF"
cli "stock set with 3 values" 2 'usage: idemorders stock' \
    stock set -c "$IDEMORDERS_CONF" T13 KRW 100
cli "a stray argument to migrate" 2 'idemorders migrate: unexpected argument "now"' \
    migrate now -c "$IDEMORDERS_CONF"

out=$("$IDEMORDERS_BIN" audit -h 2>/dev/null)
rc=$?
[[ $rc == 0 && $out == "usage: idemorders audit "* && $out != *expire* ]] &&
    ok "audit -h: exit 0, audit's usage only" ||
    fail "audit -h" "exit $rc: $(head -c 300 <<<"$out")"
out=$("$IDEMORDERS_BIN" expire --help 2>/dev/null)
rc=$?
[[ $rc == 0 && $out == "usage: idemorders expire "* && $out == *--dry-run* &&
    $out != *audit* ]] &&
    ok "expire --help: exit 0, expire's usage only" ||
    fail "expire --help" "exit $rc: $(head -c 300 <<<"$out")"
out=$("$IDEMORDERS_BIN" --help 2>/dev/null)
rc=$?
[[ $rc == 0 && $out == *check-config* && $out == *"stock import"* ]] &&
    ok "--help: exit 0, every command" || fail "--help" "exit $rc: $(head -c 300 <<<"$out")"
cli "-V" 0 "idemorders " -V

for c in serve migrate check-config expire audit "stock list"; do
	# shellcheck disable=SC2086 # "stock list" is two words
	cli "$c without its config file" 2 "$T_TMP/none.conf" \
	    $c -c "$T_TMP/none.conf"
done
cli "the global -c before the command" 0 "configuration OK, database reachable" \
    -c "$IDEMORDERS_CONF" check-config
finish
