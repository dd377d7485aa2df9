#!/usr/bin/env bash
# clients/sh/idem-post, the curl client for QA scripts: its retry policy
# (functions tested by sourcing it), its usage errors and exit statuses,
# and the command against this stack through lighttpd and Apache with
# fault injection on the first attempt only (--first-header):
#   drop / crash after COMMIT -> one order, the replay printed, exit 0
#   crash before COMMIT       -> the retry creates one order
#   409 IDEMPOTENCY_KEY_REUSED -> exit 1 after one request (counted in the
#                                responder's log and lighttpd's access log)
#   503 with Retry-After: 1   -> the second attempt a second later
#   connection refused        -> exit 3, the key file kept; the same file
#                                then creates the order, then replays it
#   a final 422               -> exit 1, the key file removed
#   --cancel ORDER_ID         -> 200 CANCELLED, restocked once (the stock
#                                row's available and restocked); the same
#                                key replays it; another key: exit 1, 409
#                                ORDER_ALREADY_CANCELLED after one request;
#                                drop / crash after COMMIT and a 503 are
#                                retried with the key: restocked once
# and the credentials options: Basic as a raw --header creates and replays;
# a wrong one is a 401 (exit 1) with nothing written; --cookie,
# --cookie-jar and --header reach the server (a stand-in that logs them),
# the jar keeps a cookie it sets, and no value is printed; with the demo
# shop's vhosts, ana's session cookie and her bearer token each make her
# order (principal customer-1001), and signed out she gets a 401 with
# nothing written; --list pages (--limit, --starting-after, --all along
# the Link header), a refused cursor (exit 1), another principal's list;
# Should-Retry followed (the functions).
# About 15 s.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../chaos/order-helpers.sh"

IDEM_POST=$REPO/clients/sh/idem-post
RESPONDER_LOG=$LOGDIR/idemorders.log
ACCESS_LOG=$LOGDIR/lighttpd-access.log
now_ms() { date +%s%3N; }

# run_post [idem-post args...] < body: run it; sets RC, OUT (stdout; also
# BODY), SUMMARY (the --summary line).
run_post() {
	rm -f "$T_TMP/summary"
	timeout 120 "$IDEM_POST" --summary "$T_TMP/summary" "$@" \
	    >"$T_TMP/out" 2>"$T_TMP/err"
	RC=$?
	OUT=$(cat "$T_TMP/out")
	SUMMARY=$(cat "$T_TMP/summary" 2>/dev/null)
	BODY=$OUT
	REQ_DESC="idem-post $*"
	STATUS=$(field status)
}

