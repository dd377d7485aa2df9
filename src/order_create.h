/*
 * POST /orders: one key, one order, an operation of the engine
 * (engine.h); its steps live in order_create.c.
 */
#ifndef IDEMORDERS_ORDER_CREATE_H
#define IDEMORDERS_ORDER_CREATE_H

struct conf;
struct db;
struct fault_plan;
struct order_input;
struct response;

struct create_request {
	const char		*principal;
	const char		*key;
	const struct order_input *in;
	const char		*fingerprint;
	const struct fault_plan	*fault;		/* NULL: no faults */
};

/* What the worker does with the response. */
enum create_result {
	CREATE_ANSWER = 0,	/* send the response */
	CREATE_DROP,		/* fault injection: send nothing */
};

enum create_result order_create(struct db *, const struct conf *,
	    const struct create_request *, struct response *, int *);

#endif
