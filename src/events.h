/*
 * The transactional outbox (table events, schema/008_events.sql): one
 * row per committed order change, written in the change's own
 * transaction and delivered by `idemorders relay` (relay.c).
 */
#ifndef IDEMORDERS_EVENTS_H
#define IDEMORDERS_EVENTS_H

#include "buf.h"

struct db_batch;

/* What happened to an order, in the order it can happen. */
enum event_type {
	EVENT_ORDER_CREATED = 1,	/* its seq */
	EVENT_ORDER_CANCELLED = 2,
};

#define EVENT_WEBHOOK_ID_MAX	64	/* "msg_" and 32 hex digits */

const char	*event_type_name(enum event_type);
int		 events_webhook_id(char *, size_t);
int		 events_batch_add(struct db_batch *, unsigned long long,
		    enum event_type, unsigned long long, const struct buf *);

#endif
