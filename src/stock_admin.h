/*
 * Stock administration: `idemorders stock set|list|import`.  Every value
 * is checked with the order schema's rules (SKU charset and length,
 * three upper-case currency letters) before it reaches the database, and
 * is sent as a placeholder.  An import is one transaction: a bad line
 * names the file and line and leaves the stock as it was.
 */
#ifndef IDEMORDERS_STOCK_ADMIN_H
#define IDEMORDERS_STOCK_ADMIN_H

#include <stddef.h>
#include <stdio.h>

#include "order_input.h"
#include "stock.h"

#define STOCK_PRICE_MAX		ORDER_AMOUNT_MAX
#define STOCK_AVAILABLE_MAX	2147483647LL
#define STOCK_IMPORT_ROWS_MAX	1000000

struct conf;

int	stock_row_parse(struct stock_row *, const char *, const char *,
	    const char *, const char *, char *, size_t);
int	stock_csv_line(char *, struct stock_row *, char *, size_t);
int	stock_admin_argc(const char *);
int	stock_admin_run(const struct conf *, int, char **, FILE *);

#endif
