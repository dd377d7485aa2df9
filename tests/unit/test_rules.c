#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "conf.h"
#include "order_input.h"
#include "problem.h"
#include "rules.h"
#include "stock.h"
#include "unit.h"

/*
 * An order of two items that passes every rule: 2 x A1 at 150 and
 * 1 x B2 at 300, in EUR, with 5 of each in stock.
 */
static void
good_order(struct order_input *in, struct stock_row *rows)
{
	memset(in, 0, sizeof(*in));
	memset(rows, 0, 2 * sizeof(*rows));
	strcpy(in->currency, "EUR");
	in->amount = 600;
	in->nitems = 2;
	strcpy(in->items[0].sku, "A1");
	in->items[0].qty = 2;
	strcpy(in->items[1].sku, "B2");
	in->items[1].qty = 1;
	rows[0].found = rows[1].found = 1;
	strcpy(rows[0].currency, "EUR");
	strcpy(rows[1].currency, "EUR");
	rows[0].unit_price = 150;
	rows[1].unit_price = 300;
	rows[0].available = rows[1].available = 5;
}

/* Assert that the order is rejected with status, code and detail part. */
static void
expect_reject(const struct order_input *in, const struct stock_row *rows,
    int status, enum problem_code code, const char *part)
{
	struct problem	 p;

	memset(&p, 0, sizeof(p));
	CU_ASSERT_EQUAL(rules_judge(in, rows, &p), -1);
	CU_ASSERT_EQUAL(p.status, status);
	CU_ASSERT_EQUAL(p.code, code);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.detail, part));
	if (p.code != code || strstr(p.detail, part) == NULL)
		fprintf(stderr, "\nwant %s [%s], got %d %s: %s\n",
		    problem_code_name(code), part, p.status,
		    problem_code_name(p.code), p.detail);
}

/* An order that breaks no rule may proceed; exact stock is enough. */
static void
test_judge_ok(void)
{
	struct order_input	 in;
	struct stock_row	 rows[2];
	struct problem		 p;

	good_order(&in, rows);
	CU_ASSERT_EQUAL(rules_judge(&in, rows, &p), 0);
	rows[0].available = 2;
	rows[1].available = 1;
	CU_ASSERT_EQUAL(rules_judge(&in, rows, &p), 0);
}

/* Each rule on its own, with the item it names. */
static void
test_judge_each(void)
{
	struct order_input	 in;
	struct stock_row	 rows[2];

	good_order(&in, rows);
	rows[1].found = 0;
	expect_reject(&in, rows, 422, PROBLEM_UNKNOWN_SKU,
	    "items[1].sku: unknown SKU \"B2\"");

	good_order(&in, rows);
	strcpy(rows[1].currency, "USD");
	expect_reject(&in, rows, 422, PROBLEM_CURRENCY_MISMATCH,
	    "items[1]: SKU \"B2\" is sold in USD, not EUR");

	good_order(&in, rows);
	in.amount = 599;
	expect_reject(&in, rows, 422, PROBLEM_AMOUNT_MISMATCH,
	    "amount is 599 but the items cost 600");

	good_order(&in, rows);
	rows[0].available = 1;
	expect_reject(&in, rows, 409, PROBLEM_OUT_OF_STOCK,
	    "items[0]: 2 of SKU \"A1\" requested, 1 available");
}

/*
 * Every rule broken at once: an unknown SKU comes first, then the
 * currency, then the amount, then the stock.
 */
static void
test_judge_precedence(void)
{
	struct order_input	 in;
	struct stock_row	 rows[2];

	good_order(&in, rows);
	rows[1].found = 0;
	strcpy(rows[0].currency, "USD");
	in.amount = 1;
	rows[0].available = 0;
	expect_reject(&in, rows, 422, PROBLEM_UNKNOWN_SKU, "unknown SKU");
	rows[1].found = 1;
	expect_reject(&in, rows, 422, PROBLEM_CURRENCY_MISMATCH, "sold in USD");
	strcpy(rows[0].currency, "EUR");
	expect_reject(&in, rows, 422, PROBLEM_AMOUNT_MISMATCH, "amount is 1");
	in.amount = 600;
	expect_reject(&in, rows, 409, PROBLEM_OUT_OF_STOCK, "0 available");
	rows[0].available = 2;
	rows[1].found = 0;
	rows[0].found = 0;
	/* The first item that breaks a rule is the one named. */
	expect_reject(&in, rows, 422, PROBLEM_UNKNOWN_SKU, "items[0].sku");
}

/* A price times quantity, or a sum, that overflows matches no amount. */
static void
test_judge_overflow(void)
{
	struct order_input	 in;
	struct stock_row	 rows[2];

	good_order(&in, rows);
	rows[0].unit_price = LLONG_MAX / 2 + 1;	/* x 2 overflows */
	in.amount = ORDER_AMOUNT_MAX;
	expect_reject(&in, rows, 422, PROBLEM_AMOUNT_MISMATCH,
	    "but the items cost -1");

	good_order(&in, rows);
	in.items[0].qty = 1;
	rows[0].unit_price = LLONG_MAX - 100;	/* + 300 overflows */
	expect_reject(&in, rows, 422, PROBLEM_AMOUNT_MISMATCH,
	    "but the items cost -1");
}

