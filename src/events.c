/*
 * The outbox's write: one event row in the order change's own
 * transaction, in the same round trip as the change.  Like every write
 * after the claim (CONTRACT §9), it is taken from the transaction's own
 * uncommitted claim row: INSERT ... SELECT ... FROM idempotency_records
 * WHERE id = <the claim> AND status = 'PROCESSING', then a guard that it
 * wrote exactly one row.  Run in any other transaction (a Galera
 * BF-abort that let the rest of the batch run afresh), it finds no row,
 * the guard stops the batch and its COMMIT never runs.  The principal
 * comes from the claim row; every other value is a number formatted
 * here or a hex literal.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <openssl/rand.h>

#include "buf.h"
#include "db_batch.h"
#include "events.h"

/* The public name of an event type. */
const char *
event_type_name(enum event_type t)
{
	return t == EVENT_ORDER_CANCELLED ? "order.cancelled" :
	    "order.created";
}

/*
 * Write a fresh webhook-id into out: "msg_" and 128 random bits in hex.
 * 0, or -1 when no random bytes could be had.
 */
int
events_webhook_id(char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char	  r[16];
	size_t		  i;

	if (size < 4 + 2 * sizeof(r) + 1 || RAND_bytes(r, sizeof(r)) != 1)
		return -1;
	memcpy(out, "msg_", 4);
	for (i = 0; i < sizeof(r); i++) {
		out[4 + 2 * i] = hex[r[i] >> 4];
		out[5 + 2 * i] = hex[r[i] & 0x0f];
	}
	out[4 + 2 * sizeof(r)] = '\0';
	return 0;
}

/*
 * Add to b the event of type t about order (its row id), written from
 * the claim's ledger row claim while it is PROCESSING, with payload (the
 * order's JSON, as the answer shows it), then its guard.  -1 when the
 * batch is full or no webhook-id could be made.
 */
int
events_batch_add(struct db_batch *b, unsigned long long claim,
    enum event_type t, unsigned long long order, const struct buf *payload)
{
	char	 wid[EVENT_WEBHOOK_ID_MAX];

	if (events_webhook_id(wid, sizeof(wid)) == -1)
		return -1;
	if (db_batch_add(b, 1, "INSERT INTO events (id, webhook_id, type, "
	    "order_id, seq, principal_id, payload, created_at, state, "
	    "next_attempt_at) SELECT %llu, '%s', '%s', %llu, %d, "
	    "principal_id, ", claim, wid, event_type_name(t), order,
	    (int)t) == -1 ||
	    db_batch_hex(b, payload->p != NULL ? payload->p : "",
	    payload->len) == -1 ||
	    buf_printf(&b->sql, ", UTC_TIMESTAMP(6), 'pending', "
	    "UTC_TIMESTAMP(6) FROM idempotency_records WHERE id = %llu AND "
	    "status = 'PROCESSING'", claim) != BUF_OK)
		return -1;
	return db_batch_guard(b, 1);
}
