#!/usr/bin/env bash
# Concurrency (design notes, verification step 3; contract section 4):
#  - 20 requests with the same key and body, started together, create
#    exactly one order: every answer is 201 with the same orderId and a
#    byte-identical body, 19 of them marked Idempotent-Replayed: true; the
#    stock decreases once.  Once plainly, once with the winner held for a
#    while after its ledger INSERT (fault sleepN) so that the others queue
#    on the unique key.
#  - 100 requests with distinct keys, one unit each, on a SKU with 50 in
#    stock: exactly 50 orders and 50 answers 409 OUT_OF_STOCK, stock 0 and
#    never negative, 50 SUCCEEDED + 50 FAILED_FINAL ledger rows.
# Through lighttpd and Apache proxy_fcgi, with fresh keys and SKUs of its own.
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

stock_of() {
	echo "SELECT available FROM stock WHERE sku = '$1'"
}

# one_post DIR I URL USER KEY BODY [curl args...]: one POST, its status in
# DIR/I.code, headers in DIR/I.head, body in DIR/I.body.
one_post() {
	local dir=$1 i=$2 url=$3 user=$4 key=$5 body=$6
	shift 6
	curl -s -S -o "$dir/$i.body" -D "$dir/$i.head" -w '%{http_code}' \
	    --max-time 50 -u "$user" -H "Idempotency-Key: $key" \
	    -H 'Content-Type: application/json' --data-binary "$body" "$@" \
	    "$url$MOUNT" >"$dir/$i.code" 2>"$dir/$i.err"
}

# race DIR N FUNCTION [ARGS...]: run "FUNCTION DIR I ARGS..." for I in
# 0..N-1 as background processes that all wait at a barrier (a FIFO) and
# are released together once every one of them is ready; wait for all.
race() {
	local dir=$1 n=$2 fn=$3 i fd t t0 pids=()
	shift 3
	mkdir -p "$dir"
	mkfifo "$dir/go"
	exec {fd}<>"$dir/go"
	for ((i = 0; i < n; i++)); do
		(
			: >"$dir/$i.ready"
			read -r _ <"$dir/go"
			"$fn" "$dir" "$i" "$@"
		) &
		pids+=($!)
	done
	for ((t = 0; t < 1000; t++)); do
		[[ $(find "$dir" -name '*.ready' | wc -l) -ge $n ]] && break
		sleep 0.01
	done
	t0=$(date +%s%N)
	printf '%*s' "$n" '' | tr ' ' '\n' >&"$fd"
	wait "${pids[@]}"
	exec {fd}>&-
	printf 'info   %d requests answered in %d ms\n' "$n" $((($(date +%s%N) - t0) / 1000000))
}

# header_of FILE NAME: a header's value in a curl -D file (last response).
header_of() {
	tr -d '\r' <"$1" | awk -v n="$(printf '%s' "$2" | tr '[:upper:]' '[:lower:]')" '
		/^HTTP\// { v = "" }
		{ i = index($0, ":"); if (i && tolower(substr($0, 1, i - 1)) == n) { v = substr($0, i + 1); sub(/^[ \t]+/, "", v) } }
		END { print v }'
}

# count_of LIST VALUE: how many lines of LIST equal VALUE.
count_of() {
	printf '%s\n' "$1" | grep -cxF -- "$2"
}

# expect_eq WHAT EXPECTED ACTUAL [DETAIL]
expect_eq() {
	if [[ $3 == "$2" ]]; then
		ok "$1 = $2"
	else
		fail "$1" "expected '$2', got '$3'${4:+ ($4)}"
	fi
}