/* The cap doubles from retry_backoff per attempt up to its maximum. */
static void
test_backoff_growth(void)
{
	struct conf	 c;

	conf_defaults(&c);
	c.retry_backoff_ms = 50;
	c.retry_backoff_max_ms = 1000;
	CU_ASSERT_EQUAL(rules_backoff_cap(&c, 2), 50);
	CU_ASSERT_EQUAL(rules_backoff_cap(&c, 3), 100);
	CU_ASSERT_EQUAL(rules_backoff_cap(&c, 4), 200);
	CU_ASSERT_EQUAL(rules_backoff_cap(&c, 5), 400);
	CU_ASSERT_EQUAL(rules_backoff_cap(&c, 6), 800);
	CU_ASSERT_EQUAL(rules_backoff_cap(&c, 7), 1000);
	CU_ASSERT_EQUAL(rules_backoff_cap(&c, 100), 1000);
	c.retry_backoff_ms = c.retry_backoff_max_ms = 30;
	CU_ASSERT_EQUAL(rules_backoff_cap(&c, 2), 30);
	CU_ASSERT_EQUAL(rules_backoff_cap(&c, 9), 30);
	conf_clear(&c);
}

/* Full jitter: every wait lies between 0 and the cap, both reached. */
static void
test_backoff_bounds(void)
{
	struct conf	 c;
	long		 ms, lo = -1, hi = -1;
	int		 i, n, bad = 0;

	conf_defaults(&c);
	c.retry_backoff_ms = 4;
	c.retry_backoff_max_ms = 1000;
	srandom(1);
	for (n = 2; n <= 4; n++)
		for (i = 0; i < 2000; i++) {
			ms = rules_backoff_ms(&c, n);
			if (ms < 0 || ms > rules_backoff_cap(&c, n))
				bad++;
			if (n == 2 && (lo == -1 || ms < lo))
				lo = ms;
			if (n == 2 && ms > hi)
				hi = ms;
		}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(lo, 0);
	CU_ASSERT_EQUAL(hi, 4);
	conf_clear(&c);
}

/* Expect rules_cancel_judge() to refuse with status and code. */
static void
expect_cancel_reject(int found, const char *status, long long age_s,
    long long window_ms, int st, enum problem_code code, const char *part)
{
	struct problem	 p;

	memset(&p, 0, sizeof(p));
	CU_ASSERT_EQUAL(rules_cancel_judge(found, status, age_s, window_ms,
	    &p), -1);
	CU_ASSERT_EQUAL(p.status, st);
	CU_ASSERT_EQUAL(p.code, code);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.detail, part));
}

/*
 * A cancel is judged on the order row alone, in this order: not found,
 * already cancelled, another status, past the window (0: no window).
 */
static void
test_cancel_judge(void)
{
	struct problem	 p;

	memset(&p, 0, sizeof(p));
	CU_ASSERT_EQUAL(rules_cancel_judge(1, "CREATED", 10, 3600 * 1000, &p),
	    0);
	CU_ASSERT_EQUAL(rules_cancel_judge(1, "CREATED", 3600, 3600 * 1000,
	    &p), 0);
	CU_ASSERT_EQUAL(rules_cancel_judge(1, "CREATED", 1LL << 40, 0, &p), 0);
	expect_cancel_reject(0, "", 0, 0, 404, PROBLEM_ORDER_NOT_FOUND,
	    "no order");
	/* Not found comes first, whatever else the row would say. */
	expect_cancel_reject(0, "CANCELLED", 1LL << 40, 1000, 404,
	    PROBLEM_ORDER_NOT_FOUND, "no order");
	expect_cancel_reject(1, "CANCELLED", 10, 0, 409,
	    PROBLEM_ORDER_ALREADY_CANCELLED, "already cancelled");
	/* Already cancelled before the window. */
	expect_cancel_reject(1, "CANCELLED", 1LL << 40, 1000, 409,
	    PROBLEM_ORDER_ALREADY_CANCELLED, "already cancelled");
	expect_cancel_reject(1, "PACKED", 10, 0, 409,
	    PROBLEM_ORDER_NOT_CANCELLABLE, "status PACKED");
	expect_cancel_reject(1, "CREATED", 3601, 3600 * 1000, 409,
	    PROBLEM_ORDER_NOT_CANCELLABLE, "within 3600 s");
	/* The status compares exactly. */
	expect_cancel_reject(1, "created", 10, 0, 409,
	    PROBLEM_ORDER_NOT_CANCELLABLE, "status created");
}

/* The rules suite. */
static const struct unit_test tests[] = {
	{ "judge ok", test_judge_ok },
	{ "judge each rule", test_judge_each },
	{ "judge precedence", test_judge_precedence },
	{ "judge overflow", test_judge_overflow },
	{ "backoff growth", test_backoff_growth },
	{ "backoff bounds", test_backoff_bounds },
	{ "cancel judge", test_cancel_judge },
	{ NULL, NULL },
};

const struct unit_suite test_rules_suite = { "rules", NULL, NULL, tests };
