# bench/bench-auth.sh -- `tools/dev bench --auth`: what the web
# server's identity check costs per request, side by side in one run.
# shellcheck shell=bash
#
#   IDEMORDERS_STACK=test tools/dev bench --auth [SECONDS]
#
# On the stack that is up (dev by default; `up` first), through each
# server: GET /orders/{id} and the replay of one key (bench/orders.lua
# modes get and replay), wrk -t2 -c16, SECONDS (5) each, as
#   basic    the Basic-auth vhost (alice, bcrypt cost 5; lighttpd with
#            auth.cache, Apache hashing every request)
#   session  the shop's vhost: the PHP session authorizer asked (lighttpd:
#            the php-fpm pool; Apache: php-cgi under mod_fcgid) on every
#            request
#   bearer   the shop's bearer vhost: the token checked on every request
#            (lighttpd: the PHP authorizer; Apache: mod_auth_openidc)
# Prints a table: req/s, mean µs a request (1 / throughput: the machine's
# time a request takes at this concurrency), p50/p99 latency, and the
# difference to Basic on the same server; var/<stack>/bench-auth.md.
# Nothing asserts a speed.

BENCH_AUTH_C=16
BENCH_AUTH_REPLAY_BODY='{"currency":"KRW","items":[{"sku":"BENCH-00","qty":1}],"amount":100}'

# bench_auth_post URL KEY CURL_ARGS...: create (or replay) the replay body.
bench_auth_post() {
	local url=$1 key=$2
	shift 2
	curl -s -o /dev/null -w '%{http_code}' -X POST "$url$MOUNT" \
	    -H "Idempotency-Key: $key" -H 'Content-Type: application/json' \
	    --data-binary "$BENCH_AUTH_REPLAY_BODY" "$@"
}

