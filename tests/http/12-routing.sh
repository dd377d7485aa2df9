#!/usr/bin/env bash
# Routing is the same behind lighttpd and Apache (they split SCRIPT_NAME
# and PATH_INFO differently; the application routes on REQUEST_URI):
# unknown paths are 404 NOT_FOUND, a wrong method on a known path is 405
# METHOD_NOT_ALLOWED with Allow, errors are application/problem+json.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

for s in $ALL_SERVERS; do
	url=$(url_of "$s")

	req GET "$url$MOUNT/a/b" -u "$ALICE"
	expect_problem 404 NOT_FOUND "$s GET /orders/a/b"
	req GET "$url$MOUNT/o-1/items" -u "$ALICE"
	expect_problem 404 NOT_FOUND "$s GET /orders/o-1/items"

	req DELETE "$url$MOUNT" -u "$ALICE"
	expect_problem 405 METHOD_NOT_ALLOWED "$s DELETE /orders"
	expect_header_has allow POST "$s DELETE /orders"

	req PUT "$url$MOUNT/o-1" -u "$ALICE" -H 'Content-Type: application/json' \
	    --data-binary '{}'
	expect_problem 405 METHOD_NOT_ALLOWED "$s PUT /orders/o-1"
	expect_header_has allow GET "$s PUT /orders/o-1"

	req POST "$url$MOUNT/_health" -u "$ALICE" -H 'Content-Type: application/json' \
	    --data-binary '{}'
	expect_problem 405 METHOD_NOT_ALLOWED "$s POST /orders/_health"
	expect_header_has allow GET "$s POST /orders/_health"

	# Outside the mount: lighttpd's "/orders" prefix also hands /ordersx
	# to the application (404 NOT_FOUND); Apache does not map it at all
	# (its own 404).  Never a 2xx.
	req GET "$url/ordersx" -u "$ALICE"
	expect_status 404 "$s GET /ordersx"
	if [[ $s == lighttpd ]]; then
		expect_body_json .code NOT_FOUND "$s GET /ordersx"
	fi
done

# The responder alone, for the requests a web server would not pass on.
fcgi_req GET /ordersx REMOTE_USER=alice
expect_problem 404 NOT_FOUND "socket GET /ordersx"
fcgi_req GET /other/o-1 REMOTE_USER=alice
expect_problem 404 NOT_FOUND "socket GET /other/o-1"
fcgi_req GET "$MOUNT/a/b" REMOTE_USER=alice
expect_problem 404 NOT_FOUND "socket GET /orders/a/b"
fcgi_req DELETE "$MOUNT" REMOTE_USER=alice
expect_problem 405 METHOD_NOT_ALLOWED "socket DELETE /orders"
expect_header_has allow POST "socket DELETE /orders"
fcgi_req PATCH "$MOUNT/o-1" REMOTE_USER=alice
expect_problem 405 METHOD_NOT_ALLOWED "socket PATCH /orders/o-1"
expect_header_has allow GET "socket PATCH /orders/o-1"
# The query string never takes part in routing.
fcgi_req GET "$MOUNT/o-999999?x=/a/b" REMOTE_USER=alice
expect_problem 404 ORDER_NOT_FOUND "socket GET /orders/o-999999?x=/a/b"

finish
