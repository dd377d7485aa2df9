#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "router.h"
#include "unit.h"

struct router_case {
	const char	*mount, *uri, *method;
	enum route_id	 id;
	int		 allowed;
	const char	*arg;
};

static const struct router_case cases[] = {
	{ "/orders", "/orders", "POST", ROUTE_ORDERS, 1, "" },
	{ "/orders", "/orders?x=1", "POST", ROUTE_ORDERS, 1, "" },
	{ "/orders", "/orders", "GET", ROUTE_ORDERS, 1, "" },
	{ "/orders", "/orders?limit=5", "HEAD", ROUTE_ORDERS, 1, "" },
	{ "/orders", "/orders", "DELETE", ROUTE_ORDERS, 0, "" },
	{ "/orders", "/orders/_health", "GET", ROUTE_HEALTH, 1, "" },
	{ "/orders", "/orders/_health", "HEAD", ROUTE_HEALTH, 1, "" },
	{ "/orders", "/orders/_health", "POST", ROUTE_HEALTH, 0, "" },
	{ "/orders", "/orders/_metrics", "GET", ROUTE_METRICS, 1, "" },
	{ "/orders", "/orders/_metrics?x", "HEAD", ROUTE_METRICS, 1, "" },
	{ "/orders", "/orders/_metrics", "POST", ROUTE_METRICS, 0, "" },
	{ "/orders", "/orders/o-12", "GET", ROUTE_ORDER, 1, "o-12" },
	{ "/orders", "/orders/o-12?pretty", "GET", ROUTE_ORDER, 1, "o-12" },
	{ "/orders", "/orders/o-12", "PUT", ROUTE_ORDER, 0, "o-12" },
	{ "/orders", "/orders/o-12/cancel", "POST", ROUTE_CANCEL, 1, "o-12" },
	{ "/orders", "/orders/o-12/cancel?x", "POST", ROUTE_CANCEL, 1, "o-12" },
	{ "/orders", "/orders/o-12/cancel", "GET", ROUTE_CANCEL, 0, "o-12" },
	{ "/orders", "/orders/o-12/cancel", "DELETE", ROUTE_CANCEL, 0, "o-12" },
	{ "/orders", "/orders//cancel", "POST", ROUTE_NONE, 0, "" },
	{ "/orders", "/orders/a/b/cancel", "POST", ROUTE_NONE, 0, "" },
	{ "/orders", "/orders/o-12/cancelx", "POST", ROUTE_NONE, 0, "" },
	{ "/orders", "/orders/cancel", "GET", ROUTE_ORDER, 1, "cancel" },
	{ "/", "/o-7/cancel", "POST", ROUTE_CANCEL, 1, "o-7" },
	{ "/orders", "/orders/", "GET", ROUTE_NONE, 0, "" },
	{ "/orders", "/orders/a/b", "GET", ROUTE_NONE, 0, "" },
	{ "/orders", "/ordersx", "POST", ROUTE_NONE, 0, "" },
	{ "/orders", "/other", "GET", ROUTE_NONE, 0, "" },
	{ "/orders", "/", "GET", ROUTE_NONE, 0, "" },
	{ "/shop/orders", "/shop/orders/o-1", "GET", ROUTE_ORDER, 1, "o-1" },
	{ "/shop/orders", "/orders/o-1", "GET", ROUTE_NONE, 0, "" },
	{ "/", "/o-7", "GET", ROUTE_ORDER, 1, "o-7" },
	{ "/", "/", "GET", ROUTE_NONE, 0, "" },
};

static void
test_table(void)
{
	struct route_match	 m;
	size_t			 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		router_match(cases[i].mount, cases[i].uri, cases[i].method, &m);
		CU_ASSERT_EQUAL(m.id, cases[i].id);
		if (m.id != cases[i].id)
			fprintf(stderr, "router case %zu: %s %s\n", i,
			    cases[i].method, cases[i].uri);
		if (m.id == ROUTE_NONE)
			continue;
		CU_ASSERT_EQUAL(m.method_allowed, cases[i].allowed);
		CU_ASSERT_STRING_EQUAL(m.arg, cases[i].arg);
	}
}

static void
test_allow_and_auth(void)
{
	struct route_match	 m;
	char			 uri[200];

	router_match("/orders", "/orders", "PUT", &m);
	CU_ASSERT_STRING_EQUAL(m.allow, "GET, HEAD, POST");
	CU_ASSERT_TRUE(m.needs_principal);
	router_match("/orders", "/orders/_health", "GET", &m);
	CU_ASSERT_STRING_EQUAL(m.allow, "GET, HEAD");
	CU_ASSERT_FALSE(m.needs_principal);
	router_match("/orders", "/orders/_metrics", "GET", &m);
	CU_ASSERT_FALSE(m.needs_principal);
	router_match("/orders", "/orders/o-1", "GET", &m);
	CU_ASSERT_TRUE(m.needs_principal);
	router_match("/orders", NULL, "GET", &m);
	CU_ASSERT_EQUAL(m.id, ROUTE_NONE);
	/* A segment longer than any id is not an order path. */
	memset(uri, 'x', sizeof(uri));
	memcpy(uri, "/orders/", 8);
	uri[sizeof(uri) - 1] = '\0';
	router_match("/orders", uri, "GET", &m);
	CU_ASSERT_EQUAL(m.id, ROUTE_NONE);
}

/* The router suite. */
static const struct unit_test tests[] = {
	{ "route table", test_table },
	{ "allow and auth", test_allow_and_auth },
	{ NULL, NULL },
};

const struct unit_suite test_router_suite = { "router", NULL, NULL, tests };
