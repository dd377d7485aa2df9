/*
 * The create transaction against a real MariaDB, judged by the rows it
 * leaves: orders, ledger and stock.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "dbtest.h"
#include "engine.h"
#include "fault.h"
#include "fingerprint.h"
#include "ledger.h"
#include "order_create.h"
#include "order_input.h"
#include "response.h"

static struct db	 admin, work;
static char		 sku_a[64], sku_b[64];

static int
suite_init(void)
{
	db_init(&admin, &dbtest_conf);
	db_init(&work, &dbtest_conf);
	if (db_connect(&admin) != DB_OK || db_connect(&work) != DB_OK)
		return -1;
	snprintf(sku_a, sizeof(sku_a), "%s-A", dbtest_tag);
	snprintf(sku_b, sizeof(sku_b), "%s-B", dbtest_tag);
	if (dbtest_exec(&admin, "INSERT INTO stock (sku, currency, "
	    "unit_price, available) VALUES ('%s', 'KRW', 100, "
	    "100), ('%s', 'KRW', 50, 0)", sku_a, sku_b) == -1)
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

/* Run one create of body for key as principal; resp is filled. */
static int
create(const char *principal, const char *key, const char *body,
    const struct conf *conf, const struct fault_plan *plan,
    struct response *resp)
{
	struct order_input	*in = calloc(1, sizeof(*in));
	struct engine_request	 er;
	struct problem		 p;
	char			 fp[FINGERPRINT_HEX_LEN + 1];
	int			 attempts = 0;

	CU_ASSERT_FATAL(in != NULL);
	CU_ASSERT_FATAL(order_input_parse(in, body, strlen(body), &p) == 0);
	CU_ASSERT_FATAL(fingerprint(LEDGER_OPERATION_CREATE_ORDER, principal,
	    in->canonical, in->canonical_len, fp) == 0);
	memset(&er, 0, sizeof(er));
	er.principal = principal;
	er.key = key;
	er.input = in;
	er.fingerprint = fp;
	er.fault = plan;
	response_reset(resp);
	engine_run(&work, conf ? conf : &dbtest_conf, &order_create_op, &er,
	    resp, &attempts);
	order_input_clear(in);
	free(in);
	return attempts;
}

static long long
orders_for(const char *key)
{
	return dbtest_scalar(&admin, "SELECT COUNT(*) FROM orders WHERE "
	    "principal_id = 'dbtest' AND idempotency_key = '%s'", key);
}

static long long
stock_of(const char *sku)
{
	return dbtest_scalar(&admin, "SELECT available FROM stock WHERE "
	    "sku = '%s'", sku);
}

static long long
ledger_rows(const char *key, const char *status)
{
	return dbtest_scalar(&admin, "SELECT COUNT(*) FROM idempotency_records "
	    "WHERE principal_id = 'dbtest' AND idem_key = '%s' AND "
	    "status = '%s'", key, status);
}

static void
body_for(char *out, size_t n, const char *sku, int qty, long long amount)
{
	snprintf(out, n, "{\"currency\":\"KRW\",\"items\":[{\"sku\":\"%s\","
	    "\"qty\":%d}],\"amount\":%lld}", sku, qty, amount);
}

/* One create: one order, one SUCCEEDED row, stock down; replay equal. */
static void
test_create_and_replay(void)
{
	struct response	 r1, r2;
	char		 key[64], body[256];
	long long	 before = stock_of(sku_a);

	snprintf(key, sizeof(key), "%s-create", dbtest_tag);
	body_for(body, sizeof(body), sku_a, 2, 200);
	response_init(&r1);
	response_init(&r2);
	CU_ASSERT_EQUAL(create("dbtest", key, body, NULL, NULL, &r1), 1);
	CU_ASSERT_EQUAL(r1.status, 201);
	CU_ASSERT_EQUAL(orders_for(key), 1);
	CU_ASSERT_EQUAL(ledger_rows(key, "SUCCEEDED"), 1);
	CU_ASSERT_EQUAL(stock_of(sku_a), before - 2);

	create("dbtest", key, body, NULL, NULL, &r2);
	CU_ASSERT_EQUAL(r2.status, 201);
	CU_ASSERT_STRING_EQUAL(outcome_name(r2.outcome), "replayed");
	CU_ASSERT_EQUAL(r1.body.len, r2.body.len);
	CU_ASSERT_NSTRING_EQUAL(r1.body.p, r2.body.p, r1.body.len);
	CU_ASSERT_PTR_NOT_NULL(strstr(r2.headers.p, "Idempotent-Replayed: "
	    "true\r\n"));
	CU_ASSERT_EQUAL(orders_for(key), 1);
	CU_ASSERT_EQUAL(stock_of(sku_a), before - 2);

	/* Same key, another amount: 409, nothing new. */
	body_for(body, sizeof(body), sku_a, 2, 201);
	create("dbtest", key, body, NULL, NULL, &r2);
	CU_ASSERT_EQUAL(r2.status, 409);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r2.code),
	    "IDEMPOTENCY_KEY_REUSED");
	CU_ASSERT_EQUAL(orders_for(key), 1);
	response_clear(&r1);
	response_clear(&r2);
}

