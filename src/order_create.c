/*
 * The create-order operation on the engine (engine.c):
 *
 *	create_claim_batch()	added to the claim's round trip: the stock
 *				rows, read without a lock
 *	create_work()		rules_judge() on them (rules.c), then
 *	  step_finish()		round trip 2: the stock decrease, which locks
 *				the rows in SKU order, guarded to stop the
 *				batch unless every row still holds what was
 *				judged; the order, its items, the ledger row
 *				SUCCEEDED with the exact response, COMMIT
 *	  step_lock()		only when a rule failed on the unlocked rows,
 *				or the guard refused: SELECT ... FOR UPDATE
 *				and judge again on the locked rows, then
 *				step_finish() or a final rejection
 *	create_refuse()		out_of_stock = retryable: no record
 *	create_undo()		a rejection judged on locked rows bumps their
 *				version; a key that made an order (its ledger
 *				row purged) never records a rejection
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf.h"
#include "db.h"
#include "db_batch.h"
#include "engine.h"
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

/* What a create keeps beside the engine (its engine_state()). */
struct create_state {
	struct stock_row		 rows[ORDER_ITEMS_MAX];
	time_t				 created;
};

/*
 * The key already made an order (a duplicate on orders_principal_key):
 * roll everything back.  If the key has a committed ledger row, answer
 * from it.  Only when it has none was the row purged after expiry: 410,
 * leaving no ledger row.  An order younger than key_retention cannot
 * have lost its ledger row that way: an order committed without its
 * ledger row, logged as an error with the key (the audit's
 * order_without_ledger).
 */
static enum engine_step
answer_purged(struct engine *e, struct response *resp)
{
	struct db		*db = engine_db(e);
	unsigned long long	 id;
	long long		 age = 0;
	char			 order_id[ORDER_ID_MAX];
	enum engine_step	 a;
	int			 rc;

	a = engine_answer_committed(e, resp);
	if (a != ENGINE_NEXT)
		return a;
	rc = db_ensure(db);
	if (rc == DB_OK)
		rc = store_order_by_key(db, engine_principal(e), engine_key(e),
		    &id, &age);
	if (rc < 0)
		return engine_failed(e, rc, "order lookup", resp);
	db_rollback(db);
	order_id[0] = '\0';
	if (rc == 1)
		order_id_format(order_id, sizeof(order_id), id);
	if (rc == 1 && age < engine_conf(e)->key_retention_ms / 1000)
		log_errorx("key %s of principal %s: order %s (%lld s old, "
		    "within key_retention) has no ledger row: answered 410; "
		    "an order was committed without its ledger row",
		    engine_key(e), engine_principal(e), order_id, age);
	return engine_answer_expired(e, order_id, resp);
}

/* A duplicate key on the order insert: the order's own unique key? */
static enum engine_step
create_duplicate(struct engine *e, struct response *resp)
{
	if (!db_dup_key_is(engine_db(e), STORE_ORDER_KEY_CONSTRAINT))
		return ENGINE_NEXT;
	return answer_purged(e, resp);
}

/* The claim's round trip reads the stock rows, without a lock. */
static int
create_claim_batch(struct engine *e, struct db_batch *b)
{
	return store_batch_stock(b, engine_input(e), 0);
}

/* Read the stock rows the claim's round trip returned. */
static void
create_claimed(struct engine *e, struct db_batch *b, int first)
{
	struct create_state	*s = engine_state(e);

	store_read_stock(b->res[first], engine_input(e), s->rows);
}

/*
 * The rare path: a rule failed on the rows read without a lock, or the
 * guard of the final round trip found them changed (undo: roll back
 * what that round trip did first).  Lock the rows (SELECT ... FOR
 * UPDATE, in SKU order) and judge every rule again on what is locked.
 */
static enum engine_step
step_lock(struct engine *e, int undo, struct response *resp)
{
	struct create_state	*s = engine_state(e);
	const struct order_input *in = engine_input(e);
	struct db_batch		*b = engine_batch(e);
	int			 rc;

	db_batch_reset(b);
	if ((undo && db_batch_to_savepoint(b) == -1) ||
	    store_batch_stock(b, in, 1) == -1)
		return engine_too_big(e, resp);
	rc = db_batch_run(engine_db(e), b);
	if (rc != DB_OK)
		return engine_failed(e, rc, "stock lock", resp);
	store_read_stock(b->res[b->n - 1], in, s->rows);
	engine_set_locked(e);
	if (rules_judge(in, s->rows, engine_rejection(e)) == -1)
		return ENGINE_REJECT;
	return ENGINE_NEXT;
}

/* Build the 201 answer that will also be stored and replayed. */
static int
answer_created(struct engine *e, unsigned long long id, time_t created,
    const struct stock_row *rows, struct response *resp)
{
	const struct order_input *in = engine_input(e);
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
	    response_header(resp, "Location", "%s/%s", engine_conf(e)->mount,
	    v->id) != 0 || order_view_render(v, &resp->body) != 0)
		goto out;
	resp->outcome = OUTCOME_CREATED;
	rc = 0;