# summary DIR N: "code xcount" lines, for failure messages.
summary() {
	cat "$1"/*.code 2>/dev/null | sort | uniq -c | tr '\n' ' '
}

# ---- 20 requests, one key ----------------------------------------------

same_key_race() {	# SERVER ROUND [curl args...]
	local s=$1 round=$2 url dir key body n=20 i codes ids sums replayed
	local locs echoes what oid
	shift 2
	url=$(url_of "$s")
	S=T32-$s-same
	set_stock "$S" KRW 1200 100
	key=$(unique_key "t32-$s-same-$round")
	body='{"currency":"KRW","items":[{"sku":"'"$S"'","qty":3}],"amount":3600,"note":"race '$round'"}'
	dir=$T_TMP/same-$s-$round
	what="$s $n parallel same-key requests ($round)"
	REQ_DESC="$what"
	STATUS='' BODY=''
	race "$dir" "$n" one_post "$url" "$ALICE" "$key" "$body" "$@"

	codes=$(for ((i = 0; i < n; i++)); do cat "$dir/$i.code"; echo; done)
	expect_eq "$what: answers 201" "$n" "$(count_of "$codes" 201)" "$(summary "$dir")"
	for ((i = 0; i < n; i++)); do
		if [[ $(cat "$dir/$i.code") != 201 ]]; then
			printf '       answer %d: %s %s %s\n' "$i" "$(cat "$dir/$i.code")" \
			    "$(head -c 300 "$dir/$i.body")" "$(head -c 200 "$dir/$i.err")"
		fi
	done
	ids=$(for ((i = 0; i < n; i++)); do jq -r .orderId "$dir/$i.body" 2>/dev/null || echo none; done | sort -u)
	expect_eq "$what: distinct orderIds" 1 "$(printf '%s\n' "$ids" | grep -c .)" "$(echo $ids)"
	oid=$(printf '%s\n' "$ids" | head -n 1)
	sums=$(for ((i = 0; i < n; i++)); do sha256sum <"$dir/$i.body"; done | sort -u | wc -l)
	expect_eq "$what: distinct bodies" 1 "$sums"
	locs=$(for ((i = 0; i < n; i++)); do header_of "$dir/$i.head" location; done | sort -u)
	expect_eq "$what: every Location" "$MOUNT/$oid" "$(echo $locs)"
	replayed=$(for ((i = 0; i < n; i++)); do header_of "$dir/$i.head" idempotent-replayed; done)
	expect_eq "$what: answers with Idempotent-Replayed: true" $((n - 1)) \
	    "$(count_of "$replayed" true)"
	echoes=$(for ((i = 0; i < n; i++)); do header_of "$dir/$i.head" idempotency-key; done)
	expect_eq "$what: answers echoing the key" "$n" "$(count_of "$echoes" "$key")"
	echoes=$(for ((i = 0; i < n; i++)); do header_of "$dir/$i.head" cache-control; done)
	expect_eq "$what: answers with Cache-Control: no-store" "$n" "$(count_of "$echoes" no-store)"

	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'
	    AND idempotency_key = '$key'" 1 "$what: one order"
	expect_sql "SELECT COUNT(*), MIN(status), MIN(response_status), MIN(resource_id)
	    FROM idempotency_records WHERE principal_id = 'alice' AND idem_key = '$key'" \
	    "1	SUCCEEDED	201	$oid" "$what: one SUCCEEDED ledger row"
	expect_sql "$(stock_of "$S")" 97 "$what: stock decreased once"
}

for s in $HTTP_SERVERS; do
	same_key_race "$s" plain
	same_key_race "$s" held -H 'X-Idemorders-Fault: after_ledger_insert=sleep300'
done

# ---- 100 keys, 50 in stock ------------------------------------------------

# Sample the SKU's stock every few ms until DIR/stop exists (20 samples
# per client run).
sample_stock() {
	local sku=$1 dir=$2 q='' i
	for ((i = 0; i < 20; i++)); do
		q+="SELECT available FROM stock WHERE sku = '$sku'; DO SLEEP(0.005); "
	done
	while [[ ! -e $dir/stop ]]; do
		sql "$q" >>"$dir/samples" 2>/dev/null
	done
}

key_post() {	# DIR I URL USER PREFIX BODY
	local dir=$1 i=$2 url=$3 user=$4 prefix=$5 body=$6
	one_post "$dir" "$i" "$url" "$user" "$prefix-$i" "$body"
}

for s in $HTTP_SERVERS; do
	url=$(url_of "$s")
	S=T32-$s-oos
	set_stock "$S" KRW 100 50
	prefix=$(unique_key "t32-$s-oos")
	body='{"currency":"KRW","items":[{"sku":"'"$S"'","qty":1}],"amount":100}'
	dir=$T_TMP/oos-$s
	n=100
	what="$s $n parallel keys on $S with 50 in stock"
	REQ_DESC="$what"
	STATUS='' BODY=''
	mkdir -p "$dir"
	sample_stock "$S" "$dir" &
	sampler=$!
	race "$dir" "$n" key_post "$url" "$ALICE" "$prefix" "$body"
	: >"$dir/stop"
	wait "$sampler"

	codes=$(for ((i = 0; i < n; i++)); do cat "$dir/$i.code"; echo; done)
	expect_eq "$what: answers 201" 50 "$(count_of "$codes" 201)" "$(summary "$dir")"
	expect_eq "$what: answers 409" 50 "$(count_of "$codes" 409)" "$(summary "$dir")"
	oos=0 created=0 echoed=0 nostore=0 bad=
	for ((i = 0; i < n; i++)); do
		c=$(cat "$dir/$i.code")
		code=$(jq -r '.code // empty' "$dir/$i.body" 2>/dev/null)
		ct=$(header_of "$dir/$i.head" content-type)
		if [[ $c == 409 && $code == OUT_OF_STOCK && $ct == application/problem+json* ]]; then
			oos=$((oos + 1))
		elif [[ $c == 201 && $(jq -r .orderId "$dir/$i.body" 2>/dev/null) =~ ^o-[1-9][0-9]*$ ]]; then
			created=$((created + 1))
		else
			bad+="#$i $c $(head -c 200 "$dir/$i.body") $(head -c 100 "$dir/$i.err"); "
		fi
		[[ $(header_of "$dir/$i.head" idempotency-key) == "$prefix-$i" ]] && echoed=$((echoed + 1))
		[[ $(header_of "$dir/$i.head" cache-control) == no-store ]] && nostore=$((nostore + 1))
	done
	expect_eq "$what: 409 OUT_OF_STOCK problem answers" 50 "$oos"
	expect_eq "$what: 201 answers with an orderId" 50 "$created"
	[[ -z $bad ]] && ok "$what: no other answer" || fail "$what: other answers" "$bad"
	expect_eq "$what: answers echoing their key" "$n" "$echoed"
	expect_eq "$what: answers with Cache-Control: no-store" "$n" "$nostore"
	ids=$(for ((i = 0; i < n; i++)); do
		[[ $(cat "$dir/$i.code") == 201 ]] && jq -r .orderId "$dir/$i.body"
	done | sort -u | grep -c .)
	expect_eq "$what: distinct orderIds" 50 "$ids"

	expect_sql "SELECT COUNT(*) FROM orders WHERE principal_id = 'alice'
	    AND idempotency_key LIKE '$prefix-%'" 50 "$what: orders"
	expect_sql "SELECT COALESCE(SUM(i.qty), 0) FROM order_items i JOIN orders o
	    ON o.id = i.order_id WHERE o.principal_id = 'alice'
	    AND o.idempotency_key LIKE '$prefix-%'" 50 "$what: units ordered"
	expect_sql "SELECT status, response_status, COUNT(*) FROM idempotency_records
	    WHERE principal_id = 'alice' AND idem_key LIKE '$prefix-%'
	    GROUP BY status, response_status ORDER BY status" \
	    "FAILED_FINAL	409	50
SUCCEEDED	201	50" "$what: ledger rows"
	expect_sql "SELECT COUNT(*) FROM idempotency_records r JOIN orders o
	    ON o.principal_id = r.principal_id AND o.idempotency_key = r.idem_key
	    AND r.resource_id = CONCAT('o-', o.id)
	    WHERE r.principal_id = 'alice' AND r.idem_key LIKE '$prefix-%'
	    AND r.status = 'SUCCEEDED'" 50 "$what: each SUCCEEDED row names its order"
	expect_sql "$(stock_of "$S")" 0 "$what: final stock"
	expect_sql "SELECT MIN(available) >= 0 FROM stock" 1 "$what: no stock row is negative"
	nsamples=$(grep -c . "$dir/samples" 2>/dev/null)
	minseen=$(sort -n "$dir/samples" 2>/dev/null | head -n 1)
	if [[ -n $minseen && $minseen -ge 0 ]]; then
		ok "$what: stock never negative while racing ($nsamples samples of $(sort -u "$dir/samples" | grep -c .) values, min $minseen)"
	else
		fail "$what: stock while racing" "min sample '$minseen' of $nsamples"
	fi

	# A rejected key and a created key replay their first answers.
	for i in $(seq 0 $((n - 1))); do
		[[ $(cat "$dir/$i.code") == 409 ]] && { rej=$i; break; }
	done
	for i in $(seq 0 $((n - 1))); do
		[[ $(cat "$dir/$i.code") == 201 ]] && { acc=$i; break; }
	done
	for i in ${rej:-} ${acc:-}; do
		what2="$s replay of $prefix-$i"
		req POST "$url$MOUNT" -u "$ALICE" -H "Idempotency-Key: $prefix-$i" \
		    -H 'Content-Type: application/json' --data-binary "$body"
		expect_status "$(cat "$dir/$i.code")" "$what2"
		expect_header idempotent-replayed true "$what2"
		if cmp -s "$dir/$i.body" "$T_TMP/body"; then
			ok "$what2: body byte-identical to the first answer"
		else
			fail "$what2: body differs" "first: $(head -c 300 "$dir/$i.body")"
		fi
	done
	expect_sql "$(stock_of "$S")" 0 "$what: stock after the replays"
	unset rej acc
done

finish
