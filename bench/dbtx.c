/*
 * dbtx: the transaction ceiling D.  N threads, each with its own
 * connection, run the statements of one successful create directly
 * against MariaDB, for a fixed time, in one of three shapes (-m):
 *
 *	naive	nine round trips through prepared statements: ledger
 *		insert, savepoint, stock lock, order insert, item insert,
 *		stock update, its event, ledger update, commit (the
 *		reference)
 *	batched	two round trips, as the service sends them: the fresh ledger
 *		read and its guard + ledger insert + savepoint + stock read
 *		(no lock); then the guarded stock
 *		decrease (the lock) + order + items + its event (guarded) +
 *		ledger update + COMMIT
 *		(hex literals, guards)
 *	proc	one prepared CALL of a stored procedure doing all of it
 *		(created by dbtx in the database; needs CREATE ROUTINE)
 *
 *	dbtx -c FILE [-m SHAPE] [-t THREADS] [-s SECONDS] [-k SKU] [-n COUNT]
 *
 * Every transaction orders one unit of SKU (default A-10): the hot-SKU
 * case.  With -n, of a SKU drawn at random from SKU-00 .. SKU-(COUNT-1)
 * instead, as the spread create benchmark does.  The SKUs need enough
 * stock.  Prints one line:
 *	dbtx shape=M threads=N seconds=S tx=T tps=X p50_ms=A p99_ms=B
 *	    retries=R errors=E
 * A transaction that fails with a transient error (a deadlock, a lock
 * wait) is retried with the same key, as the service does, and counted
 * in R; any other failure counts in E.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "db.h"
#include "db_batch.h"
#include "events.h"
#include "fingerprint.h"
#include "ledger.h"
#include "log.h"
#include "order_input.h"
#include "order_view.h"
#include "response.h"
#include "sql.h"
#include "store.h"


#define MAX_THREADS	256
#define MAX_SAMPLES	(1 << 20)

static struct conf	 conf;
static const char	*sku = "A-10";
static double		 seconds = 10;
static int		 nskus;
static const char	*shape = "naive";
static struct timespec	 t_start;

struct worker {
	pthread_t	 tid;
	int		 id;
	long		 tx;
	long		 errors;
	long		 retries;	/* transient failures, retried */
	double		*lat;		/* milliseconds per transaction */
	long		 nlat;
	struct db_batch	 batch;
	MYSQL_STMT	*call;		/* the proc shape's CALL */
};

static double
now_s(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)(ts.tv_sec - t_start.tv_sec) +
	    (double)(ts.tv_nsec - t_start.tv_nsec) / 1e9;
}

/*
 * The naive shape: the step-by-step statements the service sent before
 * it batched them, one prepared statement a round trip.
 */

/* Convert a time to a MYSQL_TIME parameter (UTC, whole seconds). */
static void
to_mysql_time(time_t t, MYSQL_TIME *mt)
{
	struct tm	 tm;

	gmtime_r(&t, &tm);
	memset(mt, 0, sizeof(*mt));
	mt->year = (unsigned int)tm.tm_year + 1900;
	mt->month = (unsigned int)tm.tm_mon + 1;
	mt->day = (unsigned int)tm.tm_mday;
	mt->hour = (unsigned int)tm.tm_hour;
	mt->minute = (unsigned int)tm.tm_min;
	mt->second = (unsigned int)tm.tm_sec;
	mt->time_type = MYSQL_TIMESTAMP_DATETIME;
}

/* Lock the stock row of the one item; its price into *price. */
static int
naive_lock_stock(struct db *db, const struct order_input *in,
    long long *price)
{
	static const char sql[] = "SELECT sku, currency, unit_price, "
	    "available FROM stock WHERE sku IN (?) ORDER BY sku FOR UPDATE";
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[1], r[4];
	char		 name[ORDER_SKU_MAX + 1], cur[4];
	unsigned long	 len[4];
	my_bool		 nul[4];
	long long	 avail;
	int		 rc;

	rc = db_stmt(db, sql, &st);
	if (rc != DB_OK)
		return rc;
	db_bind_str(&p[0], in->items[0].sku, strlen(in->items[0].sku));
	rc = db_execute(db, st, p);
	if (rc != DB_OK)
		return rc;
	db_bind_out_str(&r[0], name, sizeof(name) - 1, &len[0], &nul[0]);
	db_bind_out_str(&r[1], cur, sizeof(cur), &len[1], &nul[1]);
	db_bind_i64(&r[2], price);
	db_bind_i64(&r[3], &avail);
	rc = db_bind_result(db, st, r);
	if (rc == DB_OK)
		rc = db_fetch(db, st);
	if (rc == 1)
		rc = db_fetch(db, st) == 0 ? DB_OK : DB_ERROR;
	else if (rc == 0)
		rc = DB_ERROR;		/* no such SKU */
	db_stmt_done(db, st);
	return rc;
}

