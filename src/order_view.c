#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order_view.h"

/* Render the order as JSON, members in a fixed order. */
int
order_view_render(const struct order_view *o, struct buf *out)
{
	size_t	 i;
	int	 rc;

	rc = buf_printf(out, "{\"orderId\":\"%s\",\"status\":\"%s\","
	    "\"currency\":\"%s\",\"amount\":%lld,\"items\":[", o->id,
	    o->status, o->currency, o->amount);
	for (i = 0; rc == 0 && i < o->nitems; i++) {
		rc = buf_adds(out, i ? ",{\"sku\":" : "{\"sku\":");
		if (rc == 0)
			rc = buf_add_json_string(out, o->items[i].sku,
			    strlen(o->items[i].sku));
		if (rc == 0)
			rc = buf_printf(out, ",\"qty\":%d,\"unitPrice\":%lld}",
			    o->items[i].qty, o->items[i].unit_price);
	}
	if (rc == 0)
		rc = buf_printf(out, "],\"shipping\":\"%s\",\"note\":",
		    o->shipping);
	if (rc == 0)
		rc = buf_add_json_string(out, o->note ? o->note : "",
		    o->note ? o->note_len : 0);
	if (rc == 0)
		rc = buf_printf(out, ",\"createdAt\":\"%s\"", o->created_at);
	if (rc == 0 && o->cancelled_at[0] != '\0')
		rc = buf_printf(out, ",\"cancelledAt\":\"%s\"",
		    o->cancelled_at);
	if (rc == 0)
		rc = buf_addc(out, '}');
	return rc;
}

/* Write the public id of an order row. */
void
order_id_format(char *out, size_t size, unsigned long long id)
{
	snprintf(out, size, "o-%llu", id);
}

/* Parse a public id "o-N" (N without leading zeros); -1 if malformed. */
int
order_id_parse(const char *s, unsigned long long *id)
{
	char			*end;
	unsigned long long	 n;

	if (strncmp(s, "o-", 2) != 0 || s[2] < '1' || s[2] > '9')
		return -1;
	errno = 0;
	n = strtoull(s + 2, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*id = n;
	return 0;
}
