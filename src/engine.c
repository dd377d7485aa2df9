/*
 * The idempotency engine (engine.h): what any operation shares.
 *
 *	engine_run()		the run: its state and the operation's
 *				(op->state_size), the retry loop:
 *				attempts, deadline, backoff
 *	attempt_once()		one InnoDB transaction (READ COMMITTED):
 *	  step_connect()	connect if needed; the deadline bounds every
 *				wait
 *	  step_claim_read()	round trip 1: a fresh read of the scope's
 *				committed row (found: a guard stops the
 *				batch, claim_failed() answers from it), the
 *				INSERT of the PROCESSING row, SAVEPOINT, and
 *				the operation's reads (op->claim_batch)
 *	  op->work()		the operation: judge and write
 *				(engine_run_part(), engine_split_at()),
 *				or ENGINE_REJECT; it ends in
 *	  engine_finish()	the event, the ledger row SUCCEEDED with
 *				the answer, COMMIT, in the same round trip
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include "conf.h"
#include "db.h"
#include "db_batch.h"
#include "engine.h"
#include "events.h"
#include "fault.h"
#include "ledger.h"
#include "log.h"
#include "mono.h"
#include "response.h"
#include "rules.h"

/* The least a read after an unknown COMMIT may take. */
#define RECOVERY_GRACE_MS	500

/* One request's run: the operation's hooks see it through accessors. */
struct engine {
	struct db		*db;
	const struct conf	*conf;
	const struct engine_op	*op;
	const struct engine_request *req;
	void			*state;		/* op->state_size bytes */
	struct ledger_scope	 scope;
	int			 attempt;	/* 1, 2, ... */
	int			 unknown;	/* a COMMIT's outcome was
						   unknown: sticky */

	/* This attempt's state. */
	int			 claimed;	/* ledger row inserted */
	int			 savepoint;
	int			 locked;	/* the rows judged were read
						   under the lock */
	int			 take;		/* a guarded statement whose
						   refusal means ENGINE_STALE,
						   or -1 */
	int			 commit_fault;	/* before_commit acted */
	int			 settled;	/* resp comes from a ledger
						   row or this COMMIT */
	unsigned long long	 id;		/* the claim's ledger id */
	struct problem		 reject;
	struct db_batch		 batch;		/* statements to send */
};

static enum engine_step	answer_from_record(struct engine *, int,
			    struct response *);
static enum engine_step	engine_committed(struct engine *);

/* The operation's state: op->state_size bytes, zeroed once for the run. */
void *
engine_state(struct engine *c)
{
	return c->state;
}

/* The operation's input (engine_request.input). */
const void *
engine_input(struct engine *c)
{
	return c->req->input;
}

/* The principal the request acts for. */
const char *
engine_principal(struct engine *c)
{
	return c->req->principal;
}

/* The request's Idempotency-Key. */
const char *
engine_key(struct engine *c)
{
	return c->req->key;
}

/* The connection of the transaction. */
struct db *
engine_db(struct engine *c)
{
	return c->db;
}

/* The configuration the request runs under. */
const struct conf *
engine_conf(struct engine *c)
{
	return c->conf;
}

/* The batch an operation writes its statements into. */
struct db_batch *
engine_batch(struct engine *c)
{
	return &c->batch;
}

/* The claim's ledger id (it names the order a create makes). */
unsigned long long
engine_claim_id(struct engine *c)
{
	return c->id;
}

/* The attempt under way: 1, 2, ... */
int
engine_attempt(struct engine *c)
{
	return c->attempt;
}

/* Where an operation writes its final rejection before ENGINE_REJECT. */
struct problem *
engine_rejection(struct engine *c)
{
	return &c->reject;
}

/* Tell whether the rows judged were read under the lock. */
int
engine_locked(struct engine *c)
{
	return c->locked;
}

/* The rows judged were read under the lock (until the attempt ends). */
void
engine_set_locked(struct engine *c)
{
	c->locked = 1;
}

/*
 * Statement stmt of the batch is guarded: its refusal before the rows
 * were locked means they changed since they were judged (ENGINE_STALE
 * from engine_run_part()).
 */
