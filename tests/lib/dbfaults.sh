# tests/lib/dbfaults.sh -- database faults for the HTTP test scripts.
# shellcheck shell=bash
# Sourced after tests/lib/http.sh and tests/chaos/order-helpers.sh (which
# brings tests/lib/pool.sh: pool_swap [--proxy|--tcp], pool_restore,
# expect_no_asan_reports).
#
#   DB_TCP_PORT                  the stack's MariaDB on 127.0.0.1 (pool_swap
#                                --tcp)
#   proxy_start                  start tests/dbproxy/dbproxy in front of
#                                the test stack's MariaDB (its unix socket)
#   proxy CMD...                 one control command (pass, cut,
#                                cut-after-bytes N server|client, hold,
#                                delay MS, refuse, stats); prints the answer
#                                and fails unless it starts with "ok"
#   proxy_stat NAME              one counter of `stats` (open, cuts, ...)
#   proxy_cleanup                the EXIT trap of a script using the proxy:
#                                pass, the stack's pool back, proxy stopped
#   db_root_sql "STATEMENT"      SQL as root, no database selected
#   expect_rows_sane KEY SKU INITIAL QTY WHAT
#                                after any answer: at most one order for
#                                KEY; a 201 names it; the ledger row is
#                                SUCCEEDED exactly when there is an order;
#                                stock = INITIAL - QTY x orders
#   now_ms                       milliseconds since the epoch
#   two_line_orders PREFIX | warm_statements PREFIX
#   bg_get OUT URL | parked_cut OUT URL KEY BODY FAULT CMD... | settle_reads
#   expect_status_in WHAT STATUS... | expect_503_retry WHAT
#   expect_within WHAT MS (BOUND_MS) | retry_creates_one KEY SKU INITIAL QTY BODY URL WHAT

