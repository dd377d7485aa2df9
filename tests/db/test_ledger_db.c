/*
 * The ledger against a real MariaDB, with two connections: the unique key
 * alone decides who owns a scope, and a waiter learns the owner's fate.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "db_batch.h"
#include "dbtest.h"
#include "ledger.h"
#include "response.h"

#define FP_A	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FP_B	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

struct waiter {
	struct db		 db;
	struct ledger_scope	 scope;
	const char		*fp;
	volatile int		 done;
	int			 rc;
	unsigned int		 err;
};

/* Thread body: B's ledger insert, which may block on A. */
static void *
waiter_insert(void *arg)
{
	struct waiter	*w = arg;

	w->rc = ledger_insert(&w->db, &w->scope, w->fp, 3600);
	w->err = w->db.last_errno;
	w->done = 1;
	return NULL;
}

/* Build a scope unique to this run. */
static void
scope_for(struct ledger_scope *s, char *keybuf, size_t n, const char *name)
{
	snprintf(keybuf, n, "%s-%s", dbtest_tag, name);
	s->principal = "dbtest";
	s->operation = LEDGER_OPERATION_CREATE_ORDER;
	s->key = keybuf;
}

static void
msleep(long ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Wait until the statement matching the LIKE pattern runs on connection
 * tid (PROCESSLIST, as seen by a connection of its own) while *done is
 * still 0: the statement then waits on a lock another connection holds.
 * 1 when seen, 0 when it finished first or 10 s passed.
 */
static int
stmt_waiting(unsigned long tid, const char *like, volatile int *done)
{
	struct db	 probe;
	int		 i, seen = 0;

	db_init(&probe, &dbtest_conf);
	if (db_connect(&probe) != DB_OK)
		return 0;
	for (i = 0; i < 1000 && !seen && !*done; i++) {
		if (dbtest_scalar(&probe, "SELECT COUNT(*) FROM "
		    "information_schema.PROCESSLIST WHERE ID = %lu AND "
		    "INFO LIKE '%s'", tid, like) == 1)
			seen = 1;
		else
			msleep(10);
	}
	db_disconnect(&probe);
	return seen && !*done;
}

/*
 * Connect A and the waiter B, and let A claim a fresh scope (with FP_A)
 * that B will try with fp.
 */
static void
pair_open(struct db *a, struct waiter *w, char *key, size_t keysz,
    const char *name, const char *fp)
{
	db_init(a, &dbtest_conf);
	CU_ASSERT_FATAL(db_connect(a) == DB_OK);
	memset(w, 0, sizeof(*w));
	db_init(&w->db, &dbtest_conf);
	CU_ASSERT_FATAL(db_connect(&w->db) == DB_OK);
	scope_for(&w->scope, key, keysz, name);
	w->fp = fp;
	CU_ASSERT_EQUAL(ledger_insert(a, &w->scope, FP_A, 3600), DB_OK);
}

/* B blocks while A holds the key, then gets 1062 and reads SUCCEEDED. */
static void
test_waiter_sees_commit(void)
{
	struct db		 a;
	struct waiter		 w;
	struct ledger_record	 rec;
	struct response		 resp;
	pthread_t		 t;
	unsigned long		 tid;
	char			 key[64];

	pair_open(&a, &w, key, sizeof(key), "commit", FP_A);
	response_init(&resp);
	response_json(&resp, 201, "{\"orderId\":\"o-1\"}", 17);
	response_header(&resp, "Location", "/orders/o-1");
	CU_ASSERT_EQUAL(ledger_finish(&a, &w.scope, LEDGER_SUCCEEDED, &resp, "o-1"),
	    DB_OK);

	tid = mysql_thread_id(w.db.my);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, waiter_insert, &w) == 0);
	CU_ASSERT_TRUE(stmt_waiting(tid, "%INSERT%idempotency_records%",
	    &w.done));	/* on A's uncommitted row */
	CU_ASSERT_EQUAL(db_commit(&a), DB_OK);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(w.rc, DB_DUPLICATE);
	CU_ASSERT_EQUAL(w.err, 1062);
	db_rollback(&w.db);

	ledger_record_init(&rec);
	CU_ASSERT_EQUAL(ledger_read(&w.db, &w.scope, &rec), 1);
	CU_ASSERT_EQUAL(rec.state, LEDGER_SUCCEEDED);
	CU_ASSERT_STRING_EQUAL(rec.fingerprint, FP_A);
	CU_ASSERT_EQUAL(rec.response_status, 201);
	CU_ASSERT_STRING_EQUAL(rec.resource_id, "o-1");
	CU_ASSERT_EQUAL(rec.body.len, 17);
	CU_ASSERT_NSTRING_EQUAL(rec.body.p, "{\"orderId\":\"o-1\"}", 17);
	CU_ASSERT_STRING_EQUAL(rec.headers.p, "Content-Type: "
	    "application/json\r\nLocation: /orders/o-1\r\n");
	CU_ASSERT_FALSE(rec.expired);
	ledger_record_clear(&rec);
	response_clear(&resp);
	db_disconnect(&a);
	db_disconnect(&w.db);
}