void
engine_guard(struct engine *c, int stmt)
{
	c->take = stmt;
}

/*
 * The answer while the outcome of an earlier COMMIT of this request is
 * unknown and nothing read since settled it: it may have taken effect.
 */
static void
answer_unconfirmed(struct engine *c, struct response *resp)
{
	response_error(resp, PROBLEM_COMMIT_UNCONFIRMED, "the outcome of "
	    "this request could not be confirmed: %s; retry with the same "
	    "key", c->op->effect);
}

/* The answer once transient failures have used up the attempts. */
static enum engine_step
retry_transient(struct engine *c, struct response *resp)
{
	response_error(resp, PROBLEM_RETRY_LIMIT_REACHED, "the database "
	    "stayed busy for %d attempts; retry with the same key",
	    c->conf->max_attempts);
	return ENGINE_RETRY;
}

/*
 * The answer once the database stayed unusable (unreachable, read-only,
 * out of connections, statements or space, a cluster node not ready):
 * nothing was written.  Out of space, the server's message (which names
 * tables and files) stays in the log.
 */
static enum engine_step
retry_unavailable(struct engine *c, struct response *resp)
{
	if (c->db->last_class == DB_UNAVAILABLE &&
	    db_out_of_space(c->db->last_errno, c->db->last_error)) {
		response_error(resp, PROBLEM_DATABASE_OUT_OF_SPACE, "the "
		    "database cannot take requests now: it is out of space; "
		    "nothing was stored; retry with the same key");
	} else
		response_error(resp, PROBLEM_DATABASE_UNAVAILABLE, "the "
		    "database cannot take requests now (%s); nothing was "
		    "stored; retry with the same key",
		    c->db->last_class == DB_UNAVAILABLE ?
		    c->db->last_error : "not reachable");
	return ENGINE_RETRY;
}

/* The answer once a concurrent owner of the key kept it for too long. */
static enum engine_step
retry_in_progress(struct engine *c, struct response *resp)
{
	response_error(resp, PROBLEM_REQUEST_IN_PROGRESS, "a request with "
	    "this Idempotency-Key is still being processed; retry later "
	    "with the same key");
	return ENGINE_RETRY;
}

/*
 * Answer 410 for an expired key, naming the order it concerned: the
 * answer is settled (ENGINE_DONE).
 */
enum engine_step
engine_answer_expired(struct engine *c, const char *order_id,
    struct response *resp)
{
	struct problem	 p;

	problem_set(&p, PROBLEM_IDEMPOTENCY_KEY_EXPIRED, "this "
	    "Idempotency-Key has expired and is never reused; send a new key "
	    "for a new %s", c->op->noun);
	if (order_id != NULL && order_id[0] != '\0')
		snprintf(p.order_id, sizeof(p.order_id), "%s", order_id);
	response_problem(resp, &p);
	if (p.order_id[0] != '\0')
		response_header(resp, "Link", "<%s/%s>; rel=\"related\"",
		    c->conf->mount, p.order_id);
	c->settled = 1;
	return ENGINE_DONE;
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
enum engine_step
engine_failed(struct engine *c, int rc, const char *what,
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
			return ENGINE_DONE;
		}
		return retry_unavailable(c, resp);
	default:
		log_warnx("key %s: %s failed: %s (%u, %s)", c->scope.key, what,
		    c->db->last_error, c->db->last_errno,
		    db_class_name(rc));
		response_error(resp, PROBLEM_INTERNAL_ERROR, "the %s "
		    "could not be completed; nothing was stored; retry with "
		    "the same key", c->op->noun);
		return ENGINE_DONE;
	}
}

/*
 * Read the committed ledger row of the scope afresh (READ COMMITTED, a
 * causal read on a cluster) into rec: 1, 0 for no row, or a db_err.  The
 * fault point conflict_read can make it see no row.
 */
static int
read_record(struct engine *c, struct ledger_record *rec)
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
 * 409 (or key_reused_status) for a key used with another body: the one
 * status the configuration moves, so the problem is filled before it.
 */