/*
 * Insert the order row.  DB_DUPLICATE only when the key already made an
 * order (the orders_principal_key constraint); a collision on any other
 * key is transient (a fresh attempt takes a new id).
 */
static int
naive_insert_order(struct db *db, const char *principal, const char *key,
    const struct order_input *in, time_t created, unsigned long long *id)
{
	static const char sql[] = "INSERT INTO orders (principal_id, "
	    "idempotency_key, currency, amount, shipping, note, status, "
	    "created_at) VALUES (?, ?, ?, ?, ?, ?, 'CREATED', ?)";
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[7];
	MYSQL_TIME	 mt;
	long long	 amount = in->amount;
	const char	*ship = shipping_name(in->shipping);
	int		 rc;

	rc = db_stmt(db, sql, &st);
	if (rc != DB_OK)
		return rc;
	to_mysql_time(created, &mt);
	db_bind_str(&p[0], principal, strlen(principal));
	db_bind_str(&p[1], key, strlen(key));
	db_bind_str(&p[2], in->currency, 3);
	db_bind_i64(&p[3], &amount);
	db_bind_str(&p[4], ship, strlen(ship));
	db_bind_str(&p[5], in->note ? in->note : "", in->note_len);
	memset(&p[6], 0, sizeof(p[6]));
	p[6].buffer_type = MYSQL_TYPE_DATETIME;
	p[6].buffer = &mt;
	rc = db_execute(db, st, p);
	if (rc == DB_DUPLICATE && strstr(db->last_error,
	    "'" STORE_ORDER_KEY_CONSTRAINT "'") == NULL)
		return db_fail(db, DB_TRANSIENT, db->last_errno,
		    db->last_error);
	if (rc != DB_OK)
		return rc;
	*id = mysql_stmt_insert_id(st);
	return DB_OK;
}

/* Insert one order line at the price that was locked. */
static int
naive_insert_item(struct db *db, unsigned long long order_id,
    const struct order_item *it, long long unit_price)
{
	static const char sql[] = "INSERT INTO order_items (order_id, sku, "
	    "qty, unit_price) VALUES (?, ?, ?, ?)";
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[4];
	long long	 oid = (long long)order_id, price = unit_price;
	int		 qty = it->qty, rc;

	rc = db_stmt(db, sql, &st);
	if (rc != DB_OK)
		return rc;
	db_bind_i64(&p[0], &oid);
	p[0].is_unsigned = 1;
	db_bind_str(&p[1], it->sku, strlen(it->sku));
	db_bind_int(&p[2], &qty);
	db_bind_i64(&p[3], &price);
	return db_execute(db, st, p);
}

/*
 * Insert the order's order.created event (its id the order's; a
 * collision with another event's id is transient, as the order's is).
 */
static int
naive_insert_event(struct db *db, unsigned long long order_id,
    const char *principal, const struct buf *payload)
{
	static const char sql[] = "INSERT INTO events (id, webhook_id, type, "
	    "order_id, seq, principal_id, payload, created_at, state, "
	    "next_attempt_at) VALUES (?, ?, 'order.created', ?, 1, ?, ?, "
	    "UTC_TIMESTAMP(6), 'pending', UTC_TIMESTAMP(6))";
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[5];
	long long	 oid = (long long)order_id;
	char		 wid[EVENT_WEBHOOK_ID_MAX];
	int		 rc;

	if (events_webhook_id(wid, sizeof(wid)) == -1)
		return db_fail(db, DB_ERROR, 0, "no webhook-id");
	rc = db_stmt(db, sql, &st);
	if (rc != DB_OK)
		return rc;
	db_bind_i64(&p[0], &oid);
	p[0].is_unsigned = 1;
	db_bind_str(&p[1], wid, strlen(wid));
	db_bind_i64(&p[2], &oid);
	p[2].is_unsigned = 1;
	db_bind_str(&p[3], principal, strlen(principal));
	db_bind_str(&p[4], payload->p, payload->len);
	rc = db_execute(db, st, p);
	if (rc == DB_DUPLICATE)
		return db_fail(db, DB_TRANSIENT, db->last_errno,
		    db->last_error);
	return rc;
}