/* A final rejection leaves FAILED_FINAL, no order, no stock change. */
static void
test_final_rejections(void)
{
	struct response	 r;
	char		 key[64], body[256];
	long long	 a = stock_of(sku_a), b = stock_of(sku_b);

	response_init(&r);
	snprintf(key, sizeof(key), "%s-oos", dbtest_tag);
	body_for(body, sizeof(body), sku_b, 1, 50);
	create("dbtest", key, body, NULL, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 409);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code), "OUT_OF_STOCK");
	CU_ASSERT_EQUAL(orders_for(key), 0);
	CU_ASSERT_EQUAL(ledger_rows(key, "FAILED_FINAL"), 1);
	CU_ASSERT_EQUAL(stock_of(sku_b), b);

	snprintf(key, sizeof(key), "%s-amount", dbtest_tag);
	body_for(body, sizeof(body), sku_a, 1, 99);
	create("dbtest", key, body, NULL, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 422);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code), "AMOUNT_MISMATCH");
	CU_ASSERT_EQUAL(orders_for(key), 0);
	CU_ASSERT_EQUAL(ledger_rows(key, "FAILED_FINAL"), 1);
	CU_ASSERT_EQUAL(stock_of(sku_a), a);

	snprintf(key, sizeof(key), "%s-unknown", dbtest_tag);
	body_for(body, sizeof(body), "NO-SUCH-SKU", 1, 1);
	create("dbtest", key, body, NULL, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 422);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code), "UNKNOWN_SKU");
	CU_ASSERT_EQUAL(ledger_rows(key, "FAILED_FINAL"), 1);

	/* The replay of a rejection is the same rejection. */
	create("dbtest", key, body, NULL, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 422);
	CU_ASSERT_STRING_EQUAL(outcome_name(r.outcome), "replayed");
	response_clear(&r);
}

/* out_of_stock = retryable: no ledger row; the key succeeds later. */
static void
test_out_of_stock_retryable(void)
{
	struct conf	 c = dbtest_conf;
	struct response	 r;
	char		 key[64], body[256];

	c.out_of_stock = OUT_OF_STOCK_RETRYABLE;
	response_init(&r);
	snprintf(key, sizeof(key), "%s-retryable", dbtest_tag);
	body_for(body, sizeof(body), sku_b, 1, 50);
	create("dbtest", key, body, &c, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 409);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code), "OUT_OF_STOCK");
	CU_ASSERT_EQUAL(r.outcome, OUTCOME_OUT_OF_STOCK);	/* unrecorded */
	CU_ASSERT_EQUAL(dbtest_scalar(&admin, "SELECT COUNT(*) FROM "
	    "idempotency_records WHERE idem_key = '%s'", key), 0);
	dbtest_exec(&admin, "UPDATE stock SET available = 1 WHERE sku = '%s'",
	    sku_b);
	db_commit(&admin);
	create("dbtest", key, body, &c, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 201);
	CU_ASSERT_EQUAL(orders_for(key), 1);
	CU_ASSERT_EQUAL(stock_of(sku_b), 0);
	response_clear(&r);
}