static void
answer_reused(struct engine *c, struct response *resp)
{
	struct problem	 p;

	problem_set(&p, PROBLEM_IDEMPOTENCY_KEY_REUSED, "this "
	    "Idempotency-Key was already used with a different request body");
	p.status = c->conf->key_reused_status;
	response_problem(resp, &p);
}

/*
 * Answer from a committed row: 410 once expired (whatever the body),
 * 409 for another body, the stored response for a final state, retry
 * while it is PROCESSING.
 */
static enum engine_step
answer_record(struct engine *c, const struct ledger_record *rec,
    int replayed, struct response *resp)
{
	int	 terminal = ledger_terminal(rec->state);

	c->settled = 1;
	if (rec->state == LEDGER_EXPIRED || (terminal && rec->expired)) {
		/* Expired is final whatever the body: never done again. */
		return engine_answer_expired(c, rec->resource_id, resp);
	}
	if (strcmp(rec->fingerprint, c->req->fingerprint) != 0) {
		answer_reused(c, resp);
		return ENGINE_DONE;
	}
	if (terminal) {
		answer_stored(rec, replayed, resp);
		return ENGINE_DONE;
	}
	if (rec->state == LEDGER_PROCESSING)
		return retry_in_progress(c, resp);
	response_error(resp, PROBLEM_UNKNOWN_IDEMPOTENCY_STATE,
	    "the idempotency record is in an unknown state");
	log_warnx("ledger row for key %s has unknown status \"%s\"",
	    c->scope.key, rec->status);
	return ENGINE_DONE;
}

/*
 * Answer from the committed ledger row of the scope, read afresh after
 * a duplicate key (or after a COMMIT whose outcome is unknown, with
 * replayed = 0).
 */
static enum engine_step
answer_from_record(struct engine *c, int replayed, struct response *resp)
{
	struct ledger_record	 rec;
	enum engine_step	 a;
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
		response_error(resp, PROBLEM_REQUEST_STATUS_UNCONFIRMED,
		    "the outcome of an earlier request with this "
		    "Idempotency-Key could not be confirmed; retry with the "
		    "same key");
		a = ENGINE_RETRY;
	} else
		a = answer_record(c, &rec, replayed, resp);
	db_end_read(c->db);
	ledger_record_clear(&rec);
	return a;
}

/*
 * The outcome of COMMIT is unknown (its answer lost, or a cluster node
 * failed during it): never taken as failure; the ledger is read again,
 * on a fresh connection, and answers.
 */
static enum engine_step
commit_unknown(struct engine *c, struct response *resp)
{
	log_warnx("key %s: outcome of COMMIT unknown (%s, %u); reading the "
	    "ledger", c->scope.key, c->db->last_error, c->db->last_errno);
	c->unknown = 1;
	if (db_remaining_ms(c->db) < RECOVERY_GRACE_MS)
		db_set_deadline(c->db, RECOVERY_GRACE_MS);
	return answer_from_record(c, 0, resp);
}

/*
 * Roll back, then answer from the committed ledger row of the scope,
 * read afresh, when there is one (on a cluster: the winner of a race,
 * applied from another node); ENGINE_NEXT when there is none.
 */
enum engine_step
engine_answer_committed(struct engine *c, struct response *resp)
{
	struct ledger_record	 rec;
	enum engine_step	 a;
	int			 rc;

	db_rollback(c->db);
	ledger_record_init(&rec);
	rc = read_record(c, &rec);
	if (rc == 1) {
		a = answer_record(c, &rec, 1, resp);
		ledger_record_clear(&rec);
		db_end_read(c->db);
		return a;
	}
	ledger_record_clear(&rec);
	if (rc < 0)
		return engine_failed(c, rc, "ledger read", resp);
	return ENGINE_NEXT;
}

/*
 * Act on a fault planned at a point inside the transaction: a simulated
 * deadlock, a dropped request, or a final rejection raised right there.
 */
