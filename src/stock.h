/*
 * A row of the stock table: what a create judges (store.c reads it for
 * the order's SKUs, rules.c judges it) and what `idemorders stock`
 * writes (stock_admin.c parses it from arguments or an import file).
 */
#ifndef IDEMORDERS_STOCK_H
#define IDEMORDERS_STOCK_H

#include "order_input.h"

struct stock_row {
	char		 sku[ORDER_SKU_MAX + 1];
	char		 currency[4];
	long long	 unit_price;
	long long	 available;
	int		 found;		/* read for an order: the SKU
					   has a row */
	long		 line;		/* imported: its line in the
					   file; 0 otherwise */
};

#endif
