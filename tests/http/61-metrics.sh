#!/usr/bin/env bash
# GET /orders/_metrics through lighttpd and Apache, parsed by a real
# Prometheus exposition parser (python3-prometheus-client):
#   1. metrics = off (the default): 404 NOT_FOUND;
#   2. metrics = on (added to the stack's config, SIGHUP): every counter
#      moves by exactly the requests sent (creates, a replay, a conflict,
#      a 400, a 410, a 404, a 401, a 403, a 405), attempts and DB errors
#      by class too, the duration histogram counts every request, and
#      the only request in flight is the scrape itself;
#      a retried attempt counts two attempts and a transient DB error (an
#      injected deadlock), a request in progress is in
#      flight, a worker crashing in mid-request leaves the gauge;
#   3. concurrent scrapes answered by different workers all show the
#      pool's totals;
#   4. kill -9 of a worker: crashes and starts move by one, the totals
#      survive; SIGHUP: every worker recycled, the totals survive;
#   4b. the outbox's gauges (pending events, the oldest one's age, dead
#      ones) say what the events table holds;
#   5. back to metrics = off: 404 again.
# The stack's config is restored (and the pool reloaded) on exit.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
# shellcheck source=tests/lib/orders.sh
. "$(dirname -- "$0")/../lib/orders.sh"

SKU=T61-MET
PRICE=100
CONF_SAVED=$T_TMP/idemorders.conf.orig
MASTER=$(cat "$SERVE_PIDFILE" 2>/dev/null)
# Debian's interpreter, which python3-prometheus-client installs into.
PY=/usr/bin/python3

if ! "$PY" -c 'import prometheus_client.parser' 2>"$T_TMP/py.err"; then
	fail "python3-prometheus-client" "$(cat "$T_TMP/py.err")"
	finish
fi
if [[ -z $MASTER ]] || ! kill -0 "$MASTER" 2>/dev/null; then
	fail "pool master" "no live pid in $SERVE_PIDFILE"
	finish
fi

# The exposition on stdin as "NAME{LABELS} VALUE" lines, one per sample,
# labels sorted; the parse fails on anything the format does not allow.
cat >"$T_TMP/parse.py" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families

types = {}
for fam in text_string_to_metric_families(sys.stdin.read()):
    types[fam.name] = fam.type
    for s in fam.samples:
        labels = ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))
        v = s.value
        v = "%d" % v if float(v).is_integer() else repr(v)
        print("%s{%s} %s" % (s.name, labels, v))
for name, t in sorted(types.items()):
    print("TYPE %s %s" % (name, t))
EOF

# The live (non-zombie) children of the master, sorted.
children() {
	local p st
	for p in $(pgrep -P "$MASTER" 2>/dev/null); do
		st=$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null) || continue
		[[ -n $st && $st != Z ]] && echo "$p"
	done | LC_ALL=C sort
}
WANT=$(sed -n 's/^[[:space:]]*workers[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' "$IDEMORDERS_CONF" | tail -n 1)
WANT=${WANT:-4}

