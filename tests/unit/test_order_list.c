#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "order_list.h"
#include "unit.h"

struct list_case {
	const char		*query;
	int			 ok;
	int			 limit;
	enum order_list_dir	 dir;
	unsigned long long	 cursor;
	const char		*names;		/* in the detail of a refusal */
};

static const struct list_case cases[] = {
	{ NULL, 1, 20, ORDER_LIST_FIRST, 0, NULL },
	{ "", 1, 20, ORDER_LIST_FIRST, 0, NULL },
	{ "&&", 1, 20, ORDER_LIST_FIRST, 0, NULL },
	{ "limit=1", 1, 1, ORDER_LIST_FIRST, 0, NULL },
	{ "limit=100", 1, 100, ORDER_LIST_FIRST, 0, NULL },
	{ "limit=5&starting_after=o-42", 1, 5, ORDER_LIST_AFTER, 42, NULL },
	{ "ending_before=o-7&limit=3", 1, 3, ORDER_LIST_BEFORE, 7, NULL },
	{ "%6cimit=2&ending%5fbefore=o%2D9", 1, 2, ORDER_LIST_BEFORE, 9, NULL },
	{ "limit=3#frag=1", 1, 3, ORDER_LIST_FIRST, 0, NULL },
	{ "limit=0", 0, 0, 0, 0, "limit" },
	{ "limit=101", 0, 0, 0, 0, "limit" },
	{ "limit=1000", 0, 0, 0, 0, "limit" },
	{ "limit=abc", 0, 0, 0, 0, "limit" },
	{ "limit=", 0, 0, 0, 0, "limit" },
	{ "limit", 0, 0, 0, 0, "limit" },
	{ "limit=+5", 0, 0, 0, 0, "limit" },
	{ "limit=05", 0, 0, 0, 0, "limit" },
	{ "limit=5%00", 0, 0, 0, 0, "limit" },
	{ "limit=%zz", 0, 0, 0, 0, "limit" },
	{ "limit=%4", 0, 0, 0, 0, "limit" },
	{ "limit=1&limit=1", 0, 0, 0, 0, "limit" },
	{ "starting_after=", 0, 0, 0, 0, "starting_after" },
	{ "starting_after=o-0", 0, 0, 0, 0, "starting_after" },
	{ "starting_after=o-01", 0, 0, 0, 0, "starting_after" },
	{ "starting_after=42", 0, 0, 0, 0, "starting_after" },
	{ "starting_after=o-99999999999999999999999", 0, 0, 0, 0,
	    "starting_after" },
	{ "ending_before=o-1&ending_before=o-2", 0, 0, 0, 0, "ending_before" },
	{ "starting_after=o-1&ending_before=o-2", 0, 0, 0, 0,
	    "starting_after and ending_before" },
	{ "sort=asc", 0, 0, 0, 0, "unknown query parameter sort" },
	{ "Limit=2", 0, 0, 0, 0, "unknown query parameter Limit" },
	{ "%22%3E=1", 0, 0, 0, 0, "malformed or unknown" },
};

static void
test_table(void)
{
	struct order_list_query	 q;
	struct problem		 p;
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&p, 0, sizeof(p));
		rc = order_list_parse(cases[i].query, &q, &p);
		CU_ASSERT_EQUAL(rc, cases[i].ok ? 0 : -1);
		if (rc != (cases[i].ok ? 0 : -1))
			fprintf(stderr, "list case %zu: %s\n", i,
			    cases[i].query);
		if (cases[i].ok) {
			CU_ASSERT_EQUAL(q.limit, cases[i].limit);
			CU_ASSERT_EQUAL(q.dir, cases[i].dir);
			CU_ASSERT_EQUAL(q.cursor, cases[i].cursor);
			continue;
		}
		CU_ASSERT_EQUAL(p.status, 400);
		CU_ASSERT_EQUAL(p.code, PROBLEM_VALIDATION_FAILED);
		CU_ASSERT_PTR_NOT_NULL(strstr(p.detail, cases[i].names));
		if (strstr(p.detail, cases[i].names) == NULL)
			fprintf(stderr, "list case %zu: %s: %s\n", i,
			    cases[i].query, p.detail);
	}
}

/* The list suite. */
static const struct unit_test tests[] = {
	{ "query table", test_table },
	{ NULL, NULL },
};

const struct unit_suite test_order_list_suite = { "order_list", NULL, NULL,
	tests };