run_bench_auth() {
	local secs=${1:-5} u sid tok key code out line s a mode path
	local -A hdr oid rps us p50 p99 unexp
	command -v wrk >/dev/null || die "bench --auth needs wrk (apt-get install wrk)"
	for u in "$LIGHTTPD_URL" "$APACHE_URL" "$SHOP_LIGHTTPD_URL" \
	    "$SHOP_APACHE_URL" "$BEARER_LIGHTTPD_URL" "$BEARER_APACHE_URL"; do
		[[ $(health_code "$u") == 200 ]] ||
		    die "$u$MOUNT/_health does not answer 200: IDEMORDERS_STACK=$STACK $PROG up first"
	done
	db_sql "INSERT INTO stock (sku, currency, unit_price, available)
	    VALUES ('BENCH-00', 'KRW', 100, 1000000000) ON DUPLICATE KEY UPDATE
	    available = GREATEST(available, 1000000000)" >/dev/null

	# The credentials: alice; a session of customer-1001 as the shop's
	# login.php leaves it (stamped now: the shop's idle limit counts from
	# there); a token of the shop for customer-1001.
	hdr[basic]="Authorization: Basic $(printf 'alice:alice-secret' | base64)"
	sid=bench$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	printf 'seen|i:%s;customer|s:13:"customer-1001";' "$(date +%s)" >"$SHOP_SESSIONS/sess_$sid"
	chown www-data:www-data "$SHOP_SESSIONS/sess_$sid"
	chmod 0600 "$SHOP_SESSIONS/sess_$sid"
	hdr[session]="Cookie: idemshop=$sid"
	tok=$(php -r 'require $argv[1]; $c = parse_ini_file($argv[2], false, INI_SCANNER_RAW);
		echo jwt_sign(["iss" => $c["jwt_issuer"], "aud" => $c["jwt_audience"],
		    "sub" => "customer-1001", "iat" => time(), "exp" => time() + 3600],
		    $c["jwt_private_key"], $c["jwt_kid"]);' \
	    "$REPO/examples/shop/authorizer/jwt.php" "$SHOP_INI") ||
	    die "bench --auth: could not make a token"
	hdr[bearer]="Authorization: Bearer $tok"

	# One order (and its key) per principal, made through the lighttpd
	# front end of each kind.
	key=bench-auth-$(date +%s)-$$
	for a in basic session bearer; do
		case $a in
		basic)		u=$LIGHTTPD_URL ;;
		session)	u=$SHOP_LIGHTTPD_URL ;;
		bearer)		u=$BEARER_LIGHTTPD_URL ;;
		esac
		code=$(bench_auth_post "$u" "$key-$a" -H "${hdr[$a]}")
		[[ $code == 201 ]] || die "bench --auth: creating through $a answered $code"
		oid[$a]=$(curl -s -X POST "$u$MOUNT" -H "${hdr[$a]}" \
		    -H "Idempotency-Key: $key-$a" -H 'Content-Type: application/json' \
		    --data-binary "$BENCH_AUTH_REPLAY_BODY" | jq -r .orderId)
	done

	out=$VAR/bench-auth
	mkdir -p "$out"
	say "bench --auth: wrk -t2 -c$BENCH_AUTH_C, ${secs}s a run, stack '$STACK'"
	for mode in get replay; do
		for s in lighttpd apache; do
			for a in basic session bearer; do
				case $s-$a in
				lighttpd-basic)		u=$LIGHTTPD_URL ;;
				apache-basic)		u=$APACHE_URL ;;
				lighttpd-session)	u=$SHOP_LIGHTTPD_URL ;;
				apache-session)		u=$SHOP_APACHE_URL ;;
				lighttpd-bearer)	u=$BEARER_LIGHTTPD_URL ;;
				apache-bearer)		u=$BEARER_APACHE_URL ;;
				esac
				if [[ $mode == get ]]; then
					path="$MOUNT/${oid[$a]}"
					set -- get 200 auth "$path"
				else
					set -- replay 201 auth "$key-$a"
				fi
				timeout -k 5 $((secs + 60)) wrk -t2 -c"$BENCH_AUTH_C" \
				    -d"${secs}s" --timeout 10s -H "${hdr[$a]}" \
				    -s "$REPO/bench/orders.lua" "$u$MOUNT" -- "$@" \
				    >"$out/$mode-$s-$a.txt" 2>&1 9>&- || true
				line=$(grep '^BENCH ' "$out/$mode-$s-$a.txt" | tail -n 1)
				f() { printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
				rps[$mode-$s-$a]=$(f rps) p50[$mode-$s-$a]=$(f p50_ms)
				p99[$mode-$s-$a]=$(f p99_ms)
				unexp[$mode-$s-$a]=$(( $(f unexpected) + $(f socket_errors) ))
				us[$mode-$s-$a]=$(awk -v r="$(f rps)" 'BEGIN { printf "%.0f", (r > 0 ? 1e6 / r : 0) }')
				printf '  %-6s %-8s %-7s %8s req/s %6s µs/req  p50 %6s ms  p99 %6s ms  unexpected %s\n' \
				    "$mode" "$s" "$a" "${rps[$mode-$s-$a]}" "${us[$mode-$s-$a]}" \
				    "${p50[$mode-$s-$a]}" "${p99[$mode-$s-$a]}" "${unexp[$mode-$s-$a]}" >&2
			done
		done
	done
	rm -f "$SHOP_SESSIONS/sess_$sid"

	{
		echo "# What the identity check costs per request"
		echo
		echo "wrk -t2 -c$BENCH_AUTH_C, ${secs} s a run, stack '$STACK', $(nproc) cores, $(date -u +%FT%TZ)."
		echo "µs/req = 1 / throughput; Δ = µs/req minus Basic's on the same server."
		echo
		echo "| request | server | identity | req/s | µs/req | Δ µs/req | p50 ms | p99 ms | unexpected |"
		echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
		for mode in get replay; do
			for s in lighttpd apache; do
				for a in basic session bearer; do
					printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
					    "$mode" "$s" "$a" "${rps[$mode-$s-$a]}" \
					    "${us[$mode-$s-$a]}" \
					    "$(( ${us[$mode-$s-$a]:-0} - ${us[$mode-$s-basic]:-0} ))" \
					    "${p50[$mode-$s-$a]}" "${p99[$mode-$s-$a]}" \
					    "${unexp[$mode-$s-$a]}"
				done
			done
		done
	} >"$out/bench-auth.md"
	cp "$out/bench-auth.md" "$VAR/bench-auth.md"
	cat "$VAR/bench-auth.md"
}