# reload_pool: SIGHUP the master, wait until every worker is a new one.
reload_pool() {
	local old i now
	old=$(children)
	kill -HUP "$MASTER"
	for ((i = 0; i < 150; i++)); do
		now=$(children)
		if [[ $(echo "$now" | grep -c .) -eq $WANT &&
		    -z $(LC_ALL=C comm -12 <(echo "$old") <(echo "$now")) ]]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# set_metrics on|off: the stack's config with or without `metrics = on`.
set_metrics() {
	grep -v '^[[:space:]]*metrics[[:space:]]*=' "$CONF_SAVED" >"$IDEMORDERS_CONF.tmp"
	[[ $1 == on ]] && echo "metrics = on" >>"$IDEMORDERS_CONF.tmp"
	cat "$IDEMORDERS_CONF.tmp" >"$IDEMORDERS_CONF"
	rm -f "$IDEMORDERS_CONF.tmp"
}

restore() {
	if [[ -f $CONF_SAVED ]] && ! cmp -s "$CONF_SAVED" "$IDEMORDERS_CONF"; then
		cat "$CONF_SAVED" >"$IDEMORDERS_CONF"
		reload_pool >/dev/null 2>&1
	fi
	rm -rf "$T_TMP"
}
cp "$IDEMORDERS_CONF" "$CONF_SAVED"
trap restore EXIT

# scrape SERVER OUT: GET the metrics through SERVER, parsed into OUT.
SCRAPES=0
scrape() {
	local url
	url=$(url_of "$1")
	req GET "$url$MOUNT/_metrics"
	SCRAPES=$((SCRAPES + 1))
	: >"$2"
	[[ $STATUS == 200 ]] || return 1
	"$PY" "$T_TMP/parse.py" <"$T_TMP/body" >"$2" 2>"$T_TMP/parse.err"
}

# val FILE SAMPLE: the value of SAMPLE (e.g. 'x_total{outcome="ok"}').
val() {
	awk -v k="$2" '$1 == k { print $2; found = 1 } END { if (!found) print "missing" }' "$1"
}

REQ='idemorders_requests_total'
HIST='idemorders_request_duration_seconds'
OUTCOMES="created cancelled replayed recovered conflict expired rejected out_of_stock
in_progress unconfirmed retry_limit deadline dropped ok bad_request
unauthenticated forbidden not_found method_not_allowed unavailable
internal_error other"
CLASSES="duplicate transient lost outcome-unknown unavailable fatal other"

# expect_delta WHAT A B SAMPLE N: SAMPLE grew by exactly N from A to B
# (N may be a range LOW..HIGH).
expect_delta() {
	local what=$1 a b lo=${5%..*} hi=${5#*..}
	a=$(val "$2" "$4")
	b=$(val "$3" "$4")
	if [[ $a == missing || $b == missing ]]; then
		fail "$what: $4" "sample missing (before $a, after $b)"
	elif [[ $((b - a)) -ge $lo && $((b - a)) -le $hi ]]; then
		ok "$what: $4 +$((b - a))"
	else
		fail "$what: $4" "expected +$5, got $a -> $b"
	fi
}

# expect_deltas WHAT A B OUTCOME=N... : every outcome label, every DB
# error class and the worker counters moved by the given amounts (0 when
# not named: "db:CLASS=N", "attempts=N", "starts=N", "crashes=N",
# "recycles=N", "changed=N", "requests=N" the sum over all outcomes).
expect_deltas() {
	local what=$1 a=$2 b=$3 kv o n total=0
	shift 3
	declare -A want=()
	for kv in "$@"; do
		want[${kv%%=*}]=${kv#*=}
	done
	for o in $OUTCOMES; do
		n=${want[$o]:-0}
		total=$((total + n))
		expect_delta "$what" "$a" "$b" "$REQ{outcome=\"$o\"}" "$n"
	done
	for o in $CLASSES; do
		expect_delta "$what" "$a" "$b" "idemorders_db_errors_total{class=\"$o\"}" "${want[db:$o]:-0}"
	done
	expect_delta "$what" "$a" "$b" "idemorders_attempts_total{}" "${want[attempts]:-0}"
	expect_delta "$what" "$a" "$b" "idemorders_worker_starts_total{}" "${want[starts]:-0}"
	expect_delta "$what" "$a" "$b" "idemorders_worker_crashes_total{}" "${want[crashes]:-0}"
	expect_delta "$what" "$a" "$b" "idemorders_worker_recycles_total{}" "${want[recycles]:-0}"
	expect_delta "$what" "$a" "$b" "idemorders_stock_changed_total{}" "${want[changed]:-0}"
	# The histogram counts every answered request, once.
	expect_delta "$what" "$a" "$b" "${HIST}_count{}" "$total"
	expect_delta "$what" "$a" "$b" "${HIST}_bucket{le=\"+Inf\"}" "$total"
}

# expect_in_flight WHAT FILE N
expect_in_flight() {
	local v
	v=$(val "$2" "idemorders_requests_in_flight{}")
	[[ $v == "$3" ]] && ok "$1: requests in flight $3 (the scrape included)" ||
	    fail "$1: requests in flight" "expected $3, got $v"
}

# --- 1. metrics = off: 404 -------------------------------------------------

set_metrics off
if ! cmp -s "$CONF_SAVED" "$IDEMORDERS_CONF"; then
	reload_pool || fail "reload" "workers not replaced"
fi
for s in $HTTP_SERVERS; do
	req GET "$(url_of "$s")$MOUNT/_metrics"
	expect_problem 404 NOT_FOUND "$s metrics = off"
done

# --- 2. metrics = on: each counter moves by the requests sent --------------

set_metrics on
if reload_pool; then
	ok "SIGHUP with metrics = on: $WANT new workers"
else
	fail "SIGHUP with metrics = on" "workers now: $(children | tr '\n' ' ')"
fi

for s in $HTTP_SERVERS; do
	if scrape "$s" "$T_TMP/s0.$s"; then
		ok "$s metrics: 200, parsed ($(grep -c . "$T_TMP/s0.$s") samples)"
	else
		fail "$s metrics" "status $STATUS; parser: $(head -c 300 "$T_TMP/parse.err")"
	fi
	expect_header content-type "text/plain; version=0.0.4" "$s metrics"
	expect_header cache-control no-store "$s metrics"
	for t in "idemorders_requests counter" "$HIST histogram" \
	    "idemorders_attempts counter" "idemorders_db_errors counter" \
	    "idemorders_worker_starts counter" "idemorders_worker_crashes counter" \
	    "idemorders_worker_recycles counter" \
	    "idemorders_stock_changed counter" \
	    "idemorders_operation_requests counter" \
	    "idemorders_requests_in_flight gauge"; do
		check "$s metrics: TYPE $t" grep -qxF "TYPE $t" "$T_TMP/s0.$s"
	done
	expect_in_flight "$s metrics" "$T_TMP/s0.$s" 1
done
# The second scrape saw the first one, answered.
expect_deltas "lighttpd scrape -> apache scrape" "$T_TMP/s0.lighttpd" \
    "$T_TMP/s0.apache" ok=1

set_stock "$SKU" KRW "$PRICE" 1000000
body_for() { printf '{"currency":"KRW","items":[{"sku":"%s","qty":%s}],"amount":%s}' "$SKU" "$1" "$(($1 * PRICE))"; }
scrape apache "$T_TMP/a" || fail "scrape before the requests" "status $STATUS"

declare -a KEYS=()
n_created=0
for i in 1 2 3 4; do
	s=lighttpd
	((i > 2)) && s=apache
	KEYS[i]=$(unique_key "t61-$i")
	post "$(url_of "$s")" "$ALICE" "${KEYS[i]}" "$(body_for 1)"
	[[ $STATUS == 201 ]] && n_created=$((n_created + 1))
	expect_status 201 "$s create $i"
done
post "$LIGHTTPD_URL" "$ALICE" "${KEYS[1]}" "$(body_for 1)"
expect_status 201 "replay"
expect_header idempotent-replayed true "replay"
post "$APACHE_URL" "$ALICE" "${KEYS[1]}" "$(body_for 2)"
expect_problem 409 IDEMPOTENCY_KEY_REUSED "conflict"
post "$LIGHTTPD_URL" "$ALICE" "$(unique_key t61-bad)" '{"currency":'
expect_status 400 "malformed body"
sql "UPDATE idempotency_records SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR
    WHERE principal_id = 'alice' AND idem_key = '${KEYS[2]}'"
post "$APACHE_URL" "$ALICE" "${KEYS[2]}" "$(body_for 1)"
expect_problem 410 IDEMPOTENCY_KEY_EXPIRED "expired key"
req GET "$LIGHTTPD_URL$MOUNT/o-999999999999" -u "$ALICE"
expect_problem 404 ORDER_NOT_FOUND "unknown order"
fcgi_req -d "$(body_for 1)" POST "$MOUNT" CONTENT_TYPE=application/json \
    HTTP_IDEMPOTENCY_KEY="$(unique_key t61-anon)"
expect_status 401 "POST without a principal (FastCGI socket)"
fcgi_req GET "$MOUNT/_metrics" REMOTE_ADDR=192.0.2.7
expect_problem 403 FORBIDDEN "metrics to a non-loopback REMOTE_ADDR (FastCGI socket)"
expect_body_json .title Forbidden "metrics to a non-loopback REMOTE_ADDR (FastCGI socket)"
req POST "$APACHE_URL$MOUNT/_metrics" -d x
expect_problem 405 METHOD_NOT_ALLOWED "POST metrics"
expect_header allow "GET, HEAD" "POST metrics"

scrape lighttpd "$T_TMP/b" || fail "scrape after the requests" "status $STATUS"
# The replay, the conflict and the expired key may meet a 1062 on the
# ledger insert or find the row by a read first: up to 3 duplicates.
expect_deltas "13 requests" "$T_TMP/a" "$T_TMP/b" ok=1 created=4 replayed=1 \
    conflict=1 bad_request=1 expired=1 not_found=1 unauthenticated=1 \
    forbidden=1 method_not_allowed=1 attempts=7 db:duplicate=0..3
expect_in_flight "after the requests" "$T_TMP/b" 1
sa=$(val "$T_TMP/a" "${HIST}_sum{}")
sb=$(val "$T_TMP/b" "${HIST}_sum{}")
if awk -v a="$sa" -v b="$sb" 'BEGIN { exit !(b > a) }'; then
	ok "duration sum grew ($sa -> $sb s)"
else
	fail "duration sum" "$sa -> $sb"
fi
# Buckets are cumulative.
if awk -v h="${HIST}_bucket" '
	index($1, h "{") == 1 { v = $2 + 0; if (v < last) bad = 1; last = v; n++ }
	END { exit !(n == 14 && !bad) }' "$T_TMP/b"; then
	ok "14 cumulative buckets, +Inf last"
else
	fail "histogram buckets" "$(grep "${HIST}_bucket" "$T_TMP/b" | tr '\n' ' ')"
fi

# The same requests by operation: each POST /orders under create-order
# (not the 401, answered before any handler).
OP=idemorders_operation_requests_total
for kv in created=4 replayed=1 conflict=1 bad_request=1 expired=1 \
    unauthenticated=0 cancelled=0; do
	expect_delta "13 requests, create-order" "$T_TMP/a" "$T_TMP/b" \
	    "$OP{operation=\"create-order\",outcome=\"${kv%%=*}\"}" "${kv#*=}"
done
expect_delta "13 requests, cancel-order" "$T_TMP/a" "$T_TMP/b" \
    "$OP{operation=\"cancel-order\",outcome=\"created\"}" 0

# A create, its cancel and the cancel's replay: the cancel and the
# replay under cancel-order.
scrape lighttpd "$T_TMP/c0" || fail "scrape before a cancel" "status $STATUS"
post "$APACHE_URL" "$ALICE" "$(unique_key t61-to-cancel)" "$(body_for 1)"
expect_status 201 "create to cancel"
coid=$(printf '%s' "$BODY" | jq -r .orderId)
ckey=$(unique_key t61-cancel)
for s in lighttpd apache; do
	req POST "$(url_of "$s")$MOUNT/$coid/cancel" -u "$ALICE" \
	    -H "Idempotency-Key: $ckey" -H 'Content-Type: application/json' \
	    --data-binary '{}'
	expect_status 200 "$s cancel $coid"
done
scrape apache "$T_TMP/c1" || fail "scrape after a cancel" "status $STATUS"
expect_deltas "a create, a cancel and its replay" "$T_TMP/c0" "$T_TMP/c1" \
    ok=1 created=1 cancelled=1 replayed=1 attempts=3 db:duplicate=0..1
for kv in cancelled=1 replayed=1 created=0; do
	expect_delta "a cancel and its replay, cancel-order" "$T_TMP/c0" "$T_TMP/c1" \
	    "$OP{operation=\"cancel-order\",outcome=\"${kv%%=*}\"}" "${kv#*=}"
done
for kv in created=1 replayed=0 cancelled=0; do
	expect_delta "a cancel and its replay, create-order" "$T_TMP/c0" "$T_TMP/c1" \
	    "$OP{operation=\"create-order\",outcome=\"${kv%%=*}\"}" "${kv#*=}"
done

# A create whose SKU is repriced between its read and its final round
# trip (held 3 s after judging): the guard refuses, it is judged again
# under the lock (422 AMOUNT_MISMATCH), counted; the price is restored.
scrape lighttpd "$T_TMP/g0" || fail "scrape before the stock change" "status $STATUS"
curl -s -o /dev/null -w '%{http_code}' --max-time 30 -u "$ALICE" \
    -H "Idempotency-Key: $(unique_key t61-changed)" \
    -H 'Content-Type: application/json' \
    -H 'X-Idemorders-Fault: after_judge=sleep3000' \
    --data-binary "$(body_for 1)" "$LIGHTTPD_URL$MOUNT" >"$T_TMP/changed.code" &
changed=$!
# Reprice once the create has judged: its worker sleeps after_judge.
worker_asleep "$(cat "$SERVE_PIDFILE")" >/dev/null ||
    fail "create repriced after judging" "no worker asleep after judging"
sql "UPDATE stock SET unit_price = unit_price + 1 WHERE sku = '$SKU'" >/dev/null
wait "$changed"
sql "UPDATE stock SET unit_price = $PRICE WHERE sku = '$SKU'" >/dev/null
[[ $(cat "$T_TMP/changed.code") == 422 ]] && ok "create repriced after judging: 422" ||
    fail "create repriced after judging" "status $(cat "$T_TMP/changed.code")"
scrape apache "$T_TMP/g1" || fail "scrape after the stock change" "status $STATUS"
expect_deltas "a create repriced after judging" "$T_TMP/g0" "$T_TMP/g1" ok=1 \
    rejected=1 attempts=1 changed=1

# --- 2b. a retried attempt, a request in flight, a crash in mid-request ----

# (fault injection, as in the test stack's build)
scrape lighttpd "$T_TMP/f0" || fail "scrape before the faults" "status $STATUS"
n0=$SCRAPES
post "$LIGHTTPD_URL" "$ALICE" "$(unique_key t61-retry)" "$(body_for 1)" \
    -H 'X-Idemorders-Fault: after_order_insert=transient1'
expect_status 201 "create after an injected deadlock"
curl -s -o "$T_TMP/slow.body" -w '%{http_code}' --max-time 30 -u "$ALICE" \
    -H "Idempotency-Key: $(unique_key t61-slow)" \
    -H 'Content-Type: application/json' \
    -H 'X-Idemorders-Fault: after_ledger_insert=sleep2000' \
    --data-binary "$(body_for 1)" "$LIGHTTPD_URL$MOUNT" >"$T_TMP/slow.code" &
slow=$!
sleep 1
scrape apache "$T_TMP/f1" || fail "scrape during a slow request" "status $STATUS"
expect_in_flight "during a 2 s request" "$T_TMP/f1" 2
wait "$slow"
[[ $(cat "$T_TMP/slow.code") == 201 ]] && ok "slow create: 201" ||
    fail "slow create" "status $(cat "$T_TMP/slow.code")"
post "$APACHE_URL" "$ALICE" "$(unique_key t61-crash)" "$(body_for 1)" \
    -H 'X-Idemorders-Fault: after_order_insert=crash'
[[ $STATUS == 5* ]] && ok "worker crash in mid-request: $STATUS" ||
    fail "worker crash in mid-request" "status $STATUS"
# The master reaps the worker (crashes +1, its request leaves the gauge)
# and forks a new one (after a second if it had just started).
for ((i = 0; i < 60; i++)); do
	scrape lighttpd "$T_TMP/f2" || break
	[[ $(val "$T_TMP/f2" "idemorders_worker_starts_total{}") -gt \
	    $(val "$T_TMP/f0" "idemorders_worker_starts_total{}") &&
	    $(children | grep -c .) -eq $WANT ]] && break
	sleep 0.2
done
expect_deltas "retry, slow request, crash" "$T_TMP/f0" "$T_TMP/f2" \
    ok=$((SCRAPES - 1 - n0 + 1)) created=2 attempts=3 db:transient=1 \
    crashes=1 starts=1
expect_in_flight "after the crash" "$T_TMP/f2" 1
scrape lighttpd "$T_TMP/b" || fail "scrape after the faults" "status $STATUS"

# --- 3. concurrent scrapes: any worker shows the pool's totals -------------

logf=$LOGDIR/idemorders.log
lines0=$(wc -l <"$logf")
for i in $(seq 1 12); do
	s=lighttpd
	((i % 2)) && s=apache
	echo "$(url_of "$s")$MOUNT/_metrics $T_TMP/c.$i"
done | xargs -P 12 -n 2 sh -c 'curl -s -o "$2" --max-time 30 "$1"' sh
good=0
for i in $(seq 1 12); do
	"$PY" "$T_TMP/parse.py" <"$T_TMP/c.$i" >"$T_TMP/c.$i.p" 2>/dev/null || continue
	same=1
	for o in created replayed conflict expired bad_request not_found; do
		[[ $(val "$T_TMP/c.$i.p" "$REQ{outcome=\"$o\"}") == "$(val "$T_TMP/b" "$REQ{outcome=\"$o\"}")" ]] || same=0
	done
	[[ $same == 1 ]] && good=$((good + 1))
done
[[ $good -eq 12 ]] && ok "12 concurrent scrapes: all show the same totals" ||
    fail "concurrent scrapes" "$good/12 parsed with the totals of the last scrape"
pids=$(tail -n +"$((lines0 + 1))" "$logf" | grep 'GET /orders/_metrics 200' |
    sed -n 's/.*idemorders\[\([0-9]*\)\].*/\1/p' | sort -u | grep -c .)
[[ $pids -ge 2 ]] && ok "the concurrent scrapes were answered by $pids workers" ||
    fail "concurrent scrapes" "answered by $pids worker(s) only"
scrape apache "$T_TMP/c" || fail "scrape after the concurrent ones" "status $STATUS"
expect_deltas "12 concurrent scrapes" "$T_TMP/b" "$T_TMP/c" ok=13

# --- 4. kill -9 of a worker; SIGHUP -----------------------------------------

before=$(children)
victim=$(echo "$before" | head -n 1)
kill -KILL "$victim"
# Wait until the master has reaped and replaced it, scraping meanwhile.
prev=$T_TMP/c
n=0
for ((i = 0; i < 50; i++)); do
	now=$(children)
	if [[ $(echo "$now" | grep -c .) -eq $WANT ]] && ! echo "$now" | grep -qx "$victim"; then
		break
	fi
	sleep 0.1
done
scrape lighttpd "$T_TMP/d" || fail "scrape after kill -9" "status $STATUS"
expect_deltas "kill -9 of worker $victim" "$T_TMP/c" "$T_TMP/d" ok=1 \
    crashes=1 starts=1
expect_in_flight "after kill -9" "$T_TMP/d" 1

if reload_pool; then
	ok "SIGHUP: $WANT new workers"
else
	fail "SIGHUP" "workers now: $(children | tr '\n' ' ')"
fi
# The old workers are reaped right after they exit; give the master a
# moment for the last one.
for ((i = 0; i < 20; i++)); do
	scrape apache "$T_TMP/e" || break
	[[ $(( $(val "$T_TMP/e" "idemorders_worker_recycles_total{}") -
	    $(val "$T_TMP/d" "idemorders_worker_recycles_total{}") )) -ge $WANT ]] && break
	sleep 0.2
done
extra=$((i))
expect_deltas "SIGHUP" "$T_TMP/d" "$T_TMP/e" ok=$((1 + extra)) \
    starts="$WANT" recycles="$WANT"
for o in created replayed conflict expired; do
	a=$(val "$T_TMP/b" "$REQ{outcome=\"$o\"}")
	e=$(val "$T_TMP/e" "$REQ{outcome=\"$o\"}")
	[[ $a == "$e" && $a != missing && $a -gt 0 ]] &&
	    ok "$o = $a survived kill -9 and SIGHUP" ||
	    fail "$o after kill -9 and SIGHUP" "$a -> $e"
done

# --- 4b. the outbox's gauges, read from the database at the scrape --------
# (no receiver listens during this script: its events stay pending.)
post "$LIGHTTPD_URL" "$ALICE" "$(unique_key t61-ev)" \
    '{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}'
scrape lighttpd "$T_TMP/ev.m"
read -r pend dead age <<<"$(sql "SELECT SUM(state = 'pending'), SUM(state = 'dead'),
    IFNULL(TIMESTAMPDIFF(SECOND, MIN(IF(state = 'pending', created_at, NULL)), UTC_TIMESTAMP(6)), 0)
    FROM events")"
got_p=$(val "$T_TMP/ev.m" "idemorders_events_pending{}")
got_d=$(val "$T_TMP/ev.m" "idemorders_events_dead{}")
got_a=$(val "$T_TMP/ev.m" "idemorders_events_oldest_pending_age_seconds{}")
if [[ $got_p == "$pend" && $got_p -ge 1 ]]; then
	ok "idemorders_events_pending $got_p, as the table says"
else
	fail "idemorders_events_pending" "scraped $got_p, the table has $pend"
fi
[[ $got_d == "$dead" ]] && ok "idemorders_events_dead $got_d, as the table says" ||
    fail "idemorders_events_dead" "scraped $got_d, the table has $dead"
if [[ $got_a != missing ]] && awk -v g="$got_a" -v w="$age" 'BEGIN { exit !(g > 0 && g >= w - 5 && g <= w + 5) }'; then
	ok "idemorders_events_oldest_pending_age_seconds $got_a (the table: ${age} s)"
else
	fail "oldest pending age" "scraped $got_a, the table: $age s"
fi

# --- 5. metrics = off again: 404 --------------------------------------------

set_metrics off
reload_pool || fail "reload with metrics = off" "workers not replaced"
for s in $HTTP_SERVERS; do
	req GET "$(url_of "$s")$MOUNT/_metrics"
	expect_problem 404 NOT_FOUND "$s metrics = off again"
done

finish
