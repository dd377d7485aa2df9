/*
 * The cancel transaction against a real MariaDB, judged by the rows it
 * leaves: the order's status, the stock (available and restocked) and
 * the ledger.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "db_batch.h"
#include "dbtest.h"
#include "engine.h"
#include "fault.h"
#include "fingerprint.h"
#include "ledger.h"
#include "order_cancel.h"
#include "order_create.h"
#include "order_input.h"
#include "order_view.h"
#include "response.h"
#include "store.h"

#define THREADS	8

static struct db	 admin, work;
static char		 sku_c[64], sku_d[64];

static int
suite_init(void)
{
	db_init(&admin, &dbtest_conf);
	db_init(&work, &dbtest_conf);
	if (db_connect(&admin) != DB_OK || db_connect(&work) != DB_OK)
		return -1;
	snprintf(sku_c, sizeof(sku_c), "%s-C", dbtest_tag);
	snprintf(sku_d, sizeof(sku_d), "%s-D", dbtest_tag);
	if (dbtest_exec(&admin, "INSERT INTO stock (sku, currency, "
	    "unit_price, available) VALUES ('%s', 'KRW', 100, "
	    "1000), ('%s', 'KRW', 7, 1000)", sku_c, sku_d) == -1)
		return -1;
	return db_commit(&admin) == DB_OK ? 0 : -1;
}

static int
suite_clean(void)
{
	db_disconnect(&admin);
	db_disconnect(&work);
	return 0;
}

/* Create an order of 3 x C and 2 x D for principal; its id, or 0. */
static unsigned long long
make_order(const char *principal, const char *name)
{
	struct order_input	*in = calloc(1, sizeof(*in));
	struct engine_request	 er;
	struct response		 r;
	struct problem		 p;
	char			 key[64], body[512];
	char			 fp[FINGERPRINT_HEX_LEN + 1];
	unsigned long long	 id = 0;
	int			 attempts;

	CU_ASSERT_FATAL(in != NULL);
	snprintf(key, sizeof(key), "%s-%s-create", dbtest_tag, name);
	snprintf(body, sizeof(body), "{\"currency\":\"KRW\",\"items\":["
	    "{\"sku\":\"%s\",\"qty\":2},{\"sku\":\"%s\",\"qty\":3}],"
	    "\"amount\":314,\"note\":\"n\\u00e9\"}", sku_d, sku_c);
	CU_ASSERT_FATAL(order_input_parse(in, body, strlen(body), &p) == 0);
	CU_ASSERT_FATAL(fingerprint(LEDGER_OPERATION_CREATE_ORDER, principal,
	    in->canonical, in->canonical_len, fp) == 0);
	memset(&er, 0, sizeof(er));
	er.principal = principal;
	er.key = key;
	er.input = in;
	er.fingerprint = fp;
	response_init(&r);
	engine_run(&work, &dbtest_conf, &order_create_op, &er, &r, &attempts);
	CU_ASSERT_EQUAL(r.status, 201);
	if (r.status == 201)
		id = (unsigned long long)dbtest_scalar(&admin, "SELECT id FROM "
		    "orders WHERE principal_id = '%s' AND idempotency_key = "
		    "'%s'", principal, key);
	response_clear(&r);
	order_input_clear(in);
	free(in);
	return id;
}

/* Cancel order id for key as principal on db with body; resp is filled. */
static int
cancel_on(struct db *db, const char *principal, const char *key,
    unsigned long long id, const char *body, const struct conf *conf,
    const struct fault_plan *plan, struct response *resp)
{
	struct cancel_input	 in;
	struct cancel_args	 args;
	struct engine_request	 er;
	struct problem		 p;
	char			 fp[FINGERPRINT_HEX_LEN + 1];
	char			 oid[ORDER_ID_MAX];
	int			 attempts = 0;

	memset(&in, 0, sizeof(in));
	order_id_format(oid, sizeof(oid), id);
	CU_ASSERT_FATAL(cancel_input_parse(&in, oid, body, strlen(body),
	    &p) == 0);
	CU_ASSERT_FATAL(fingerprint(LEDGER_OPERATION_CANCEL_ORDER, principal,
	    in.canonical, in.canonical_len, fp) == 0);
	args.order = id;
	args.in = &in;
	memset(&er, 0, sizeof(er));
	er.principal = principal;
	er.key = key;
	er.input = &args;
	er.fingerprint = fp;
	er.fault = plan;
	response_reset(resp);
	engine_run(db, conf ? conf : &dbtest_conf, &order_cancel_op, &er, resp,
	    &attempts);
	cancel_input_clear(&in);
	return attempts;
}

