#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "order_input.h"
#include "problem.h"
#include "rules.h"
#include "stock.h"

/*
 * Judge every final business rule on the stock rows locked for the
 * items of in (rows[i] for in->items[i]), in this order: an unknown SKU,
 * then a currency mismatch, then an amount that is not what the items
 * cost (a price times quantity or a sum that overflows costs no amount),
 * then a quantity beyond what is available.  Returns 0 when the order
 * may proceed, else -1 with the first rule broken in p.
 */
int
rules_judge(const struct order_input *in, const struct stock_row *rows,
    struct problem *p)
{
	long long	 total = 0, line;
	size_t		 i;

	for (i = 0; i < in->nitems; i++)
		if (!rows[i].found) {
			problem_set(p, PROBLEM_UNKNOWN_SKU,
			    "items[%zu].sku: unknown SKU \"%s\"", i,
			    in->items[i].sku);
			return -1;
		}
	for (i = 0; i < in->nitems; i++)
		if (strcmp(rows[i].currency, in->currency) != 0) {
			problem_set(p, PROBLEM_CURRENCY_MISMATCH,
			    "items[%zu]: SKU \"%s\" is sold in %s, not %s", i,
			    in->items[i].sku, rows[i].currency, in->currency);
			return -1;
		}
	for (i = 0; i < in->nitems; i++)
		if (__builtin_mul_overflow(rows[i].unit_price,
		    (long long)in->items[i].qty, &line) ||
		    __builtin_add_overflow(total, line, &total)) {
			total = -1;
			break;
		}
	if (total != in->amount) {
		problem_set(p, PROBLEM_AMOUNT_MISMATCH, "amount is %lld "
		    "but the items cost %lld", in->amount, total);
		return -1;
	}
	for (i = 0; i < in->nitems; i++)
		if (rows[i].available < in->items[i].qty) {
			problem_set(p, PROBLEM_OUT_OF_STOCK, "items[%zu]: "
			    "%d of SKU \"%s\" requested, %lld available", i,
			    in->items[i].qty, in->items[i].sku,
			    rows[i].available);
			return -1;
		}
	return 0;
}

/*
 * The longest backoff before attempt n (n >= 2): retry_backoff, doubled
 * for each attempt after the second, at most retry_backoff_max.
 */
long
rules_backoff_cap(const struct conf *conf, int n)
{
	long	 cap = conf->retry_backoff_ms;
	int	 i;

	for (i = 2; i < n && cap < conf->retry_backoff_max_ms; i++)
		cap *= 2;
	if (cap > conf->retry_backoff_max_ms)
		cap = conf->retry_backoff_max_ms;
	return cap;
}

/* Exponential backoff with full jitter before attempt n (n >= 2). */
long
rules_backoff_ms(const struct conf *conf, int n)
{
	return random() % (rules_backoff_cap(conf, n) + 1);
}

/*
 * Judge whether an order may be cancelled, on its row locked FOR UPDATE:
 * found (the principal's own), its status, and its age (now - created, in
 * seconds) within the cancel window (cancel_window_ms, 0: no limit).
 * Returns 0 when it may, else -1 with the rule broken in p.
 */
int
rules_cancel_judge(int found, const char *status, long long age_s,
    long long window_ms, struct problem *p)
{
	if (!found) {
		problem_set(p, PROBLEM_ORDER_NOT_FOUND, "no order with "
		    "this id");
		return -1;
	}
	if (strcmp(status, "CANCELLED") == 0) {
		problem_set(p, PROBLEM_ORDER_ALREADY_CANCELLED, "this "
		    "order was already cancelled (by another request)");
		return -1;
	}
	if (strcmp(status, "CREATED") != 0) {
		problem_set(p, PROBLEM_ORDER_NOT_CANCELLABLE, "an order "
		    "with status %s cannot be cancelled", status);
		return -1;
	}
	if (window_ms > 0 && age_s > window_ms / 1000) {
		problem_set(p, PROBLEM_ORDER_NOT_CANCELLABLE, "the order "
		    "was created %lld s ago; an order can be cancelled within "
		    "%lld s (cancel_window)", age_s, window_ms / 1000);
		return -1;
	}
	return 0;
}
