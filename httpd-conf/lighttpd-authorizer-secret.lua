-- lighttpd mod_magnet: the frontend secret goes to idemorders, never to
-- the FastCGI authorizer (the shop's PHP) that runs before it.
--
-- lighttpd adds setenv.add-environment to the environment of the first
-- backend a request reaches, and with an authorizer that is the
-- authorizer: PHP would see IDEMORDERS_FRONTEND_SECRET.  This script
-- runs at the physical-path stage of both passes of a request under
-- /orders (magnet.attract-physical-path-to, see lighttpd-session.conf):
--
--  1. before the authorizer: no REMOTE_USER yet.  Reading req_env makes
--     mod_setenv add its variables now (once per request), and the
--     secret is taken out again: the authorizer's request has none.
--  2. after the authorizer's 200 (lighttpd restarts the request with the
--     authorizer's Variable-REMOTE_USER in its environment): the secret
--     is put back for idemorders.
--
-- The secret itself stays in the root-only include that mod_setenv reads
-- at start; this file holds none and may be world-readable.  Between the
-- two passes the value is kept in package.loaded, which lives as long as
-- this script's Lua state in the lighttpd process (a script's globals do
-- not: mod_magnet gives every run fresh ones).  Every request's first
-- pass stores the value setenv gave it, so after a reload of lighttpd
-- (a rotation's "web" step) the new secret is the one passed on.

local name = "IDEMORDERS_FRONTEND_SECRET"
local env = lighty.r.req_env
local keep = package.loaded

if env["REMOTE_USER"] == nil then
	keep["idemorders.frontend-secret"] = env[name] or keep["idemorders.frontend-secret"]
	env[name] = nil
else
	env[name] = keep["idemorders.frontend-secret"]
end
return 0
