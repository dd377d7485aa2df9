-- bench/orders.lua -- the wrk script of `tools/dev bench` (bench/bench.sh).
--
--   wrk -s bench/orders.lua URL -- MODE EXPECT TAG [ARG]
--
-- MODE     create    POST, a new Idempotency-Key every request (TAG-thread-n),
--                    one unit price x qty of a random SKU BENCH-00..BENCH-63
--          create-uuid
--                    the same with a random UUID v4 key, as a client makes
--                    it (a create's key lands anywhere in the principal's
--                    keys, not after the last one)
--          hot       the same, every order on SKU BENCH-HOT
--          replay    POST the same key ARG and body again and again
--          conflict  POST key ARG with another body (409 expected)
--          get       GET ARG (an order's path, /orders/o-N)
--          list      GET ARG (a page of the list, /orders?limit=20...) as
--                    the user of ARG2 (user:password in base64, for
--                    Authorization: Basic); an answer without an order
--                    in its data is unexpected
--          cancel    POST PATH/cancel, a new key every request, PATH the
--                    next line of ARG.T (T: the thread, 0, 1, ...): orders
--                    made before, one file per thread; past its end the
--                    file starts over (409 ORDER_ALREADY_CANCELLED)
--          cancel-replay
--                    POST ARG2/cancel with the key ARG again and again
-- EXPECT   the status every answer must have.  For create, create-uuid,
--          hot and cancel an answer carrying Idempotent-Replayed is
--          unexpected (a key was reused); for replay and cancel-replay one without
--          Idempotent-Replayed: true is.
--
-- Statuses are counted here, per thread, not by wrk's non-2xx (a 409 is
-- what the conflict run expects).  done() prints one line:
--   BENCH mode=M requests=N seconds=S rps=X p50_ms=A p99_ms=B expected=E
--         unexpected=U socket_errors=K statuses=201:N,409:M
-- (unexpected: answers with another status; socket_errors: connect, read,
-- write errors and timeouts, which got no answer at all).
-- Authorization comes from wrk -H; every other header is set here.

local threads = {}