/* Take qty off the (locked) stock row; exactly one row must change. */
static int
naive_decrease_stock(struct db *db, const struct order_item *it)
{
	static const char sql[] = "UPDATE stock SET available = available - ? "
	    "WHERE sku = ? AND available >= ?";
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[3];
	int		 qty = it->qty, rc;

	rc = db_stmt(db, sql, &st);
	if (rc != DB_OK)
		return rc;
	db_bind_int(&p[0], &qty);
	db_bind_str(&p[1], it->sku, strlen(it->sku));
	db_bind_int(&p[2], &qty);
	rc = db_execute(db, st, p);
	if (rc != DB_OK)
		return rc;
	if (mysql_stmt_affected_rows(st) != 1)
		return db_fail(db, DB_ERROR, 0, "the locked stock row did not "
		    "change");
	return DB_OK;
}

/* The stored procedure of the proc shape (one item, one unit). */
static const char proc_sql[] =
    "CREATE OR REPLACE PROCEDURE idemorders_dbtx_create(IN p_principal "
    "VARBINARY(255), IN p_key VARBINARY(255), IN p_sku VARCHAR(64), "
    "IN p_fp CHAR(64), IN p_body BLOB) MODIFIES SQL DATA "
    "BEGIN "
    "DECLARE v_id BIGINT UNSIGNED; DECLARE v_price BIGINT; "
    "DECLARE v_avail INT; "
    "INSERT INTO idempotency_records (principal_id, operation, idem_key, "
    "request_fingerprint, status, created_at, updated_at, expires_at) "
    "VALUES (p_principal, 'create-order', p_key, p_fp, 'PROCESSING', "
    "UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 1 DAY); "
    "SET v_id = LAST_INSERT_ID(); "
    "SAVEPOINT order_work; "
    "SELECT unit_price, available INTO v_price, v_avail FROM stock "
    "WHERE sku = p_sku FOR UPDATE; "
    "IF v_avail < 1 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = "
    "'out of stock'; END IF; "
    "INSERT INTO orders (id, principal_id, idempotency_key, currency, "
    "amount, shipping, note, status, created_at) VALUES (v_id, "
    "p_principal, p_key, 'KRW', 0, 'standard', '', 'CREATED', "
    "UTC_TIMESTAMP()); "
    "INSERT INTO order_items (order_id, sku, qty, unit_price) VALUES "
    "(v_id, p_sku, 1, v_price); "
    "UPDATE stock SET available = available - 1 WHERE sku = p_sku; "
    "IF ROW_COUNT() <> 1 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = "
    "'stock row did not change'; END IF; "
    "UPDATE idempotency_records SET status = 'SUCCEEDED', "
    "response_status = 201, response_headers = '', response_body = "
    "p_body, resource_id = CONCAT('o-', v_id), updated_at = "
    "UTC_TIMESTAMP(6) WHERE principal_id = p_principal AND operation = "
    "'create-order' AND idem_key = p_key AND status = 'PROCESSING'; "
    "IF ROW_COUNT() <> 1 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = "
    "'ledger row did not change'; END IF; "
    "COMMIT; "
    "END";

#define FP_ZERO	"0000000000000000000000000000000000000000000000000000000000000000"

/*
 * The response every shape stores for its replay: the size of the
 * service's answer to a one-item order, which the ledger row keeps.
 */
static const char body201[] = "{\"orderId\":\"o-1000000\",\"status\":"
    "\"CREATED\",\"currency\":\"KRW\",\"amount\":100,\"items\":[{\"sku\":"
    "\"BENCH-00\",\"qty\":1,\"unitPrice\":100}],\"shipping\":\"standard\","
    "\"note\":\"\",\"createdAt\":\"2026-12-02T00:00:00Z\"}";

/* The batched shape: two round trips, as the create operation sends them. */
static int
batched_tx(struct db *db, const struct ledger_scope *scope,
    struct order_input *in, struct response *resp, struct db_batch *b)
{
	struct stock_row	 rows[1];
	unsigned long long	 id;
	char			 oid[ORDER_ID_MAX];
	int			 rc;