_off=${IDEMORDERS_PORT_OFFSET:-0}
case $IDEMORDERS_STACK in
dev)	_dbport=3307 ;;
bench)	_dbport=23307 ;;
*)	_dbport=13307 ;;
esac
: "${DB_TCP_PORT:=$((_dbport + _off))}"	# the stack's MariaDB on 127.0.0.1
: "${DBPROXY_PORT:=$((_dbport + _off + 20))}"
: "${DBPROXY_CONTROL_PORT:=$((_dbport + _off + 21))}"
unset _off _dbport
DBPROXY_BIN=$BUILD_DIR/tests/dbproxy/dbproxy
PROXY_PID=

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# proxy_start: the fault proxy on DBPROXY_PORT, control DBPROXY_CONTROL_PORT
# (the stack's own when it runs one: IDEMORDERS_DB_PROXY=1).
proxy_start() {
	local i
	if (exec 3<>"/dev/tcp/127.0.0.1/$DBPROXY_CONTROL_PORT") 2>/dev/null; then
		proxy pass >/dev/null &&
		    ok "the stack's dbproxy on 127.0.0.1:$DBPROXY_PORT"
		return
	fi
	if [[ ! -x $DBPROXY_BIN ]]; then
		fail "dbproxy" "not built: $DBPROXY_BIN"
		return 1
	fi
	"$DBPROXY_BIN" -l "$DBPROXY_PORT" -u "$DB_SOCKET" \
	    -c "$DBPROXY_CONTROL_PORT" 2>>"$LOGDIR/dbproxy-$TEST_NAME.log" &
	PROXY_PID=$!
	for ((i = 0; i < 50; i++)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$DBPROXY_CONTROL_PORT") 2>/dev/null; then
			ok "dbproxy on 127.0.0.1:$DBPROXY_PORT (control :$DBPROXY_CONTROL_PORT)"
			return 0
		fi
		kill -0 "$PROXY_PID" 2>/dev/null || break
		sleep 0.1
	done
	fail "dbproxy" "did not start: $(tail -n 3 "$LOGDIR/dbproxy-$TEST_NAME.log" 2>/dev/null)"
	return 1
}

proxy_stop() {
	[[ -n $PROXY_PID ]] || return 0
	kill -TERM "$PROXY_PID" 2>/dev/null
	wait "$PROXY_PID" 2>/dev/null
	PROXY_PID=
}

proxy_cleanup() {
	[[ -n $PROXY_PID ]] && proxy pass >/dev/null 2>&1
	pool_restore
	proxy_stop
	rm -rf "$T_TMP"
}

# proxy CMD...: send one command, print the answer.
proxy() {
	local answer=
	if ! exec 7<>"/dev/tcp/127.0.0.1/$DBPROXY_CONTROL_PORT"; then
		fail "proxy $*" "control port closed"
		return 1
	fi
	printf '%s\n' "$*" >&7
	read -r -t 10 answer <&7
	exec 7>&-
	printf '%s\n' "$answer"
	[[ $answer == ok* ]] && return 0
	fail "proxy $*" "answered '$answer'"
	return 1
}

# proxy_stat NAME: one counter of `stats`.
proxy_stat() {
	proxy stats | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# db_root_sql "STATEMENT": as root, no database selected.
db_root_sql() {
	mariadb --defaults-file="$REPO/var/$IDEMORDERS_STACK/my.cnf" -N -B -e "$1"
}

# expect_rows_sane KEY SKU INITIAL QTY WHAT: judged by rows, whatever the
# answer was (STATUS, BODY of the last request).
expect_rows_sane() {
	local key=$1 sku=$2 initial=$3 qty=$4 what=$5 n oid st
	n=$(orders_for "$key")
	st=$(ledger_status "$key")
	if [[ $n == 0 || $n == 1 ]]; then
		ok "$what: at most one order for the key ($n)"
	else
		fail "$what: one order per key" "$n orders"
	fi
	expect_sql_value "$what: stock conserved ($initial = available + sold)" \
	    $((initial - qty * ${n:-0})) "$(stock_of "$sku")"
	if [[ $n == 1 ]]; then
		expect_sql_value "$what: the order has a SUCCEEDED ledger row" SUCCEEDED "$st"
	else
		[[ $st != SUCCEEDED && $st != PROCESSING ]] &&
		    ok "$what: no order, no SUCCEEDED/PROCESSING row (${st:-none})" ||
		    fail "$what: ledger without order" "ledger status $st, $n orders"
	fi
	if [[ $STATUS == 201 ]]; then
		oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
		expect_sql_value "$what: the 201's orderId is committed" "$oid" "$(order_of "$key")"
	fi
}

# two_line_orders PREFIX: from now on order_body SKU QTY gives two lines,
# SKU and a second SKU of the script's own (SKU2), so that the stock rows
# locked FOR UPDATE come back as a result of two rows.
two_line_orders() {
	new_sku SKU2 "$1-second" 100000
	order_body() {
		printf '{"currency":"KRW","items":[{"sku":"%s","qty":%d},{"sku":"%s","qty":1}],"amount":%d}' \
		    "$1" "$2" "$SKU2" $(($2 * 1000 + 1000))
	}
}

# warm_statements PREFIX: prepare every statement on each of the 4
# workers' connections (statements are prepared on first use), so that
# cuts land in executes and fetches, not only in prepares: four requests
# at once, one per worker, each held a moment inside its transaction,
# then four duplicates held before their ledger read.
warm_statements() {
	local warm_sku phase i body pids
	new_sku warm_sku "$1-warm" 100
	for phase in create duplicate; do
		pids=()
		for i in 1 2 3 4; do
			body=$(order_body "$warm_sku" 1)
			if [[ $phase == create ]]; then
				bg_post "$T_TMP/warm-$i" "$LIGHTTPD_URL" "$1-warm-$RUN_TAG-$i" "$body" after_ledger_insert=sleep300
			else
				bg_post "$T_TMP/warm-$i" "$LIGHTTPD_URL" "$1-warm-$RUN_TAG-$i" "$body" conflict_read=sleep300
			fi
			pids+=($!)
		done
		wait "${pids[@]}"
		for i in 1 2 3 4; do
			bg_load "$T_TMP/warm-$i"
			expect_status 201 "warm-up $phase $i"
		done
	done
}

# bg_get OUT URL: GET in the background as alice; OUT.status/.body/.ms.
bg_get() {
	local out=$1 url=$2
	(
		t0=$(date +%s%N)
		curl -s -o "$out.body" -D "$out.headers" -w '%{http_code}' \
		    --max-time 60 -u "$ALICE" "$url" >"$out.status" 2>/dev/null ||
		    echo 000 >"$out.status"
		echo $((($(date +%s%N) - t0) / 1000000)) >"$out.ms"
	) &
	BG_PID=$!
}

# settle_reads: a worker idle for a second with a read left open ends it
# (a ROLLBACK): wait that out, so that an armed cut meets the answer the
# test aims at, not that ROLLBACK's.
settle_reads() { sleep 1.2; }

# parked_cut OUT URL KEY BODY FAULT CMD...: POST with FAULT (a sleep at a
# fault point); once a worker sleeps there, send CMD to the proxy; wait
# for the answer, disarm the proxy, load the answer.  CUT is 1 when the
# proxy cut a connection meanwhile.
parked_cut() {
	local out=$1 url=$2 key=$3 body=$4 fault=$5 c0 pid
	shift 5
	settle_reads
	c0=$(proxy_stat cuts)
	bg_post "$out" "$url" "$key" "$body" "$fault"
	pid=$!
	# Armed once a worker sleeps in the fault point (or after 3 s of
	# looking, still within the sleep: CUT then says whether it worked).
	sleeping_worker >/dev/null ||
	    echo "note   parked_cut $fault: no worker seen sleeping; arming anyway"
	proxy "$@" >/dev/null
	wait "$pid"
	proxy pass >/dev/null
	bg_load "$out"
	CUT=0
	[[ $(proxy_stat cuts) -gt $c0 ]] && CUT=1
}

# expect_status_in WHAT STATUS...: the last answer is one of these.
expect_status_in() {
	local what=$1 s
	shift
	for s in "$@"; do
		if [[ $STATUS == "$s" ]]; then
			ok "$what: status $STATUS (one of $*)"
			return 0
		fi
	done
	fail "$what: status" "expected one of $*, got $STATUS $(printf '%s' "$BODY" | jq -r .code 2>/dev/null)"
	return 1
}

# expect_503_retry WHAT: 503 problem+json with Retry-After.
expect_503_retry() {
	expect_status 503 "$1"
	[[ -n $(hdr retry-after) ]] && ok "$1: Retry-After $(hdr retry-after)" ||
	    fail "$1: Retry-After" "missing"
}

# expect_within WHAT MS: answered within BOUND_MS, the only time limit
# the contract states (request_deadline, DEADLINE_S) plus the margin the
# script gives for a loaded machine (BOUND_MS - DEADLINE_S s).
expect_within() {
	local margin=$((BOUND_MS - DEADLINE_S * 1000))
	if [[ $2 -lt $BOUND_MS ]]; then
		ok "$1: answered in ${2} ms (deadline ${DEADLINE_S} s + margin ${margin} ms)"
	else
		fail "$1: bounded" "took ${2} ms, more than the deadline ${DEADLINE_S} s + margin ${margin} ms"
	fi
}

# retry_creates_one KEY SKU INITIAL QTY BODY URL WHAT: the same key once
# the fault is gone: 201, exactly one order, stock conserved.
retry_creates_one() {
	local key=$1 sku=$2 initial=$3 qty=$4 body=$5 url=$6 what=$7 oid
	post_order "$url" "$key" "$body"
	expect_status 201 "$what: retry with the same key"
	oid=$(printf '%s' "$BODY" | jq -r .orderId 2>/dev/null)
	expect_one_order "$key" "$sku" $((initial - qty)) "$oid" "$what: after the retry"
}
