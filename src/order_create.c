/*
 * The create-order transaction:
 *
 *	order_create()		the retry loop: attempts, deadline, backoff
 *	create_attempt()	one InnoDB transaction (READ COMMITTED), one
 *				function per step, each returning the
 *				attempt's outcome:
 *	  step_connect()	connect if needed; the deadline bounds every
 *				wait
 *	  step_claim_read()	round trip 1: a fresh read of the scope's
 *				committed row (found: a guard stops the
 *				batch, claim_failed() answers from it), the
 *				INSERT of the PROCESSING row, SAVEPOINT,
 *				the stock rows read without a lock
 *	  rules_judge()		every final business rule on those rows
 *				(rules.c)
 *	  step_finish()		round trip 2: the stock decrease, which locks
 *				the rows in SKU order, guarded to stop the
 *				batch unless every row still holds what was
 *				judged; the order, its items, the ledger row
 *				SUCCEEDED with the exact response, COMMIT
 *	  step_lock()		only when a rule failed on the unlocked rows,
 *				or the guard refused: SELECT ... FOR UPDATE
 *				and judge again on the locked rows, then
 *				step_finish() or step_reject()
 *	  step_reject()		a final rejection: ROLLBACK TO SAVEPOINT,
 *				FAILED_FINAL with the error response, then
 *				step_commit()
 *
 * Every statement failure rolls back; nothing is committed after a failed
 * statement (on Galera a COMMIT after 1213 answers OK and commits
 * nothing).  A lost answer to COMMIT is never taken as failure: the
 * ledger is read again on a fresh connection and the answer comes from
 * what is there; until something read settles it, every answer of that
 * request says the outcome is unconfirmed.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf.h"
#include "db.h"
#include "db_batch.h"
#include "fault.h"
#include "ledger.h"
#include "log.h"
#include "metrics.h"
#include "order_create.h"
#include "order_input.h"
#include "order_view.h"
#include "response.h"
#include "rules.h"
#include "store.h"

/* The least a read after an unknown COMMIT may take. */
#define RECOVERY_GRACE_MS	500

enum attempt {
	ATTEMPT_NEXT,		/* go on with the next step */
	ATTEMPT_REJECT,		/* a final rejection: c->reject says which */
	ATTEMPT_DONE,		/* resp is the answer */
	ATTEMPT_RETRY,		/* retry; resp is the answer once spent */
	ATTEMPT_DROP,		/* answer nothing */
	ATTEMPT_STALE,		/* the rows judged changed before the lock */
};

struct attempt_ctx {
	struct db			*db;
	const struct conf		*conf;
	const struct create_request	*req;
	struct ledger_scope		 scope;
	int				 attempt;	/* 1, 2, ... */
	int				 unknown;	/* a COMMIT's outcome was
							   unknown: sticky */

	/* This attempt's state. */
	int				 claimed;	/* ledger row inserted */
	int				 savepoint;
	int				 locked;	/* rows[] were read under
							   the lock */
	int				 take;		/* the stock decrease's
							   index in batch, or -1 */
	int				 commit_fault;	/* before_commit acted */
	int				 settled;	/* resp comes from a ledger
							   row or this COMMIT */
	struct stock_row		 rows[ORDER_ITEMS_MAX];
	unsigned long long		 id;		/* the order */
	time_t				 created;
	struct problem			 reject;
	struct db_batch			 batch;		/* statements to send */
};

