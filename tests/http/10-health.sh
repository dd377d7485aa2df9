#!/usr/bin/env bash
# GET /orders/_health answers 200 {"status":"ok"} with Cache-Control:
# no-store through every front end, with and without credentials (the
# health check is exempt from authentication), and straight on the socket.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

for s in $ALL_SERVERS; do
	url=$(url_of "$s")$MOUNT/_health

	req GET "$url"
	expect_status 200 "$s no credentials"
	expect_body_json .status ok "$s no credentials"
	expect_body_json 'keys | join(",")' status "$s no credentials"
	expect_media_type application/json "$s no credentials"
	expect_header cache-control no-store "$s no credentials"

	req GET "$url" -u "$ALICE"
	expect_status 200 "$s as alice"
	expect_body_json .status ok "$s as alice"
	expect_header cache-control no-store "$s as alice"

	# A query string does not change the route.
	req GET "$url?probe=1"
	expect_status 200 "$s with a query string"
	expect_body_json .status ok "$s with a query string"
done

# The responder itself, with no principal at all.
fcgi_req GET "$MOUNT/_health"
expect_status 200 "socket"
expect_body_json .status ok "socket"
expect_header cache-control no-store "socket"

finish