function setup(thread)
	thread:set("thread_id", #threads)
	table.insert(threads, thread)
end

-- The BENCH-NN SKUs cost 100 x (NN + 1) KRW (bench.sh inserts them so).
local function price(n)
	return 100 * (n + 1)
end

local function order_body(sku, qty, amount)
	return string.format(
	    '{"currency":"KRW","items":[{"sku":"%s","qty":%d}],"amount":%d}',
	    sku, qty, amount)
end

-- The fixed body of the replay run (and what bench.sh creates first);
-- the conflict run sends the same key with qty 2.
local REPLAY_BODY = order_body("BENCH-00", 1, price(0))
local CONFLICT_BODY = order_body("BENCH-00", 2, 2 * price(0))
local HOT_PRICE = 500
-- The body of every cancel (bench.sh seeds the replayed one with it).
local CANCEL_BODY = '{"reason":"bench"}'

function init(args)
	mode = args[1] or "create"
	expect = tonumber(args[2] or "201")
	tag = args[3] or "bench"
	fixed_arg = args[4]
	fixed_arg2 = args[5]
	counts = {}		-- status -> answers
	expected = 0
	unexpected = 0
	counter = 0
	math.randomseed(os.time() * 1000 + thread_id * 7919)

	headers = {}
	for k, v in pairs(wrk.headers) do
		headers[k] = v
	end
	if mode == "get" then
		fixed = wrk.format("GET", fixed_arg, headers, nil)
	elseif mode == "list" then
		if fixed_arg2 then
			headers["Authorization"] = "Basic " .. fixed_arg2
		end
		fixed = wrk.format("GET", fixed_arg, headers, nil)
	elseif mode == "replay" or mode == "conflict" then
		headers["Content-Type"] = "application/json"
		headers["Idempotency-Key"] = fixed_arg
		fixed = wrk.format("POST", wrk.path, headers,
		    mode == "replay" and REPLAY_BODY or CONFLICT_BODY)
	elseif mode == "create" or mode == "create-uuid" or mode == "hot" then
		headers["Content-Type"] = "application/json"
	elseif mode == "cancel" then
		headers["Content-Type"] = "application/json"
		paths = {}
		local f = io.open(fixed_arg .. "." .. thread_id, "r")
		if f then
			for line in f:lines() do
				if line ~= "" then
					table.insert(paths, line)
				end
			end
			f:close()
		end
		if #paths == 0 then
			error("orders.lua: no orders to cancel in " .. fixed_arg
			    .. "." .. thread_id)
		end
	elseif mode == "cancel-replay" then
		headers["Content-Type"] = "application/json"
		headers["Idempotency-Key"] = fixed_arg
		fixed = wrk.format("POST", fixed_arg2 .. "/cancel", headers,
		    CANCEL_BODY)
	else
		error("orders.lua: unknown mode " .. mode)
	end
end

function request()
	if fixed then
		return fixed
	end
	counter = counter + 1
	if mode == "cancel" then
		headers["Idempotency-Key"] = string.format("%s-%d-%d", tag,
		    thread_id, counter)
		return wrk.format("POST",
		    paths[(counter - 1) % #paths + 1] .. "/cancel", headers,
		    CANCEL_BODY)
	end
	local qty = math.random(1, 3)
	local sku, amount
	if mode == "hot" then
		sku, amount = "BENCH-HOT", qty * HOT_PRICE
	else
		local n = math.random(0, 63)
		sku, amount = string.format("BENCH-%02d", n), qty * price(n)
	end
	if mode == "create-uuid" then
		headers["Idempotency-Key"] = string.format(
		    "%04x%04x-%04x-4%03x-%04x-%04x%04x%04x",
		    math.random(0, 65535), math.random(0, 65535),
		    math.random(0, 65535), math.random(0, 4095),
		    math.random(32768, 49151), math.random(0, 65535),
		    math.random(0, 65535), math.random(0, 65535))
	else
		headers["Idempotency-Key"] = string.format("%s-%d-%d", tag,
		    thread_id, counter)
	end
	return wrk.format("POST", wrk.path, headers,
	    order_body(sku, qty, amount))
end

local function replayed(h)
	return h["Idempotent-Replayed"] or h["idempotent-replayed"]
end

function response(status, h, body)
	counts[status] = (counts[status] or 0) + 1
	local good = status == expect
	if good and (mode == "replay" or mode == "cancel-replay") then
		good = replayed(h) == "true"
	elseif good and (mode == "create" or mode == "create-uuid" or
	    mode == "hot" or mode == "cancel") then
		good = replayed(h) == nil
	elseif good and mode == "list" then
		good = string.find(body, '"data":[{"orderId":"o-', 1, true) ~= nil
	end
	if good then
		expected = expected + 1
	else
		unexpected = unexpected + 1
	end
end

function done(summary, latency, requests)
	local all, exp, unexp = {}, 0, 0
	for _, t in ipairs(threads) do
		for status, n in pairs(t:get("counts")) do
			all[status] = (all[status] or 0) + n
		end
		exp = exp + t:get("expected")
		unexp = unexp + t:get("unexpected")
	end
	local keys = {}
	for status in pairs(all) do
		table.insert(keys, status)
	end
	table.sort(keys)
	local list = {}
	for _, status in ipairs(keys) do
		table.insert(list, status .. ":" .. all[status])
	end
	local e = summary.errors
	local sockerr = e.connect + e.read + e.write + e.timeout
	local secs = summary.duration / 1e6
	io.write(string.format("BENCH mode=%s requests=%d seconds=%.3f "
	    .. "rps=%.1f p50_ms=%.3f p99_ms=%.3f expected=%d unexpected=%d "
	    .. "socket_errors=%d statuses=%s\n",
	    threads[1]:get("mode"), summary.requests, secs,
	    summary.requests / secs, latency:percentile(50) / 1000,
	    latency:percentile(99) / 1000, exp, unexp, sockerr,
	    #list > 0 and table.concat(list, ",") or "none"))
end
