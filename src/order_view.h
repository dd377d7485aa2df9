/*
 * The JSON form of an order, shared by the 201 answer of POST (stored in
 * the ledger and replayed) and by GET.
 */
#ifndef IDEMORDERS_ORDER_VIEW_H
#define IDEMORDERS_ORDER_VIEW_H

#include "buf.h"
#include "order_input.h"

#define ORDER_ID_MAX	32

struct order_view_item {
	char		 sku[ORDER_SKU_MAX + 1];
	int		 qty;
	long long	 unit_price;
};

struct order_view {
	char			 id[ORDER_ID_MAX];	/* "o-123" */
	char			 status[17];
	char			 currency[4];
	long long		 amount;
	char			 shipping[17];
	const char		*note;		/* borrowed */
	size_t			 note_len;
	char			 created_at[32];	/* RFC 3339 UTC */
	char			 cancelled_at[32];	/* "": not cancelled */
	size_t			 nitems;
	struct order_view_item	 items[ORDER_ITEMS_MAX];
};

int	order_view_render(const struct order_view *, struct buf *);
void	order_id_format(char *, size_t, unsigned long long);
int	order_id_parse(const char *, unsigned long long *);

#endif