# field NAME: a word NAME=VALUE of the summary.
field() {
	printf '%s\n' "$SUMMARY" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# expect_field NAME VALUE WHAT
expect_field() {
	local v
	v=$(field "$1")
	if [[ $v == "$2" ]]; then
		ok "$3: $1=$2"
	else
		fail "$3: $1" "expected '$2', got '$v' (summary: $SUMMARY; stderr: $(tail -n 3 "$T_TMP/err" | tr '\n' ' '))"
	fi
}

expect_rc() {
	if [[ $RC == "$1" ]]; then
		ok "$2: exit status $1"
	else
		fail "$2: exit status" "expected $1, got $RC (stderr: $(tail -n 3 "$T_TMP/err" | tr '\n' ' '))"
	fi
}

# logged_posts KEY: the POSTs for KEY that the responder logged.
logged_posts() {
	grep -cF " key=$1 attempts=" "$RESPONDER_LOG" 2>/dev/null
}

# access_lines AGENT: lighttpd's access log lines of user agent AGENT.
# lighttpd writes its log late: a marker request sent after them is
# awaited, so that every earlier request is in the log.
access_lines() {
	local i
	curl -s -o /dev/null -m 10 -A "$1-marker" "$LIGHTTPD_URL$MOUNT/_health"
	for ((i = 0; i < 100; i++)); do
		grep -qF "\"$1-marker\"" "$ACCESS_LOG" 2>/dev/null && break
		sleep 0.1
	done
	grep -cF "\"$1\"" "$ACCESS_LOG" 2>/dev/null
}

# --- the policy, from the functions --------------------------------------
(
	# shellcheck source=clients/sh/idem-post
	. "$IDEM_POST"
	[[ $(idem_retry_after_ms 3 1000) == 3000 ]] || exit 1
	[[ $(idem_retry_after_ms ' 0 ' 1000) == 0 ]] || exit 1
	now=$(date -d 'Tue, 01 Dec 2026 12:00:00 GMT' +%s%3N)
	[[ $(idem_retry_after_ms 'Tue, 01 Dec 2026 12:00:05 GMT' "$now") == 5000 ]] || exit 1
	[[ $(idem_retry_after_ms 'Tue, 01 Dec 2026 11:00:00 GMT' "$now") == 0 ]] || exit 1
	[[ -z $(idem_retry_after_ms 'soon' "$now") ]] || exit 1
	[[ -z $(idem_retry_after_ms '1.5' "$now") ]] || exit 1
	[[ -z $(idem_retry_after_ms '' "$now") ]] || exit 1
) && ok "Retry-After: seconds, HTTP-date, past date, garbage" ||
    fail "Retry-After parsing" "idem_retry_after_ms gave a wrong value"
(
	. "$IDEM_POST"
	for ((i = 0; i < 100; i++)); do
		d=$(idem_backoff_ms 4 200 5000)
		((d >= 0 && d < 1600)) || exit 1
		d=$(idem_backoff_ms 12 200 5000)
		((d >= 0 && d < 5000)) || exit 1
		d=$(idem_backoff_ms 1 200 5000)
		((d >= 0 && d < 200)) || exit 1
	done
	# Full jitter: the delays spread over the range, not a fixed wait.
	lo=0 hi=0
	for ((i = 0; i < 100; i++)); do
		d=$(idem_backoff_ms 5 100 5000)
		((d < 400)) && lo=1
		((d >= 1200)) && hi=1
	done
	((lo && hi)) || exit 1
) && ok "backoff: full jitter under min(cap, base * 2^(n-1))" ||
    fail "backoff" "a delay out of its range, or no jitter"
(
	. "$IDEM_POST"
	for s in 200 201; do [[ $(idem_classify $s '') == success ]] || exit 1; done
	for s in 0 500 502 503 504; do [[ $(idem_classify $s '') == retry ]] || exit 1; done
	[[ $(idem_classify 409 REQUEST_IN_PROGRESS) == retry ]] || exit 1
	[[ $(idem_classify 409 REQUEST_STATUS_UNCONFIRMED) == retry ]] || exit 1
	for sc in '409 IDEMPOTENCY_KEY_REUSED' '409 OUT_OF_STOCK' '410 IDEMPOTENCY_KEY_EXPIRED' \
	    '422 AMOUNT_MISMATCH' '400 MALFORMED_JSON' '401 UNAUTHENTICATED' '404 NOT_FOUND' '429 x'; do
		# shellcheck disable=SC2086
		[[ $(idem_classify $sc) == final ]] || exit 1
	done
) && ok "classify: 2xx success; no answer, 5xx, undecided 409 retried; other 4xx final" ||
    fail "classify" "a status classified wrongly"

(
	. "$IDEM_POST"
	[[ $(idem_classify 409 OUT_OF_STOCK true) == retry ]] || exit 1
	[[ $(idem_classify 409 OUT_OF_STOCK ' True') == retry ]] || exit 1
	[[ $(idem_classify 500 INTERNAL_ERROR false) == final ]] || exit 1
	[[ $(idem_classify 503 x '') == retry ]] || exit 1
	[[ $(idem_classify 0 '' false) == retry ]] || exit 1
	[[ $(idem_classify 201 '' true) == success ]] || exit 1
) && ok "classify: Should-Retry true or false decides when the server sent it" ||
    fail "classify with Should-Retry" "a status classified wrongly"

# --- usage errors ----------------------------------------------------------
for args in "" "--max-tries 0 $LIGHTTPD_URL$MOUNT" "--deadline soon $LIGHTTPD_URL$MOUNT" \
    "--bogus $LIGHTTPD_URL$MOUNT" "--key a --key-file $T_TMP/k $LIGHTTPD_URL$MOUNT" \
    "--first-header nocolon $LIGHTTPD_URL$MOUNT"; do
	# shellcheck disable=SC2086
	run_post $args </dev/null
	expect_rc 2 "usage error '$args'"
	[[ -z $OUT ]] && ok "usage error '$args': nothing on stdout" ||
	    fail "usage error '$args'" "stdout: $OUT"
done
"$IDEM_POST" --help >"$T_TMP/help" 2>&1 && grep -q 'exit status: 0 created' "$T_TMP/help" &&
    ok "--help documents the exit statuses" || fail "--help" "$(head -n 3 "$T_TMP/help")"

# --- against the stack ------------------------------------------------------
for s in $HTTP_SERVERS; do
	url=$(url_of "$s")$MOUNT

	for fault in after_commit=drop after_commit=crash; do
		w="$s $fault on the first attempt"
		new_sku sku T82-lost 50 || continue
		kf=$T_TMP/key-$s-$fault
		order_body "$sku" 2 >"$T_TMP/body"
		run_post --key-file "$kf" --first-header "X-Idemorders-Fault: $fault" \
		    "$url" -u "$ALICE" <"$T_TMP/body"
		expect_rc 0 "$w"
		expect_field outcome created "$w"
		expect_field status 201 "$w"
		expect_field replayed true "$w"
		n=$(field attempts)
		[[ ${n:-0} -ge 2 ]] && ok "$w: retried ($n attempts)" ||
		    fail "$w: attempts" "expected 2 or more, got '$n'"
		key=$(field key)
		[[ -n $key && $(cat "$kf" 2>/dev/null) == "$key" ]] &&
		    ok "$w: the key file holds the key used" ||
		    fail "$w: key file" "'$(cat "$kf" 2>/dev/null)' vs '$key'"
		oid=$(printf '%s' "$OUT" | jq -r .orderId 2>/dev/null)
		[[ $oid == o-* ]] || fail "$w: orderId" "stdout is not the order: $OUT"
		expect_one_order "$key" "$sku" 48 "$oid" "$w"
		wait_healthy "after $w"
	done

	w="$s before_commit=crash on the first attempt"
	new_sku sku T82-crash 50
	order_body "$sku" 3 >"$T_TMP/body"
	run_post --first-header "X-Idemorders-Fault: before_commit=crash" \
	    "$url" -u "$ALICE" <"$T_TMP/body"
	expect_rc 0 "$w"
	expect_field replayed false "$w"
	oid=$(printf '%s' "$OUT" | jq -r .orderId 2>/dev/null)
	expect_one_order "$(field key)" "$sku" 47 "$oid" "$w"
	wait_healthy "after $w"

	w="$s same key, other body"
	new_sku sku T82-reuse 50
	key=$(unique_key "t82-$s-reuse")
	agent=idem-post-test-$key
	order_body "$sku" 2 >"$T_TMP/body"
	run_post --key "$key" "$url" -u "$ALICE" -A "$agent" <"$T_TMP/body"
	expect_rc 0 "$w: first"
	oid=$(printf '%s' "$OUT" | jq -r .orderId 2>/dev/null)
	order_body "$sku" 3 >"$T_TMP/body"
	run_post --key "$key" "$url" -u "$ALICE" -A "$agent" <"$T_TMP/body"
	expect_rc 1 "$w"
	expect_field outcome rejected "$w"
	expect_field status 409 "$w"
	expect_field code IDEMPOTENCY_KEY_REUSED "$w"
	expect_field attempts 1 "$w"
	expect_body_json .code IDEMPOTENCY_KEY_REUSED "$w: the problem on stdout"
	expect_sql_value "$w: POSTs the responder answered for the key" 2 "$(logged_posts "$key")"
	if [[ $s == lighttpd ]]; then
		expect_sql_value "$w: requests in lighttpd's access log" 2 "$(access_lines "$agent")"
	fi
	expect_one_order "$key" "$sku" 48 "$oid" "$w"

	w="$s 503 with Retry-After"
	new_sku sku T82-503 50
	order_body "$sku" 1 >"$T_TMP/body"
	t0=$(now_ms)
	run_post --first-header "X-Idemorders-Fault: after_ledger_insert=transient" \
	    "$url" -u "$ALICE" <"$T_TMP/body"
	el=$(($(now_ms) - t0))
	expect_rc 0 "$w"
	expect_field attempts 2 "$w"
	expect_field replayed false "$w"
	# What it says is its own wording: only that it names the answer
	# (status and code) it retried.
	grep -q '503' "$T_TMP/err" && grep -q 'RETRY_LIMIT_REACHED' "$T_TMP/err" &&
	    ok "$w: says it retried a 503 RETRY_LIMIT_REACHED" ||
	    fail "$w: retry message" "stderr: $(tr '\n' ' ' <"$T_TMP/err")"
	[[ $el -ge 1000 ]] && ok "$w: the retry came after the second (${el} ms in all)" ||
	    fail "$w: Retry-After" "all done in ${el} ms"
	oid=$(printf '%s' "$OUT" | jq -r .orderId 2>/dev/null)
	expect_one_order "$(field key)" "$sku" 49 "$oid" "$w"
done

# --- a cancel: --cancel ORDER_ID, the same rules ------------------------------
# stock_row SKU: "available<TAB>restocked".
stock_row() {
	sql "SELECT available, restocked FROM stock WHERE sku = '$(_q "$1")'"
}

# cancel_rows KEY: count, status, response status, order of alice's cancel
# ledger rows for KEY.
cancel_rows() {
	sql "SELECT COUNT(*), IFNULL(MIN(status), '-'), IFNULL(MIN(response_status), '-'),
	    IFNULL(MIN(resource_id), '-') FROM idempotency_records
	    WHERE principal_id = 'alice' AND operation = 'cancel-order' AND idem_key = '$(_q "$1")'"
}

# new_order URL SKU QTY: alice's order of QTY x SKU; prints its id.
new_order() {
	order_body "$2" "$3" >"$T_TMP/body"
	run_post "$1" -u "$ALICE" <"$T_TMP/body"
	printf '%s' "$OUT" | jq -r .orderId 2>/dev/null
}

for args in "--reason r $LIGHTTPD_URL$MOUNT" "--cancel ../o-1 $LIGHTTPD_URL$MOUNT" \
    "--cancel o-1 --reason $(printf 'a\001b') $LIGHTTPD_URL$MOUNT"; do
	# shellcheck disable=SC2086
	run_post $args </dev/null
	expect_rc 2 "cancel usage error '$args'"
	grep -q 'reason goes with --cancel\|order id of 1-64\|control character' "$T_TMP/err" &&
	    ok "cancel usage error '$args': says why" ||
	    fail "cancel usage error '$args'" "stderr: $(head -n 1 "$T_TMP/err")"
done

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")$MOUNT

	w="$s cancel"
	new_sku sku T82-cancel 50
	oid=$(new_order "$url" "$sku" 2)
	[[ $oid == o-* ]] || fail "$w: an order to cancel" "$OUT"
	key=$(unique_key "t82-$s-cancel")
	run_post --cancel "$oid" --reason 'changed "my" mind' --key "$key" "$url" -u "$ALICE" </dev/null
	expect_rc 0 "$w"
	expect_field outcome cancelled "$w"
	expect_field status 200 "$w"
	expect_field replayed false "$w"
	expect_body_json .status CANCELLED "$w"
	expect_body_json .orderId "$oid" "$w"
	expect_sql_value "$w: available, restocked" $'50\t2' "$(stock_row "$sku")"
	first=$OUT
	run_post --cancel "$oid" --reason 'changed "my" mind' --key "$key" "$url" -u "$ALICE" </dev/null
	expect_rc 0 "$w, the same key again"
	expect_field replayed true "$w, the same key again"
	[[ $OUT == "$first" ]] && ok "$w, the same key again: the body byte for byte" ||
	    fail "$w, the same key again" "'$OUT' vs '$first'"
	run_post --cancel "$oid" "$url" -u "$ALICE" </dev/null
	expect_rc 1 "$w, another key"
	expect_field status 409 "$w, another key"
	expect_field code ORDER_ALREADY_CANCELLED "$w, another key"
	expect_field attempts 1 "$w, another key"
	expect_sql_value "$w: still restocked once" $'50\t2' "$(stock_row "$sku")"
	expect_sql_value "$w: the cancel's ledger row" $'1\tSUCCEEDED\t200\t'"$oid" "$(cancel_rows "$key")"

	for fault in after_commit=drop after_commit=crash; do
		w="$s cancel, $fault on the first attempt"
		new_sku sku T82-cancel-lost 50
		oid=$(new_order "$url" "$sku" 3)
		kf=$T_TMP/cancel-key-$s-$fault
		run_post --cancel "$oid" --key-file "$kf" --first-header "X-Idemorders-Fault: $fault" \
		    "$url" -u "$ALICE" </dev/null
		expect_rc 0 "$w"
		expect_field outcome cancelled "$w"
		expect_field status 200 "$w"
		expect_field replayed true "$w"
		n=$(field attempts)
		[[ ${n:-0} -ge 2 ]] && ok "$w: retried ($n attempts)" ||
		    fail "$w: attempts" "expected 2 or more, got '$n'"
		key=$(field key)
		[[ -n $key && $(cat "$kf" 2>/dev/null) == "$key" ]] &&
		    ok "$w: one key, kept in the key file" ||
		    fail "$w: key file" "'$(cat "$kf" 2>/dev/null)' vs '$key'"
		expect_sql_value "$w: available, restocked once" $'50\t3' "$(stock_row "$sku")"
		expect_sql_value "$w: the cancel's ledger row" $'1\tSUCCEEDED\t200\t'"$oid" "$(cancel_rows "$key")"
		wait_healthy "after $w"
	done

	w="$s cancel, 503 with Retry-After"
	new_sku sku T82-cancel-503 50
	oid=$(new_order "$url" "$sku" 1)
	t0=$(now_ms)
	run_post --cancel "$oid" --first-header "X-Idemorders-Fault: after_ledger_insert=transient" \
	    "$url" -u "$ALICE" </dev/null
	el=$(($(now_ms) - t0))
	expect_rc 0 "$w"
	expect_field attempts 2 "$w"
	# What it says is its own wording: only that it names the answer
	# (status and code) it retried.
	grep -q '503' "$T_TMP/err" && grep -q 'RETRY_LIMIT_REACHED' "$T_TMP/err" &&
	    ok "$w: says it retried a 503 RETRY_LIMIT_REACHED" ||
	    fail "$w: retry message" "stderr: $(tr '\n' ' ' <"$T_TMP/err")"
	[[ $el -ge 1000 ]] && ok "$w: the retry came after the Retry-After second (${el} ms in all)" ||
	    fail "$w: Retry-After" "all done in ${el} ms"
	expect_sql_value "$w: available, restocked" $'50\t1' "$(stock_row "$sku")"
done

# --- no answer at all: the key file outlives the failure ----------------------
w="connection refused"
new_sku sku T82-net 50
kf=$T_TMP/key-net
order_body "$sku" 1 >"$T_TMP/body"
# A port of 127.0.0.1 that refuses connections.
for port in 9 1 7 13 19 37; do
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
run_post --key-file "$kf" --deadline 2 --base-delay 0.05 "http://127.0.0.1:$port$MOUNT" \
    -u "$ALICE" <"$T_TMP/body"
expect_rc 3 "$w"
expect_field outcome unknown "$w"
expect_field status 0 "$w"
n=$(field attempts)
[[ ${n:-0} -ge 2 ]] && ok "$w: retried ($n attempts)" || fail "$w: attempts" "got '$n'"
grep -q '^idem-post: gave up: ' "$T_TMP/err" && ok "$w: says why it gave up" ||
    fail "$w: gave up" "stderr: $(tail -n 2 "$T_TMP/err")"
key=$(field key)
[[ -n $key && $(cat "$kf" 2>/dev/null) == "$key" ]] && ok "$w: key file kept" ||
    fail "$w: key file" "'$(cat "$kf" 2>/dev/null)'"
expect_sql_value "$w: nothing for the key" 0 "$(ledger_rows "$key")"
run_post --key-file "$kf" "$LIGHTTPD_URL$MOUNT" -u "$ALICE" <"$T_TMP/body"
expect_rc 0 "$w, then lighttpd"
expect_field key "$key" "$w, then lighttpd"
expect_field replayed false "$w, then lighttpd"
oid=$(printf '%s' "$OUT" | jq -r .orderId 2>/dev/null)
run_post --key-file "$kf" "$APACHE_URL$MOUNT" -u "$ALICE" <"$T_TMP/body"
expect_rc 0 "$w, then Apache"
expect_field replayed true "$w, then Apache"
expect_body_json .orderId "$oid" "$w, then Apache"
expect_one_order "$key" "$sku" 49 "$oid" "$w"

# --- a final rejection: exit 1, the key file gone ------------------------------
w="final 422"
new_sku sku T82-final 50
kf=$T_TMP/key-final
printf '{"currency":"KRW","items":[{"sku":"%s","qty":1}],"amount":999}' "$sku" >"$T_TMP/body"
run_post --key-file "$kf" "$LIGHTTPD_URL$MOUNT" -u "$ALICE" <"$T_TMP/body"
expect_rc 1 "$w"
expect_field code AMOUNT_MISMATCH "$w"
expect_field attempts 1 "$w"
[[ ! -e $kf ]] && ok "$w: key file removed" || fail "$w: key file" "still there"

# --- credentials other than curl-args: --header, --cookie, --cookie-jar ------
basic_header() {
	printf 'Authorization: Basic %s' "$(printf '%s' "$1" | base64 -w0)"
}
for s in $HTTP_SERVERS; do
	url=$(url_of "$s")$MOUNT
	w="$s --header (Basic as a raw header)"
	new_sku sku T82-hdr 50
	order_body "$sku" 2 >"$T_TMP/body"
	run_post --header "$(basic_header "$ALICE")" --header "X-QA-Run: $RUN_TAG" "$url" <"$T_TMP/body"
	expect_rc 0 "$w"
	expect_field outcome created "$w"
	expect_field replayed false "$w"
	key=$(field key)
	oid=$(printf '%s' "$OUT" | jq -r .orderId 2>/dev/null)
	run_post --key "$key" --header "$(basic_header "$ALICE")" "$url" <"$T_TMP/body"
	expect_rc 0 "$w, again"
	expect_field replayed true "$w, again"
	expect_one_order "$key" "$sku" 48 "$oid" "$w"
	expect_sql_value "$w: the order is alice's" alice \
	    "$(sql "SELECT principal_id FROM orders WHERE CONCAT('o-', id) = '$oid'")"
done

w="wrong password as a raw header"
new_sku sku T82-badcred 50
kf=$T_TMP/key-badcred
order_body "$sku" 1 >"$T_TMP/body"
run_post --key-file "$kf" --header "$(basic_header alice:wrong)" "$APACHE_URL$MOUNT" <"$T_TMP/body"
expect_rc 1 "$w"
expect_field status 401 "$w"
expect_field attempts 1 "$w"
[[ -s $kf ]] && ok "$w: key file kept (401)" || fail "$w: key file" "gone"
expect_sql_value "$w: nothing for the key" 0 "$(ledger_rows "$(field key)")"
expect_sql_value "$w: no order" 0 "$(sql "SELECT COUNT(*) FROM order_items WHERE sku = '$sku'")"
! grep -qF "$(printf alice:wrong | base64 -w0)" "$T_TMP/out" "$T_TMP/err" &&
    ok "$w: the credential is not printed" || fail "$w: secret" "printed"

# What goes out, against a stand-in server that logs each request and
# answers 401 with a Set-Cookie.
python3 "$REPO/tests/lib/capture-server.py" "$T_TMP/cap.port" "$T_TMP/cap.log" &
CAP_PID=$!
trap 'kill "$CAP_PID" 2>/dev/null; rm -rf "$T_TMP"' EXIT
wait_until 10 test -s "$T_TMP/cap.port"
CAP_URL=http://127.0.0.1:$(<"$T_TMP/cap.port")
printf '# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tPHPSESSID\tsess-%s\n' \
    "$RUN_TAG" >"$T_TMP/jar"
cp "$T_TMP/jar" "$T_TMP/jar-ro"
w="--cookie and --header to a server that refuses"
order_body T82-x 1 >"$T_TMP/body"
run_post --cookie "$T_TMP/jar-ro" --header "Authorization: Bearer tok-$RUN_TAG" \
    "$CAP_URL$MOUNT" <"$T_TMP/body"
expect_rc 1 "$w"
expect_field status 401 "$w"
grep -qx "Cookie: PHPSESSID=sess-$RUN_TAG" "$T_TMP/cap.log" &&
    ok "$w: the cookie of the file was sent" ||
    fail "$w: cookie" "not in the request: $(grep -i '^cookie' "$T_TMP/cap.log")"
grep -qx "Authorization: Bearer tok-$RUN_TAG" "$T_TMP/cap.log" &&
    ok "$w: the header was sent" || fail "$w: header" "not in the request"
cmp -s "$T_TMP/jar" "$T_TMP/jar-ro" && ok "$w: --cookie leaves the file as it was" ||
    fail "$w: --cookie" "the file changed"
! grep -qF "tok-$RUN_TAG" "$T_TMP/out" "$T_TMP/err" &&
    ok "$w: the token is not printed" || fail "$w: secret" "printed"
w="--header @FILE"
printf 'Authorization: Bearer tokf-%s\r\n\nX-QA-Run: %s\n' "$RUN_TAG" "$RUN_TAG" >"$T_TMP/hf"
: >"$T_TMP/cap.log"
run_post --header "@$T_TMP/hf" "$CAP_URL$MOUNT" <"$T_TMP/body"
expect_rc 1 "$w"
grep -qx "Authorization: Bearer tokf-$RUN_TAG" "$T_TMP/cap.log" &&
    grep -qx "X-QA-Run: $RUN_TAG" "$T_TMP/cap.log" &&
    ok "$w: each line of the file sent as a header" || fail "$w" "$(cat "$T_TMP/cap.log")"
w="--cookie-jar"
run_post --cookie-jar "$T_TMP/jar" "$CAP_URL$MOUNT" <"$T_TMP/body"
expect_rc 1 "$w"
grep -q "PHPSESSID.sess-$RUN_TAG" "$T_TMP/jar" && grep -q 'rotated.r1' "$T_TMP/jar" &&
    ok "$w: the server's new cookie is kept in the file, the old one too" ||
    fail "$w: jar" "$(tail -n 2 "$T_TMP/jar")"
kill "$CAP_PID" 2>/dev/null
wait "$CAP_PID" 2>/dev/null

# Usage: a header without a colon is refused without echoing it; a
# cookie file that cannot be read is refused.
run_post --header "Bearer tok-$RUN_TAG" "$LIGHTTPD_URL$MOUNT" <"$T_TMP/body"
expect_rc 2 "--header without a colon"
! grep -qF "tok-$RUN_TAG" "$T_TMP/err" && ok "--header without a colon: not echoed" ||
    fail "--header without a colon" "the value is echoed"
run_post --cookie "$T_TMP/no-such-jar" "$LIGHTTPD_URL$MOUNT" <"$T_TMP/body"
expect_rc 2 "--cookie with no such file"
grep -q -- '--header' "$T_TMP/help" && grep -q -- '--cookie-jar' "$T_TMP/help" &&
    ok "--help documents --header, --cookie, --cookie-jar" || fail "--help" "no credentials options"

# --- the demo shop's customers: a PHP session, a bearer token ---------------
# (the customers' sessions need the shop's sign-in form, login.php)
if [[ -n ${SHOP_LIGHTTPD_URL:-} && -n ${BEARER_LIGHTTPD_URL:-} &&
    -f $REPO/examples/shop/public/login.php ]]; then
	for s in $HTTP_SERVERS; do
		v=SHOP_${s^^}_URL shop=${!v}
		v=BEARER_${s^^}_URL bearer=${!v}
		rm -f "$T_TMP/ana.jar"
		st=$(curl -sS -o /dev/null -w '%{http_code}' -c "$T_TMP/ana.jar" \
		    -d user=ana -d password=ana-secret "$shop/login.php")
		[[ $st == 303 ]] && ok "$s shop: ana signed in" || fail "$s shop: sign in" "login.php: $st"

		w="$s shop, --cookie (ana's session)"
		new_sku sku T82-sess 50
		order_body "$sku" 2 >"$T_TMP/body"
		run_post --cookie "$T_TMP/ana.jar" "$shop$MOUNT" <"$T_TMP/body"
		expect_rc 0 "$w"
		expect_field outcome created "$w"
		oid=$(printf '%s' "$OUT" | jq -r .orderId 2>/dev/null)
		PRINCIPAL=customer-1001 expect_one_order "$(field key)" "$sku" 48 "$oid" "$w"
		expect_sql_value "$w: the order is ana's" customer-1001 \
		    "$(sql "SELECT principal_id FROM orders WHERE CONCAT('o-', id) = '$oid'")"

		w="$s bearer, --header @FILE (ana's token)"
		tok=$(curl -sS -b "$T_TMP/ana.jar" "$bearer/token.php" | jq -r '.access_token // empty')
		printf 'Authorization: Bearer %s\n' "$tok" >"$T_TMP/ana.headers"
		new_sku sku T82-bearer 50
		order_body "$sku" 2 >"$T_TMP/body"
		run_post --header "@$T_TMP/ana.headers" "$bearer$MOUNT" <"$T_TMP/body"
		expect_rc 0 "$w"
		expect_field outcome created "$w"
		oid=$(printf '%s' "$OUT" | jq -r .orderId 2>/dev/null)
		PRINCIPAL=customer-1001 expect_one_order "$(field key)" "$sku" 48 "$oid" "$w"
		expect_sql_value "$w: the order is ana's" customer-1001 \
		    "$(sql "SELECT principal_id FROM orders WHERE CONCAT('o-', id) = '$oid'")"
		! grep -qF "${tok:-none}" "$T_TMP/out" "$T_TMP/err" &&
		    ok "$w: the token is not printed" || fail "$w: secret" "printed"

		# The session's old cookie, kept from before signing out.
		w="$s shop, signed out"
		cp "$T_TMP/ana.jar" "$T_TMP/ana-old.jar"
		# The "Sign out" button: a POST with the CSRF token the pages render.
		csrf=$(curl -sS -b "$T_TMP/ana.jar" "$shop/" |
		    sed -n 's/.*name="csrf" value="\([0-9a-f]*\)".*/\1/p' | head -n 1)
		st=$(curl -sS -o /dev/null -w '%{http_code}' -b "$T_TMP/ana.jar" -c "$T_TMP/ana.jar" \
		    --data "csrf=$csrf" "$shop/logout.php")
		[[ $st == 303 ]] && ok "$w: logout.php 303" || fail "$w: sign out" "logout.php: $st"
		new_sku sku T82-out 50
		order_body "$sku" 1 >"$T_TMP/body"
		run_post --cookie "$T_TMP/ana-old.jar" "$shop$MOUNT" <"$T_TMP/body"
		expect_rc 1 "$w"
		expect_field status 401 "$w"
		expect_sql_value "$w: nothing for the key" 0 "$(PRINCIPAL=customer-1001 ledger_rows "$(field key)")"
		expect_sql_value "$w: stock untouched" 50 "$(stock_of "$sku")"
	done
fi

# --- --list: the caller's own orders, a page or all ------------------------
for args in "--list --limit 0" "--list --limit 101" "--list --starting-after x" \
    "--list --starting-after o-1 --ending-before o-2" "--limit 5" "--all" \
    "--list --key k" "--list --cancel o-1"; do
	# shellcheck disable=SC2086
	run_post $args "$LIGHTTPD_URL$MOUNT" </dev/null
	expect_rc 2 "idem-post $args"
done
for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	new_sku sku T82-list 10
	made=()
	for i in 1 2 3; do
		order_body "$sku" 1 >"$T_TMP/body"
		run_post "$url$MOUNT" -u "$ALICE" <"$T_TMP/body"
		made=("$(printf '%s' "$OUT" | jq -r .orderId)" "${made[@]}")
	done
	w="$s --list --limit 2"
	run_post --list --limit 2 "$url$MOUNT" -u "$ALICE"
	expect_rc 0 "$w"
	expect_field outcome listed "$w"
	expect_field pages 1 "$w"
	expect_field next "${made[1]}" "$w"
	got=$(printf '%s' "$OUT" | jq -r '[.data[].orderId] | join(" ")')
	[[ $got == "${made[0]} ${made[1]}" ]] && ok "$w: the newest two" || fail "$w" "got '$got', made ${made[*]}"
	w="$s --list --limit 2 --starting-after ${made[1]}"
	run_post --list --limit 2 --starting-after "${made[1]}" "$url$MOUNT" -u "$ALICE"
	expect_rc 0 "$w"
	[[ $(printf '%s' "$OUT" | jq -r '.data[0].orderId') == "${made[2]}" ]] &&
	    ok "$w: ${made[2]} next" || fail "$w" "$(head -c 200 <<<"$OUT")"
	w="$s --list --all --limit 100"
	run_post --list --all --limit 100 "$url$MOUNT" -u "$ALICE"
	expect_rc 0 "$w"
	pages=$(field pages)
	[[ $pages =~ ^[0-9]+$ && $pages -ge 1 && $(printf '%s\n' "$OUT" | wc -l) -eq $pages ]] &&
	    ok "$w: $pages pages, one a line" || fail "$w" "pages=$pages, $(printf '%s\n' "$OUT" | wc -l) lines"
	got=$(printf '%s\n' "$OUT" | head -n 1 | jq -r '[.data[0:3][].orderId] | join(" ")')
	[[ $got == "${made[*]}" ]] && ok "$w: the newest first" || fail "$w" "first page starts: $got"
	expect_sql_value "$w: every order of alice's, once" \
	    "$(sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'")" \
	    "$(printf '%s\n' "$OUT" | jq -r '.data[].orderId' | sort -u | wc -l)"
	expect_field next - "$w: the last page has no next"
	w="$s --list --ending-before an unknown order"
	run_post --list --ending-before o-99999999999 "$url$MOUNT" -u "$ALICE"
	expect_rc 1 "$w"
	expect_field code VALIDATION_FAILED "$w"
	expect_field attempts 1 "$w"
	w="$s --list as bob"
	run_post --list --limit 100 "$url$MOUNT" -u "$BOB"
	expect_rc 0 "$w"
	[[ " $(printf '%s' "$OUT" | jq -r '[.data[].orderId] | join(" ")') " != *" ${made[0]} "* ]] &&
	    ok "$w: not alice's orders" || fail "$w" "holds ${made[0]}"
done

pool_wait_full 40 || fail "pool" "fewer workers than configured after the crashes"
finish