enum engine_step
engine_fault_at(struct engine *c, enum fault_point pt, const char *name,
    struct response *resp)
{
	switch (FAULT(c->req->fault, pt, c->attempt)) {
	case FAULT_TRANSIENT:
		db_fail(c->db, DB_TRANSIENT, ER_LOCK_DEADLOCK,
		    "injected deadlock");
		return engine_failed(c, DB_TRANSIENT, name, resp);
	case FAULT_DROP:
		db_rollback(c->db);
		return ENGINE_DROP;
	case FAULT_FINAL:
		problem_set(&c->reject, c->op->final_code,
		    "injected final rejection at %s", name);
		return ENGINE_REJECT;
	default:
		return ENGINE_NEXT;
	}
}

/* Connect if needed; the remaining deadline bounds it and every wait. */
static enum engine_step
step_connect(struct engine *c, struct response *resp)
{
	int	 rc;

	rc = db_ensure(c->db);
	if (rc == DB_OK)
		rc = db_wait_limits(c->db);
	if (rc == DB_OK)
		return ENGINE_NEXT;
	db_rollback(c->db);
	log_info("key %s attempt %d: database: %s (%u)", c->scope.key,
	    c->attempt, c->db->last_error, c->db->last_errno);
	if (rc == DB_TRANSIENT)
		return retry_transient(c, resp);
	if (rc == DB_ERROR)
		return engine_failed(c, rc, "connect", resp);
	return retry_unavailable(c, resp);
}

/*
 * The claim stopped after a read, in the same round trip just before it,
 * of the committed row of the scope into res (NULL when it was not
 * read): a row found there answers (the guard after the read stopped the
 * batch before the INSERT, so the transaction wrote nothing and holds no
 * lock).  ENGINE_NEXT when the read does not answer.
 */
