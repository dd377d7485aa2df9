/*
 * The router, judged against a reference reading of contract section 3:
 * the input is MOUNT NUL URI NUL METHOD (missing parts default to
 * "/orders", "/orders" and "GET"); the path is the URI up to '?' or '#',
 * taken relative to the mount ("/" mounts at the root), and section 4a:
 * POST /orders/{orderId}/cancel.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "router.h"

/* The reference route of path under mount, with its argument. */
static enum route_id
ref_route(const char *mount, const char *uri, char *arg)
{
	const char	*rest;
	size_t		 plen, mlen, alen;

	arg[0] = '\0';
	plen = strcspn(uri, "?#");
	mlen = strcmp(mount, "/") == 0 ? 0 : strlen(mount);
	if (plen < mlen || memcmp(uri, mount, mlen) != 0)
		return ROUTE_NONE;
	rest = uri + mlen;
	plen -= mlen;
	if (plen == 0)
		return ROUTE_ORDERS;
	if (plen == 8 && memcmp(rest, "/_health", 8) == 0)
		return ROUTE_HEALTH;
	if (plen == 9 && memcmp(rest, "/_metrics", 9) == 0)
		return ROUTE_METRICS;
	if (rest[0] != '/' || plen < 2)
		return ROUTE_NONE;
	alen = plen - 1;
	if (alen <= ROUTE_ARG_MAX && memchr(rest + 1, '/', alen) == NULL) {
		memcpy(arg, rest + 1, alen);
		arg[alen] = '\0';
		return ROUTE_ORDER;
	}
	/* "/{orderId}/cancel": one segment, then "/cancel". */
	if (plen < 9 || memcmp(rest + plen - 7, "/cancel", 7) != 0)
		return ROUTE_NONE;
	alen = plen - 8;
	if (alen > ROUTE_ARG_MAX || memchr(rest + 1, '/', alen) != NULL)
		return ROUTE_NONE;
	memcpy(arg, rest + 1, alen);
	arg[alen] = '\0';
	return ROUTE_CANCEL;
}

/* Tell whether method is listed in an Allow value. */
static int
ref_allowed(const char *allow, const char *method)
{
	const char	*p = allow;
	size_t		 n, mlen = strlen(method);

	while (*p != '\0') {
		n = strcspn(p, ",");
		if (n == mlen && memcmp(p, method, n) == 0)
			return 1;
		p += n;
		p += strspn(p, ", ");
	}
	return 0;
}

/* Judge one input; a broken property aborts. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct route_match	 m;
	char			*buf, *end;
	const char		*mount, *uri, *method;
	char			 arg[ROUTE_ARG_MAX + 1];
	enum route_id		 want;

	if (size > 4096)
		return 0;
	buf = fuzz_cstr(data, size);
	end = buf + size;
	mount = "/orders";
	uri = "/orders";
	method = "GET";
	if (size > 0) {
		mount = buf;
		uri = mount + strlen(mount) + 1;
		if (uri > end)
			uri = "/orders";
		else {
			method = uri + strlen(uri) + 1;
			if (method > end)
				method = "GET";
		}
	}

	router_match(mount, uri, method, &m);
	want = ref_route(mount, uri, arg);
	if (m.id != want)
		fuzz_fail("%s %s under %s: route %d, expected %d", method, uri,
		    mount, m.id, want);
	if (memchr(m.arg, '\0', sizeof(m.arg)) == NULL ||
	    strcmp(m.arg, arg) != 0)
		fuzz_fail("%s under %s: argument \"%s\", expected \"%s\"", uri,
		    mount, m.arg, arg);
	if (want == ROUTE_NONE) {
		if (m.allow != NULL || m.method_allowed || m.needs_principal)
			fuzz_fail("no route, yet an Allow or a method");
	} else {
		if (m.allow == NULL)
			fuzz_fail("route %d without Allow", m.id);
		if (m.method_allowed != ref_allowed(m.allow, method))
			fuzz_fail("method %s against Allow %s: %d", method,
			    m.allow, m.method_allowed);
		if (m.needs_principal != (want != ROUTE_HEALTH &&
		    want != ROUTE_METRICS))
			fuzz_fail("route %d: needs_principal %d", m.id,
			    m.needs_principal);
	}
	free(buf);
	return 0;
}
