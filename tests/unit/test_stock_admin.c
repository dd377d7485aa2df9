#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "stock_admin.h"
#include "unit.h"

/* Parse four fields; return what stock_row_parse returned. */
static int
row(struct stock_row *r, const char *sku, const char *cur, const char *price,
    const char *avail, char *err, size_t errsz)
{
	memset(r, 0, sizeof(*r));
	err[0] = '\0';
	return stock_row_parse(r, sku, cur, price, avail, err, errsz);
}

/* Good rows, at the edges of every range. */
static void
test_good_rows(void)
{
	struct stock_row	 r;
	char			 err[256], sku[ORDER_SKU_MAX + 1];

	CU_ASSERT_EQUAL(row(&r, "A-10", "KRW", "6000", "100", err,
	    sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(r.sku, "A-10");
	CU_ASSERT_STRING_EQUAL(r.currency, "KRW");
	CU_ASSERT_EQUAL(r.unit_price, 6000);
	CU_ASSERT_EQUAL(r.available, 100);
	CU_ASSERT_EQUAL(row(&r, "a.b_c-9", "USD", "0", "0", err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(row(&r, "X", "EUR", "1000000000000000", "2147483647",
	    err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.unit_price, 1000000000000000LL);
	CU_ASSERT_EQUAL(r.available, 2147483647LL);
	memset(sku, 'S', ORDER_SKU_MAX);
	sku[ORDER_SKU_MAX] = '\0';
	CU_ASSERT_EQUAL(row(&r, sku, "KRW", "1", "1", err, sizeof(err)), 0);
}

/* Each bad field is refused with a message that names it. */
static void
test_bad_rows(void)
{
	struct stock_row	 r;
	char			 err[256], sku[ORDER_SKU_MAX + 2];

	CU_ASSERT_EQUAL(row(&r, "", "KRW", "1", "1", err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "sku must be 1 to 64"));
	memset(sku, 'S', ORDER_SKU_MAX + 1);
	sku[ORDER_SKU_MAX + 1] = '\0';
	CU_ASSERT_EQUAL(row(&r, sku, "KRW", "1", "1", err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not 65"));
	CU_ASSERT_EQUAL(row(&r, "A/1", "KRW", "1", "1", err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "invalid character at position 2"));
	CU_ASSERT_EQUAL(row(&r, "A\xc3\xa9", "KRW", "1", "1", err,
	    sizeof(err)), -1);
	CU_ASSERT_EQUAL(row(&r, "A", "krw", "1", "1", err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "currency must be three"));
	CU_ASSERT_EQUAL(row(&r, "A", "KR", "1", "1", err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(row(&r, "A", "KRWX", "1", "1", err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(row(&r, "A", "KRW", "-1", "1", err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unit_price must be"));
	CU_ASSERT_EQUAL(row(&r, "A", "KRW", "1000000000000001", "1", err,
	    sizeof(err)), -1);
	CU_ASSERT_EQUAL(row(&r, "A", "KRW", "99999999999999999999", "1", err,
	    sizeof(err)), -1);
	CU_ASSERT_EQUAL(row(&r, "A", "KRW", "1.0", "1", err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(row(&r, "A", "KRW", "", "1", err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(row(&r, "A", "KRW", "1", "2147483648", err,
	    sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "available must be"));
	CU_ASSERT_EQUAL(row(&r, "A", "KRW", "1", "+1", err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(row(&r, "A", "KRW", "1", " 1", err, sizeof(err)), -1);
}

/* CSV lines: rows, skipped lines, and malformed ones. */
static void
test_csv_lines(void)
{
	struct stock_row	 r;
	char			 err[256], line[128];

	strcpy(line, "A-10,KRW,6000,100");
	CU_ASSERT_EQUAL(stock_csv_line(line, &r, err, sizeof(err)), 1);
	CU_ASSERT_STRING_EQUAL(r.sku, "A-10");
	strcpy(line, "  B-20 ,\tKRW, 2500 ,50\t");
	CU_ASSERT_EQUAL(stock_csv_line(line, &r, err, sizeof(err)), 1);
	CU_ASSERT_STRING_EQUAL(r.sku, "B-20");
	CU_ASSERT_EQUAL(r.available, 50);
	strcpy(line, "sku,currency,unit_price,available");
	CU_ASSERT_EQUAL(stock_csv_line(line, &r, err, sizeof(err)), 0);
	strcpy(line, "# a comment, with commas");
	CU_ASSERT_EQUAL(stock_csv_line(line, &r, err, sizeof(err)), 0);
	strcpy(line, "   ");
	CU_ASSERT_EQUAL(stock_csv_line(line, &r, err, sizeof(err)), 0);
	strcpy(line, "A-10,KRW,6000");
	CU_ASSERT_EQUAL(stock_csv_line(line, &r, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "3 fields, expected 4"));
	strcpy(line, "A-10,KRW,6000,1,2");
	CU_ASSERT_EQUAL(stock_csv_line(line, &r, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "more than 4 fields"));
	strcpy(line, "\"A-10\",KRW,6000,1");
	CU_ASSERT_EQUAL(stock_csv_line(line, &r, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "quotes"));
	strcpy(line, "A-10,KRW,,1");
	CU_ASSERT_EQUAL(stock_csv_line(line, &r, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unit_price"));
}

/* Subcommands and their argument counts. */
static void
test_argc(void)
{
	CU_ASSERT_EQUAL(stock_admin_argc("set"), 4);
	CU_ASSERT_EQUAL(stock_admin_argc("list"), 0);
	CU_ASSERT_EQUAL(stock_admin_argc("import"), 1);
	CU_ASSERT_EQUAL(stock_admin_argc("delete"), -1);
	CU_ASSERT_EQUAL(stock_admin_argc(""), -1);
}

/* The stock_admin suite. */
static const struct unit_test tests[] = {
	{ "good rows", test_good_rows },
	{ "bad rows", test_bad_rows },
	{ "csv lines", test_csv_lines },
	{ "subcommands", test_argc },
	{ NULL, NULL },
};

const struct unit_suite test_stock_admin_suite = {
	"stock_admin", NULL, NULL, tests
};
