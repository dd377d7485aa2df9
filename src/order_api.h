/*
 * The HTTP handlers: route, authenticate, check, dispatch; order_api_ops
 * binds them to the worker.
 */
#ifndef IDEMORDERS_ORDER_API_H
#define IDEMORDERS_ORDER_API_H

#include "request.h"

struct conf;
struct db;
struct response;

extern const struct worker_ops order_api_ops;

enum handler_result order_api_handle(struct db *, const struct conf *,
	    struct request *, struct response *);
void	order_api_finish(const struct request *, struct response *);

#endif