static enum engine_step
answer_from_read(struct engine *c, MYSQL_RES *res, struct response *resp)
{
	struct ledger_record	 rec;
	enum engine_step	 a = ENGINE_NEXT;

	if (res == NULL)
		return ENGINE_NEXT;
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
static enum engine_step
claim_failed(struct engine *c, int rc, int refused, MYSQL_RES *res,
    struct response *resp)
{
	enum engine_step	 a;

	if (refused)
		db_expected(c->db);
	a = answer_from_read(c, res, resp);
	if (a != ENGINE_NEXT)
		return a;
	if (rc == DB_DUPLICATE || refused) {
		db_rollback(c->db);
		return answer_from_record(c, 1, resp);
	}
	if (rc == DB_TRANSIENT && (c->db->last_errno == ER_LOCK_WAIT_TIMEOUT ||
	    c->db->last_errno == ER_STATEMENT_TIMEOUT)) {
		/* Waited in vain on an uncommitted owner of the key. */
		db_rollback(c->db);
		return retry_in_progress(c, resp);
	}
	return engine_failed(c, rc, "ledger insert", resp);
}

/* Claim the scope on its own (a rejection raised before the claim). */
static enum engine_step
step_claim(struct engine *c, struct response *resp)
{
	int	 rc;

	rc = ledger_insert(c->db, &c->scope, c->req->fingerprint,
	    c->conf->key_retention_ms / 1000);
	if (rc != DB_OK)
		return claim_failed(c, rc, 0, NULL, resp);
	c->claimed = 1;
	return ENGINE_NEXT;
}

/* The batch could not be written (it cannot grow past its cap). */
enum engine_step
engine_too_big(struct engine *c, struct response *resp)
{
	db_fail(c->db, DB_ERROR, 0, "the batch does not fit");
	return engine_failed(c, DB_ERROR, "batch", resp);
}

/*
 * The claim's round trip stopped (rc) before the INSERT succeeded: at the
 * guard after the read (a row was found), or at the INSERT.
 */
static enum engine_step
claim_stopped(struct engine *c, int rc, int read,
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
 * savepoint and add the operation's reads (a create's: the stock rows,
 * without a lock: the lock is taken by the final round trip, so no row
 * stays locked while answers travel and the rules are judged).  A fault
 * planned at the conflict read leaves the read out (the old fresh read
 * after the duplicate is where it acts); one planned after the ledger
 * insert splits the batch there.
 */
static enum engine_step
step_claim_read(struct engine *c, struct response *resp)
{
	struct db_batch		*b = &c->batch;
	enum engine_step	 a;
	int			 rc, first, read = -1, claim;

	db_batch_reset(b);
	if (!FAULT_PLANNED(c->req->fault, FP_CONFLICT_READ)) {
		read = b->n;
		if (ledger_batch_read(b, &c->scope) == -1 ||
		    db_batch_guard_found(b, 0) == -1)
			return engine_too_big(c, resp);
	}
	claim = b->n;
	if (ledger_batch_insert(b, &c->scope, c->req->fingerprint,
	    c->conf->key_retention_ms / 1000) == -1)
		return engine_too_big(c, resp);
	if (FAULT_PLANNED(c->req->fault, FP_AFTER_LEDGER_INSERT)) {
		rc = db_batch_run(c->db, b);
		if (rc != DB_OK)
			return claim_stopped(c, rc, read, resp);
		c->claimed = 1;
		c->id = b->insert_id[claim];
		a = engine_fault_at(c, FP_AFTER_LEDGER_INSERT,
		    "after_ledger_insert", resp);
		if (a != ENGINE_NEXT)
			return a;
		db_batch_reset(b);
	}
	if (db_batch_savepoint(b) == -1)
		return engine_too_big(c, resp);
	first = b->n;
	if (c->op->claim_batch != NULL && c->op->claim_batch(c, b) == -1)
		return engine_too_big(c, resp);
	rc = db_batch_run(c->db, b);
	if (rc != DB_OK && !c->claimed && b->done <= claim)
		return claim_stopped(c, rc, read, resp);
	if (rc != DB_OK)
		return engine_failed(c, rc, c->op->claim_what, resp);
	if (!c->claimed) {
		c->claimed = 1;
		c->id = b->insert_id[claim];
	}
	c->savepoint = 1;
	if (c->op->claimed != NULL)
		c->op->claimed(c, b, first);
	return ENGINE_NEXT;
}

/*
 * Run the batch written so far (a fault point planned after it splits
 * the round trip there), then act on that fault.  dup_stmt is the index
 * of the statement whose duplicate key the operation judges
 * (op->duplicate), or -1.
 */
static enum engine_step
engine_run_part(struct engine *c, int dup_stmt, enum fault_point pt,
    const char *name, struct response *resp)
{
	struct db_batch	*b = &c->batch;
	int		 rc, failed, refused;

#ifdef ENABLE_FAULT_INJECTION
	if (FAULT_PLANNED(c->req->fault, FP_WORK_PAUSE)) {
		/* db_batch_run() pauses a batch that ends in COMMIT. */
		b->pause_after = c->req->fault->pause_after;
		b->pause_ms = c->req->fault->sleep_ms[FP_WORK_PAUSE];
	}
#endif
	rc = db_batch_run(c->db, b);
	failed = b->done;	/* the statement that failed, if one did */
	refused = c->take >= 0 && db_batch_refused(c->db, b, c->take + 1);
	if (rc == DB_OK && c->take >= 0)
		c->locked = 1;	/* the decrease holds the rows judged */
	c->take = -1;
	db_batch_reset(b);
	if (rc == DB_ERROR && refused && !c->locked) {
		db_expected(c->db);
		return ENGINE_STALE;
	}
	if (rc == DB_UNKNOWN)
		return commit_unknown(c, resp);
	if (rc == DB_DUPLICATE && failed == dup_stmt &&
	    c->op->duplicate != NULL) {
		enum engine_step a = c->op->duplicate(c, resp);

		if (a != ENGINE_NEXT)
			return a;
	}
	if (rc == DB_DUPLICATE)		/* another key: a fresh id will do */
		rc = db_fail(c->db, DB_TRANSIENT, c->db->last_errno,
		    c->db->last_error);
	if (rc != DB_OK)
		return engine_failed(c, rc, name != NULL ? name :
		    c->op->work_what, resp);
	return name != NULL ? engine_fault_at(c, pt, name, resp) : ENGINE_NEXT;
}

/*
 * A fault planned at point pt splits the batch there: send what is
 * written so far, then act on the fault.  *dup_stmt becomes -1 once
 * that statement has been sent.
 */
enum engine_step
engine_split_at(struct engine *c, enum fault_point pt, const char *name,
    int *dup_stmt, struct response *resp)
{
	enum engine_step	 a;

	if (!FAULT_PLANNED(c->req->fault, pt))
		return ENGINE_NEXT;
	if (pt == FP_BEFORE_COMMIT)
		c->commit_fault = 1;
	a = engine_run_part(c, *dup_stmt, pt, name, resp);
	*dup_stmt = -1;
	return a;
}

/*
 * The end of every operation's transaction, after the operation added
 * its writes to e->batch and wrote the answer into resp: the event of
 * type for order, the ledger row SUCCEEDED with resp naming resource,
 * COMMIT, all in the same round trip as those writes, each depending on
 * the claim row; then the answer is settled.  A fault planned at
 * after_stock_decrease or before_commit splits the batch there;
 * dup_stmt is the statement whose duplicate key the operation judges
 * (op->duplicate), or -1.
 */
enum engine_step
engine_finish(struct engine *c, enum event_type type, unsigned long long order,
    const char *resource, int dup_stmt, struct response *resp)
{
	struct db_batch		*b = &c->batch;
	enum engine_step	 a;

	a = engine_split_at(c, FP_AFTER_STOCK_DECREASE, "after_stock_decrease",
	    &dup_stmt, resp);
	if (a != ENGINE_NEXT)
		return a;
	if (events_batch_add(b, c->id, type, order, &resp->body) == -1 ||
	    ledger_batch_finish(b, c->id, LEDGER_SUCCEEDED, resp,
	    resource) == -1)
		return engine_too_big(c, resp);
	a = engine_split_at(c, FP_BEFORE_COMMIT, "before_commit", &dup_stmt,
	    resp);
	if (a != ENGINE_NEXT)
		return a;
	if (db_batch_commit(b) == -1)
		return engine_too_big(c, resp);
	a = engine_run_part(c, dup_stmt, FP_COUNT, NULL, resp);
	if (a != ENGINE_NEXT)
		return a;
	return engine_committed(c);
}

/*
 * A final rejection: undo the operation's work, keep and record the key
 * (claiming it first when the rejection came before the claim), unless
 * the operation answers it otherwise.
 */
static enum engine_step
step_reject(struct engine *c, struct response *resp)
{
	enum engine_step	 a;
	int			 rc;

	if (c->op->refuse != NULL) {
		a = c->op->refuse(c, resp);
		if (a != ENGINE_NEXT)
			return a;
	}
	if (!c->claimed) {
		a = step_claim(c, resp);
		if (a != ENGINE_NEXT)
			return a;
	}
	if (c->savepoint) {
		rc = db_exec(c->db, DB_BATCH_TO_SAVEPOINT);
		if (rc != DB_OK)
			return engine_failed(c, rc, "rollback to savepoint",
			    resp);
	}
	if (c->op->undo != NULL) {
		a = c->op->undo(c, resp);
		if (a != ENGINE_NEXT)
			return a;
	}
	response_problem(resp, &c->reject);
	resp->outcome = OUTCOME_REJECTED;
	rc = ledger_finish(c->db, &c->scope, LEDGER_FAILED_FINAL, resp,
	    NULL);
	if (rc != DB_OK)
		return engine_failed(c, rc, "ledger update", resp);
	return ENGINE_NEXT;
}

/* Commit the recorded rejection; only then answer. */
static enum engine_step
step_commit(struct engine *c, struct response *resp)
{
	enum engine_step	 a;
	int		 rc;

	if (!c->commit_fault) {
		/* Planned there on this path too (a final one: no-op). */
		c->commit_fault = 1;
		a = engine_fault_at(c, FP_BEFORE_COMMIT, "before_commit", resp);
		if (a != ENGINE_NEXT && a != ENGINE_REJECT)
			return a;
	}
	rc = db_commit(c->db);
	if (rc == DB_UNKNOWN)
		return commit_unknown(c, resp);
	if (rc != DB_OK)
		return engine_failed(c, rc, "commit", resp);
	return engine_committed(c);
}

/*
 * The COMMIT succeeded: resp is settled; a fault planned after it may
 * drop the answer.
 */
static enum engine_step
engine_committed(struct engine *c)
{
	c->settled = 1;
	if (FAULT(c->req->fault, FP_AFTER_COMMIT, c->attempt) == FAULT_DROP)
		return ENGINE_DROP;
	return ENGINE_DONE;
}

/*
 * One attempt: one InnoDB transaction, step by step: connect, claim (and
 * the operation's reads), the operation's work, or a recorded final
 * rejection.
 */
static enum engine_step
attempt_once(struct engine *c, struct response *resp)
{
	enum engine_step	 a;

	c->claimed = c->savepoint = c->locked = c->commit_fault = 0;
	c->settled = 0;
	c->take = -1;
	a = step_connect(c, resp);
	if (a == ENGINE_NEXT)
		a = engine_fault_at(c, FP_BEFORE_LEDGER_INSERT,
		    "before_ledger_insert", resp);
	if (a == ENGINE_NEXT)
		a = step_claim_read(c, resp);
	if (a == ENGINE_NEXT)
		a = c->op->work(c, resp);
	if (a != ENGINE_REJECT)
		return a;
	a = step_reject(c, resp);
	if (a == ENGINE_NEXT)
		a = step_commit(c, resp);
	return a;
}

/*
 * Run operation op for req exactly once, filling resp with the answer;
 * the operation's state (op->state_size bytes) lives as long as the run.
 * *attempts receives the number of attempts made.
 */
enum engine_result
engine_run(struct db *db, const struct conf *conf, const struct engine_op *op,
    const struct engine_request *req, struct response *resp, int *attempts)
{
	struct engine		*c;
	enum engine_step	 a;
	enum engine_result	 res = ENGINE_ANSWER;
	long			 delay;

	*attempts = 0;
	c = calloc(1, sizeof(*c));
	if (c != NULL && op->state_size > 0)
		c->state = calloc(1, op->state_size);
	if (c == NULL || (op->state_size > 0 && c->state == NULL)) {
		response_error(resp, PROBLEM_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	c->db = db;
	c->conf = conf;
	c->op = op;
	c->req = req;
	c->scope.principal = req->principal;
	c->scope.operation = op->name;
	c->scope.key = req->key;
	db_batch_init(&c->batch);
	db_set_deadline(db, conf->request_deadline_ms);
	for (c->attempt = 1;; c->attempt++) {
		a = attempt_once(c, resp);
		/* Once an outcome was unknown, only a row or a COMMIT says. */
		if (c->unknown && !c->settled)
			answer_unconfirmed(c, resp);
		if (a == ENGINE_DONE)
			break;
		if (a == ENGINE_DROP) {
			res = ENGINE_SILENT;
			break;
		}
		/*
		 * Every node of a cluster failed, in this request or less
		 * than DB_NODE_HOLD_S before it: nothing was stored, and
		 * trying again would only wait for them once more.
		 */
		if (resp->outcome == OUTCOME_UNAVAILABLE && db_nodes_down(db))
			break;
		/* Retry with the same key, within the limits. */
		if (c->attempt >= conf->max_attempts)
			break;
		delay = rules_backoff_ms(conf, c->attempt + 1);
		if (db_remaining_ms(db) - delay <= 0) {
			if (resp->code == PROBLEM_RETRY_LIMIT_REACHED)
				response_error(resp,
				    PROBLEM_RETRY_DEADLINE_EXCEEDED, "the "
				    "request deadline of %ld ms passed; retry "
				    "with the same key",
				    conf->request_deadline_ms);
			break;
		}
		mono_sleep_ms(delay);
	}
	*attempts = c->attempt;
	db_batch_clear(&c->batch);
out:
	if (c != NULL)
		free(c->state);
	free(c);
	return res;
}
