#!/usr/bin/env bash
# The systemd units, checked without a running systemd:
#  - idemorders.service, idemorders.socket and the retention job's
#    service and timer, rendered as `make install` renders them but with
#    the built binary at the ExecStart path, pass `systemd-analyze verify`
#    with no message at all (and a unit pointing at a missing binary
#    does not: the check can fail);
#  - the service is Type=notify with ExecReload, the socket is 0660
#    www-data at /run/idemorders/idemorders.sock;
#  - `systemd-analyze security --offline=true` rates both services at
#    most 2.0 (idemorders.service measured 1.3 "OK" with systemd 252:
#    AF_NETLINK costs 0.1; the retention job 1.2).
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

U=$T_TMP/units
mkdir -p "$U" "$T_TMP/sbin" "$T_TMP/etc"
cp "$IDEMORDERS_BIN" "$T_TMP/sbin/idemorders"

# render SRC DST: the @sbindir@/@sysconfdir@ substitution of Makefile.am.
render() {
	sed -e "s|@sbindir@|$T_TMP/sbin|g" -e "s|@sysconfdir@|$T_TMP/etc|g" "$1" >"$2"
}
render "$REPO/systemd/idemorders.service.in" "$U/idemorders.service"
cp "$REPO/systemd/idemorders.socket" "$U/idemorders.socket"
render "$REPO/scheduling/idemorders-expire.service.in" "$U/idemorders-expire.service"
render "$REPO/scheduling/idemorders-expire.timer.in" "$U/idemorders-expire.timer"

for u in idemorders.service idemorders.socket idemorders-expire.service idemorders-expire.timer; do
	out=$(cd "$U" && systemd-analyze verify --man=no "$U/$u" 2>&1)
	rc=$?
	if [[ $rc -eq 0 && -z $out ]]; then
		ok "systemd-analyze verify $u: clean"
	else
		fail "systemd-analyze verify $u" "status $rc: $out"
	fi
done

# The same service with a binary that is not there must fail.
sed "s|$T_TMP/sbin/idemorders|$T_TMP/sbin/missing|" "$U/idemorders.service" >"$T_TMP/bad.service"
mkdir -p "$T_TMP/bad"
cp "$T_TMP/bad.service" "$T_TMP/bad/idemorders.service"
cp "$U/idemorders.socket" "$T_TMP/bad/"
if out=$(systemd-analyze verify --man=no "$T_TMP/bad/idemorders.service" 2>&1); then
	fail "verify catches a missing ExecStart binary" "status 0: $out"
else
	ok "verify refuses a service whose ExecStart binary is missing"
fi

# prop UNIT KEY: the value systemd parsed for KEY (last one wins).
prop() {
	awk -F= -v k="$2" '$1 == k { v = substr($0, length(k) + 2) } END { print v }' "$U/$1"
}
[[ $(prop idemorders.service Type) == notify ]] && ok "service: Type=notify" ||
    fail "service Type" "$(prop idemorders.service Type)"
[[ $(prop idemorders.service ExecReload) == '/bin/kill -HUP $MAINPID' ]] &&
    ok "service: ExecReload sends SIGHUP" || fail "service ExecReload" "$(prop idemorders.service ExecReload)"
[[ $(prop idemorders.service ExecStart) == "$T_TMP/sbin/idemorders serve -c $T_TMP/etc/idemorders.conf" ]] &&
    ok "service: ExecStart runs serve with the installed config" ||
    fail "service ExecStart" "$(prop idemorders.service ExecStart)"
[[ $(prop idemorders.service Requires) == idemorders.socket ]] &&
    ok "service: requires its socket" || fail "service Requires" "$(prop idemorders.service Requires)"
[[ $(prop idemorders.socket ListenStream) == /run/idemorders/idemorders.sock ]] &&
    ok "socket: /run/idemorders/idemorders.sock" || fail "socket ListenStream" "$(prop idemorders.socket ListenStream)"
[[ $(prop idemorders.socket SocketMode) == 0660 && $(prop idemorders.socket SocketGroup) == www-data ]] &&
    ok "socket: mode 0660, group www-data" ||
    fail "socket mode/group" "$(prop idemorders.socket SocketMode) $(prop idemorders.socket SocketGroup)"
[[ $(prop idemorders-expire.timer OnCalendar) == '*:0/15' ]] &&
    ok "timer: every 15 minutes" || fail "timer OnCalendar" "$(prop idemorders-expire.timer OnCalendar)"

for u in idemorders.service idemorders-expire.service; do
	out=$(cd "$U" && systemd-analyze security --offline=true --no-pager "$U/$u" 2>&1)
	score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$out")
	echo "       systemd-analyze security $u: ${score:-?}"
	if [[ -n $score ]] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
		ok "systemd-analyze security $u: exposure $score (at most 2.0)"
	else
		fail "systemd-analyze security $u" "exposure '${score:-none}': $(tail -n 3 <<<"$out")"
	fi
done

finish
