#!/usr/bin/env bash
# The shipped TLS examples serve /orders over https and keep it off plain
# HTTP (httpd-conf/lighttpd-tls.conf, httpd-conf/apache-tls.conf,
# docs/tls.md).  A lighttpd from the stack's lighttpd.conf plus
# lighttpd-tls.conf, and an Apache from the stack's server part plus the
# Debian package's snippet (conf-available/idemorders.conf: /orders on
# every virtual host) plus apache-tls.conf, on ports of their own
# (18092-18094, 18098 + IDEMORDERS_PORT_OFFSET), with a certificate made
# here for 127.0.0.1 that curl verifies (--cacert, never -k).  Through
# each: a create over https (201, Strict-Transport-Security and nosniff),
# its replay (Idempotent-Replayed: true, the same order, one row); over
# plain HTTP /orders is refused with 403 (a POST there creates nothing,
# the health check too) and any other URL is redirected (301) to https.
# About 20 s under load.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
# shellcheck source=tests/lib/orders.sh
. "$(dirname -- "$0")/../lib/orders.sh"

off=${IDEMORDERS_PORT_OFFSET:-0}
LT_TLS=$((18092 + off)) LT_HTTP=$((18093 + off))
AP_TLS=$((18094 + off)) AP_HTTP=$((18098 + off))

# Everything the servers read lives here: www-data must traverse it, and
# a clone under /root must not matter.
W=$(mktemp -d /tmp/idemorders-tls.XXXXXX)
chmod 0755 "$W"
install -d -m 0755 "$W/apache" "$W/htdocs"
install -d -m 0755 -o www-data -g www-data "$W/log"
# shellcheck disable=SC2329
servers_stop() {
	local pid
	pid=$(cat "$W/lighttpd.pid" 2>/dev/null) && kill -TERM "$pid" 2>/dev/null
	[[ -s $W/apache/apache2.pid ]] &&
	    apache2 -d "$W/apache" -f "$W/apache.conf" -k stop >/dev/null 2>&1
	wait_until 10 eval '! pgrep -f "$W/" >/dev/null'
	rm -rf "$W" "$T_TMP"
}
trap servers_stop EXIT

# The certificate: self-signed, for 127.0.0.1 and localhost; the key
# root's only, as Debian's snakeoil key is.
(umask 077; openssl req -x509 -newkey rsa:2048 -nodes -days 2 \
    -subj /CN=localhost -addext 'subjectAltName=DNS:localhost,IP:127.0.0.1' \
    -keyout "$W/tls.key" -out "$W/tls.crt" >"$W/openssl.out" 2>&1) ||
    fail "certificate" "$(tail -n 3 "$W/openssl.out")"
chmod 0644 "$W/tls.crt"

# tls_conf SRC: the shipped TLS template with this test's values.
tls_conf() {
	sed -e "s|@TLS_SOCKET@|127.0.0.1:$LT_TLS|g" \
	    -e "s|@TLS_VHOST@|127.0.0.1:$AP_TLS|g" -e "s|@VHOST@|127.0.0.1:$AP_HTTP|g" \
	    -e "s|@SERVER_NAME@|localhost|g" \
	    -e "s|@TLS_CERT@|$W/tls.crt|g" -e "s|@TLS_KEY@|$W/tls.key|g" "$1"
}

# lighttpd: the stack's config on its own ports and files, then the
# TLS part.
sed -e "s|^server.port .*|server.port = $LT_HTTP|" \
    -e "s|^server.pid-file .*|server.pid-file = \"$W/lighttpd.pid\"|" \
    -e "s|^server.document-root .*|server.document-root = \"$W/htdocs\"|" \
    -e "s|^server.errorlog .*|server.errorlog = \"$W/log/lighttpd-error.log\"|" \
    -e "s|^accesslog.filename .*|accesslog.filename = \"$W/log/lighttpd-access.log\"|" \
    "$RUNDIR/lighttpd.conf" >"$W/lighttpd.conf"
tls_conf "$REPO/httpd-conf/lighttpd-tls.conf" >>"$W/lighttpd.conf"