out:
	free(v);
	return rc;
}

/*
 * 4., 5. and 6. in one round trip once every rule passed: the stock
 * decrease, which locks the rows and stops the batch unless they still
 * hold what was judged (ENGINE_STALE), the order (its id allocated with
 * the claim), its items, the ledger row SUCCEEDED with the exact
 * response that will be replayed, and COMMIT.  The server stops the
 * batch at the first failure, so the COMMIT runs only after every
 * statement did what it must.  A fault planned at a point inside it
 * splits the batch there.
 */
static enum engine_step
step_finish(struct engine *e, struct response *resp)
{
	struct create_state	*s = engine_state(e);
	const struct order_input *in = engine_input(e);
	struct db_batch		*b = engine_batch(e);
	unsigned long long	 id = engine_claim_id(e);
	enum engine_step	 a;
	char			 order_id[ORDER_ID_MAX];
	int			 order_stmt;

	s->created = time(NULL);
	if (answer_created(e, id, s->created, s->rows, resp) == -1)
		return engine_too_big(e, resp);
	order_id_format(order_id, sizeof(order_id), id);
	db_batch_reset(b);
	engine_guard(e, b->n);
	if (store_batch_take(b, id, in, s->rows) == -1)
		return engine_too_big(e, resp);
	order_stmt = b->n;
	if (store_batch_order(b, id, engine_principal(e), engine_key(e), in,
	    s->created) == -1)
		return engine_too_big(e, resp);
	a = engine_split_at(e, FP_AFTER_ORDER_INSERT, "after_order_insert",
	    &order_stmt, resp);
	if (a != ENGINE_NEXT)
		return a;
	if (store_batch_lines(b, id, in, s->rows) == -1)
		return engine_too_big(e, resp);
	return engine_finish(e, EVENT_ORDER_CREATED, id, order_id,
	    order_stmt, resp);
}

/* After the claim: judge, then write (or lock and judge again). */
static enum engine_step
create_work(struct engine *e, struct response *resp)
{
	struct create_state	*s = engine_state(e);
	enum engine_step	 a = ENGINE_NEXT;

	if (rules_judge(engine_input(e), s->rows, engine_rejection(e)) == -1)
		a = step_lock(e, 0, resp);	/* judged again, locked */
	if (a == ENGINE_NEXT)
		a = engine_fault_at(e, FP_AFTER_JUDGE, "after_judge", resp);
	if (a == ENGINE_NEXT)
		a = step_finish(e, resp);	/* or a fault's rejection */
	if (a == ENGINE_STALE) {
		log_debug("key %s attempt %d: the stock changed after it was "
		    "judged: locking it", engine_key(e), engine_attempt(e));
		metrics_stock_changed();
		a = step_lock(e, 1, resp);
		if (a == ENGINE_NEXT)
			a = step_finish(e, resp);
	}
	return a;
}

/* Policy out_of_stock = retryable: no ledger row; a restock may help. */
static enum engine_step
create_refuse(struct engine *e, struct response *resp)
{
	const struct problem	*p = engine_rejection(e);

	if (p->code != PROBLEM_OUT_OF_STOCK ||
	    engine_conf(e)->out_of_stock != OUT_OF_STOCK_RETRYABLE)
		return ENGINE_NEXT;
	db_rollback(engine_db(e));
	response_problem(resp, p);
	return ENGINE_DONE;
}

/* Before a rejection is recorded. */
static enum engine_step
create_undo(struct engine *e, struct response *resp)
{
	struct create_state	*s = engine_state(e);
	struct db		*db = engine_db(e);
	unsigned long long	 id;
	long long		 age;
	int			 rc;

	if (engine_locked(e)) {
		/* Certified: a concurrent stock change elsewhere conflicts. */
		rc = store_touch_stock(db, engine_input(e), s->rows);
		if (rc != DB_OK)
			return engine_failed(e, rc, "stock version", resp);
	}
	/*
	 * Rare path, so a plain read is affordable: a key whose ledger row
	 * was purged but which made an order must not record a rejection.
	 */
	rc = store_order_by_key(db, engine_principal(e), engine_key(e), &id,
	    &age);
	if (rc < 0)
		return engine_failed(e, rc, "order lookup", resp);
	if (rc == 1)
		return answer_purged(e, resp);
	return ENGINE_NEXT;
}

const struct engine_op order_create_op = {
	.name = LEDGER_OPERATION_CREATE_ORDER,
	.state_size = sizeof(struct create_state),
	.noun = "order",
	.effect = "the order may have been stored",
	.final_code = PROBLEM_OUT_OF_STOCK,
	.claim_batch = create_claim_batch,
	.claimed = create_claimed,
	.claim_what = "stock read",
	.work = create_work,
	.work_what = "order batch",
	.refuse = create_refuse,
	.undo = create_undo,
	.duplicate = create_duplicate,
};
