/*
 * The POST /orders body (and a cancel's) as a pure function of
 * bytes: the order schema on the tree of the strict JSON reader
 * (json_strict.h), and the canonical form the fingerprint is computed
 * over (fingerprint.h).  Nothing here touches FastCGI or the database.
 */
#ifndef IDEMORDERS_ORDER_INPUT_H
#define IDEMORDERS_ORDER_INPUT_H

#include <stddef.h>

#include "problem.h"

#define ORDER_ITEMS_MAX		100
#define ORDER_SKU_MAX		64
#define ORDER_QTY_MAX		10000
#define ORDER_AMOUNT_MAX	1000000000000000LL	/* 10^15 minor units */
#define ORDER_NOTE_MAX		500			/* characters */
#define ORDER_JSON_DEPTH	8
#define ORDER_REASON_MAX	500			/* bytes */

enum shipping {
	SHIPPING_STANDARD = 0,
	SHIPPING_EXPRESS,
};

struct order_item {
	char	 sku[ORDER_SKU_MAX + 1];
	int	 qty;
};

struct order_input {
	char			 currency[4];
	long long		 amount;
	enum shipping		 shipping;
	char			*note;		/* owned, valid UTF-8, NUL-terminated */
	size_t			 note_len;	/* bytes */
	size_t			 nitems;
	struct order_item	 items[ORDER_ITEMS_MAX];	/* sorted by sku */
	char			*canonical;	/* owned canonical JSON */
	size_t			 canonical_len;
};

/*
 * Parse and validate a body of len bytes (already within max_body_bytes)
 * into in, which the caller zeroes first and releases with
 * order_input_clear().  Fills in->canonical.  400 MALFORMED_JSON or 400
 * VALIDATION_FAILED on failure, with nothing left allocated.
 */
int	order_input_parse(struct order_input *, const char *, size_t,
	    struct problem *);
void	order_input_clear(struct order_input *);

const char *shipping_name(enum shipping);

/* The POST /orders/{orderId}/cancel body: {"reason": "..."} or none. */
struct cancel_input {
	char			*reason;	/* owned, valid UTF-8 */
	size_t			 reason_len;	/* bytes */
	char			*canonical;	/* owned canonical JSON */
	size_t			 canonical_len;
};

int	cancel_input_parse(struct cancel_input *, const char *, const char *,
	    size_t, struct problem *);
void	cancel_input_clear(struct cancel_input *);

#endif
