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

#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "buf.h"
#include "db_batch.h"
#include "events.h"
#include "sql.h"
#include "text.h"

const char *const event_outcome_names[EVENT_OUTCOMES] = {
	"delivered", "retry", "dead", "gone"
};

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
	unsigned char	  r[16];

	if (size < 4 + 2 * sizeof(r) + 1 || RAND_bytes(r, sizeof(r)) != 1)
		return -1;
	memcpy(out, "msg_", 4);
	text_hex(out + 4, r, sizeof(r));
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
	if (db_batch_sql(b, 1, SQL_EVENTS_INSERT, claim, wid,
	    event_type_name(t), order, (int)t, payload->p, payload->len) == -1 ||
	    db_batch_own_from(b, claim) == -1)
		return -1;
	return db_batch_guard(b, 1);
}

/* An empty row; its payload may grow to a stored answer's size. */
void
event_row_init(struct event_row *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->payload, 16 * 1024 * 1024);
}

/* Release what the row holds. */
void
event_row_clear(struct event_row *r)
{
	if (r == NULL)
		return;
	buf_free(&r->payload);
}

/*
 * Claim up to n due events for lease_ms under token (a relay's own,
 * fresh for each claim) and read them, in one round trip: an UPDATE that
 * takes pending events whose time has come and whose lease (if any) has
 * passed, and whose order has no earlier event still undelivered, a
 * SELECT of what it took (statement 1's result), then COMMIT: nothing
 * stays open between polls (no lock, no metadata lock that DDL would
 * wait for).  The UPDATE is
 * what decides between relays: on Galera, where SKIP LOCKED locks one
 * node only, certification lets one of two claims of a row commit.
 */
int
events_batch_claim(struct db_batch *b, const char *token, long lease_ms,
    int n)
{
	if (db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_CLAIM, token,
	    (long long)lease_ms * 1000, n) == -1 ||
	    db_batch_sql(b, DB_ROWS_RESULT, SQL_EVENTS_CLAIMED, token) == -1)
		return -1;
	return db_batch_commit(b);
}

/* Copy the column of row into out (size bytes, NUL-terminated). */
static void
copy_col(char *out, size_t size, const char *v, unsigned long len)
{
	if (v == NULL)
		len = 0;
	if (len >= size)
		len = size - 1;
	memcpy(out, v != NULL ? v : "", len);
	out[len] = '\0';
}

/*
 * Read the result of a claim into rows (max of them, initialized);
 * the number read, or -1 when a payload does not fit.
 */
int
events_read_claimed(MYSQL_RES *res, struct event_row *rows, int max)
{
	MYSQL_ROW	 row;
	unsigned long	*len;
	int		 n = 0;

	if (res == NULL)
		return 0;
	while (n < max && (row = mysql_fetch_row(res)) != NULL) {
		len = mysql_fetch_lengths(res);
		rows[n].id = strtoull(row[0], NULL, 10);
		copy_col(rows[n].webhook_id, sizeof(rows[n].webhook_id),
		    row[1], len[1]);
		copy_col(rows[n].type, sizeof(rows[n].type), row[2], len[2]);
		rows[n].order_id = strtoull(row[3], NULL, 10);
		copy_col(rows[n].created, sizeof(rows[n].created), row[4],
		    len[4]);
		rows[n].attempts = strtol(row[5], NULL, 10);
		buf_reset(&rows[n].payload);
		if (buf_add(&rows[n].payload, row[6] != NULL ? row[6] : "",
		    len[6]) != BUF_OK)
			return -1;
		n++;
	}
	return n;
}

/*
 * Record how the delivery of r under token ended (the caller COMMITs;
 * the settlements of several deliveries may share one transaction,
 * EVENT_SETTLE_STATEMENTS statements each): delivered (as
 * events_batch_settle_delivered() for one); or another try after
 * delay_ms, or dead once the event is older than max_age_ms; or, after
 * a 410, its lease given back untouched.  status is the HTTP status (0:
 * none), error what went wrong (program-made text and the endpoint's
 * words, written as hex), or NULL.  Only while
 * the lease is still the relay's: an event another relay took over
 * after the lease passed is left to it.
 */
int
events_batch_settle(struct db_batch *b, const struct event_row *r,
    const char *token, enum event_outcome o, int status, const char *error,
    long long delay_ms, long long max_age_ms)
{
	struct event_lease	 l = { r->id, token };
	size_t			 elen = error != NULL ? strlen(error) : 0;
	int			 rc;

	if (o == EVENT_DELIVERED)
		return events_batch_settle_delivered(b, &l, 1, status);
	if (elen > 255)
		elen = 255;
	/*
	 * The relay's count of deliveries by outcome (schema 010), first,
	 * while the lease still names this claim: counted only when the
	 * settlement below applies, in the row of this relay process (the
	 * token's host/pid), which no other relay writes.
	 */
	if (db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_COUNT) == -1)
		return -1;
	if (o == EVENT_GONE)
		rc = db_batch_more(b, SQL_EVENTS_COUNT_GONE);
	else
		rc = db_batch_more(b, SQL_EVENTS_COUNT_RETRY,
		    max_age_ms * 1000);
	if (rc == -1 || db_batch_more(b, SQL_EVENTS_COUNT_WHERE, r->id,
	    token) == -1)
		return -1;
	if (o == EVENT_GONE) {
		if (db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_GONE_SET,
		    status) == -1)
			return -1;
	} else {
		if (db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_RETRY_SET) == -1 ||
		    (status == 0 ? db_batch_more(b, SQL_NULL) :
		    db_batch_more(b, SQL_INT, status)) == -1 ||
		    db_batch_more(b, SQL_EVENTS_RETRY_REST, error, elen,
		    delay_ms * 1000, max_age_ms * 1000) == -1)
			return -1;
	}
	return db_batch_more(b, SQL_EVENTS_SETTLE_WHERE, r->id, token);
}

