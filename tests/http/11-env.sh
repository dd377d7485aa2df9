#!/usr/bin/env bash
# What the web servers pass on reaches the responder: the authenticated
# user (REMOTE_USER) and the Idempotency-Key header (HTTP_IDEMPOTENCY_KEY).
# Identity comes only from the environment the web server sets, never from
# a request header.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

for s in $ALL_SERVERS; do
	base=$(url_of "$s")$MOUNT

	# With credentials the application sees a principal: an unknown
	# order is its 404 ORDER_NOT_FOUND, not a 401.
	req GET "$base/o-999999" -u "$ALICE"
	expect_problem 404 ORDER_NOT_FOUND "$s alice GET /orders/o-999999"

	# Wrong password, unknown user, no credentials: the web server's 401
	# with its Basic challenge; the application is never asked.
	req GET "$base/o-999999" -u alice:wrong-secret
	expect_status 401 "$s wrong password"
	expect_header_has www-authenticate 'Basic realm="idemorders"' "$s wrong password"
	req GET "$base/o-999999" -u mallory:alice-secret
	expect_status 401 "$s unknown user"
	req GET "$base/o-999999"
	expect_status 401 "$s no credentials"
	expect_header_has www-authenticate 'Basic realm="idemorders"' "$s no credentials"

	# The key header reaches the application, which echoes it on every
	# answer to POST, whatever the status.
	req POST "$base" -u "$BOB" -H 'Idempotency-Key: k-env-1' \
	    -H 'Content-Type: application/json' --data-binary '{}'
	expect_problem 400 VALIDATION_FAILED "$s POST /orders {}"
	expect_header idempotency-key k-env-1 "$s POST /orders echoes the key"
	expect_header cache-control no-store "$s POST /orders"
done

# Straight on the socket: no REMOTE_USER means no principal.
fcgi_req GET "$MOUNT/o-999999"
expect_problem 401 UNAUTHENTICATED "socket, no REMOTE_USER"

fcgi_req GET "$MOUNT/o-999999" REMOTE_USER=
expect_problem 401 UNAUTHENTICATED "socket, empty REMOTE_USER"

# An Authorization header alone (lighttpd always passes it on) is not an
# identity.
fcgi_req GET "$MOUNT/o-999999" \
    HTTP_AUTHORIZATION="Basic $(printf '%s' "$ALICE" | base64)"
expect_problem 401 UNAUTHENTICATED "socket, HTTP_AUTHORIZATION without REMOTE_USER"

fcgi_req -d '{}' POST "$MOUNT" CONTENT_TYPE=application/json \
    HTTP_IDEMPOTENCY_KEY=k-env-2 \
    HTTP_AUTHORIZATION="Basic $(printf '%s' "$ALICE" | base64)"
expect_problem 401 UNAUTHENTICATED "socket, POST with HTTP_AUTHORIZATION only"

# The same request with REMOTE_USER gets past authentication.
fcgi_req GET "$MOUNT/o-999999" REMOTE_USER=alice
expect_problem 404 ORDER_NOT_FOUND "socket, REMOTE_USER=alice"

# Every answer to POST echoes the key, the refusals before any handler
# included: no principal, no frontend secret, no such path, a method the
# path does not take.
post_echo() {	# STATUS CODE WHAT URI [NAME=VALUE...]
	local status=$1 code=$2 what=$3 uri=$4
	shift 4
	fcgi_req -d '{}' POST "$uri" CONTENT_TYPE=application/json \
	    HTTP_IDEMPOTENCY_KEY=k-env-echo "$@"
	expect_problem "$status" "$code" "socket, POST $what"
	expect_header idempotency-key k-env-echo "socket, POST $what: key echoed"
}
post_echo 401 UNAUTHENTICATED "without REMOTE_USER" "$MOUNT"
FCGI_NO_SECRET=1 post_echo 403 FRONTEND_SECRET_MISMATCH \
    "without the frontend secret" "$MOUNT" REMOTE_USER=alice
post_echo 404 NOT_FOUND "to an unknown path" "$MOUNT/a/b" REMOTE_USER=alice
post_echo 405 METHOD_NOT_ALLOWED "to an order" "$MOUNT/o-1" REMOTE_USER=alice

finish
