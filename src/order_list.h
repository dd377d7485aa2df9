/*
 * GET /orders: the query of a page of the principal's own orders
 * (limit, starting_after or ending_before), checked before any read.
 */
#ifndef IDEMORDERS_ORDER_LIST_H
#define IDEMORDERS_ORDER_LIST_H

#include "problem.h"

#define ORDER_LIST_LIMIT_DEFAULT	20
#define ORDER_LIST_LIMIT_MAX		100

enum order_list_dir {
	ORDER_LIST_FIRST = 0,		/* the newest orders */
	ORDER_LIST_AFTER,		/* older than the cursor */
	ORDER_LIST_BEFORE,		/* newer than the cursor */
};

struct order_list_query {
	int			 limit;
	enum order_list_dir	 dir;
	unsigned long long	 cursor;	/* the order id, 0: none */
};

int	order_list_parse(const char *, struct order_list_query *,
	    struct problem *);

#endif
