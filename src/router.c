#include "config.h"

#include <string.h>

#include "router.h"

struct route {
	enum route_id	 id;
	const char	*pattern;	/* after the mount; a leading "/" and
					   "*" is one segment, then a fixed
					   rest, if any */
	const char	*methods[3];
	const char	*allow;
	int		 needs_principal;
};

/* First match wins, so the fixed names come before the wildcard. */
static const struct route routes[] = {
	{ ROUTE_ORDERS, "", { "GET", "HEAD", "POST" }, "GET, HEAD, POST", 1 },
	{ ROUTE_HEALTH, "/_health", { "GET", "HEAD" }, "GET, HEAD", 0 },
	{ ROUTE_METRICS, "/_metrics", { "GET", "HEAD" }, "GET, HEAD", 0 },
	{ ROUTE_ORDER, "/*", { "GET", "HEAD" }, "GET, HEAD", 1 },
	{ ROUTE_CANCEL, "/*/cancel", { "POST" }, "POST", 1 },
};

/* Match the path part of uri under mount and the method against routes. */
void
router_match(const char *mount, const char *uri, const char *method,
    struct route_match *m)
{
	const struct route	*r;
	const char		*rest, *fixed;
	size_t			 i, j, mlen, plen, seglen, flen;

	memset(m, 0, sizeof(*m));
	m->id = ROUTE_NONE;
	if (uri == NULL || method == NULL)
		return;
	plen = strcspn(uri, "?#");
	mlen = strlen(mount);
	if (strcmp(mount, "/") == 0)
		mlen = 0;
	if (plen < mlen || strncmp(uri, mount, mlen) != 0)
		return;
	rest = uri + mlen;
	plen -= mlen;
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		r = &routes[i];
		if (strncmp(r->pattern, "/*", 2) == 0) {
			fixed = r->pattern + 2;
			flen = strlen(fixed);
			if (plen < 2 + flen || rest[0] != '/' ||
			    memcmp(rest + plen - flen, fixed, flen) != 0)
				continue;
			seglen = plen - 1 - flen;
			if (seglen == 0 || seglen > ROUTE_ARG_MAX ||
			    memchr(rest + 1, '/', seglen) != NULL)
				continue;
			memcpy(m->arg, rest + 1, seglen);
			m->arg[seglen] = '\0';
		} else if (strlen(r->pattern) != plen ||
		    strncmp(r->pattern, rest, plen) != 0)
			continue;
		m->id = r->id;
		m->allow = r->allow;
		m->needs_principal = r->needs_principal;
		for (j = 0; j < 3 && r->methods[j] != NULL; j++)
			if (strcmp(r->methods[j], method) == 0)
				m->method_allowed = 1;
		return;
	}
}