static int
cancel(const char *principal, const char *key, unsigned long long id,
    const char *body, struct response *resp)
{
	return cancel_on(&work, principal, key, id, body, NULL, NULL, resp);
}

static long long
stock_of(const char *sku)
{
	return dbtest_scalar(&admin, "SELECT available FROM stock WHERE "
	    "sku = '%s'", sku);
}

static long long
restocked_of(const char *sku)
{
	return dbtest_scalar(&admin, "SELECT restocked FROM stock WHERE "
	    "sku = '%s'", sku);
}

static long long
cancel_rows(const char *principal, const char *key, const char *status)
{
	return dbtest_scalar(&admin, "SELECT COUNT(*) FROM idempotency_records "
	    "WHERE principal_id = '%s' AND operation = 'cancel-order' AND "
	    "idem_key = '%s' AND status = '%s'", principal, key, status);
}

static long long
is_cancelled(unsigned long long id)
{
	return dbtest_scalar(&admin, "SELECT COUNT(*) FROM orders WHERE id = "
	    "%llu AND status = 'CANCELLED' AND cancelled_at IS NOT NULL", id);
}

static int
replayed(const struct response *r)
{
	return r->headers.p != NULL && strstr(r->headers.p,
	    "Idempotent-Replayed: true\r\n") != NULL;
}

/*
 * One cancel: 200 with the order CANCELLED, every item's quantity back
 * once, one SUCCEEDED cancel row naming the order; the same key replays
 * byte for byte and restocks nothing more; another reason is 409; GET
 * shows what the cancel answered.
 */
static void
test_cancel_and_replay(void)
{
	struct response		 r1, r2;
	struct order_view	 v;
	struct buf		 got;
	char			 key[64], note[64];
	unsigned long long	 id;
	long long		 c0, d0, rc0;

	response_init(&r1);
	response_init(&r2);
	id = make_order("dbtest", "cancel");
	CU_ASSERT_FATAL(id != 0);
	c0 = stock_of(sku_c);
	d0 = stock_of(sku_d);
	rc0 = restocked_of(sku_c);
	snprintf(key, sizeof(key), "%s-cancel", dbtest_tag);
	CU_ASSERT_EQUAL(cancel("dbtest", key, id, "{\"reason\":\"changed my "
	    "mind\"}", &r1), 1);
	CU_ASSERT_EQUAL(r1.status, 200);
	CU_ASSERT_STRING_EQUAL(outcome_name(r1.outcome), "cancelled");
	CU_ASSERT_PTR_NOT_NULL(r1.body.p != NULL ? strstr(r1.body.p,
	    "\"status\":\"CANCELLED\"") : NULL);
	CU_ASSERT_PTR_NOT_NULL(r1.body.p != NULL ? strstr(r1.body.p,
	    "\"cancelledAt\":\"") : NULL);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0 + 3);
	CU_ASSERT_EQUAL(stock_of(sku_d), d0 + 2);
	CU_ASSERT_EQUAL(restocked_of(sku_c), rc0 + 3);
	CU_ASSERT_EQUAL(is_cancelled(id), 1);
	CU_ASSERT_EQUAL(cancel_rows("dbtest", key, "SUCCEEDED"), 1);
	CU_ASSERT_EQUAL(dbtest_scalar(&admin, "SELECT COUNT(*) FROM "
	    "idempotency_records WHERE idem_key = '%s' AND resource_id = "
	    "'o-%llu'", key, id), 1);
	CU_ASSERT_EQUAL(dbtest_scalar(&admin, "SELECT COUNT(*) FROM orders "
	    "WHERE id = %llu AND cancel_reason = 'changed my mind' AND "
	    "cancel_key = '%s'", id, key), 1);

	/* The same key: the same answer, byte for byte; no second restock. */
	cancel("dbtest", key, id, "{\"reason\":\"changed my mind\"}", &r2);
	CU_ASSERT_EQUAL(r2.status, 200);
	CU_ASSERT(replayed(&r2));
	CU_ASSERT_EQUAL(r1.body.len, r2.body.len);
	if (r1.body.len == r2.body.len)
		CU_ASSERT_NSTRING_EQUAL(r1.body.p, r2.body.p, r1.body.len);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0 + 3);
	CU_ASSERT_EQUAL(restocked_of(sku_c), rc0 + 3);

	/* The same key with another reason: 409, nothing new. */
	cancel("dbtest", key, id, "{\"reason\":\"other\"}", &r2);
	CU_ASSERT_EQUAL(r2.status, 409);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r2.code),
	    "IDEMPOTENCY_KEY_REUSED");
	CU_ASSERT_EQUAL(stock_of(sku_c), c0 + 3);

	/* GET shows the order as the cancel answered it. */
	CU_ASSERT_EQUAL(store_get_order(&admin, "dbtest", id, &v, note,
	    sizeof(note)), 1);
	db_rollback(&admin);
	buf_init(&got, 1 << 16);
	CU_ASSERT_EQUAL(order_view_render(&v, &got), 0);
	CU_ASSERT_EQUAL(got.len, r1.body.len);
	if (got.len == r1.body.len)
		CU_ASSERT_NSTRING_EQUAL(got.p, r1.body.p, got.len);
	buf_free(&got);
	response_clear(&r1);
	response_clear(&r2);
}

