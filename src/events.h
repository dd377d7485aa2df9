/*
 * The transactional outbox (table events, schema/008_events.sql): one
 * row per committed order change, written in the change's own
 * transaction and delivered by `idemorders relay` (relay.c).
 */
#ifndef IDEMORDERS_EVENTS_H
#define IDEMORDERS_EVENTS_H

#include <mysql.h>

#include "buf.h"

struct db_batch;

/* What happened to an order, in the order it can happen. */
enum event_type {
	EVENT_ORDER_CREATED = 1,	/* its seq */
	EVENT_ORDER_CANCELLED = 2,
};

#define EVENT_WEBHOOK_ID_MAX	64	/* "msg_" and 32 hex digits */

/* An event a relay claimed, as it is sent. */
struct event_row {
	unsigned long long	 id;
	char			 webhook_id[EVENT_WEBHOOK_ID_MAX + 1];
	char			 type[33];
	unsigned long long	 order_id;
	char			 created[32];	/* RFC 3339 UTC */
	long			 attempts;	/* made before this one */
	struct buf		 payload;	/* the order's JSON */
};

/* How a delivery ended. */
enum event_outcome {
	EVENT_DELIVERED,	/* a 2xx in time */
	EVENT_RETRY,		/* anything else: again after a delay */
	EVENT_GONE,		/* 410: the endpoint is disabled */
};

#define EVENT_TOKEN_MAX		64	/* a claim's lease owner */

/* What the outbox holds now, for the metrics. */
/* The deliveries counted by outcome (event_deliveries), in this order. */
#define EVENT_OUTCOMES		4
extern const char *const event_outcome_names[EVENT_OUTCOMES];

struct event_stats {
	long long	 pending;
	long long	 oldest_pending_us;	/* 0: none pending */
	long long	 dead;
	long long	 deliveries[EVENT_OUTCOMES];	/* summed over relays */
};

const char	*event_type_name(enum event_type);
void		 event_row_init(struct event_row *);
void		 event_row_clear(struct event_row *);
int		 events_batch_claim(struct db_batch *, const char *, long,
		    int);
int		 events_read_claimed(MYSQL_RES *, struct event_row *, int);
/* A claimed event and the token of the claim that took it. */
struct event_lease {
	unsigned long long	 id;
	const char		*token;
};

#define EVENT_SETTLE_STATEMENTS	2	/* of events_batch_settle*() */
int		 events_batch_settle(struct db_batch *,
		    const struct event_row *, const char *, enum event_outcome,
		    int, const char *, long long, long long);
int		 events_batch_settle_delivered(struct db_batch *,
		    const struct event_lease *, int, int);
int		 events_batch_release(struct db_batch *,
		    const struct event_lease *, int);
int		 events_batch_disable(struct db_batch *, const char *,
		    const char *);
int		 events_batch_endpoint(struct db_batch *, const char *);
int		 events_batch_stats(struct db_batch *);
void		 events_read_stats(struct db_batch *, int, struct event_stats *);
int		 events_webhook_id(char *, size_t);
int		 events_batch_add(struct db_batch *, unsigned long long,
		    enum event_type, unsigned long long, const struct buf *);

#endif