/* Expired rows and purged tombstones answer 410, never a new order. */
static void
test_expired_and_purged(void)
{
	struct response	 r;
	char		 key[64], body[256], other[256];

	response_init(&r);
	snprintf(key, sizeof(key), "%s-expire", dbtest_tag);
	body_for(body, sizeof(body), sku_a, 1, 100);
	body_for(other, sizeof(other), sku_a, 1, 101);
	create("dbtest", key, body, NULL, NULL, &r);
	CU_ASSERT_EQUAL_FATAL(r.status, 201);
	dbtest_exec(&admin, "UPDATE idempotency_records SET expires_at = "
	    "UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE idem_key = '%s'", key);
	db_commit(&admin);
	create("dbtest", key, body, NULL, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 410);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code),
	    "IDEMPOTENCY_KEY_EXPIRED");
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.p, "\"orderId\":\"o-"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.headers.p, "Link: </orders/o-"));

	/* The ledger row is purged: the orders key still refuses. */
	dbtest_exec(&admin, "DELETE FROM idempotency_records WHERE idem_key = "
	    "'%s'", key);
	db_commit(&admin);
	create("dbtest", key, other, NULL, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 410);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.p, "\"orderId\":\"o-"));
	CU_ASSERT_EQUAL(orders_for(key), 1);
	CU_ASSERT_EQUAL(dbtest_scalar(&admin, "SELECT COUNT(*) FROM "
	    "idempotency_records WHERE idem_key = '%s'", key), 0);
	response_clear(&r);
}

/* A committed PROCESSING row is retried, then 409 REQUEST_IN_PROGRESS. */
static void
test_processing_row(void)
{
	struct conf	 c = dbtest_conf;
	struct response	 r;
	char		 key[64], body[256];

	c.retry_backoff_ms = 1;
	c.retry_backoff_max_ms = 5;
	response_init(&r);
	snprintf(key, sizeof(key), "%s-processing", dbtest_tag);
	body_for(body, sizeof(body), sku_a, 1, 100);
	create("dbtest", key, body, NULL, NULL, &r);	/* learn nothing */
	dbtest_exec(&admin, "UPDATE idempotency_records SET status = "
	    "'PROCESSING' WHERE idem_key = '%s'", key);
	db_commit(&admin);
	CU_ASSERT_EQUAL(create("dbtest", key, body, &c, NULL, &r),
	    c.max_attempts);
	CU_ASSERT_EQUAL(r.status, 409);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code),
	    "REQUEST_IN_PROGRESS");
	CU_ASSERT_EQUAL(r.outcome, OUTCOME_IN_PROGRESS);
	dbtest_exec(&admin, "UPDATE idempotency_records SET status = "
	    "'SURPRISE' WHERE idem_key = '%s'", key);
	db_commit(&admin);
	create("dbtest", key, body, &c, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 500);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code),
	    "UNKNOWN_IDEMPOTENCY_STATE");
	response_clear(&r);
}

/*
 * A statement the server refuses (here: a session's temporary table that
 * shadows the real one, so the prepare fails as with a revoked grant) is
 * a failure at every step: 500, no order, no ledger row, stock as it
 * was; once the table is back, the same key creates exactly one order.
 */
static void
test_refused_statement(void)
{
	static const char *tables[] = { "idempotency_records", "stock",
	    "orders", "order_items" };
	struct response	 r;
	char		 key[64], body[256];
	long long	 before;
	size_t		 i;

	response_init(&r);
	body_for(body, sizeof(body), sku_a, 1, 100);
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		snprintf(key, sizeof(key), "%s-refused-%zu", dbtest_tag, i);
		before = stock_of(sku_a);
		db_disconnect(&work);
		CU_ASSERT_FATAL(db_connect(&work) == DB_OK);
		CU_ASSERT_FATAL(dbtest_exec(&work, "CREATE TEMPORARY TABLE %s "
		    "(unrelated INT)", tables[i]) == 0);
		create("dbtest", key, body, NULL, NULL, &r);
		CU_ASSERT_EQUAL(r.status, 500);
		if (r.status != 500)
			fprintf(stderr, "refused %s: answered %d\n", tables[i],
			    r.status);
		CU_ASSERT_EQUAL(orders_for(key), 0);
		CU_ASSERT_EQUAL(dbtest_scalar(&admin, "SELECT COUNT(*) FROM "
		    "idempotency_records WHERE idem_key = '%s'", key), 0);
		CU_ASSERT_EQUAL(stock_of(sku_a), before);
		db_disconnect(&work);
		CU_ASSERT_FATAL(db_connect(&work) == DB_OK);
		create("dbtest", key, body, NULL, NULL, &r);
		CU_ASSERT_EQUAL(r.status, 201);
		CU_ASSERT_EQUAL(orders_for(key), 1);
		CU_ASSERT_EQUAL(ledger_rows(key, "SUCCEEDED"), 1);
		CU_ASSERT_EQUAL(stock_of(sku_a), before - 1);
	}
	response_clear(&r);
}

