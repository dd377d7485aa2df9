#!/usr/bin/env bash
# Without ./configure --enable-fault-injection no fault code is compiled
# and X-Idemorders-Fault is ignored (contract section 7): a build of its
# own in a temporary directory, its responder on a socket of its own
# against the test database.  The test stack's build (with the option)
# answers the same header with a crash, for contrast.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

build=$(mktemp -d /tmp/idemorders-43-build.XXXXXX)
priv=$(mktemp -d /tmp/idemorders-43.XXXXXX)
chmod 0755 "$priv"
cleanup() {
	stop_private
	rm -rf "$build" "$priv" "$T_TMP"
}
trap cleanup EXIT

# --- build without the option -------------------------------------------------
if (cd "$build" && "$REPO/configure" >configure.log 2>&1); then
	ok "configure without --enable-fault-injection (in $build)"
else
	fail "configure" "$(tail -n 5 "$build/configure.log" | tr '\n' ' ')"
	finish
fi
if grep -q '^#define ENABLE_FAULT_INJECTION' "$build/config.h"; then
	fail "config.h" "ENABLE_FAULT_INJECTION is defined"
else
	ok "config.h: ENABLE_FAULT_INJECTION not defined"
fi
if make -C "$build" -j2 src/idemorders >"$build/make.log" 2>&1; then
	ok "make src/idemorders"
else
	fail "make src/idemorders" "$(tail -n 10 "$build/make.log" | tr '\n' ' ')"
	finish
fi
bin=$build/src/idemorders

# Symbols named fault_* (fault_hit, fault_parse, fault_points).
syms=$(nm "$bin" 2>/dev/null | awk '$NF ~ /^fault_/ { print $NF }' | tr '\n' ' ')
if [[ -z $syms ]]; then
	ok "nm: no fault symbol in the plain build"
else
	fail "nm" "fault symbols in the plain build: $syms"
fi
if grep -qa X_IDEMORDERS_FAULT "$bin"; then
	fail "binary" "mentions HTTP_X_IDEMORDERS_FAULT: it reads the header"
else
	ok "the plain binary never names HTTP_X_IDEMORDERS_FAULT"
fi
# The stack's build is the one with the fault points.
stack_syms=$(nm "$IDEMORDERS_BIN" 2>/dev/null)
if grep -q ' T fault_hit$' <<<"$stack_syms"; then
	ok "nm: the test stack's build has fault_hit"
else
	fail "nm" "the test stack's build has no fault_hit: is it built with --enable-fault-injection?"
fi

# --- the plain responder ignores the header -----------------------------------
PLOG=$priv/serve.log
private_conf "$priv/idemorders.conf" "$priv/sock" workers=2
if ! start_private "$bin" "$priv/idemorders.conf" "$priv/sock" "$PLOG"; then
	finish
fi
ok "plain responder serves $priv/sock"

# pfcgi KEY BODY [FAULT]: POST to the plain responder.
pfcgi() {
	local env=(REMOTE_USER=alice CONTENT_TYPE=application/json
	    HTTP_IDEMPOTENCY_KEY="$1")
	[[ -n ${3:-} ]] && env+=(HTTP_X_IDEMORDERS_FAULT="$3")
	FCGI_SOCKET=$priv/sock fcgi_req -d "$2" POST "$MOUNT" "${env[@]}"
}

for fault in before_ledger_insert=crash after_order_insert=transient \
    after_stock_decrease=final after_commit=drop conflict_read=null \
    work_pause=1:5000 'no such=thing'; do
	w="plain build, X-Idemorders-Fault: $fault"
	new_sku sku T43 50
	key=$(unique_key t43)
	body=$(order_body "$sku" 2)
	pfcgi "$key" "$body" "$fault"
	expect_status 201 "$w"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	expect_one_order "$key" "$sku" 48 "$oid" "$w"
	pfcgi "$key" "$body" "$fault"
	expect_status 201 "$w, again"
	expect_header idempotent-replayed true "$w, again"
	expect_body_json .orderId "$oid" "$w, again"
done
workers=$(pgrep -P "$PRIV_PID" | wc -l)
expect_absent "plain build: no fault injection in its log" "$PLOG" 'fault injection'
expect_absent "plain build: no worker died ($workers workers)" "$PLOG" \
    -E 'killed by signal|exited with status'

# Through the test stack's web servers the same header crashes (the
# fault build), and a malformed one is refused.
new_sku sku T43-stack 50
key=$(unique_key t43-stack)
body=$(order_body "$sku" 2)
post_order "$LIGHTTPD_URL" "$key" "$body" before_ledger_insert=crash
expect_gateway_error "fault build: before_ledger_insert=crash"
expect_nothing_committed "$key" "$sku" 50 "fault build: before_ledger_insert=crash"
post_order "$LIGHTTPD_URL" "$key" "$body" 'no such=thing'
expect_problem 400 FAULT_SPEC_INVALID "fault build: malformed header"

stop_private
pool_wait_full 40 || fail "pool" "fewer workers than configured"
finish
