#include "config.h"

#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "idem_key.h"
#include "problem.h"
#include "unit.h"

/* An assertion reported at the caller's line. */
#define CHECK_AT(line, cond)						\
	CU_assertImplementation((cond) ? CU_TRUE : CU_FALSE,		\
	    (unsigned int)(line), #cond, __FILE__, "", CU_FALSE)

/* Bare and quoted keys that are accepted. */
static void
test_key_valid(void)
{
	struct problem	 pb;
	char		 key[IDEM_KEY_MAX + 1], hv[IDEM_KEY_MAX + 8];

	CU_ASSERT_EQUAL(idem_key_parse("abc-1", key, &pb), 0);
	CU_ASSERT_STRING_EQUAL(key, "abc-1");
	CU_ASSERT_EQUAL(idem_key_parse(" \tabc-1\t ", key, &pb), 0);
	CU_ASSERT_STRING_EQUAL(key, "abc-1");
	CU_ASSERT_EQUAL(idem_key_parse("\"abc-1\"", key, &pb), 0);
	CU_ASSERT_STRING_EQUAL(key, "abc-1");
	CU_ASSERT_EQUAL(idem_key_parse(" \"abc-1\" ", key, &pb), 0);
	CU_ASSERT_STRING_EQUAL(key, "abc-1");
	CU_ASSERT_EQUAL(idem_key_parse("\"a\\\"b\\\\c\"", key, &pb), 0);
	CU_ASSERT_STRING_EQUAL(key, "a\"b\\c");
	CU_ASSERT_EQUAL(idem_key_parse("!~", key, &pb), 0);
	CU_ASSERT_STRING_EQUAL(key, "!~");
	CU_ASSERT_EQUAL(idem_key_parse("Key-1", key, &pb), 0);
	CU_ASSERT_STRING_EQUAL(key, "Key-1");
	CU_ASSERT_EQUAL(idem_key_parse("a\"b", key, &pb), 0);
	CU_ASSERT_STRING_EQUAL(key, "a\"b");

	memset(hv, 'k', IDEM_KEY_MAX);
	hv[IDEM_KEY_MAX] = '\0';
	CU_ASSERT_EQUAL(idem_key_parse(hv, key, &pb), 0);
	CU_ASSERT_EQUAL(strlen(key), IDEM_KEY_MAX);
	CU_ASSERT_EQUAL(memcmp(key, hv, IDEM_KEY_MAX), 0);

	hv[0] = '"';
	memset(hv + 1, 'q', IDEM_KEY_MAX);
	hv[IDEM_KEY_MAX + 1] = '"';
	hv[IDEM_KEY_MAX + 2] = '\0';
	CU_ASSERT_EQUAL(idem_key_parse(hv, key, &pb), 0);
	CU_ASSERT_EQUAL(strlen(key), IDEM_KEY_MAX);
	CU_ASSERT_EQUAL(key[0], 'q');
}

/* Assert that a header value is refused as an invalid key. */
static void
key_bad(int line, const char *hv, const char *what)
{
	struct problem	 pb;
	char		 key[IDEM_KEY_MAX + 1];
	int		 rc;

	memset(&pb, 0, sizeof(pb));
	memset(key, 'x', sizeof(key));
	rc = idem_key_parse(hv, key, &pb);
	CHECK_AT(line, rc == -1);
	CHECK_AT(line, pb.status == 400);
	CHECK_AT(line, problem_code_name(pb.code) != NULL &&
	    strcmp(problem_code_name(pb.code),
	    "IDEMPOTENCY_KEY_INVALID") == 0);
	CHECK_AT(line, strstr(pb.detail, what) != NULL);
	CHECK_AT(line, key[0] == '\0');
	if (rc != -1 || strstr(pb.detail, what) == NULL)
		fprintf(stderr, "\nline %d: key detail: %s\n", line,
		    pb.detail);
}

/* A missing header is its own error. */
static void
test_key_missing(void)
{
	struct problem	 pb;
	char		 key[IDEM_KEY_MAX + 1];

	memset(&pb, 0, sizeof(pb));
	CU_ASSERT_EQUAL(idem_key_parse(NULL, key, &pb), -1);
	CU_ASSERT_EQUAL(pb.status, 400);
	CU_ASSERT_PTR_NOT_NULL(problem_code_name(pb.code));
	if (problem_code_name(pb.code) != NULL)
		CU_ASSERT_STRING_EQUAL(problem_code_name(pb.code),
		    "IDEMPOTENCY_KEY_MISSING");
}

/* Empty, too long, bad bytes and bad sf-strings. */
static void
test_key_invalid(void)
{
	char	 hv[IDEM_KEY_MAX + 8];

	key_bad(__LINE__, "", "empty");
	key_bad(__LINE__, "  \t ", "empty");
	key_bad(__LINE__, "\"\"", "empty");

	memset(hv, 'k', IDEM_KEY_MAX + 1);
	hv[IDEM_KEY_MAX + 1] = '\0';
	key_bad(__LINE__, hv, "256");
	hv[0] = '"';
	memset(hv + 1, 'q', IDEM_KEY_MAX + 1);
	hv[IDEM_KEY_MAX + 2] = '"';
	hv[IDEM_KEY_MAX + 3] = '\0';
	key_bad(__LINE__, hv, "256");

	key_bad(__LINE__, "abc def", "0x20 at position 4");
	key_bad(__LINE__, "abc\x7f", "0x7f at position 4");
	key_bad(__LINE__, "caf\xc3\xa9", "0xc3 at position 4");
	key_bad(__LINE__, "a\tb", "0x09 at position 2");
	key_bad(__LINE__, "\x01", "0x01 at position 1");
	key_bad(__LINE__, "\"a b\"", "0x20 at position 2");

	key_bad(__LINE__, "\"abc", "no closing quote");
	key_bad(__LINE__, "\"", "no closing quote");
	key_bad(__LINE__, "\"a\\\"", "no closing quote");
	key_bad(__LINE__, "\"ab\\c\"", "backslash");
	key_bad(__LINE__, "\"ab\\\"", "no closing quote");
	key_bad(__LINE__, "\"abc\\", "backslash");
	key_bad(__LINE__, "\"abc\"x", "after the closing quote");
	key_bad(__LINE__, "\"abc\" \"d\"", "after the closing quote");
	key_bad(__LINE__, "\"ab\x01\"", "quoted");
	key_bad(__LINE__, "\"ab\x7f\"", "quoted");
	key_bad(__LINE__, "\"caf\xc3\xa9\"", "quoted");
	key_bad(__LINE__, "\"a\tb\"", "quoted");
}

/* The idem_key suite. */
static const struct unit_test tests[] = {
	{ "key valid", test_key_valid },
	{ "key missing", test_key_missing },
	{ "key invalid", test_key_invalid },
	{ NULL, NULL },
};

const struct unit_suite test_idem_key_suite = { "idem_key", NULL, NULL, tests };
