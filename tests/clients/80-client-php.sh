#!/usr/bin/env bash
# The PHP client (clients/php): its PHPUnit suite, the retry policy on a
# scripted transport and the client against this stack (lighttpd and
# Apache, fault injection: a drop and a crash after COMMIT end in one
# order, 409 IDEMPOTENCY_KEY_REUSED is sent once, 503 waits Retry-After;
# a cancel restocks once, replays, and another key gets 409
# ORDER_ALREADY_CANCELLED; a cancel whose answer is lost is retried with
# its key and restocks once).
# Each PHPUnit test counts as one check; a skipped or incomplete test is a
# failure here.  About 15 s.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

export LIGHTTPD_URL APACHE_URL DEV LOGDIR
dir=$REPO/clients/php
junit=$T_TMP/junit.xml

# attr NAME: an attribute of the outermost <testsuite> of the JUnit log.
attr() {
	grep -m 1 -o "<testsuite [^>]*" "$junit" | grep -o " $1=\"[0-9]*\"" |
	    tr -dc '0-9'
}

if ! command -v phpunit >/dev/null || ! command -v php >/dev/null; then
	fail "phpunit" "php or phpunit is not installed (Debian: php-cli php-curl phpunit)"
	finish
fi
timeout -k 5 300 phpunit --configuration "$dir/phpunit.xml" \
    --log-junit "$junit" --do-not-cache-result >"$T_TMP/out" 2>&1
rc=$?
sed 's/^/       /' "$T_TMP/out"
if [[ ! -s $junit ]]; then
	fail "phpunit" "no JUnit log (status $rc)"
	finish
fi
tests=$(attr tests) failures=$(attr failures) errors=$(attr errors)
skipped=$(attr skipped) warnings=$(attr warnings)
bad=$((failures + errors + skipped + ${warnings:-0}))
PASSED=$((tests - bad))
FAILED=$bad
[[ $skipped -gt 0 ]] && echo "FAIL   $skipped PHPUnit test(s) skipped: none may skip here"
if [[ $rc -ne 0 && $bad -eq 0 ]]; then
	fail "phpunit" "exit status $rc with no failing test"
fi
pool_wait_full 40 || fail "pool" "fewer workers than configured after the crashes"
finish