# Apache: the stack's server part, the package's snippet with the
# stack's socket, users and secret, then the TLS sites.
{
	sed -n '/^# --- idemorders behind mod_proxy_fcgi/q; p' "$RUNDIR/apache/apache2.conf" |
	    sed -e "s|^ServerRoot .*|ServerRoot \"$W/apache\"|" \
		-e "s|^Listen .*|Listen 127.0.0.1:$AP_HTTP\nListen 127.0.0.1:$AP_TLS|" \
		-e "s|^PidFile .*|PidFile \"$W/apache/apache2.pid\"|" \
		-e "s|^DefaultRuntimeDir .*|DefaultRuntimeDir \"$W/apache\"|" \
		-e "s|^Mutex .*|Mutex file:$W/apache default|" \
		-e "s|^ErrorLog .*|ErrorLog \"$W/log/apache-error.log\"|" \
		-e "s|^CustomLog .*|CustomLog \"$W/log/apache-access.log\" idemorders|" \
		-e "s|$RUNDIR/htdocs|$W/htdocs|g"
	for m in ssl headers rewrite socache_shmcb; do
		echo "LoadModule ${m}_module /usr/lib/apache2/modules/mod_$m.so"
	done
	echo "SSLSessionCache shmcb:$W/apache/ssl_scache(512000)"
	sed -e "s|/run/idemorders/idemorders.sock|$FCGI_SOCKET|g" \
	    -e "s|/etc/idemorders/htpasswd|$RUNDIR/htpasswd|g" \
	    -e "s|/etc/apache2/idemorders-secret.conf|$RUNDIR/apache-frontend-secret.conf|g" \
	    "$REPO/debian/conf/apache2-idemorders.conf"
	tls_conf "$REPO/httpd-conf/apache-tls.conf"
} >"$W/apache.conf"

if lighttpd -f "$W/lighttpd.conf" >"$W/lighttpd.out" 2>&1 </dev/null 9>&-; then
	ok "lighttpd with lighttpd-tls.conf starts"
else
	fail "lighttpd with lighttpd-tls.conf" "$(head -c 600 "$W/lighttpd.out")"
fi
if apache2 -d "$W/apache" -f "$W/apache.conf" -k start >"$W/apache.out" 2>&1 </dev/null 9>&-; then
	ok "Apache with the package's snippet and apache-tls.conf starts"
else
	fail "Apache with apache-tls.conf" "$(head -c 600 "$W/apache.out")"
fi

TLS=(--cacert "$W/tls.crt")
for s in lighttpd apache; do
	if [[ $s == lighttpd ]]; then
		https=https://127.0.0.1:$LT_TLS http=http://127.0.0.1:$LT_HTTP
	else
		https=https://127.0.0.1:$AP_TLS http=http://127.0.0.1:$AP_HTTP
	fi
	wait_until 15 curl -s -o /dev/null "${TLS[@]}" "$https$MOUNT/_health" ||
	    fail "$s" "no answer over https on $https"

	# Over https, the certificate verified: a create and its replay.
	req GET "$https$MOUNT/_health" "${TLS[@]}"
	expect_status 200 "$s https: health"
	unique_name sku T18
	set_stock "$sku" KRW 700 5
	unique_name key tls
	body='{"currency":"KRW","items":[{"sku":"'$sku'","qty":1}],"amount":700}'
	post "$https" "$ALICE" "$key" "$body" "${TLS[@]}"
	expect_status 201 "$s https: create"
	oid=$(jq -r .orderId <<<"$BODY" 2>/dev/null)
	expect_header strict-transport-security max-age=63072000 "$s https: HSTS"
	expect_header x-content-type-options nosniff "$s https"
	post "$https" "$ALICE" "$key" "$body" "${TLS[@]}"
	expect_status 201 "$s https: replay"
	expect_header idempotent-replayed true "$s https: replay"
	expect_body_json .orderId "$oid"
	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice' AND idempotency_key = '$key'" 1 \
	    "$s https: one order for the key"
	expect_sql "SELECT available FROM stock WHERE sku = '$sku'" 4 "$s https: stock taken once"

	# Plain HTTP: /orders refused before the service sees it.
	unique_name key plain
	post "$http" "$ALICE" "$key" "$body"
	expect_status 403 "$s http: POST /orders refused"
	expect_no_header strict-transport-security
	expect_no_header location
	expect_sql "SELECT COUNT(*) FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = '$key'" 0 \
	    "$s http: the refused POST left no ledger row"
	req GET "$http$MOUNT/_health"
	expect_status 403 "$s http: health refused too"
	req GET "$http$MOUNT" -u "$ALICE"
	expect_status 403 "$s http: GET /orders refused"
	# Anything else: to the same URL over https.
	req GET "$http/shop/page?x=1" -H 'Host: shop.test'
	expect_status 301 "$s http: another URL"
	expect_header location 'https://shop.test/shop/page?x=1' "$s http: redirect"
	# A URL that only begins like the mount: lighttpd's fastcgi.server
	# "/orders" is a prefix and takes it, so it is refused there too;
	# Apache's mount ends at a path segment, so it is redirected.
	req GET "$http/orders-list.php" -H 'Host: shop.test'
	if [[ $s == lighttpd ]]; then
		expect_status 403 "$s http: /orders-list.php (the mount's prefix) refused"
	else
		expect_status 301 "$s http: /orders-list.php redirected"
	fi
done

expect_absent "lighttpd error log: no TLS error" "$W/log/lighttpd-error.log" -i 'ssl\|tls.*error'
finish
