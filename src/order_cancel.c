/*
 * The cancel-order operation on the engine (engine.c), in the engine's
 * two round trips:
 *
 *	cancel_claim_batch()	added to the claim's round trip, after the
 *				SAVEPOINT: the order row of the principal,
 *				locked (SELECT ... FOR UPDATE), its items
 *				and whether each has a stock row (no stock
 *				row is locked), and the order the key
 *				already cancelled, if any
 *	cancel_work()		a key that already cancelled an order (its
 *				ledger row purged): 410 naming it, nothing
 *				kept; rules_cancel_judge() on the order row
 *				alone (rules.c): not the principal's order
 *				or none, already cancelled, past
 *				cancel_window are final rejections,
 *				recorded by the engine; an item without its
 *				stock row: 500, nothing kept; then round
 *				trip 2: each item's quantity put back by SKU
 *				in SKU order (guarded: every stock row
 *				changed), the order CANCELLED with its
 *				cancel key (guarded: it was CREATED), the
 *				ledger row SUCCEEDED with the exact 200
 *				answer, COMMIT
 *
 * The same key again replays the first answer; only the unique key of the
 * ledger decides which request cancels, and the order row's lock orders
 * two cancels of one order under different keys: the second sees
 * CANCELLED.  The order's unique (principal, cancel key) keeps a key to
 * one cancelled order after its ledger row is purged.  A cancel never
 * touches a payment.
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
#include "order_cancel.h"
#include "order_input.h"
#include "order_view.h"
#include "response.h"
#include "rules.h"
#include "store.h"

/* What a cancel keeps beside the engine (its engine_state()). */
struct cancel_state {
	int				 found;
	long long			 created;	/* epoch seconds */
	struct order_view		 view;
	char				 note[ORDER_NOTE_MAX * 4 + 1];
	char				 missing[ORDER_SKU_MAX + 1];
	int				 key_used;	/* the key cancelled
							   key_order */
	unsigned long long		 key_order;
	long long			 key_age;	/* seconds, or -1 */
};

/*
 * The claim's round trip locks the order row and reads its items and
 * the order the key already cancelled.
 */
static int
cancel_claim_batch(struct engine *e, struct db_batch *b)
{
	const struct cancel_args *args = engine_input(e);

	return store_batch_cancel_read(b, args->order, engine_principal(e),
	    engine_key(e));
}

/* Read the order row, its items and the key's cancelled order. */
static void
cancel_claimed(struct engine *e, struct db_batch *b, int first)
{
	struct cancel_state	*s = engine_state(e);
	const struct cancel_args *args = engine_input(e);

	s->found = store_read_cancel(b->res[first], b->res[first + 1],
	    args->order, &s->view, s->note, sizeof(s->note), &s->created,
	    s->missing);
	s->key_used = store_read_cancel_key(b->res[first + 2], &s->key_order,
	    &s->key_age);
	engine_set_locked(e);
}

/*
 * The key already cancelled an order, yet the claim succeeded: its
 * ledger row was purged.  Roll everything back and answer 410 naming
 * that order, leaving no ledger row.  A cancel younger than
 * key_retention cannot have lost its ledger row that way: logged as an
 * error (the audit's cancelled_without_ledger).
 */
static enum engine_step
answer_key_used(struct engine *e, struct response *resp)
{
	struct cancel_state	*s = engine_state(e);
	char			 order_id[ORDER_ID_MAX];

	db_rollback(engine_db(e));
	order_id_format(order_id, sizeof(order_id), s->key_order);
	if (s->key_age < engine_conf(e)->key_retention_ms / 1000)
		log_errorx("cancel key %s of principal %s: order %s (cancelled "
		    "%lld s ago, within key_retention) has no ledger row: "
		    "answered 410; a cancel was committed without its ledger "
		    "row", engine_key(e), engine_principal(e), order_id,
		    s->key_age);
	return engine_answer_expired(e, order_id, resp);
}

/*
 * An item of the order has no stock row, so it cannot be put back: never
 * a partial cancel.  Roll everything back (no ledger row: the same key
 * may cancel once the row is restored) and answer 500.
 */
static enum engine_step
refuse_missing_stock(struct engine *e, struct response *resp)
{
	struct cancel_state	*s = engine_state(e);

	db_rollback(engine_db(e));
	log_errorx("key %s of principal %s: order %s: SKU %s has no stock "
	    "row: the cancel is refused (see idemorders audit, "
	    "item_without_stock)", engine_key(e), engine_principal(e),
	    s->view.id, s->missing);
	response_error(resp, PROBLEM_STOCK_ROW_MISSING, "SKU \"%s\" of "
	    "order %s has no stock row, so its quantity cannot be put back; "
	    "nothing was changed; the same key cancels the order once the "
	    "stock row is restored", s->missing, s->view.id);
	return ENGINE_DONE;
}

/* Build the 200 answer that will also be stored and replayed. */
static int
answer_cancelled(struct cancel_state *s, time_t cancelled,
    struct response *resp)
{
	struct tm	 tm;

	strcpy(s->view.status, "CANCELLED");
	gmtime_r(&cancelled, &tm);
	strftime(s->view.cancelled_at, sizeof(s->view.cancelled_at),
	    "%Y-%m-%dT%H:%M:%SZ", &tm);
	response_reset(resp);
	resp->status = 200;
	if (response_header(resp, "Content-Type", "application/json") != 0 ||
	    order_view_render(&s->view, &resp->body) != 0)
		return -1;
	resp->outcome = OUTCOME_CANCELLED;
	return 0;
}

/*
 * Judge on the locked order row; then in one round trip: the restock
 * (which locks the stock rows, in SKU order), the order CANCELLED, the
 * ledger row SUCCEEDED with the answer, COMMIT.  A fault planned at a
 * point inside it splits the batch there.
 */
static enum engine_step
cancel_work(struct engine *e, struct response *resp)
{
	struct cancel_state	*s = engine_state(e);
	const struct cancel_args *args = engine_input(e);
	struct db_batch		*b = engine_batch(e);
	enum engine_step	 a;
	time_t			 now = time(NULL);

	if (s->key_used)
		return answer_key_used(e, resp);
	if (rules_cancel_judge(s->found, s->view.status,
	    (long long)now - s->created, engine_conf(e)->cancel_window_ms,
	    engine_rejection(e)) == -1)
		return ENGINE_REJECT;
	if (s->missing[0] != '\0')
		return refuse_missing_stock(e, resp);
	a = engine_fault_at(e, FP_AFTER_JUDGE, "after_judge", resp);
	if (a != ENGINE_NEXT)
		return a;
	if (answer_cancelled(s, now, resp) == -1)
		return engine_too_big(e, resp);
	db_batch_reset(b);
	if (store_batch_cancel(b, engine_claim_id(e), args->order,
	    s->view.items, s->view.nitems, now, engine_key(e),
	    args->in->reason, args->in->reason_len) == -1)
		return engine_too_big(e, resp);
	return engine_finish(e, EVENT_ORDER_CANCELLED, args->order,
	    s->view.id, -1, resp);
}

const struct engine_op order_cancel_op = {
	.name = LEDGER_OPERATION_CANCEL_ORDER,
	.state_size = sizeof(struct cancel_state),
	.noun = "cancel",
	.effect = "the order may have been cancelled",
	.final_code = PROBLEM_ORDER_NOT_CANCELLABLE,
	.claim_batch = cancel_claim_batch,
	.claimed = cancel_claimed,
	.claim_what = "order lock",
	.work = cancel_work,
	.work_what = "cancel batch",
};
