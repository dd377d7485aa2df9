/*
 * POST /orders/{orderId}/cancel: one key, one cancel, an operation of the
 * engine (engine.h); its steps live in order_cancel.c.
 */
#ifndef IDEMORDERS_ORDER_CANCEL_H
#define IDEMORDERS_ORDER_CANCEL_H

#include "order_create.h"

struct cancel_input;

struct cancel_request {
	const char		*principal;
	const char		*key;
	unsigned long long	 order;		/* the order's row id; 0:
						   the id did not parse */
	const struct cancel_input *in;
	const char		*fingerprint;
	const struct fault_plan	*fault;		/* NULL: no faults */
};

enum create_result order_cancel(struct db *, const struct conf *,
	    const struct cancel_request *, struct response *, int *);

#endif