/* Add "(id = .. AND lease_owner = ..) OR ..." for the n leases of l. */
static int
add_leased(struct db_batch *b, const struct event_lease *l, int n)
{
	int	 i;

	for (i = 0; i < n; i++)
		if (db_batch_more(b, i == 0 ? SQL_EVENTS_LEASED :
		    SQL_EVENTS_OR_LEASED, l[i].id, l[i].token) == -1)
			return -1;
	return 0;
}

/*
 * Record that the n events of l (n > 0) were delivered with the HTTP
 * status status (the caller COMMITs), in EVENT_SETTLE_STATEMENTS
 * statements whatever n: their count in event_deliveries, then the
 * events themselves; each only while the lease of the claim that took it
 * is still the relay's, as events_batch_settle() does for one.
 */
int
events_batch_settle_delivered(struct db_batch *b, const struct event_lease *l,
    int n, int status)
{
	if (db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_COUNT) == -1 ||
	    db_batch_more(b, SQL_EVENTS_COUNT_DELIVERED) == -1 ||
	    db_batch_more(b, SQL_EVENTS_COUNT_MANY) == -1 ||
	    add_leased(b, l, n) == -1 ||
	    db_batch_more(b, SQL_EVENTS_COUNT_GROUP) == -1 ||
	    db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_DELIVERED_SET, status) ==
	    -1 || db_batch_more(b, SQL_EVENTS_WHERE) == -1)
		return -1;
	return add_leased(b, l, n);
}

/*
 * Give back the leases of the n claimed events of l (n > 0) that the
 * relay did not start (it stops, or their lease would end too soon), and
 * COMMIT: any relay may claim them at once.
 */
int
events_batch_release(struct db_batch *b, const struct event_lease *l, int n)
{
	if (db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_RELEASE) == -1 ||
	    add_leased(b, l, n) == -1 || db_batch_more(b, SQL_LIST_END) == -1)
		return -1;
	return db_batch_commit(b);
}

/* Write the SHA-256 of url (its key) into md, of EVP_MAX_MD_SIZE bytes. */
static int
url_key(const char *url, unsigned char *md, size_t *mdlen)
{
	unsigned int	 n = 0;

	if (EVP_Digest(url, strlen(url), md, &n, EVP_sha256(), NULL) != 1)
		return -1;
	*mdlen = n;
	return 0;
}

/* Mark the endpoint url disabled (it answered 410: why), and COMMIT. */
int
events_batch_disable(struct db_batch *b, const char *url, const char *why)
{
	unsigned char	 md[EVP_MAX_MD_SIZE];
	size_t		 mdlen;

	if (url_key(url, md, &mdlen) == -1 ||
	    db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_DISABLE, (const char *)md,
	    mdlen, url, why, strlen(why) > 255 ? (size_t)255 : strlen(why)) ==
	    -1)
		return -1;
	return db_batch_commit(b);
}

/*
 * Read whether the endpoint url is disabled: a result (the statement
 * added) with one row, its disabled_at, when it is.
 */
int
events_batch_endpoint(struct db_batch *b, const char *url)
{
	unsigned char	 md[EVP_MAX_MD_SIZE];
	size_t		 mdlen;

	if (url_key(url, md, &mdlen) == -1)
		return -1;
	return db_batch_sql(b, DB_ROWS_RESULT, SQL_EVENTS_ENDPOINT,
	    (const char *)md, mdlen);
}

/*
 * Read what the outbox holds (two results from statement first on):
 * pending events and the age of the oldest, dead events; both from the
 * state prefix of events_due, one row read per pending event.
 */
int
events_batch_stats(struct db_batch *b)
{
	if (db_batch_sql(b, DB_ROWS_RESULT, SQL_EVENTS_STATS_PENDING) == -1 ||
	    db_batch_sql(b, DB_ROWS_RESULT, SQL_EVENTS_STATS_DEAD) == -1 ||
	    db_batch_sql(b, DB_ROWS_RESULT, SQL_EVENTS_STATS_OUTCOMES) == -1)
		return -1;
	return 0;
}

/* The results of events_batch_stats() at statement first. */
void
events_read_stats(struct db_batch *b, int first, struct event_stats *st)
{
	MYSQL_ROW	 row;
	int		 i;

	memset(st, 0, sizeof(*st));
	if (b->res[first] != NULL &&
	    (row = mysql_fetch_row(b->res[first])) != NULL) {
		st->pending = row[0] != NULL ? strtoll(row[0], NULL, 10) : 0;
		st->oldest_pending_us = row[1] != NULL ?
		    strtoll(row[1], NULL, 10) : 0;
	}
	if (b->res[first + 1] != NULL &&
	    (row = mysql_fetch_row(b->res[first + 1])) != NULL)
		st->dead = row[0] != NULL ? strtoll(row[0], NULL, 10) : 0;
	while (b->res[first + 2] != NULL &&
	    (row = mysql_fetch_row(b->res[first + 2])) != NULL) {
		if (row[0] == NULL || row[1] == NULL)
			continue;
		for (i = 0; i < EVENT_OUTCOMES; i++)
			if (strcmp(row[0], event_outcome_names[i]) == 0)
				st->deliveries[i] = strtoll(row[1], NULL, 10);
	}
}
