#!/usr/bin/env bash
# A short chaos run (tests/chaos/run) against the test stack: 600 sends
# over 120 keys from 8 clients through lighttpd, a part of the keys'
# orders cancelled (and the cancels retried) as soon as they are created,
# while a random worker is SIGKILLed about once a second and MariaDB is
# killed and restarted once; then a smaller one through Apache with worker
# kills only.  Every invariant the run checks (one order per key, every
# 201 naming it, ledger and orders in step, every cancelled order
# restocked exactly once with one cancel ledger row, stock + sold -
# restocked = initial) must hold, with cancels and restocks counted.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

CHAOS=$REPO/tests/chaos/run
# Rows from the next whole second on are the runs' own: a second later,
# no row of an earlier script has a created_at at or after it.
sleep 1
AUDIT_SINCE=$(date +%s)

# chaos WHAT ARGS...: one run; its summary line must report no violation.
chaos() {
	local what=$1 out=$T_TMP/chaos.out rc line
	shift
	echo "--- tests/chaos/run $*"
	# Its progress is shown as it runs.
	"$CHAOS" --serve-pidfile "$SERVE_PIDFILE" --sql "$(printf %q "$DEV") sql" \
	    --restart-db "$(printf %q "$DEV") chaos restart-db" --widen 30 --timeout 40 "$@" \
	    2>&1 >"$out" | tee "$T_TMP/chaos.err" | sed -u 's/^/    /'
	rc=${PIPESTATUS[0]}
	line=$(grep '^chaos: requests=' "$out" | tail -n 1)
	echo "    $line"
	if [[ $line =~ ^chaos:\ requests=[0-9]+\ retries=[0-9]+\ created=[0-9]+\ replays=[0-9]+\ conflicts=[0-9]+\ orders=[0-9]+\ cancels=[0-9]+\ cancel_retries=[0-9]+\ restocks=[0-9]+\ violations=([0-9]+)$ ]]; then
		ok "$what: one summary line"
		[[ ${BASH_REMATCH[1]} == 0 ]] && ok "$what: no violation" ||
		    fail "$what: violations" "$line"
	else
		fail "$what: summary line" "got '$line'"
	fi
	[[ $rc == 0 ]] && ok "$what: exit status 0" || fail "$what: exit status" "$rc"
	CHAOS_LINE=$line
}

chaos "lighttpd, worker kills and a MariaDB restart" \
    --base "$LIGHTTPD_URL$MOUNT" --requests 600 --keys 120 --clients 8
created=$(sed -n 's/.* created=\([0-9]*\) .*/\1/p' <<<"$CHAOS_LINE")
[[ ${created:-0} -gt 0 ]] && ok "lighttpd run created $created orders" ||
    fail "lighttpd run" "created no order"
# Cancels are mixed in: every cancelled order restocked exactly once is
# among the run's invariants; here, that there were some.
cancels=$(sed -n 's/.* cancels=\([0-9]*\) .*/\1/p' <<<"$CHAOS_LINE")
restocks=$(sed -n 's/.* restocks=\([0-9]*\) .*/\1/p' <<<"$CHAOS_LINE")
[[ ${cancels:-0} -gt 0 && ${restocks:-0} -gt 0 ]] &&
    ok "lighttpd run: $cancels cancels sent, $restocks orders restocked" ||
    fail "lighttpd run" "cancels=${cancels:-none} restocks=${restocks:-none}"
grep -q 'chaos: restarting MariaDB' "$T_TMP/chaos.err" &&
    ok "lighttpd run: MariaDB was restarted during the run" ||
    fail "lighttpd run" "no MariaDB restart happened"
kills=$(sed -n 's/.*ms, \([0-9]*\) worker kills.*/\1/p' "$T_TMP/chaos.err")
[[ ${kills:-0} -ge 1 ]] && ok "lighttpd run: $kills worker kills" ||
    fail "lighttpd run" "no worker was killed"

chaos "apache, worker kills" \
    --base "$APACHE_URL$MOUNT" --requests 200 --keys 50 --clients 6 \
    --no-db-restart

# idemorders audit on every row the two runs made: no breach at all.
# Judged by its exit status and its JSON report, not its wording.
"$IDEMORDERS_BIN" audit -c "$IDEMORDERS_CONF" --since "@$AUDIT_SINCE" --json \
    >"$T_TMP/audit.out" 2>&1
rc=$?
if [[ $rc == 0 ]] && jq -e '.clean == true and .breaches == 0' "$T_TMP/audit.out" >/dev/null 2>&1; then
	ok "idemorders audit --since the start of the runs: clean, exit 0"
else
	fail "idemorders audit after the chaos" "exit $rc: $(head -c 2000 "$T_TMP/audit.out")"
fi

# The stack as the next scripts expect it.
wait_healthy "after the chaos"
pool_wait_full 60 && ok "pool whole again after the chaos" ||
    fail "pool after the chaos" "fewer workers than configured"
finish