/*
 * Final rejections, recorded and replayed: another key on a cancelled
 * order, another principal's order, an unknown order, an order past the
 * cancel window.  None changes the stock or the order.
 */
static void
test_final_rejections(void)
{
	struct conf		 c = dbtest_conf;
	struct response		 r;
	char			 key[64];
	unsigned long long	 id, old;
	long long		 c0;

	response_init(&r);
	id = make_order("dbtest", "twice");
	CU_ASSERT_FATAL(id != 0);
	snprintf(key, sizeof(key), "%s-twice-1", dbtest_tag);
	cancel("dbtest", key, id, "", &r);
	CU_ASSERT_EQUAL_FATAL(r.status, 200);
	c0 = stock_of(sku_c);

	snprintf(key, sizeof(key), "%s-twice-2", dbtest_tag);
	cancel("dbtest", key, id, "", &r);
	CU_ASSERT_EQUAL(r.status, 409);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code),
	    "ORDER_ALREADY_CANCELLED");
	CU_ASSERT_EQUAL(cancel_rows("dbtest", key, "FAILED_FINAL"), 1);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0);
	cancel("dbtest", key, id, "", &r);
	CU_ASSERT_EQUAL(r.status, 409);
	CU_ASSERT(replayed(&r));
	CU_ASSERT_EQUAL(stock_of(sku_c), c0);

	/* Another principal's order: 404, as a GET would say. */
	id = make_order("dbtest", "mine");
	CU_ASSERT_FATAL(id != 0);
	c0 = stock_of(sku_c);
	snprintf(key, sizeof(key), "%s-theirs", dbtest_tag);
	cancel("dbtest-other", key, id, "", &r);
	CU_ASSERT_EQUAL(r.status, 404);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code), "ORDER_NOT_FOUND");
	CU_ASSERT_EQUAL(cancel_rows("dbtest-other", key, "FAILED_FINAL"), 1);
	CU_ASSERT_EQUAL(is_cancelled(id), 0);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0);

	/* An order that does not exist: 404, recorded. */
	snprintf(key, sizeof(key), "%s-none", dbtest_tag);
	cancel("dbtest", key, 999999999999ULL, "", &r);
	CU_ASSERT_EQUAL(r.status, 404);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code), "ORDER_NOT_FOUND");
	CU_ASSERT_EQUAL(cancel_rows("dbtest", key, "FAILED_FINAL"), 1);

	/* Past the cancel window: 409 ORDER_NOT_CANCELLABLE, recorded. */
	old = make_order("dbtest", "old");
	CU_ASSERT_FATAL(old != 0);
	dbtest_exec(&admin, "UPDATE orders SET created_at = created_at - "
	    "INTERVAL 2 HOUR WHERE id = %llu", old);
	db_commit(&admin);
	c.cancel_window_ms = 3600 * 1000;
	c0 = stock_of(sku_c);
	snprintf(key, sizeof(key), "%s-old", dbtest_tag);
	cancel_on(&work, "dbtest", key, old, "", &c, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 409);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code),
	    "ORDER_NOT_CANCELLABLE");
	CU_ASSERT_EQUAL(cancel_rows("dbtest", key, "FAILED_FINAL"), 1);
	CU_ASSERT_EQUAL(is_cancelled(old), 0);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0);
	/* Within a longer window the same order may be cancelled. */
	c.cancel_window_ms = 3 * 3600 * 1000;
	snprintf(key, sizeof(key), "%s-old-2", dbtest_tag);
	cancel_on(&work, "dbtest", key, old, "", &c, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 200);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0 + 3);
	response_clear(&r);
}

/*
 * Round trips: a cancel sends its statements in two round trips (the
 * fresh read, its guard, INSERT, SAVEPOINT, the order locked, its items,
 * the order of the key; then the restock, its guard, the order, its
 * guard, the event, the ledger, its guard, COMMIT), a replay in one.
 */
