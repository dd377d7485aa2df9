# tests/lib/node.sh -- node --test suites as HTTP test scripts.
# shellcheck shell=bash
# Sourced after tests/lib/http.sh.
#
#   node_tap_judge TAP RC   count the TAP output of `node --test` (file
#                           TAP, exit status RC) into PASSED and FAILED:
#                           each top-level test is one check; a skipped,
#                           cancelled or todo test is a failure here

# _tap_count TAP WORD: the "# WORD N" total of the TAP output.
_tap_count() {
	sed -n "s/^# $2 \([0-9]*\)$/\1/p" "$1" | tail -n 1
}

node_tap_judge() {
	local tap=$1 rc=$2 pass fails other c s t
	grep -E '^(not )?ok ' "$tap" | sed 's/^/       /'
	if grep -q '^not ok ' "$tap"; then
		echo "       --- node --test output ---"
		sed 's/^/       /' "$tap" | head -n 400
	fi
	pass=$(_tap_count "$tap" pass) fails=$(_tap_count "$tap" fail)
	if [[ -z $pass || -z $fails ]]; then
		fail "node --test" "no totals in its output (status $rc)"
		sed 's/^/       /' "$tap" | head -n 60
		return 1
	fi
	c=$(_tap_count "$tap" cancelled) s=$(_tap_count "$tap" skipped)
	t=$(_tap_count "$tap" todo)
	other=$((${c:-0} + ${s:-0} + ${t:-0}))
	PASSED=$((PASSED + pass))
	FAILED=$((FAILED + fails + other))
	[[ $other -gt 0 ]] && echo "FAIL   $other test(s) skipped, cancelled or todo: none may be here"
	if [[ $rc -ne 0 && $fails -eq 0 && $other -eq 0 ]]; then
		fail "node --test" "exit status $rc with no failing test"
	fi
	return 0
}
