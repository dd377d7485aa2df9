#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "unit.h"
#include "utf8.h"

#define SEQ(lit)	utf8_seq_len((const unsigned char *)(lit), sizeof(lit) - 1)

/* Sequence lengths at the edges of each form, and what is refused. */
static void
test_seq_len(void)
{
	CU_ASSERT_EQUAL(SEQ("a"), 1);
	CU_ASSERT_EQUAL(SEQ("\x7f"), 1);
	CU_ASSERT_EQUAL(SEQ("\xc2\x80"), 2);
	CU_ASSERT_EQUAL(SEQ("\xdf\xbf"), 2);
	CU_ASSERT_EQUAL(SEQ("\xe0\xa0\x80"), 3);
	CU_ASSERT_EQUAL(SEQ("\xed\x9f\xbf"), 3);
	CU_ASSERT_EQUAL(SEQ("\xee\x80\x80"), 3);
	CU_ASSERT_EQUAL(SEQ("\xf0\x90\x80\x80"), 4);
	CU_ASSERT_EQUAL(SEQ("\xf4\x8f\xbf\xbf"), 4);

	CU_ASSERT_EQUAL(SEQ("\x80"), 0);		/* lone continuation */
	CU_ASSERT_EQUAL(SEQ("\xc0\xaf"), 0);		/* overlong */
	CU_ASSERT_EQUAL(SEQ("\xc1\xbf"), 0);
	CU_ASSERT_EQUAL(SEQ("\xe0\x80\xaf"), 0);
	CU_ASSERT_EQUAL(SEQ("\xf0\x80\x80\xaf"), 0);
	CU_ASSERT_EQUAL(SEQ("\xed\xa0\x80"), 0);	/* surrogate */
	CU_ASSERT_EQUAL(SEQ("\xf4\x90\x80\x80"), 0);	/* above U+10FFFF */
	CU_ASSERT_EQUAL(SEQ("\xf5\x80\x80\x80"), 0);
	CU_ASSERT_EQUAL(SEQ("\xff"), 0);
	CU_ASSERT_EQUAL(SEQ("\xc3\x28"), 0);		/* bad continuation */
	CU_ASSERT_EQUAL(SEQ("\xe2\x82"), 0);		/* cut short */
	CU_ASSERT_EQUAL(utf8_seq_len((const unsigned char *)"\xc3\xa9", 1), 0);
}

/* Code points, not bytes. */
static void
test_count(void)
{
	CU_ASSERT_EQUAL(utf8_count("", 0), 0);
	CU_ASSERT_EQUAL(utf8_count("abc", 3), 3);
	CU_ASSERT_EQUAL(utf8_count("caf\xc3\xa9", 5), 4);
	CU_ASSERT_EQUAL(utf8_count("\xf0\x9f\x98\x80\xe2\x82\xac", 7), 2);
}

/* A cut keeps whole characters only, and everything that fits. */
static void
test_cut(void)
{
	const char	*s = "ab\xc3\xa9\xe2\x82\xac";	/* "abé€", 7 bytes */

	CU_ASSERT_EQUAL(utf8_cut(s, 7, 100), 7);
	CU_ASSERT_EQUAL(utf8_cut(s, 7, 7), 7);
	CU_ASSERT_EQUAL(utf8_cut(s, 7, 6), 4);
	CU_ASSERT_EQUAL(utf8_cut(s, 7, 5), 4);
	CU_ASSERT_EQUAL(utf8_cut(s, 7, 4), 4);
	CU_ASSERT_EQUAL(utf8_cut(s, 7, 3), 2);
	CU_ASSERT_EQUAL(utf8_cut(s, 7, 2), 2);
	CU_ASSERT_EQUAL(utf8_cut(s, 7, 0), 0);
	CU_ASSERT_EQUAL(utf8_cut("\xf0\x9f\x98\x80", 4, 3), 0);
	CU_ASSERT_EQUAL(utf8_cut("", 0, 0), 0);
}

/* The utf8 suite. */
static const struct unit_test tests[] = {
	{ "sequence length", test_seq_len },
	{ "count", test_count },
	{ "cut", test_cut },
	{ NULL, NULL },
};

const struct unit_suite test_utf8_suite = { "utf8", NULL, NULL, tests };
