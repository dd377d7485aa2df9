#!/usr/bin/env bash
# Apache mod_proxy_fcgi with enablereuse=on keeps its FastCGI connections
# open (FCGI_KEEP_CONN) and sends the next request on the same one.  A
# second Apache instance, started here from the stack's rendered config
# with enablereuse=on and 2 x 25 threads in front of the stack's 4
# workers, must answer every request: sequential ones on one kept
# connection, then many concurrent ones from more Apache threads than
# there are workers (without max=N a worker may drop an idle kept
# connection just as Apache sends on it: that 503 is retried, with the
# same key, as a client would), then after the workers were recycled (SIGHUP) while Apache
# still held their connections, then from a pool whose workers are
# recycled every few requests (max_requests) under load: a worker that
# served its last request must not close a connection Apache is about to
# reuse (AH01067, 503).  Nothing may stall (curl --max-time).
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
# shellcheck source=tests/lib/orders.sh
. "$(dirname -- "$0")/../lib/orders.sh"
# shellcheck source=tests/lib/pool.sh
. "$(dirname -- "$0")/../lib/pool.sh"

SRC_CONF=$RUNDIR/apache/apache2.conf
DIR=$RUNDIR/apache-reuse
PORT=$(( ${APACHE_URL##*:} + 7 ))
URL=http://127.0.0.1:$PORT

reuse_down() {
	local pid
	pid=$(cat "$DIR/apache2.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null
	for _ in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
}
priv=$(mktemp -d /tmp/idemorders-keepconn.XXXXXX)
chmod 0755 "$priv"
trap 'reuse_down; private_cleanup' EXIT

# The stack's Apache config, on another port and directory, proxy_fcgi
# only, enablereuse=on, and more threads than the responder has workers.
rm -rf "$DIR"
mkdir -p "$DIR"
sed -e "s|^Listen 127.0.0.1:.*|Listen 127.0.0.1:$PORT|" \
    -e "s|<VirtualHost 127.0.0.1:[0-9]*>|<VirtualHost 127.0.0.1:$PORT>|" \
    -e "s|$RUNDIR/apache\"|$DIR\"|g" -e "s|$RUNDIR/apache/|$DIR/|g" \
    -e "s|Mutex file:$RUNDIR/apache |Mutex file:$DIR |" \
    -e "s|apache-error.log|apache-reuse-error.log|" \
    -e "s|apache-access.log|apache-reuse-access.log|" \
    -e 's|enablereuse=off|enablereuse=on|' \
    -e 's|^\(\s*StartServers\s\+\).*|\12|' \
    -e 's|^\(\s*ServerLimit\s\+\).*|\12|' \
    -e 's|^\(\s*MaxRequestWorkers\s\+\).*|\150|' \
    -e '/^Include .*apache-fcgid.conf/d' "$SRC_CONF" >"$DIR/apache2.conf"
check "config has enablereuse=on" grep -q 'enablereuse=on' "$DIR/apache2.conf"
chown www-data "$DIR" 2>/dev/null || true
if ! apache2 -d "$DIR" -f "$DIR/apache2.conf" -k start 2>"$DIR/start.err"; then
	fail "start apache (enablereuse=on)" "$(cat "$DIR/start.err")"
	finish
fi
for _ in $(seq 1 100); do
	curl -s -o /dev/null --max-time 2 "$URL$MOUNT/_health" && break
	sleep 0.1
done

# Count the FastCGI connections Apache holds open to the socket.
kept_conns() {
	ss -xH state connected 2>/dev/null | grep -c -- "$FCGI_SOCKET" || true
}

# 1. Sequential requests: the second one goes on the kept connection.
n_ok=0
for i in $(seq 1 20); do
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 15 \
	    "$URL$MOUNT/_health")
	[[ $code == 200 ]] && n_ok=$((n_ok + 1))
done
if [[ $n_ok -eq 20 ]]; then
	ok "20 sequential requests on kept connections"
else
	fail "20 sequential requests on kept connections" "$n_ok answered 200"
fi
kept=$(kept_conns)
if [[ $kept -gt 0 ]]; then
	ok "connections kept open between requests ($kept)"
else
	fail "connections kept open between requests" "none open"
fi

# send_retrying URL [CURL-ARGS...]: one request, sent again (same
# arguments, so the same key) while Apache answers 503, at most 5 times;
# prints the last status.  Each 503 adds a line to $T_TMP/retried.
# Without max=N, more Apache connections than workers means a worker
# may drop an idle kept connection just as Apache sends on it: Apache
# answers that request 503 (httpd-conf/README.md), and the client's
# retry with its key is what keeps the promise.
send_retrying() {
	local code i
	for i in 1 2 3 4 5; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 "$@")
		[[ $code == 503 ]] || break
		echo "$i" >>"$T_TMP/retried"
		sleep 0.2
	done
	echo "$code"
}
export -f send_retrying
export T_TMP
retried() { wc -l <"$T_TMP/retried" 2>/dev/null || echo 0; }

# 2. Concurrent creates over more connections than workers: every one
# answered 201 in time (a 503 retried with its key), one order each.
set_stock KC-1 KRW 100 1000000
unique_name run t14
par_out=$T_TMP/par.out
seq 1 300 | xargs -P 24 -I{} bash -c 'send_retrying "$@"' _ \
    -u "$ALICE" -H "Idempotency-Key: kc-$run-{}" \
    -H 'Content-Type: application/json' \
    --data-binary '{"currency":"KRW","items":[{"sku":"KC-1","qty":1}],"amount":100}' \
    "$URL$MOUNT" >"$par_out"
n201=$(grep -c '^201$' "$par_out")
others=$(grep -v '^201$' "$par_out" | sort | uniq -c | tr '\n' ' ')
if [[ $n201 -eq 300 ]]; then
	ok "300 concurrent creates at 24 clients answered 201 ($(retried) retried after a 503)"
else
	fail "300 concurrent creates at 24 clients answered 201" \
	    "$n201 answered 201; others: $others; $(retried) retried after a 503"
fi
expect_sql "SELECT COUNT(*) FROM idempotency_records
    WHERE idem_key LIKE 'kc-$run-%'" 300
expect_sql "SELECT 1000000 - available FROM stock WHERE sku = 'KC-1'" 300
# 3. The workers are recycled while Apache holds their connections: the
# next requests reconnect and are answered.
kill -HUP "$(cat "$SERVE_PIDFILE")"
sleep 1
seq 1 60 | xargs -P 8 -I{} curl -s -o /dev/null -w '%{http_code}\n' \
    --max-time 30 "$URL$MOUNT/_health" >"$par_out"
n200=$(grep -c '^200$' "$par_out")
if [[ $n200 -ge 55 ]]; then
	ok "after a recycle: $n200 of 60 answered 200"
else
	fail "after a recycle" "$n200 of 60 answered 200: $(sort "$par_out" | uniq -c | tr '\n' ' ')"
fi
: >"$T_TMP/retried"
seq 1 60 | xargs -P 8 -I{} bash -c 'send_retrying "$@"' _ \
    "$URL$MOUNT/_health" >"$par_out"
n200=$(grep -c '^200$' "$par_out")
if [[ $n200 -eq 60 ]]; then
	ok "once reconnected: 60 of 60 answered 200 ($(retried) retried after a 503)"
else
	fail "once reconnected" "$n200 of 60 answered 200: $(sort "$par_out" | uniq -c | tr '\n' ' ')"
fi

# 4. max_requests = 8 under load (ab, 16 clients with keep-alive), Apache
# reusing the workers' connections and its pool sized to them as the
# httpd-conf/README.md says (max = workers / Apache processes = 2): every one of 4000
# requests is answered 200, as a worker past its max_requests serves its
# kept connection until Apache leaves it idle; once idle, it is
# recycled.  Through lighttpd (no kept connection) a worker is recycled
# after its 8th request at once.  The stack's pool makes way for the
# same config with max_requests = 8 on its socket, and comes back at the
# end.
rconf=$priv/recycle.conf
{
	cat "$IDEMORDERS_CONF"
	echo "max_requests = 8"
	echo "log_level = debug"
} >"$rconf"
pool_stop 30 || fail "stack pool" "did not stop"
reuse_down
sed -i 's|enablereuse=on|enablereuse=on max=2|' "$DIR/apache2.conf"
if ! apache2 -d "$DIR" -f "$DIR/apache2.conf" -k start 2>"$DIR/start.err"; then
	fail "start apache (enablereuse=on max=2)" "$(cat "$DIR/start.err")"
	finish
fi
pool_start "$IDEMORDERS_BIN" "$rconf" "$priv/recycle.log" ||
    fail "recycling pool" "$(tail -n 3 "$priv/recycle.log")"
PIDS+=("$POOL_PID")
# Apache's kept connections to the stopped pool fail once each: let them.
seq 1 60 | xargs -P 8 -I{} curl -s -o /dev/null --max-time 30 \
    "$URL$MOUNT/_health" || true
ab -q -k -c 16 -n 4000 -s 30 "$URL$MOUNT/_health" >"$par_out" 2>&1
done_n=$(sed -n 's/^Complete requests: *//p' "$par_out")
failed_n=$(sed -n 's/^Failed requests: *//p' "$par_out")
non2xx=$(sed -n 's/^Non-2xx responses: *//p' "$par_out")
if [[ $done_n == 4000 && $failed_n == 0 && -z $non2xx ]]; then
	ok "workers recycled every 8 requests: 4000 of 4000 answered 200"
else
	fail "workers recycled every 8 requests" "complete ${done_n:-?}, failed ${failed_n:-?}, non-2xx ${non2xx:-0}; $(grep -c 'AH01067' \
	    "$LOGDIR/apache-reuse-error.log" 2>/dev/null) x AH01067 in the log"
fi
# 40 sequential requests on kept connections: a worker serves at least
# 10 of them, so it is past max_requests, and once idle it is recycled.
recycled() { grep -c 'recycled$' "$priv/recycle.log" || true; }
sleep 2
n0=$(recycled)
for i in $(seq 1 40); do
	curl -s -o /dev/null --max-time 15 "$URL$MOUNT/_health"
done
wait_until 5 eval '[[ $(recycled) -gt $n0 ]]'
n1=$(recycled)
[[ $n1 -gt $n0 ]] && ok "idle after its last request, a worker past max_requests was recycled" ||
    fail "recycling when idle" "none recycled within 5 s of 40 requests"
seq 1 80 | xargs -P 4 -I{} curl -s -o /dev/null -w '%{http_code}\n' \
    --max-time 30 "$LIGHTTPD_URL$MOUNT/_health" >"$par_out"
n200=$(grep -c '^200$' "$par_out")
# 4 workers, each recycled after its 8th: at least (80 - 4 x 7) / 8 of them.
wait_until 5 eval '[[ $(recycled) -ge $((n1 + 7)) ]]'
n2=$(recycled)
[[ $n200 -eq 80 && $n2 -ge $((n1 + 7)) ]] &&
    ok "through lighttpd: 80 of 80 answered, $((n2 - n1)) workers recycled" ||
    fail "through lighttpd" "$n200 of 80 answered 200, $((n2 - n1)) recycled (80 requests, max_requests 8)"
finish
