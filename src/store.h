/*
 * Stock and orders SQL.  Every function runs inside the caller's
 * transaction and returns a db_err (or 1/0 for lookups).
 */
#ifndef IDEMORDERS_STORE_H
#define IDEMORDERS_STORE_H

#include <time.h>

#include <mysql.h>

#include "order_input.h"
#include "order_view.h"
#include "stock.h"

struct db;
struct db_batch;

/* The unique key (schema/) that says a key already made an order. */
#define STORE_ORDER_KEY_CONSTRAINT	"orders_principal_key"

/* store_list_page: the callback failed or memory ran out. */
#define STORE_EMIT_FAILED	(-100)

int	store_batch_stock(struct db_batch *, const struct order_input *, int);
void	store_read_stock(MYSQL_RES *, const struct order_input *,
	    struct stock_row *);
int	store_batch_take(struct db_batch *, unsigned long long,
	    const struct order_input *, const struct stock_row *);
int	store_batch_order(struct db_batch *, unsigned long long, const char *,
	    const char *, const struct order_input *, time_t);
int	store_batch_lines(struct db_batch *, unsigned long long,
	    const struct order_input *, const struct stock_row *);
int	store_touch_stock(struct db *, const struct order_input *,
	    const struct stock_row *);
int	store_get_order(struct db *, const char *, unsigned long long,
	    struct order_view *, char *, size_t);
int	store_batch_cancel_read(struct db_batch *, unsigned long long,
	    const char *, const char *);
int	store_read_cancel(MYSQL_RES *, MYSQL_RES *, unsigned long long,
	    struct order_view *, char *, size_t, long long *, char *);
int	store_read_cancel_key(MYSQL_RES *, unsigned long long *, long long *);
int	store_batch_cancel(struct db_batch *, unsigned long long,
	    unsigned long long, const struct order_view_item *, size_t, time_t,
	    const char *, const char *, size_t);
int	store_list_ids(struct db *, const char *, int, unsigned long long,
	    int, unsigned long long *, size_t *);
int	store_list_page(struct db *, const char *, const unsigned long long *,
	    size_t, int (*)(const struct order_view *, void *), void *);
int	store_order_by_key(struct db *, const char *, const char *,
	    unsigned long long *, long long *);

#endif
