#!/usr/bin/env bash
# tests/cluster/partition-check.sh -- the short partition run (`tools/dev
# cluster partition --short`, a few minutes): the Galera cluster in network
# namespaces of its own (10.77.0.0/24, no fixed port of this machine), each
# fault once with retrying clients (a node cut off from the others while
# the web hosts reach it, a clean 2-1 split, a flapping link, 1-1-1, a web
# host cut mid-request), the history checker after each, and the events
# the relays of the web hosts delivered to a receiver in the client
# namespace.  Three checks per fault (its line must say violations=0,
# every cancel sent during it answered 200 and checked, and every event
# of its orders delivered), one for the run's exit status.
# Prints "RESULT partition-check <passed> <failed>".
. "$(dirname -- "$0")/../lib/http.sh"

out=$T_TMP/partition.out
echo "--- $DEV cluster partition --short"
"$DEV" cluster partition --short >"$out" 2>"$T_TMP/partition.err"
rc=$?
grep -v '^    ' "$T_TMP/partition.err" | grep -v 'applied migration' | tail -n 60 | sed 's/^/    /'
for f in minority split flap nquorum webcut mixed; do
	line=$(grep "^cluster-partition: fault=${f}1 " "$out" | tail -n 1)
	echo "    $line"
	if [[ $line =~ \ violations=([0-9]+)$ ]] && [[ ${BASH_REMATCH[1]} == 0 ]]; then
		if [[ $line =~ \ keys=([0-9]+)\ .*acked_checked=([0-9]+) ]] &&
		    ((BASH_REMATCH[1] > 0 && BASH_REMATCH[2] > 0)); then
			ok "partition $f: ${BASH_REMATCH[1]} keys, ${BASH_REMATCH[2]} acknowledged writes checked, no violation"
		else
			fail "partition $f: no acknowledged write checked" "$line"
		fi
	else
		fail "partition $f" "${line:-no summary line}"
	fi
	if [[ $line =~ \ cancels=([0-9]+)/([0-9]+) ]] && ((BASH_REMATCH[2] > 0)) &&
	    [[ ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
		ok "partition $f: all ${BASH_REMATCH[2]} cancels answered 200 and checked"
	else
		fail "partition $f: cancels" "${line:-no summary line}"
	fi
	if [[ $line =~ \ events=([0-9]+)\ delivered=([0-9]+)\ dup_deliveries=([0-9]+) ]] &&
	    ((BASH_REMATCH[1] > 0)) && [[ ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
		ok "partition $f: the relays delivered all ${BASH_REMATCH[1]} events (${BASH_REMATCH[3]} deliveries again)"
	else
		fail "partition $f: events" "${line:-no summary line}"
	fi
done
[[ $rc == 0 ]] && ok "cluster partition --short exits 0" || fail "cluster partition exit status" "$rc"
# The namespaces of this checkout (tests/cluster/partition.sh: PT_NS).
ns=idemp-$(printf '%s' "$REPO" | sha1sum | cut -c1-6)-
left=$(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -c "^$ns" || true)
[[ $left == 0 ]] && ok "no namespace $ns* left" || fail "namespaces left" "$(ip netns list | grep "^$ns")"
finish
