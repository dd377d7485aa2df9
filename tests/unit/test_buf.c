#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "buf.h"
#include "unit.h"

static void
test_cap(void)
{
	struct buf	 b;

	buf_init(&b, 8);
	CU_ASSERT_EQUAL(buf_adds(&b, "12345678"), BUF_OK);
	CU_ASSERT_EQUAL(buf_addc(&b, '9'), BUF_TOO_BIG);
	CU_ASSERT_EQUAL(b.len, 8);
	CU_ASSERT_STRING_EQUAL(b.p, "12345678");
	buf_reset(&b);
	CU_ASSERT_EQUAL(buf_printf(&b, "%d-%s", 42, "x"), BUF_OK);
	CU_ASSERT_STRING_EQUAL(b.p, "42-x");
	CU_ASSERT_EQUAL(buf_printf(&b, "%s", "too long!"), BUF_TOO_BIG);
	CU_ASSERT_STRING_EQUAL(b.p, "42-x");
	buf_free(&b);
	buf_free(&b);
}

static void
test_json_string(void)
{
	struct buf	 b;
	const char	 in[] = "a\"b\\c\n\x01\xc3\xa9/";

	buf_init(&b, 1024);
	CU_ASSERT_EQUAL(buf_add_json_string(&b, in, sizeof(in) - 1), BUF_OK);
	CU_ASSERT_STRING_EQUAL(b.p, "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9/\"");
	buf_free(&b);
}

/* A JSON string that does not fit leaves the buffer as it was. */
static void
test_json_string_cap(void)
{
	struct buf	 b;
	size_t		 max;
	int		 rc;

	/* Every cap from the empty buffer to one byte short of "\"ab\n\"". */
	for (max = 3; max < 3 + 6; max++) {
		buf_init(&b, max);
		CU_ASSERT_EQUAL(buf_adds(&b, "xyz"), BUF_OK);
		rc = buf_add_json_string(&b, "ab\n", 3);
		CU_ASSERT_EQUAL(rc, BUF_TOO_BIG);
		CU_ASSERT_EQUAL(b.len, 3);
		CU_ASSERT_STRING_EQUAL(b.p, "xyz");
		buf_free(&b);
	}
	buf_init(&b, 3 + 6);
	CU_ASSERT_EQUAL(buf_adds(&b, "xyz"), BUF_OK);
	CU_ASSERT_EQUAL(buf_add_json_string(&b, "ab\n", 3), BUF_OK);
	CU_ASSERT_STRING_EQUAL(b.p, "xyz\"ab\\n\"");
	buf_free(&b);
}

static void
test_detach(void)
{
	struct buf	 b;
	char		*p;
	size_t		 n;

	buf_init(&b, 64);
	buf_adds(&b, "abc");
	p = buf_detach(&b, &n);
	CU_ASSERT_STRING_EQUAL(p, "abc");
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_PTR_NULL(b.p);
	free(p);
	p = buf_detach(&b, &n);
	CU_ASSERT_STRING_EQUAL(p, "");
	CU_ASSERT_EQUAL(n, 0);
	free(p);
}

/* The buf suite. */
static const struct unit_test tests[] = {
	{ "cap", test_cap },
	{ "json string", test_json_string },
	{ "json string cap", test_json_string_cap },
	{ "detach", test_detach },
	{ NULL, NULL },
};

const struct unit_suite test_buf_suite = { "buf", NULL, NULL, tests };
