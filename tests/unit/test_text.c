#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "text.h"
#include "unit.h"

/* Every byte value, two lower-case digits each, nothing written past. */
static void
test_hex(void)
{
	unsigned char	 all[256];
	char		 out[2 * sizeof(all) + 1];
	size_t		 i;

	for (i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)i;
	memset(out, '#', sizeof(out));
	text_hex(out, all, sizeof(all));
	CU_ASSERT_EQUAL(out[2 * sizeof(all)], '#');
	CU_ASSERT_NSTRING_EQUAL(out, "000102030405060708090a0b0c0d0e0f", 32);
	CU_ASSERT_NSTRING_EQUAL(out + 2 * 0x7e, "7e7f80", 6);
	CU_ASSERT_NSTRING_EQUAL(out + 2 * 0xfe, "feff", 4);

	memset(out, '#', sizeof(out));
	text_hex(out, "", 0);
	CU_ASSERT_EQUAL(out[0], '#');
	text_hex(out, "\xde\xad", 2);
	CU_ASSERT_NSTRING_EQUAL(out, "dead#", 5);
	text_hex_upper(out, "\x0f\xa9", 2);
	CU_ASSERT_NSTRING_EQUAL(out, "0FA9#", 5);
}

/* The text suite. */
static const struct unit_test tests[] = {
	{ "hex", test_hex },
	{ NULL, NULL },
};

const struct unit_suite test_text_suite = { "text", NULL, NULL, tests };