/* Sleep ms milliseconds, resuming after signals. */
static void
sleep_ms(long ms)
{
	struct timespec	 ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * The answer while the outcome of an earlier COMMIT of this request is
 * unknown and nothing read since settled it: the order may exist.
 */
static void
answer_unconfirmed(struct response *resp)
{
	response_error(resp, 503, PROBLEM_REQUEST_STATUS_UNCONFIRMED, "the "
	    "outcome of this request could not be confirmed: the order may "
	    "have been stored; retry with the same key");
	response_header(resp, "Retry-After", "1");
	resp->outcome = OUTCOME_UNCONFIRMED;
}

/* The answer once transient failures have used up the attempts. */
static enum attempt
retry_transient(struct attempt_ctx *c, struct response *resp)
{
	response_error(resp, 503, PROBLEM_RETRY_LIMIT_REACHED, "the database "
	    "stayed busy for %d attempts; retry with the same key",
	    c->conf->max_attempts);
	response_header(resp, "Retry-After", "1");
	resp->outcome = OUTCOME_RETRY_LIMIT;
	return ATTEMPT_RETRY;
}

/*
 * The answer once the database stayed unusable (unreachable, read-only,
 * out of connections, statements or space, a cluster node not ready):
 * nothing was written.  Out of space, the server's message (which names
 * tables and files) stays in the log.
 */
static enum attempt
retry_unavailable(struct attempt_ctx *c, struct response *resp)
{
	if (c->db->last_class == DB_UNAVAILABLE &&
	    db_out_of_space(c->db->last_errno, c->db->last_error)) {
		response_error(resp, 503, PROBLEM_DATABASE_UNAVAILABLE, "the "
		    "database cannot take orders now: it is out of space; "
		    "nothing was stored; retry with the same key");
		response_header(resp, "Retry-After", "30");
	} else {
		response_error(resp, 503, PROBLEM_DATABASE_UNAVAILABLE, "the "
		    "database cannot take orders now (%s); nothing was "
		    "stored; retry with the same key",
		    c->db->last_class == DB_UNAVAILABLE ?
		    c->db->last_error : "not reachable");
		response_header(resp, "Retry-After", "5");
	}
	resp->outcome = OUTCOME_UNAVAILABLE;
	return ATTEMPT_RETRY;
}

/* The answer once a concurrent owner of the key kept it for too long. */
static enum attempt
retry_in_progress(struct attempt_ctx *c, struct response *resp)
{
	response_error(resp, 409, PROBLEM_REQUEST_IN_PROGRESS, "a request with "
	    "this Idempotency-Key is still being processed; retry later "
	    "with the same key");
	response_header(resp, "Retry-After", "1");
	resp->outcome = OUTCOME_IN_PROGRESS;
	return ATTEMPT_RETRY;
}

/* Answer 410 for an expired key, naming the order it created. */
static void
answer_expired(struct attempt_ctx *c, const char *order_id,
    struct response *resp)
{
	struct problem	 p;

	problem_set(&p, 410, PROBLEM_IDEMPOTENCY_KEY_EXPIRED, "this "
	    "Idempotency-Key has expired and is never reused; send a new key "
	    "for a new order");
	if (order_id != NULL && order_id[0] != '\0')
		snprintf(p.order_id, sizeof(p.order_id), "%s", order_id);
	response_problem(resp, &p);
	if (p.order_id[0] != '\0')
		response_header(resp, "Link", "<%s/%s>; rel=\"related\"",
		    c->conf->mount, p.order_id);
	resp->outcome = OUTCOME_EXPIRED;
}

/* Replay a stored final response byte for byte. */
static void
answer_stored(const struct ledger_record *rec, int replayed,
    struct response *resp)
{
	response_reset(resp);
	resp->status = rec->response_status;
	buf_add(&resp->headers, rec->headers.p ? rec->headers.p : "",
	    rec->headers.len);
	buf_add(&resp->body, rec->body.p ? rec->body.p : "", rec->body.len);
	if (replayed)
		response_header(resp, "Idempotent-Replayed", "true");
	resp->outcome = replayed ? OUTCOME_REPLAYED : OUTCOME_RECOVERED;
}

/*
 * A statement failed inside the transaction: roll back, then answer.  On
 * a Galera node a transaction aborted by a conflicting writeset from
 * another node reports what its next statement met (1213, but also a
 * foreign key or a duplicate key of the half-gone rows): any failure
 * there is taken as "rolled back" and retried; a failure that is real
 * stays, and its retries end in 503.
 */
static enum attempt
attempt_failed(struct attempt_ctx *c, int rc, const char *what,
    struct response *resp)
{
	db_rollback(c->db);
	if (c->db->galera && (rc == DB_ERROR || rc == DB_DUPLICATE)) {
		log_info("key %s attempt %d: %s: %s (%u) on a cluster node: "
		    "taken as rolled back, retrying", c->scope.key, c->attempt,
		    what, c->db->last_error, c->db->last_errno);
		return retry_transient(c, resp);
	}
	switch (rc) {
	case DB_TRANSIENT:
	case DB_LOST:
		log_info("key %s attempt %d: %s: %s (%u), retrying",
		    c->scope.key, c->attempt, what, c->db->last_error,
		    c->db->last_errno);
		return retry_transient(c, resp);
	case DB_UNAVAILABLE:
		log_warnx("key %s attempt %d: %s: database unavailable: %s "
		    "(%u)", c->scope.key, c->attempt, what, c->db->last_error,
		    c->db->last_errno);
		if (db_out_of_space(c->db->last_errno, c->db->last_error)) {
			/* Space does not come back within a request. */
			retry_unavailable(c, resp);
			return ATTEMPT_DONE;
		}
		return retry_unavailable(c, resp);
	default:
		log_warnx("key %s: %s failed: %s (%u, %s)", c->scope.key, what,
		    c->db->last_error, c->db->last_errno,
		    db_class_name(rc));
		response_error(resp, 500, PROBLEM_INTERNAL_ERROR, "the order "
		    "could not be stored; nothing was stored; retry with the "
		    "same key");
		resp->outcome = OUTCOME_INTERNAL_ERROR;
		return ATTEMPT_DONE;
	}
}

/*
 * Read the committed ledger row of the scope afresh (READ COMMITTED, a
 * causal read on a cluster) into rec: 1, 0 for no row, or a db_err.  The
 * fault point conflict_read can make it see no row.
 */
static int
read_record(struct attempt_ctx *c, struct ledger_record *rec)
{
	int	 rc;

	if (FAULT(c->req->fault, FP_CONFLICT_READ, c->attempt) == FAULT_NULL)
		return 0;
	rc = db_ensure(c->db);
	if (rc == DB_OK)
		rc = db_read_limits(c->db);
	if (rc == DB_OK)
		rc = ledger_read(c->db, &c->scope, rec);
	return rc;
}

/*
 * Answer from a committed row: 410 once expired (whatever the body),
 * 409 for another body, the stored response for a final state, retry
 * while it is PROCESSING.
 */
static enum attempt
answer_record(struct attempt_ctx *c, const struct ledger_record *rec,
    int replayed, struct response *resp)
{
	int	 terminal = ledger_terminal(rec->state);

	c->settled = 1;
	if (rec->state == LEDGER_EXPIRED || (terminal && rec->expired)) {
		/* Expired is final whatever the body: never a new order. */
		answer_expired(c, rec->resource_id, resp);
		return ATTEMPT_DONE;
	}
	if (strcmp(rec->fingerprint, c->req->fingerprint) != 0) {
		response_error(resp, c->conf->key_reused_status,
		    PROBLEM_IDEMPOTENCY_KEY_REUSED, "this Idempotency-Key was "
		    "already used with a different request body");
		resp->outcome = OUTCOME_CONFLICT;
		return ATTEMPT_DONE;
	}
	if (terminal) {
		answer_stored(rec, replayed, resp);
		return ATTEMPT_DONE;
	}
	if (rec->state == LEDGER_PROCESSING)
		return retry_in_progress(c, resp);
	response_error(resp, 500, PROBLEM_UNKNOWN_IDEMPOTENCY_STATE,
	    "the idempotency record is in an unknown state");
	resp->outcome = OUTCOME_INTERNAL_ERROR;
	log_warnx("ledger row for key %s has unknown status \"%s\"",
	    c->scope.key, rec->status);
	return ATTEMPT_DONE;
}

/*
 * Answer from the committed ledger row of the scope, read afresh after
 * a duplicate key (or after a COMMIT whose outcome is unknown, with
 * replayed = 0).
 */
static enum attempt
answer_from_record(struct attempt_ctx *c, int replayed, struct response *resp)
{
	struct ledger_record	 rec;
	enum attempt		 a;
	int			 rc;

	ledger_record_init(&rec);
	rc = read_record(c, &rec);
	if (rc < 0) {
		log_info("key %s attempt %d: ledger read: %s (%u)",
		    c->scope.key, c->attempt, c->db->last_error,
		    c->db->last_errno);
		a = rc == DB_UNAVAILABLE ? retry_unavailable(c, resp) :
		    retry_transient(c, resp);
	} else if (rc == 0) {
		/* The owner rolled back meanwhile, or its commit is unseen. */
		response_error(resp, 409, PROBLEM_REQUEST_STATUS_UNCONFIRMED,
		    "the outcome of an earlier request with this "
		    "Idempotency-Key could not be confirmed; retry with the "
		    "same key");
		response_header(resp, "Retry-After", "1");
		resp->outcome = OUTCOME_UNCONFIRMED;
		a = ATTEMPT_RETRY;
	} else
		a = answer_record(c, &rec, replayed, resp);
	db_end_read(c->db);
	ledger_record_clear(&rec);
	return a;
}

/*
 * The key already made an order (a duplicate on orders_principal_key):
 * roll everything back.  If the key has a committed ledger row (on a
 * cluster: the winner of a race, applied from another node), answer from
 * it.  Only when it has none was the row purged after expiry: 410,
 * leaving no ledger row.
 */
static enum attempt
answer_purged(struct attempt_ctx *c, struct response *resp)
{
	struct ledger_record	 rec;
	unsigned long long	 id;
	char			 order_id[ORDER_ID_MAX];
	int			 rc;

	db_rollback(c->db);
	ledger_record_init(&rec);
	rc = read_record(c, &rec);
	if (rc == 1) {
		enum attempt a = answer_record(c, &rec, 1, resp);

		ledger_record_clear(&rec);
		db_end_read(c->db);
		return a;
	}
	ledger_record_clear(&rec);
	if (rc < 0)
		return attempt_failed(c, rc, "ledger read", resp);
	rc = db_ensure(c->db);
	if (rc == DB_OK)
		rc = store_order_by_key(c->db, c->req->principal, c->req->key,
		    &id);
	if (rc < 0)
		return attempt_failed(c, rc, "order lookup", resp);
	db_rollback(c->db);
	order_id[0] = '\0';
	if (rc == 1)
		order_id_format(order_id, sizeof(order_id), id);
	answer_expired(c, order_id, resp);
	c->settled = 1;
	return ATTEMPT_DONE;
}

/*
 * The outcome of COMMIT is unknown (its answer lost, or a cluster node
 * failed during it): never taken as failure; the ledger is read again,
 * on a fresh connection, and answers.
 */
static enum attempt
commit_unknown(struct attempt_ctx *c, struct response *resp)
{
	log_warnx("key %s: outcome of COMMIT unknown (%s, %u); reading the "
	    "ledger", c->scope.key, c->db->last_error, c->db->last_errno);
	c->unknown = 1;
	if (db_remaining_ms(c->db) < RECOVERY_GRACE_MS)
		db_set_deadline(c->db, RECOVERY_GRACE_MS);
	return answer_from_record(c, 0, resp);
}

/*
 * Act on a fault planned at a point inside the transaction: a simulated
 * deadlock, a dropped request, or a final rejection raised right there.
 */
static enum attempt
fault_at(struct attempt_ctx *c, enum fault_point pt, const char *name,
    struct response *resp)
{
	switch (FAULT(c->req->fault, pt, c->attempt)) {
	case FAULT_TRANSIENT:
		db_fail(c->db, DB_TRANSIENT, 1213, "injected deadlock");
		return attempt_failed(c, DB_TRANSIENT, name, resp);
	case FAULT_DROP:
		db_rollback(c->db);
		return ATTEMPT_DROP;
	case FAULT_FINAL:
		problem_set(&c->reject, 409, PROBLEM_OUT_OF_STOCK,
		    "injected final rejection at %s", name);
		return ATTEMPT_REJECT;
	default:
		return ATTEMPT_NEXT;
	}
}

/* Connect if needed; the remaining deadline bounds it and every wait. */
static enum attempt
step_connect(struct attempt_ctx *c, struct response *resp)
{
	int	 rc;

	rc = db_ensure(c->db);
	if (rc == DB_OK)
		rc = db_wait_limits(c->db);
	if (rc == DB_OK)
		return ATTEMPT_NEXT;
	db_rollback(c->db);
	log_info("key %s attempt %d: database: %s (%u)", c->scope.key,
	    c->attempt, c->db->last_error, c->db->last_errno);
	if (rc == DB_TRANSIENT)
		return retry_transient(c, resp);
	if (rc == DB_ERROR)
		return attempt_failed(c, rc, "connect", resp);
	return retry_unavailable(c, resp);
}

/*
 * The claim stopped after a read, in the same round trip just before it,
 * of the committed row of the scope into res (NULL when it was not
 * read): a row found there answers (the guard after the read stopped the
 * batch before the INSERT, so the transaction wrote nothing and holds no
 * lock).  ATTEMPT_NEXT when the read does not answer.
 */
static enum attempt
answer_from_read(struct attempt_ctx *c, MYSQL_RES *res, struct response *resp)
{
	struct ledger_record	 rec;
	enum attempt		 a = ATTEMPT_NEXT;

	if (res == NULL)
		return ATTEMPT_NEXT;
	ledger_record_init(&rec);
	if (ledger_record_from_result(res, &rec) == 1) {
		a = answer_record(c, &rec, 1, resp);
		db_end_read(c->db);
	}
	ledger_record_clear(&rec);
	return a;
}

/*
 * The claim of the scope failed with rc, or the guard after the read
 * (refused) stopped it: the row read answers when it can; otherwise the
 * unique key decides (a duplicate: read the row afresh, a concurrent
 * owner committed meanwhile).
 */
static enum attempt
claim_failed(struct attempt_ctx *c, int rc, int refused, MYSQL_RES *res,
    struct response *resp)
{
	enum attempt	 a;

	if (refused)
		db_expected(c->db);
	a = answer_from_read(c, res, resp);
	if (a != ATTEMPT_NEXT)
		return a;
	if (rc == DB_DUPLICATE || refused) {
		db_rollback(c->db);
		return answer_from_record(c, 1, resp);
	}
	if (rc == DB_TRANSIENT && (c->db->last_errno == 1205 ||
	    c->db->last_errno == 1969)) {
		/* Waited in vain on an uncommitted owner of the key. */
		db_rollback(c->db);
		return retry_in_progress(c, resp);
	}
	return attempt_failed(c, rc, "ledger insert", resp);
}

/* Claim the scope on its own (a rejection raised before the claim). */
static enum attempt
step_claim(struct attempt_ctx *c, struct response *resp)
{
	int	 rc;

	rc = ledger_insert(c->db, &c->scope, c->req->fingerprint,
	    c->conf->key_retention_ms / 1000);
	if (rc != DB_OK)
		return claim_failed(c, rc, 0, NULL, resp);
	c->claimed = 1;
	return ATTEMPT_NEXT;
}

/* The batch could not be written (it cannot grow past its cap). */
static enum attempt
batch_too_big(struct attempt_ctx *c, struct response *resp)
{
	db_fail(c->db, DB_ERROR, 0, "the batch does not fit");
	return attempt_failed(c, DB_ERROR, "batch", resp);
}

/*
 * The claim's round trip stopped (rc) before the INSERT succeeded: at the
 * guard after the read (a row was found), or at the INSERT.
 */
static enum attempt
claim_stopped(struct attempt_ctx *c, int rc, int read,
    struct response *resp)
{
	struct db_batch	*b = &c->batch;

	return claim_failed(c, rc, read >= 0 &&
	    db_batch_refused(c->db, b, read + 1), read >= 0 && b->done > read ?
	    b->res[read] : NULL, resp);
}

/*
 * 1. and 2. in one round trip: read the committed row of the scope
 * afresh, with a guard that stops the batch there when it found one (a
 * replay is answered from it, and nothing was written or locked; "no
 * row" grants nothing), claim the scope (INSERT the PROCESSING row; the
 * unique key alone decides, and its id names the order), set the
 * savepoint and read the stock rows, without a lock: the lock is taken
 * by the final round trip, so no row stays locked while answers travel
 * and the rules are judged.  A fault planned at the conflict read
 * leaves the read out (the old fresh read after the duplicate is where
 * it acts); one planned after the ledger insert splits the batch there.
 */
static enum attempt
step_claim_read(struct attempt_ctx *c, struct response *resp)
{
	struct db_batch	*b = &c->batch;
	enum attempt	 a;
	int		 rc, stock, read = -1, claim;

	db_batch_reset(b);
	if (!FAULT_PLANNED(c->req->fault, FP_CONFLICT_READ)) {
		read = b->n;
		if (ledger_batch_read(b, &c->scope) == -1 ||
		    db_batch_guard_found(b, 0) == -1)
			return batch_too_big(c, resp);
	}
	claim = b->n;
	if (ledger_batch_insert(b, &c->scope, c->req->fingerprint,
	    c->conf->key_retention_ms / 1000) == -1)
		return batch_too_big(c, resp);
	if (FAULT_PLANNED(c->req->fault, FP_AFTER_LEDGER_INSERT)) {
		rc = db_batch_run(c->db, b);
		if (rc != DB_OK)
			return claim_stopped(c, rc, read, resp);
		c->claimed = 1;
		c->id = b->insert_id[claim];
		a = fault_at(c, FP_AFTER_LEDGER_INSERT, "after_ledger_insert",
		    resp);
		if (a != ATTEMPT_NEXT)
			return a;
		db_batch_reset(b);
	}
	if (db_batch_add(b, 0, "SAVEPOINT order_work") == -1 ||
	    store_batch_stock(b, c->req->in, 0) == -1)
		return batch_too_big(c, resp);
	stock = b->n - 1;
	rc = db_batch_run(c->db, b);
	if (rc != DB_OK && !c->claimed && b->done <= claim)
		return claim_stopped(c, rc, read, resp);
	if (rc != DB_OK)
		return attempt_failed(c, rc, "stock read", resp);
	if (!c->claimed) {
		c->claimed = 1;
		c->id = b->insert_id[claim];
	}
	c->savepoint = 1;
	store_read_stock(b->res[stock], c->req->in, c->rows);
	return ATTEMPT_NEXT;
}

/*
 * The rare path: a rule failed on the rows read without a lock, or the
 * guard of the final round trip found them changed (undo: roll back
 * what that round trip did first).  Lock the rows (SELECT ... FOR
 * UPDATE, in SKU order) and judge every rule again on what is locked.
 */
static enum attempt
step_lock(struct attempt_ctx *c, int undo, struct response *resp)
{
	struct db_batch	*b = &c->batch;
	int		 rc;

	db_batch_reset(b);
	if ((undo && db_batch_add(b, 0, "ROLLBACK TO SAVEPOINT order_work") ==
	    -1) || store_batch_stock(b, c->req->in, 1) == -1)
		return batch_too_big(c, resp);
	rc = db_batch_run(c->db, b);
	if (rc != DB_OK)
		return attempt_failed(c, rc, "stock lock", resp);
	store_read_stock(b->res[b->n - 1], c->req->in, c->rows);
	c->locked = 1;
	if (rules_judge(c->req->in, c->rows, &c->reject) == -1)
		return ATTEMPT_REJECT;
	return ATTEMPT_NEXT;
}

/* Build the 201 answer that will also be stored and replayed. */
static int
answer_created(struct attempt_ctx *c, unsigned long long id, time_t created,
    const struct stock_row *rows, struct response *resp)
{
	const struct order_input *in = c->req->in;
	struct order_view	*v;
	struct tm		 tm;
	size_t			 i;
	int			 rc = -1;

	v = calloc(1, sizeof(*v));
	if (v == NULL)
		return -1;
	order_id_format(v->id, sizeof(v->id), id);
	strcpy(v->status, "CREATED");
	memcpy(v->currency, in->currency, sizeof(v->currency));
	v->amount = in->amount;
	snprintf(v->shipping, sizeof(v->shipping), "%s",
	    shipping_name(in->shipping));
	v->note = in->note;
	v->note_len = in->note_len;
	gmtime_r(&created, &tm);
	strftime(v->created_at, sizeof(v->created_at), "%Y-%m-%dT%H:%M:%SZ",
	    &tm);
	v->nitems = in->nitems;
	for (i = 0; i < in->nitems; i++) {
		memcpy(v->items[i].sku, in->items[i].sku,
		    sizeof(v->items[i].sku));
		v->items[i].qty = in->items[i].qty;
		v->items[i].unit_price = rows[i].unit_price;
	}
	response_reset(resp);
	resp->status = 201;
	if (response_header(resp, "Content-Type", "application/json") != 0 ||
	    response_header(resp, "Location", "%s/%s", c->conf->mount,
	    v->id) != 0 || order_view_render(v, &resp->body) != 0)
		goto out;
	resp->outcome = OUTCOME_CREATED;
	rc = 0;
out:
	free(v);
	return rc;
}

/*
 * Run the batch written so far (a fault point planned after it splits
 * the round trip there), then act on that fault.  order_stmt is the
 * index of the order insert in the batch, or -1.
 */
static enum attempt
run_part(struct attempt_ctx *c, int order_stmt, enum fault_point pt,
    const char *name, struct response *resp)
{
	struct db_batch	*b = &c->batch;
	int		 rc, failed, refused;

	rc = db_batch_run(c->db, b);
	failed = b->done;	/* the statement that failed, if one did */
	refused = c->take >= 0 && db_batch_refused(c->db, b, c->take + 1);
	if (rc == DB_OK && c->take >= 0)
		c->locked = 1;	/* the decrease holds the rows judged */
	c->take = -1;
	db_batch_reset(b);
	if (rc == DB_ERROR && refused && !c->locked) {
		db_expected(c->db);
		return ATTEMPT_STALE;
	}
	if (rc == DB_UNKNOWN)
		return commit_unknown(c, resp);
	if (rc == DB_DUPLICATE && failed == order_stmt &&
	    db_dup_key_is(c->db, STORE_ORDER_KEY_CONSTRAINT))
		return answer_purged(c, resp);
	if (rc == DB_DUPLICATE)		/* another key: a fresh id will do */
		rc = db_fail(c->db, DB_TRANSIENT, c->db->last_errno,
		    c->db->last_error);
	if (rc != DB_OK)
		return attempt_failed(c, rc, name != NULL ? name : "order batch",
		    resp);
	return name != NULL ? fault_at(c, pt, name, resp) : ATTEMPT_NEXT;
}

/*
 * A fault planned at point pt splits the batch there: send what is
 * written so far, then act on the fault.  *order_stmt becomes -1 once
 * the order insert has been sent.
 */
static enum attempt
split_at(struct attempt_ctx *c, enum fault_point pt, const char *name,
    int *order_stmt, struct response *resp)
{
	enum attempt	 a;

	if (!FAULT_PLANNED(c->req->fault, pt))
		return ATTEMPT_NEXT;
	if (pt == FP_BEFORE_COMMIT)
		c->commit_fault = 1;
	a = run_part(c, *order_stmt, pt, name, resp);
	*order_stmt = -1;
	return a;
}

/*
 * 4., 5. and 6. in one round trip once every rule passed: the stock
 * decrease, which locks the rows and stops the batch unless they still
 * hold what was judged (ATTEMPT_STALE), the order (its id allocated with
 * the claim), its items, the ledger row SUCCEEDED with the exact
 * response that will be replayed, and COMMIT.  The server stops the
 * batch at the first failure, so the COMMIT runs only after every
 * statement did what it must.  A fault planned at a point inside it
 * splits the batch there.
 */
static enum attempt
step_finish(struct attempt_ctx *c, struct response *resp)
{
	const struct create_request *req = c->req;
	struct db_batch		*b = &c->batch;
	enum attempt		 a;
	char			 order_id[ORDER_ID_MAX];
	int			 order_stmt;

	c->created = time(NULL);
	if (answer_created(c, c->id, c->created, c->rows, resp) == -1)
		return batch_too_big(c, resp);
	order_id_format(order_id, sizeof(order_id), c->id);
	db_batch_reset(b);
	c->take = b->n;
	if (store_batch_take(b, req->in, c->rows) == -1)
		return batch_too_big(c, resp);
	order_stmt = b->n;
	if (store_batch_order(b, c->id, req->principal, req->key, req->in,
	    c->created) == -1)
		return batch_too_big(c, resp);
	a = split_at(c, FP_AFTER_ORDER_INSERT, "after_order_insert",
	    &order_stmt, resp);
	if (a != ATTEMPT_NEXT)
		return a;
	if (store_batch_lines(b, c->id, req->in, c->rows) == -1)
		return batch_too_big(c, resp);
	a = split_at(c, FP_AFTER_STOCK_DECREASE, "after_stock_decrease",
	    &order_stmt, resp);
	if (a != ATTEMPT_NEXT)
		return a;
	if (ledger_batch_finish(b, c->id, LEDGER_SUCCEEDED, resp,
	    order_id) == -1)
		return batch_too_big(c, resp);
	a = split_at(c, FP_BEFORE_COMMIT, "before_commit", &order_stmt, resp);
	if (a != ATTEMPT_NEXT)
		return a;
	if (db_batch_commit(b) == -1)
		return batch_too_big(c, resp);
	a = run_part(c, order_stmt, FP_COUNT, NULL, resp);
	if (a != ATTEMPT_NEXT)
		return a;
	c->settled = 1;
	if (FAULT(req->fault, FP_AFTER_COMMIT, c->attempt) == FAULT_DROP)
		return ATTEMPT_DROP;
	return ATTEMPT_DONE;
}

/*
 * 5'. A final rejection: undo the order work, keep and record the key
 * (claiming it first when the rejection came before the claim).
 */
static enum attempt
step_reject(struct attempt_ctx *c, struct response *resp)
{
	unsigned long long	 id;
	enum attempt		 a;
	int			 rc;

	if (c->reject.code == PROBLEM_OUT_OF_STOCK &&
	    c->conf->out_of_stock == OUT_OF_STOCK_RETRYABLE) {
		/* Policy: no ledger row; the key may succeed after a restock. */
		db_rollback(c->db);
		response_problem(resp, &c->reject);
		response_header(resp, "Retry-After", "60");
		resp->outcome = OUTCOME_OUT_OF_STOCK;
		return ATTEMPT_DONE;
	}
	if (!c->claimed) {
		a = step_claim(c, resp);
		if (a != ATTEMPT_NEXT)
			return a;
	}
	if (c->savepoint) {
		rc = db_exec(c->db, "ROLLBACK TO SAVEPOINT order_work");
		if (rc != DB_OK)
			return attempt_failed(c, rc, "rollback to savepoint",
			    resp);
	}
	if (c->locked) {
		/* Certified: a concurrent stock change elsewhere conflicts. */
		rc = store_touch_stock(c->db, c->req->in, c->rows);
		if (rc != DB_OK)
			return attempt_failed(c, rc, "stock version", resp);
	}
	/*
	 * Rare path, so a plain read is affordable: a key whose ledger row
	 * was purged but which made an order must not record a rejection.
	 */
	rc = store_order_by_key(c->db, c->req->principal, c->req->key, &id);
	if (rc < 0)
		return attempt_failed(c, rc, "order lookup", resp);
	if (rc == 1)
		return answer_purged(c, resp);
	response_problem(resp, &c->reject);
	resp->outcome = OUTCOME_REJECTED;
	rc = ledger_finish(c->db, &c->scope, LEDGER_FAILED_FINAL, resp,
	    NULL);
	if (rc != DB_OK)
		return attempt_failed(c, rc, "ledger update", resp);
	return ATTEMPT_NEXT;
}

/* 6'. Commit the recorded rejection; only then answer. */
static enum attempt
step_commit(struct attempt_ctx *c, struct response *resp)
{
	enum attempt	 a;
	int		 rc;

	if (!c->commit_fault) {
		/* Planned there on this path too (a final one: no-op). */
		c->commit_fault = 1;
		a = fault_at(c, FP_BEFORE_COMMIT, "before_commit", resp);
		if (a != ATTEMPT_NEXT && a != ATTEMPT_REJECT)
			return a;
	}
	rc = db_commit(c->db);
	if (rc == DB_UNKNOWN)
		return commit_unknown(c, resp);
	if (rc != DB_OK)
		return attempt_failed(c, rc, "commit", resp);
	c->settled = 1;
	if (FAULT(c->req->fault, FP_AFTER_COMMIT, c->attempt) == FAULT_DROP)
		return ATTEMPT_DROP;
	return ATTEMPT_DONE;
}

/* One attempt: one InnoDB transaction, step by step. */
static enum attempt
create_attempt(struct attempt_ctx *c, struct response *resp)
{
	enum attempt	 a;

	c->claimed = c->savepoint = c->locked = c->commit_fault = 0;
	c->settled = 0;
	c->take = -1;
	a = step_connect(c, resp);
	if (a == ATTEMPT_NEXT)
		a = fault_at(c, FP_BEFORE_LEDGER_INSERT, "before_ledger_insert",
		    resp);
	if (a == ATTEMPT_NEXT)
		a = step_claim_read(c, resp);
	if (a == ATTEMPT_NEXT && rules_judge(c->req->in, c->rows,
	    &c->reject) == -1)
		a = step_lock(c, 0, resp);	/* judged again, locked */
	if (a == ATTEMPT_NEXT)
		a = fault_at(c, FP_AFTER_JUDGE, "after_judge", resp);
	if (a == ATTEMPT_NEXT)
		a = step_finish(c, resp);	/* or a fault's rejection */
	if (a == ATTEMPT_STALE) {
		log_debug("key %s attempt %d: the stock changed after it was "
		    "judged: locking it", c->scope.key, c->attempt);
		metrics_stock_changed();
		a = step_lock(c, 1, resp);
		if (a == ATTEMPT_NEXT)
			a = step_finish(c, resp);
	}
	if (a != ATTEMPT_REJECT)
		return a;
	a = step_reject(c, resp);
	if (a == ATTEMPT_NEXT)
		a = step_commit(c, resp);
	return a;
}

/*
 * Create the order of req exactly once, filling resp with the answer.
 * *attempts receives the number of attempts made.
 */
enum create_result
order_create(struct db *db, const struct conf *conf,
    const struct create_request *req, struct response *resp, int *attempts)
{
	struct attempt_ctx	*c;
	enum attempt		 a;
	enum create_result	 res = CREATE_ANSWER;
	long			 delay;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		response_error(resp, 500, PROBLEM_INTERNAL_ERROR, "out of "
		    "memory");
		resp->outcome = OUTCOME_INTERNAL_ERROR;
		*attempts = 0;
		return CREATE_ANSWER;
	}
	c->db = db;
	c->conf = conf;
	c->req = req;
	c->scope.principal = req->principal;
	c->scope.operation = LEDGER_OPERATION_CREATE_ORDER;
	c->scope.key = req->key;
	db_batch_init(&c->batch);
	db_set_deadline(db, conf->request_deadline_ms);
	for (c->attempt = 1;; c->attempt++) {
		a = create_attempt(c, resp);
		/* Once an outcome was unknown, only a row or a COMMIT says. */
		if (c->unknown && !c->settled)
			answer_unconfirmed(resp);
		if (a == ATTEMPT_DONE)
			break;
		if (a == ATTEMPT_DROP) {
			res = CREATE_DROP;
			break;
		}
		/* Retry with the same key, within the limits. */
		if (c->attempt >= conf->max_attempts)
			break;
		delay = rules_backoff_ms(conf, c->attempt + 1);
		if (db_remaining_ms(db) - delay <= 0) {
			if (resp->status == 503 &&
			    resp->outcome == OUTCOME_RETRY_LIMIT) {
				response_error(resp, 503,
				    PROBLEM_RETRY_DEADLINE_EXCEEDED, "the "
				    "request deadline of %ld ms passed; retry "
				    "with the same key",
				    conf->request_deadline_ms);
				response_header(resp, "Retry-After", "1");
				resp->outcome = OUTCOME_DEADLINE;
			}
			break;
		}
		sleep_ms(delay);
	}
	*attempts = c->attempt;
	db_batch_clear(&c->batch);
	free(c);
	return res;
}