static void
test_round_trips(void)
{
	struct response		 r;
	char			 key[64];
	unsigned long long	 id;
	unsigned long		 t0, t1, t2;

	response_init(&r);
	id = make_order("dbtest", "rtt");
	CU_ASSERT_FATAL(id != 0);
	snprintf(key, sizeof(key), "%s-rtt-cancel", dbtest_tag);
	t0 = work.round_trips;
	cancel("dbtest", key, id, "", &r);
	t1 = work.round_trips;
	CU_ASSERT_EQUAL(r.status, 200);
	CU_ASSERT_EQUAL(t1 - t0, 2);
	cancel("dbtest", key, id, "", &r);
	t2 = work.round_trips;
	CU_ASSERT(replayed(&r));
	CU_ASSERT_EQUAL(t2 - t1, 1);
	if (t1 - t0 != 2 || t2 - t1 != 1)
		fprintf(stderr, "cancel: %lu round trips, replay: %lu\n",
		    t1 - t0, t2 - t1);
	response_clear(&r);
}

/*
 * The restock names its stock rows, in SKU order, as the create's
 * decrease does, and depends on the claim row alone: no join through
 * order_items whose order the optimizer would choose.
 */
static void
test_restock_statement(void)
{
	struct order_view_item	 items[2];
	struct db_batch		 b;
	char			 want[256];
	const char		*upd;

	memset(items, 0, sizeof(items));
	strcpy(items[0].sku, "A-1");
	items[0].qty = 3;
	strcpy(items[1].sku, "B-2");
	items[1].qty = 2;
	db_batch_init(&b);
	CU_ASSERT_FATAL(store_batch_cancel(&b, 41, 42, items, 2, 0, "k", "",
	    0) == 0);
	CU_ASSERT_FATAL(b.n >= 2);
	upd = b.sql.p + b.start[0];
	CU_ASSERT_PTR_NULL(strstr(upd, "order_items"));
	snprintf(want, sizeof(want), "WHERE s.sku IN (X'%s', X'%s')",
	    "412D31", "422D32");
	CU_ASSERT_PTR_NOT_NULL(strstr(upd, want));
	CU_ASSERT_PTR_NOT_NULL(strstr(upd, "own.id = 41 AND own.status = "
	    "'PROCESSING'"));
	db_batch_clear(&b);
}

struct racer {
	pthread_t		 th;
	struct db		 db;
	char			 key[64];
	unsigned long long	 id;
	struct response		 r;
};

static void *
racer_run(void *arg)
{
	struct racer	*w = arg;

	cancel_on(&w->db, "dbtest", w->key, w->id, "", NULL, NULL, &w->r);
	return NULL;
}

/*
 * THREADS cancels of one order at once, first with one key, then with a
 * key each: one restock either way; with one key every answer is the
 * same 200, with a key each one 200 and the rest 409
 * ORDER_ALREADY_CANCELLED.
 */
static void
race(int same_key)
{
	struct racer		*w;
	unsigned long long	 id;
	long long		 c0;
	int			 i, ok = 0, already = 0;

	w = calloc(THREADS, sizeof(*w));
	CU_ASSERT_FATAL(w != NULL);
	id = make_order("dbtest", same_key ? "race-same" : "race-each");
	CU_ASSERT_FATAL(id != 0);
	c0 = stock_of(sku_c);
	for (i = 0; i < THREADS; i++) {
		db_init(&w[i].db, &dbtest_conf);
		CU_ASSERT_FATAL(db_connect(&w[i].db) == DB_OK);
		response_init(&w[i].r);
		w[i].id = id;
		if (same_key)
			snprintf(w[i].key, sizeof(w[i].key), "%s-race-same",
			    dbtest_tag);
		else
			snprintf(w[i].key, sizeof(w[i].key), "%s-race-%d",
			    dbtest_tag, i);
	}
	for (i = 0; i < THREADS; i++)
		CU_ASSERT_FATAL(pthread_create(&w[i].th, NULL, racer_run,
		    &w[i]) == 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(w[i].th, NULL);
	for (i = 0; i < THREADS; i++) {
		if (w[i].r.status == 200)
			ok++;
		else if (w[i].r.status == 409 && w[i].r.code ==
		    PROBLEM_ORDER_ALREADY_CANCELLED)
			already++;
		else
			fprintf(stderr, "racer %d: %d %s\n", i, w[i].r.status,
			    problem_code_name(w[i].r.code));
	}
	/* One key: every answer has the first one's bytes (none freed yet). */
	if (same_key) {
		CU_ASSERT(w[0].r.body.len > 0);
		for (i = 1; i < THREADS; i++) {
			CU_ASSERT_EQUAL(w[i].r.body.len, w[0].r.body.len);
			if (w[i].r.body.len == w[0].r.body.len)
				CU_ASSERT(memcmp(w[i].r.body.p, w[0].r.body.p,
				    w[0].r.body.len) == 0);
		}
	}
	for (i = 0; i < THREADS; i++) {
		response_clear(&w[i].r);
		db_disconnect(&w[i].db);
	}
	CU_ASSERT_EQUAL(ok, same_key ? THREADS : 1);
	CU_ASSERT_EQUAL(already, same_key ? 0 : THREADS - 1);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0 + 3);
	CU_ASSERT_EQUAL(is_cancelled(id), 1);
	CU_ASSERT_EQUAL(dbtest_scalar(&admin, "SELECT COUNT(*) FROM "
	    "idempotency_records WHERE operation = 'cancel-order' AND "
	    "resource_id = 'o-%llu' AND status = 'SUCCEEDED'", id), 1);
	free(w);
}

