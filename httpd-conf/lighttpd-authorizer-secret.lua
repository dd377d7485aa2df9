-- lighttpd mod_magnet: the frontend secret goes to idemorders, never to
-- the FastCGI authorizer (the shop's PHP) that runs before it.
--
-- lighttpd adds setenv.add-environment to the environment of the first
-- backend a request reaches, and with an authorizer that is the
-- authorizer: PHP would see IDEMORDERS_FRONTEND_SECRET.  This script
-- runs at the physical-path stage of both passes of a request under
-- /orders (magnet.attract-physical-path-to, see lighttpd-session.conf):
--
--  1. before the authorizer: reading req_env makes mod_setenv add its
--     variables now (once per request); the secret (or that there is
--     none) is kept for this request, and taken out of its environment:
--     the authorizer's request has none.
--  2. after the authorizer's 200 (lighttpd restarts the request with the
--     authorizer's Variable-REMOTE_USER in its environment): this
--     request's own kept value is put back for idemorders, and dropped.
--
-- The passes are told apart by what this script kept, never by
-- REMOTE_USER (mod_auth or a client certificate may set it before the
-- authorizer runs).  What is kept is keyed by the request (the server
-- socket and host it came to, the client's address and port, the stream,
-- the connection's request count and the request's start time in ns), so
-- a request gets back its own vhost's secret or none, never another's.
-- It lives in package.loaded (one table per script per lighttpd
-- process: a script's globals do not outlive a run); a request that
-- never comes back (the authorizer refused it) leaves its entry behind,
-- and entries older than a minute are swept once there are many.  A
-- request whose second pass finds nothing (past the sweep) goes to
-- idemorders without the secret: refused, never leaked.
--
-- The secret itself stays in the root-only include that mod_setenv reads
-- at start; this file holds none and may be world-readable.

local name = "IDEMORDERS_FRONTEND_SECRET"
local r = lighty.r
local env = r.req_env
local attr = r.req_attr
local item = r.req_item

local store = package.loaded["idemorders.frontend-secret"]
if type(store) ~= "table" then
	store = { n = 0, kept = {} }
	package.loaded["idemorders.frontend-secret"] = store
end

local sec, nsec = item.start_time()
local key = table.concat({
	attr["request.server-addr"] or "", attr["request.server-port"] or "",
	attr["uri.authority"] or "",
	attr["request.remote-addr"] or "", attr["request.remote-port"] or "",
	tostring(item.stream_id), tostring(item.req_count),
	tostring(sec), tostring(nsec),
}, "|")

local kept = store.kept[key]
if kept == nil then
	-- First pass: keep this request's value (false: none), hide it.
	if store.n >= 1024 then
		local now, n = os.time(), 0
		for k, v in pairs(store.kept) do
			if now - v.t > 60 then
				store.kept[k] = nil
			else
				n = n + 1
			end
		end
		store.n = n
	end
	store.kept[key] = { t = sec, v = env[name] or false }
	store.n = store.n + 1
	env[name] = nil
else
	-- Second pass: this request's own value back, the entry gone.
	store.kept[key] = nil
	store.n = store.n - 1
	env[name] = kept.v or nil
end
return 0