/* Whether a response carries Idempotent-Replayed. */
static int
replayed(const struct response *r)
{
	return r->headers.p != NULL &&
	    strstr(r->headers.p, "Idempotent-Replayed") != NULL;
}

/*
 * Principals and keys compare byte for byte: a trailing space, a
 * no-break space or another case is another principal (or key), never
 * a replay or a conflict of the first.
 */
static void
test_exact_scope(void)
{
	static const char *principals[] = { "dbtest ", "dbtest\xc2\xa0",
	    "DBtest" };
	struct response	 r;
	char		 key[64], body[256], other[256];
	size_t		 i;

	response_init(&r);
	snprintf(key, sizeof(key), "%s-exact", dbtest_tag);
	body_for(body, sizeof(body), sku_a, 1, 100);
	body_for(other, sizeof(other), sku_a, 2, 200);
	create("dbtest", key, body, NULL, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 201);
	for (i = 0; i < sizeof(principals) / sizeof(principals[0]); i++) {
		/* Another body: a conflict if the scopes were merged. */
		create(principals[i], key, other, NULL, NULL, &r);
		CU_ASSERT_EQUAL(r.status, 201);
		CU_ASSERT(!replayed(&r));
	}
	CU_ASSERT_EQUAL(dbtest_scalar(&admin, "SELECT COUNT(*) FROM orders "
	    "WHERE idempotency_key = '%s'", key), 4);
	/* Keys too: another case, or a trailing space, is another key. */
	snprintf(key, sizeof(key), "%s-EXACT", dbtest_tag);
	create("dbtest", key, other, NULL, NULL, &r);
	CU_ASSERT_EQUAL(r.status, 201);
	CU_ASSERT(!replayed(&r));
	response_clear(&r);
}

/*
 * Statements this session has sent so far, not counting this query and
 * the ROLLBACK after it (dbtest_scalar()).
 */
static long long
session_questions(struct db *db)
{
	static long long	 mine;
	long long		 n;

	n = dbtest_scalar(db, "SELECT VARIABLE_VALUE FROM "
	    "information_schema.SESSION_STATUS WHERE VARIABLE_NAME = "
	    "'QUESTIONS'") - mine;
	mine += 2;
	return n;
}

/* The ledger table's next AUTO_INCREMENT value, or -1. */
static long long
ledger_next_id(void)
{
	return dbtest_scalar(&admin, "SELECT AUTO_INCREMENT FROM "
	    "information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
	    "TABLE_NAME = 'idempotency_records'");
}

/*
 * Round trips, the numbers the contract fixes: a create sends its
 * statements in two round trips (the fresh read, the guard that stops the
 * batch when it found the row, INSERT, SAVEPOINT, the stock read; then the
 * guarded stock decrease, the order, items, its event and the event's
 * guard, ledger, guard, COMMIT).  A
 * replay is answered after one (the read, then the guard): it inserts
 * nothing, so it holds no row lock afterwards (nothing to roll back before
 * the worker's next request) and burns no id of the ledger's counter (the
 * table's next AUTO_INCREMENT value is the same before and after it).  How
 * many statements that takes is not the contract's: it is only printed.
 */