static void
test_race_same_key(void)
{
	race(1);
}

static void
test_race_key_each(void)
{
	race(0);
}

#ifdef ENABLE_FAULT_INJECTION
/*
 * A simulated deadlock before COMMIT is retried: one restock in the end;
 * a deadlock on every attempt: 503, nothing kept.  A lost answer after
 * COMMIT: the retry replays, nothing more restocked.
 */
static void
test_faults(void)
{
	struct fault_plan	 plan;
	struct response		 r;
	char			 key[64], err[128];
	unsigned long long	 id;
	long long		 c0;

	response_init(&r);
	id = make_order("dbtest", "fault");
	CU_ASSERT_FATAL(id != 0);
	c0 = stock_of(sku_c);
	CU_ASSERT_FATAL(fault_parse(&plan, "after_stock_decrease=transient",
	    err, sizeof(err)) == 0);
	snprintf(key, sizeof(key), "%s-fault-all", dbtest_tag);
	CU_ASSERT_EQUAL(cancel_on(&work, "dbtest", key, id, "", NULL, &plan,
	    &r), dbtest_conf.max_attempts);
	CU_ASSERT_EQUAL(r.status, 503);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0);
	CU_ASSERT_EQUAL(is_cancelled(id), 0);
	CU_ASSERT_EQUAL(dbtest_scalar(&admin, "SELECT COUNT(*) FROM "
	    "idempotency_records WHERE idem_key = '%s'", key), 0);

	CU_ASSERT_FATAL(fault_parse(&plan, "before_commit=transient1", err,
	    sizeof(err)) == 0);
	snprintf(key, sizeof(key), "%s-fault", dbtest_tag);
	CU_ASSERT_EQUAL(cancel_on(&work, "dbtest", key, id, "", NULL, &plan,
	    &r), 2);
	CU_ASSERT_EQUAL(r.status, 200);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0 + 3);

	/* A lost answer: the retry of the same key replays. */
	id = make_order("dbtest", "drop");
	CU_ASSERT_FATAL(id != 0);
	c0 = stock_of(sku_c);
	CU_ASSERT_FATAL(fault_parse(&plan, "after_commit=drop", err,
	    sizeof(err)) == 0);
	snprintf(key, sizeof(key), "%s-drop", dbtest_tag);
	cancel_on(&work, "dbtest", key, id, "", NULL, &plan, &r);
	CU_ASSERT_EQUAL(stock_of(sku_c), c0 + 3);
	cancel("dbtest", key, id, "", &r);
	CU_ASSERT_EQUAL(r.status, 200);
	CU_ASSERT(replayed(&r));
	CU_ASSERT_EQUAL(stock_of(sku_c), c0 + 3);
	response_clear(&r);
}
#endif

static const struct unit_test tests[] = {
	{ "cancel and replay", test_cancel_and_replay },
	{ "final rejections", test_final_rejections },
	{ "round trips", test_round_trips },
	{ "restock statement", test_restock_statement },
	{ "concurrent cancels, one key", test_race_same_key },
	{ "concurrent cancels, a key each", test_race_key_each },
#ifdef ENABLE_FAULT_INJECTION
	{ "faults", test_faults },
#endif
	{ NULL, NULL }
};

const struct unit_suite test_cancel_db_suite = {
	"cancel transaction (MariaDB)", suite_init, suite_clean, tests
};