	db_batch_reset(b);
	if (ledger_batch_read(b, scope) == -1 ||
	    db_batch_guard_found(b, 0) == -1 ||
	    ledger_batch_insert(b, scope, FP_ZERO, 86400) == -1 ||
	    db_batch_add(b, 0, "SAVEPOINT order_work") == -1 ||
	    store_batch_stock(b, in, 0) == -1)
		return DB_ERROR;
	rc = db_batch_run(db, b);
	if (rc != DB_OK)
		return rc;
	id = b->insert_id[2];
	store_read_stock(b->res[4], in, rows);
	if (!rows[0].found || rows[0].available < 1)
		return DB_ERROR;
	order_id_format(oid, sizeof(oid), id);
	response_reset(resp);
	response_json(resp, 201, body201, sizeof(body201) - 1);
	db_batch_reset(b);
	if (store_batch_take(b, id, in, rows) == -1 ||
	    store_batch_order(b, id, scope->principal, scope->key, in,
	    time(NULL)) == -1 || store_batch_lines(b, id, in, rows) == -1 ||
	    events_batch_add(b, id, EVENT_ORDER_CREATED, id,
	    &resp->body) == -1 ||
	    ledger_batch_finish(b, id, LEDGER_SUCCEEDED, resp, oid) == -1 ||
	    db_batch_commit(b) == -1)
		return DB_ERROR;
	return db_batch_run(db, b);
}

/* The proc shape: one prepared CALL (*call prepared on first use). */
static int
proc_tx(struct db *db, const struct ledger_scope *scope,
    struct order_input *in, MYSQL_STMT **call)
{
	static const char sql[] = "CALL idemorders_dbtx_create(?, ?, ?, ?, ?)";
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[5];
	int		 rc;

	if (*call == NULL) {
		rc = db_stmt_prepare(db, sql, sizeof(sql) - 1, call);
		if (rc != DB_OK)
			return rc;
	}
	st = *call;
	db_bind_str(&p[0], scope->principal, strlen(scope->principal));
	db_bind_str(&p[1], scope->key, strlen(scope->key));
	db_bind_str(&p[2], in->items[0].sku, strlen(in->items[0].sku));
	db_bind_str(&p[3], FP_ZERO, 64);
	db_bind_str(&p[4], body201, sizeof(body201) - 1);
	rc = db_execute(db, st, p);
	/* A CALL answers with a status result: read it to the end. */
	while (rc == DB_OK && mysql_stmt_next_result(st) == 0)
		;
	return rc;
}

/* One create transaction, as the create operation issued it before batching. */
static int
one_tx(struct db *db, struct worker *w, long n, struct order_input *in,
    long long price, struct response *resp)
{
	struct ledger_scope	 scope;
	unsigned long long	 id = 0;
	char			 key[64], oid[ORDER_ID_MAX];
	int			 rc;

	snprintf(key, sizeof(key), "dbtx-%ld-%d-%ld", (long)getpid(), w->id,
	    n);
	scope.principal = "dbtx";
	scope.operation = LEDGER_OPERATION_CREATE_ORDER;
	scope.key = key;
	if (strcmp(shape, "batched") == 0) {
		rc = batched_tx(db, &scope, in, resp, &w->batch);
		goto done;
	}
	if (strcmp(shape, "proc") == 0) {
		rc = proc_tx(db, &scope, in, &w->call);
		goto done;
	}
	rc = ledger_insert(db, &scope, FP_ZERO, 86400);
	if (rc != DB_OK)
		goto fail;
	rc = db_exec(db, "SAVEPOINT order_work");
	if (rc != DB_OK)
		goto fail;
	rc = naive_lock_stock(db, in, &price);
	if (rc != DB_OK)
		goto fail;
	rc = naive_insert_order(db, "dbtx", key, in, time(NULL), &id);
	if (rc != DB_OK)
		goto fail;
	rc = naive_insert_item(db, id, &in->items[0], price);
	if (rc != DB_OK)
		goto fail;
	rc = naive_decrease_stock(db, &in->items[0]);
	if (rc != DB_OK)
		goto fail;
	order_id_format(oid, sizeof(oid), id);
	response_reset(resp);
	response_json(resp, 201, body201, sizeof(body201) - 1);
	rc = naive_insert_event(db, id, "dbtx", &resp->body);
	if (rc != DB_OK)
		goto fail;
	rc = ledger_finish(db, &scope, LEDGER_SUCCEEDED, resp, oid);
	if (rc != DB_OK)
		goto fail;
	rc = db_commit(db);
done:
	if (rc != DB_OK)
		goto fail;
	return 0;
fail:
	db_rollback(db);
	return rc;
}