static void
test_round_trips(void)
{
	struct response	 r;
	char		 key[64], body[256];
	long long	 q0, q1, q2, ai0, ai1, locked;
	unsigned long	 t0, t1, t2, t3;

	response_init(&r);
	snprintf(key, sizeof(key), "%s-rtt", dbtest_tag);
	body_for(body, sizeof(body), sku_a, 1, 100);
	db_disconnect(&work);
	CU_ASSERT_FATAL(db_connect(&work) == DB_OK);
	create("dbtest", key, body, NULL, NULL, &r);	/* statements prepared */
	snprintf(key, sizeof(key), "%s-rtt2", dbtest_tag);
	q0 = session_questions(&work);
	t0 = work.round_trips;
	create("dbtest", key, body, NULL, NULL, &r);
	t1 = work.round_trips;
	q1 = session_questions(&work);
	CU_ASSERT_EQUAL(r.status, 201);
	CU_ASSERT_EQUAL(t1 - t0, 2);
	ai0 = ledger_next_id();
	t2 = work.round_trips;
	create("dbtest", key, body, NULL, NULL, &r);
	t3 = work.round_trips;
	ai1 = ledger_next_id();
	CU_ASSERT(ai0 > 0);
	CU_ASSERT_EQUAL(ai1, ai0);	/* the replay burned no id */
	CU_ASSERT_EQUAL(r.status, 201);
	CU_ASSERT(replayed(&r));
	CU_ASSERT_EQUAL(t3 - t2, 1);
	/* Another session locks the replayed row at once: nothing holds it. */
	locked = dbtest_scalar(&admin, "SELECT COUNT(*) FROM "
	    "idempotency_records WHERE principal_id = 'dbtest' AND idem_key = "
	    "'%s' FOR UPDATE NOWAIT", key) != 1;
	db_rollback(&admin);
	CU_ASSERT_FALSE(locked);
	q2 = session_questions(&work);
	fprintf(stderr, "create: %lld statements in %lu round trips, replay: "
	    "%lu round trips (%lld statements), its row locked after it: "
	    "%lld; the ledger's next id %lld before it, %lld after\n",
	    q1 - q0, t1 - t0, t3 - t2, q2 - q1, locked, ai0, ai1);
	response_clear(&r);
}

#ifdef ENABLE_FAULT_INJECTION
/* A simulated deadlock before COMMIT is retried: one order in the end. */
static void
test_deadlock_retried(void)
{
	struct fault_plan	 plan;
	struct response		 r;
	char			 key[64], body[256], err[128];
	long long		 before = stock_of(sku_a);

	CU_ASSERT_FATAL(fault_parse(&plan, "before_commit=transient1", err,
	    sizeof(err)) == 0);
	response_init(&r);
	snprintf(key, sizeof(key), "%s-deadlock", dbtest_tag);
	body_for(body, sizeof(body), sku_a, 1, 100);
	CU_ASSERT_EQUAL(create("dbtest", key, body, NULL, &plan, &r), 2);
	CU_ASSERT_EQUAL(r.status, 201);
	CU_ASSERT_EQUAL(orders_for(key), 1);
	CU_ASSERT_EQUAL(stock_of(sku_a), before - 1);

	/* Every attempt deadlocks: 503 RETRY_LIMIT_REACHED, nothing kept. */
	CU_ASSERT_FATAL(fault_parse(&plan, "after_order_insert=transient", err,
	    sizeof(err)) == 0);
	snprintf(key, sizeof(key), "%s-deadlock-all", dbtest_tag);
	CU_ASSERT_EQUAL(create("dbtest", key, body, NULL, &plan, &r),
	    dbtest_conf.max_attempts);
	CU_ASSERT_EQUAL(r.status, 503);
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code),
	    "RETRY_LIMIT_REACHED");
	CU_ASSERT_EQUAL(orders_for(key), 0);
	CU_ASSERT_EQUAL(dbtest_scalar(&admin, "SELECT COUNT(*) FROM "
	    "idempotency_records WHERE idem_key = '%s'", key), 0);
	response_clear(&r);
}
#endif

static const struct unit_test tests[] = {
	{ "create and replay", test_create_and_replay },
	{ "final rejections", test_final_rejections },
	{ "out_of_stock retryable", test_out_of_stock_retryable },
	{ "expired and purged", test_expired_and_purged },
	{ "processing row", test_processing_row },
	{ "refused statement", test_refused_statement },
	{ "exact principals and keys", test_exact_scope },
	{ "round trips", test_round_trips },
#ifdef ENABLE_FAULT_INJECTION
	{ "deadlock retried", test_deadlock_retried },
#endif
	{ NULL, NULL }
};

const struct unit_suite test_create_db_suite = {
	"create transaction (MariaDB)", suite_init, suite_clean, tests
};
