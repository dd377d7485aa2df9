/*
 * The route table.  Routing works on REQUEST_URI (minus the query)
 * relative to the mount, because lighttpd and Apache split SCRIPT_NAME
 * and PATH_INFO differently.
 */
#ifndef IDEMORDERS_ROUTER_H
#define IDEMORDERS_ROUTER_H

#include <stddef.h>

#define ROUTE_ARG_MAX	64

enum route_id {
	ROUTE_NONE = 0,		/* 404 */
	ROUTE_ORDERS,		/* the collection: POST creates, GET lists */
	ROUTE_HEALTH,		/* GET health */
	ROUTE_ORDER,		/* one order: GET */
	ROUTE_CANCEL,		/* one order's cancel: POST */
	ROUTE_METRICS,		/* GET the pool's counters (metrics = on) */
};

struct route_match {
	enum route_id	 id;
	int		 method_allowed;	/* 0: answer 405 */
	const char	*allow;			/* value of the Allow header */
	int		 needs_principal;
	char		 arg[ROUTE_ARG_MAX + 1];	/* {orderId} */
};

void	router_match(const char *, const char *, const char *,
	    struct route_match *);

#endif