static void *
run(void *arg)
{
	struct worker		*w = arg;
	struct db		 db;
	struct order_input	 in;
	struct response		 resp;
	double			 t0, t1;
	long			 n = 0;
	int			 rc;

	memset(&in, 0, sizeof(in));
	snprintf(in.currency, sizeof(in.currency), "KRW");
	in.nitems = 1;
	snprintf(in.items[0].sku, sizeof(in.items[0].sku), "%s", sku);
	in.items[0].qty = 1;
	in.amount = 0;
	response_init(&resp);
	db_batch_init(&w->batch);
	db_init(&db, &conf);
	if (db_connect(&db) != DB_OK) {
		w->errors++;
		return NULL;
	}
	for (;;) {
		t0 = now_s();
		if (t0 >= seconds)
			break;
		if (nskus > 0)
			snprintf(in.items[0].sku, sizeof(in.items[0].sku),
			    "%s-%02d", sku, (int)(random() % nskus));
		rc = one_tx(&db, w, n, &in, 0, &resp);
		if (rc == DB_TRANSIENT) {
			w->retries++;
			continue;	/* the same key again */
		}
		n++;
		if (rc != DB_OK) {
			if (w->errors++ < 3)
				log_warnx("thread %d: a transaction failed: %s "
				    "(%u, %s)", w->id, db.last_error,
				    db.last_errno, db_class_name(db.last_class));
			if (db.broken && w->call != NULL) {
				mysql_stmt_close(w->call);
				w->call = NULL;
			}
			db_ensure(&db);
			continue;
		}
		t1 = now_s();
		w->tx++;
		if (w->nlat < MAX_SAMPLES / MAX_THREADS)
			w->lat[w->nlat++] = (t1 - t0) * 1e3;
	}
	response_clear(&resp);
	db_batch_clear(&w->batch);
	if (w->call != NULL)
		mysql_stmt_close(w->call);
	db_disconnect(&db);
	return NULL;
}

/* Create the stored procedure of the proc shape. */
static void
create_proc(void)
{
	struct db	 db;

	db_init(&db, &conf);
	if (db_connect(&db) != DB_OK || db_exec(&db, proc_sql) != DB_OK)
		fatalx("creating the stored procedure: %s", db.last_error);
	db_disconnect(&db);
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char *argv[])
{
	static struct worker	 w[MAX_THREADS];
	const char		*path = NULL;
	char			 err[512];
	double			*all, elapsed;
	long			 tx = 0, errors = 0, retries = 0, nall = 0, i, j;
	int			 ch, threads = 4;

	for (;;) {
		ch = getopt(argc, argv, "c:m:t:s:k:n:");
		if (ch == -1)
			break;
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'm':
			shape = optarg;
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 's':
			seconds = atof(optarg);
			break;
		case 'k':
			sku = optarg;
			break;
		case 'n':
			nskus = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (path == NULL || threads < 1 || threads > MAX_THREADS ||
	    seconds <= 0 || nskus < 0 || nskus > 100 ||
	    (strcmp(shape, "naive") != 0 && strcmp(shape, "batched") != 0 &&
	    strcmp(shape, "proc") != 0))
		goto usage;
	log_init("dbtx", 0, LOG_WARNING);
	if (conf_load(&conf, path, err, sizeof(err)) == -1)
		fatalx("%s", err);
	mysql_library_init(0, NULL, NULL);
	if (strcmp(shape, "proc") == 0)
		create_proc();
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	for (i = 0; i < threads; i++) {
		w[i].id = (int)i;
		w[i].lat = calloc(MAX_SAMPLES / MAX_THREADS, sizeof(double));
		if (w[i].lat == NULL)
			fatal("calloc");
		pthread_create(&w[i].tid, NULL, run, &w[i]);
	}
	for (i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	elapsed = now_s();
	all = calloc(MAX_SAMPLES, sizeof(double));
	if (all == NULL)
		fatal("calloc");
	for (i = 0; i < threads; i++) {
		tx += w[i].tx;
		errors += w[i].errors;
		retries += w[i].retries;
		for (j = 0; j < w[i].nlat; j++)
			all[nall++] = w[i].lat[j];
		free(w[i].lat);
	}
	qsort(all, (size_t)nall, sizeof(double), cmp_double);
	printf("dbtx shape=%s threads=%d seconds=%.1f tx=%ld tps=%.0f "
	    "p50_ms=%.2f p99_ms=%.2f retries=%ld errors=%ld\n", shape, threads,
	    elapsed, tx,
	    (double)tx / elapsed, nall ? all[nall / 2] : 0.0,
	    nall ? all[(long)(nall * 0.99)] : 0.0, retries, errors);
	free(all);
	conf_clear(&conf);
	mysql_library_end();
	return errors > 0 && tx == 0;
usage:
	fprintf(stderr, "usage: dbtx -c FILE [-m naive|batched|proc] "
	    "[-t THREADS] [-s SECONDS] [-k SKU] [-n COUNT]\n");
	return 2;
}
