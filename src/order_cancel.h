/*
 * POST /orders/{orderId}/cancel: one key, one cancel, an operation of the
 * engine (engine.h); its steps live in order_cancel.c.  Its input
 * (engine_request.input) is a struct cancel_args.
 */
#ifndef IDEMORDERS_ORDER_CANCEL_H
#define IDEMORDERS_ORDER_CANCEL_H

struct cancel_input;
struct engine_op;

/* What a cancel is given. */
struct cancel_args {
	unsigned long long	 order;		/* the order's row id; 0:
						   the id did not parse */
	const struct cancel_input *in;		/* the parsed body */
};

extern const struct engine_op order_cancel_op;

#endif