/* After A rolls back, B's waiting insert wins the key. */
static void
test_waiter_wins_after_rollback(void)
{
	struct db		 a;
	struct waiter		 w;
	struct ledger_record	 rec;
	pthread_t		 t;
	unsigned long		 tid;
	char			 key[64];

	pair_open(&a, &w, key, sizeof(key), "rollback", FP_B);
	tid = mysql_thread_id(w.db.my);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, waiter_insert, &w) == 0);
	CU_ASSERT_TRUE(stmt_waiting(tid, "%INSERT%idempotency_records%",
	    &w.done));
	CU_ASSERT_EQUAL(db_rollback(&a), DB_OK);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(w.rc, DB_OK);
	CU_ASSERT_EQUAL(db_commit(&w.db), DB_OK);

	ledger_record_init(&rec);
	CU_ASSERT_EQUAL(ledger_read(&a, &w.scope, &rec), 1);
	CU_ASSERT_STRING_EQUAL(rec.fingerprint, FP_B);
	CU_ASSERT_EQUAL(rec.state, LEDGER_PROCESSING);
	ledger_record_clear(&rec);
	db_rollback(&a);
	dbtest_exec(&a, "DELETE FROM idempotency_records WHERE idem_key = "
	    "'%s'", key);
	db_commit(&a);
	db_disconnect(&a);
	db_disconnect(&w.db);
}

