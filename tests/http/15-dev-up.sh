#!/usr/bin/env bash
# `tools/dev up` converges on the stack it describes: run on a stack
# whose responder config was edited behind its back and reloaded (the
# pool now reads a database that is not there: health 503), it writes
# its config again and the pool serves that one (health 200), without a
# manual SIGHUP.  Run on a stack that is whole, it restarts nothing.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

master() { cat "$SERVE_PIDFILE"; }
health() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
	    "$LIGHTTPD_URL$MOUNT/_health"
}
# wait_health CODE: health answers CODE within 10 s.
wait_health() { wait_until 10 eval '[[ $(health) == '"$1"' ]]'; }

pid0=$(master)
saved=$T_TMP/idemorders.conf
cp -p "$IDEMORDERS_CONF" "$saved"
restore() {
	cmp -s "$saved" "$IDEMORDERS_CONF" || cp -p "$saved" "$IDEMORDERS_CONF"
	if [[ $(health) != 200 ]]; then
		kill -HUP "$(master)" 2>/dev/null
		wait_health 200
	fi
	rm -rf "$T_TMP"
}
trap restore EXIT

# 1. Nothing changed: up restarts nothing and says nothing of the pool.
rc=0
"$DEV" up >"$T_TMP/up0.out" 2>&1 || rc=$?
[[ $rc == 0 ]] && ok "up on a whole stack: exit status 0" ||
    fail "up on a whole stack: exit status" "$rc: $(tail -n 5 "$T_TMP/up0.out")"
[[ $(master) == "$pid0" ]] && ok "up on a whole stack: the same master" ||
    fail "up on a whole stack: the same master" "$pid0 became $(master)"
if grep -q 'the responder' "$T_TMP/up0.out"; then
	fail "up on a whole stack leaves the pool alone" \
	    "$(grep 'the responder' "$T_TMP/up0.out")"
else
	ok "up on a whole stack leaves the pool alone"
fi

# 2. The config edited by hand and reloaded: the pool now reads a socket
# where no database listens.
sed -i -e "s|^db_socket = .*|db_socket = $T_TMP/no-database.sock|" \
    "$IDEMORDERS_CONF"
kill -HUP "$pid0"
if wait_health 503; then
	ok "edited and reloaded: health 503 (no database)"
else
	fail "edited and reloaded: health 503" "health $(health)"
fi

# 3. up writes its config again, and the pool serves it.
rc=0
"$DEV" up >"$T_TMP/up1.out" 2>&1 || rc=$?
[[ $rc == 0 ]] && ok "up after the edit: exit status 0" ||
    fail "up after the edit: exit status" "$rc: $(tail -n 5 "$T_TMP/up1.out")"
check "up after the edit: the config is the stack's again" \
    cmp -s "$saved" "$IDEMORDERS_CONF"
if wait_health 200; then
	ok "up after the edit: health 200 with no manual SIGHUP"
else
	fail "up after the edit: health 200" "health $(health); up said: $(grep 'the responder' "$T_TMP/up1.out")"
fi
finish