/* The wait on a held key is bounded by the session's lock wait limit. */
static void
test_wait_is_bounded(void)
{
	struct db		 a, b;
	struct ledger_scope	 s;
	struct timespec		 t0, t1;
	char			 key[64];
	double			 secs;
	int			 rc;

	db_init(&a, &dbtest_conf);
	db_init(&b, &dbtest_conf);
	CU_ASSERT_FATAL(db_connect(&a) == DB_OK && db_connect(&b) == DB_OK);
	scope_for(&s, key, sizeof(key), "bounded");
	CU_ASSERT_EQUAL(ledger_insert(&a, &s, FP_A, 3600), DB_OK);
	db_set_deadline(&b, 1500);
	CU_ASSERT_EQUAL(db_wait_limits(&b), DB_OK);
	CU_ASSERT_EQUAL(b.lock_wait_s, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = ledger_insert(&b, &s, FP_A, 3600);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CU_ASSERT_EQUAL(rc, DB_TRANSIENT);
	CU_ASSERT(b.last_errno == 1205 || b.last_errno == 1969);
	CU_ASSERT(secs < 10.0);	/* generous: the point is that it ends */
	db_rollback(&b);
	db_rollback(&a);
	db_disconnect(&a);
	db_disconnect(&b);
}

struct locker {
	struct db	*db;
	char		 sql[256];
	int		 rc;
	volatile int	 done;
};

/* Thread body: one locking statement. */
static void *
locker_run(void *arg)
{
	struct locker	*l = arg;

	l->rc = db_exec(l->db, l->sql);
	l->done = 1;
	return NULL;
}

/* A real deadlock is classified as transient (and rolled back). */
static void
test_deadlock_is_transient(void)
{
	struct db	 a, b, admin;
	struct locker	 la;
	pthread_t	 t;
	char		 x[64], y[64], sql[256];
	int		 rb;

	db_init(&a, &dbtest_conf);
	db_init(&b, &dbtest_conf);
	db_init(&admin, &dbtest_conf);
	CU_ASSERT_FATAL(db_connect(&a) == DB_OK && db_connect(&b) == DB_OK &&
	    db_connect(&admin) == DB_OK);
	snprintf(x, sizeof(x), "%s-DX", dbtest_tag);
	snprintf(y, sizeof(y), "%s-DY", dbtest_tag);
	dbtest_exec(&admin, "INSERT INTO stock (sku, currency, unit_price, "
	    "available) VALUES ('%s', 'KRW', 1, 1), "
	    "('%s', 'KRW', 1, 1)", x, y);
	db_commit(&admin);

	snprintf(sql, sizeof(sql), "SELECT * FROM stock WHERE sku = '%s' "
	    "FOR UPDATE", x);
	CU_ASSERT_EQUAL(db_exec(&a, sql), DB_OK);
	snprintf(sql, sizeof(sql), "SELECT * FROM stock WHERE sku = '%s' "
	    "FOR UPDATE", y);
	CU_ASSERT_EQUAL(db_exec(&b, sql), DB_OK);
	la.db = &a;
	snprintf(la.sql, sizeof(la.sql), "UPDATE stock SET available = 0 "
	    "WHERE sku = '%s'", y);
	la.done = 0;
	CU_ASSERT_FATAL(pthread_create(&t, NULL, locker_run, &la) == 0);
	/* A's UPDATE of y waits on B's lock before B asks for x. */
	CU_ASSERT(stmt_waiting(mysql_thread_id(a.my), "UPDATE stock%",
	    &la.done));
	snprintf(sql, sizeof(sql), "UPDATE stock SET available = 0 WHERE "
	    "sku = '%s'", x);
	rb = db_exec(&b, sql);
	if (rb == DB_TRANSIENT)
		db_rollback(&b);
	pthread_join(t, NULL);
	/* Exactly one of the two is the deadlock victim. */
	CU_ASSERT((rb == DB_TRANSIENT) != (la.rc == DB_TRANSIENT));
	CU_ASSERT(rb == DB_TRANSIENT ? b.last_errno == 1213 :
	    a.last_errno == 1213);
	db_rollback(&a);
	db_rollback(&b);
	dbtest_exec(&admin, "DELETE FROM stock WHERE sku IN ('%s', '%s')", x,
	    y);
	db_commit(&admin);
	db_disconnect(&a);
	db_disconnect(&b);
	db_disconnect(&admin);
}

/* No row: 0; finishing a row that is not PROCESSING changes nothing. */
static void
test_read_missing_and_finish_guard(void)
{
	struct db		 a;
	struct ledger_scope	 s;
	struct ledger_record	 rec;
	struct response		 resp;
	char			 key[64];

	db_init(&a, &dbtest_conf);
	CU_ASSERT_FATAL(db_connect(&a) == DB_OK);
	scope_for(&s, key, sizeof(key), "missing");
	ledger_record_init(&rec);
	CU_ASSERT_EQUAL(ledger_read(&a, &s, &rec), 0);
	response_init(&resp);
	response_json(&resp, 201, "{}", 2);
	CU_ASSERT_EQUAL(ledger_finish(&a, &s, LEDGER_SUCCEEDED, &resp, NULL),
	    DB_ERROR);
	db_rollback(&a);
	response_clear(&resp);
	ledger_record_clear(&rec);
	db_disconnect(&a);
}

/*
 * A guard stops the batch on the server: a statement that changed
 * another number of rows than the guard names leaves the COMMIT after it
 * unrun (the insert before it rolls back); one that changed as many
 * lets the batch commit.
 */
static void
test_batch_guard(void)
{
	struct db	 a;
	struct db_batch	 b;

	db_init(&a, &dbtest_conf);
	db_batch_init(&b);
	CU_ASSERT_FATAL(db_connect(&a) == DB_OK);
	CU_ASSERT_FATAL(dbtest_exec(&a, "CREATE TEMPORARY TABLE guard_t "
	    "(n INT NOT NULL) ENGINE=InnoDB") == DB_OK);
	CU_ASSERT_FATAL(dbtest_exec(&a, "INSERT INTO guard_t VALUES (1), (2)")
	    == DB_OK);
	CU_ASSERT_FATAL(db_commit(&a) == DB_OK);

	CU_ASSERT(db_batch_add(&b, 1, "INSERT INTO guard_t VALUES (3)") == 0);
	CU_ASSERT(db_batch_add(&b, DB_ROWS_ANY, "UPDATE guard_t SET n = n + 10 "
	    "WHERE n = 99") == 0);
	CU_ASSERT(db_batch_guard(&b, 1) == 0);
	CU_ASSERT(db_batch_commit(&b) == 0);
	CU_ASSERT_EQUAL(db_batch_run(&a, &b), DB_ERROR);
	CU_ASSERT_EQUAL(b.done, 2);
	db_rollback(&a);
	CU_ASSERT_EQUAL(dbtest_scalar(&a, "SELECT COUNT(*) FROM guard_t"), 2);

	db_batch_reset(&b);
	CU_ASSERT(db_batch_add(&b, 1, "INSERT INTO guard_t VALUES (3)") == 0);
	CU_ASSERT(db_batch_add(&b, DB_ROWS_ANY, "UPDATE guard_t SET n = n + 10 "
	    "WHERE n >= 2") == 0);
	CU_ASSERT(db_batch_guard(&b, 2) == 0);
	CU_ASSERT(db_batch_commit(&b) == 0);
	CU_ASSERT_EQUAL(db_batch_run(&a, &b), DB_OK);
	CU_ASSERT_EQUAL(b.done, 4);
	db_rollback(&a);
	CU_ASSERT_EQUAL(dbtest_scalar(&a, "SELECT COUNT(*) FROM guard_t "
	    "WHERE n > 10"), 2);
	db_batch_clear(&b);
	db_disconnect(&a);
}

/* Run one "SELECT @@in_transaction" as a batch on db; -1 on failure. */
static long long
in_transaction(struct db *db)
{
	struct db_batch	 b;
	MYSQL_ROW	 row;
	long long	 v = -1;

	db_batch_init(&b);
	if (db_batch_add(&b, DB_ROWS_RESULT, "SELECT @@in_transaction") == 0 &&
	    db_batch_run(db, &b) == DB_OK &&
	    (row = mysql_fetch_row(b.res[0])) != NULL && row[0] != NULL)
		v = strtoll(row[0], NULL, 10);
	db_batch_clear(&b);
	return v;
}

/*
 * A read leaves its transaction open (db_end_read()) for the rest of its
 * request; the next request's first statement runs in a transaction of
 * its own (on a Galera node only a statement that opens one waits for
 * the cluster): a batch ends the old one in its own round trip, a
 * single statement (db_arm()) ends it just before.
 */
static void
test_read_left_open(void)
{
	struct db	 a;
	unsigned long	 trips;

	db_init(&a, &dbtest_conf);
	CU_ASSERT_FATAL(db_connect(&a) == DB_OK);
	db_set_deadline(&a, 10000);
	CU_ASSERT_EQUAL(in_transaction(&a), 0);
	CU_ASSERT_FATAL(dbtest_exec(&a, "DO (SELECT COUNT(*) FROM "
	    "idempotency_records WHERE id = 0)") == DB_OK);
	db_end_read(&a);
	CU_ASSERT_EQUAL(in_transaction(&a), 1);	/* the same request */

	db_set_deadline(&a, 10000);		/* the next one */
	trips = a.round_trips;
	CU_ASSERT_EQUAL(in_transaction(&a), 0);
	CU_ASSERT_EQUAL(a.round_trips, trips + 1);

	CU_ASSERT_FATAL(dbtest_exec(&a, "DO (SELECT COUNT(*) FROM "
	    "idempotency_records WHERE id = 0)") == DB_OK);
	db_end_read(&a);
	db_set_deadline(&a, 10000);
	CU_ASSERT_EQUAL(db_arm(&a), DB_OK);
	CU_ASSERT_EQUAL(a.read_open, 0);
	CU_ASSERT_EQUAL(dbtest_scalar(&a, "SELECT @@in_transaction"), 0);
	db_disconnect(&a);
}

static const struct unit_test tests[] = {
	{ "waiter sees the commit", test_waiter_sees_commit },
	{ "waiter wins after rollback", test_waiter_wins_after_rollback },
	{ "key wait is bounded", test_wait_is_bounded },
	{ "deadlock is transient", test_deadlock_is_transient },
	{ "missing row and finish guard", test_read_missing_and_finish_guard },
	{ "a batch guard stops the COMMIT", test_batch_guard },
	{ "a read left open ends with its request", test_read_left_open },
	{ NULL, NULL }
};

const struct unit_suite test_ledger_db_suite = {
	"ledger (MariaDB)", NULL, NULL, tests
};
