/*
 * dbtx: the transaction ceiling D.  N threads, each with its own
 * connection, run the exact statements of one successful create --
 * ledger insert, savepoint, stock lock, order and item insert, stock
 * update, ledger update, commit -- through the same prepared statements
 * as the service, directly against MariaDB, for a fixed time.
 *
 *	dbtx -c FILE [-t THREADS] [-s SECONDS] [-k SKU] [-n COUNT]
 *
 * Every transaction orders one unit of SKU (default A-10): the hot-SKU
 * case.  With -n, of a SKU drawn at random from SKU-00 .. SKU-(COUNT-1)
 * instead, as the spread create benchmark does.  The SKUs need enough
 * stock.  Prints one line:
 *	dbtx threads=N seconds=S tx=T tps=X p50_ms=A p99_ms=B errors=E
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
#include "fingerprint.h"
#include "ledger.h"
#include "log.h"
#include "order_input.h"
#include "order_view.h"
#include "response.h"
#include "store.h"

#define MAX_THREADS	256
#define MAX_SAMPLES	(1 << 20)

static struct conf	 conf;
static const char	*sku = "A-10";
static double		 seconds = 10;
static int		 nskus;
static struct timespec	 t_start;

struct worker {
	pthread_t	 tid;
	int		 id;
	long		 tx;
	long		 errors;
	double		*lat;		/* milliseconds per transaction */
	long		 nlat;
};

static double
now_s(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)(ts.tv_sec - t_start.tv_sec) +
	    (double)(ts.tv_nsec - t_start.tv_nsec) / 1e9;
}

/* One create transaction, as order_create() issues it when it succeeds. */
static int
one_tx(struct db *db, struct worker *w, long n, struct order_input *in,
    long long price, struct response *resp)
{
	struct ledger_scope	 scope;
	struct stock_row	 rows[1];
	unsigned long long	 id;
	char			 key[64], oid[ORDER_ID_MAX];
	int			 rc;

	snprintf(key, sizeof(key), "dbtx-%ld-%d-%ld", (long)getpid(), w->id,
	    n);
	scope.principal = "dbtx";
	scope.operation = LEDGER_OPERATION_CREATE_ORDER;
	scope.key = key;
	rc = ledger_insert(db, &scope, "0000000000000000000000000000000"
	    "000000000000000000000000000000000", 86400);
	if (rc != DB_OK)
		goto fail;
	rc = db_exec(db, "SAVEPOINT order_work");
	if (rc != DB_OK)
		goto fail;
	rc = store_lock_stock(db, in, rows);
	if (rc != DB_OK)
		goto fail;
	rc = store_insert_order(db, "dbtx", key, in, time(NULL), &id);
	if (rc != DB_OK)
		goto fail;
	rc = store_insert_item(db, id, &in->items[0], price);
	if (rc != DB_OK)
		goto fail;
	rc = store_decrease_stock(db, &in->items[0]);
	if (rc != DB_OK)
		goto fail;
	order_id_format(oid, sizeof(oid), id);
	response_reset(resp);
	response_json(resp, 201, "{\"orderId\":\"x\"}", 15);
	rc = ledger_finish(db, &scope, LEDGER_SUCCEEDED, resp, oid);
	if (rc != DB_OK)
		goto fail;
	rc = db_commit(db);
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

	memset(&in, 0, sizeof(in));
	snprintf(in.currency, sizeof(in.currency), "KRW");
	in.nitems = 1;
	snprintf(in.items[0].sku, sizeof(in.items[0].sku), "%s", sku);
	in.items[0].qty = 1;
	in.amount = 0;
	response_init(&resp);
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
		if (one_tx(&db, w, n++, &in, 0, &resp) != 0) {
			w->errors++;
			db_ensure(&db);
			continue;
		}
		t1 = now_s();
		w->tx++;
		if (w->nlat < MAX_SAMPLES / MAX_THREADS)
			w->lat[w->nlat++] = (t1 - t0) * 1e3;
	}
	response_clear(&resp);
	db_disconnect(&db);
	return NULL;
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
	long			 tx = 0, errors = 0, nall = 0, i, j;
	int			 ch, threads = 4;

	for (;;) {
		ch = getopt(argc, argv, "c:t:s:k:n:");
		if (ch == -1)
			break;
		switch (ch) {
		case 'c':
			path = optarg;
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
	    seconds <= 0 || nskus < 0 || nskus > 100)
		goto usage;
	log_init("dbtx", 0, LOG_WARNING);
	if (conf_load(&conf, path, err, sizeof(err)) == -1)
		fatalx("%s", err);
	mysql_library_init(0, NULL, NULL);
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
		for (j = 0; j < w[i].nlat; j++)
			all[nall++] = w[i].lat[j];
		free(w[i].lat);
	}
	qsort(all, (size_t)nall, sizeof(double), cmp_double);
	printf("dbtx threads=%d seconds=%.1f tx=%ld tps=%.0f p50_ms=%.2f "
	    "p99_ms=%.2f errors=%ld\n", threads, elapsed, tx,
	    (double)tx / elapsed, nall ? all[nall / 2] : 0.0,
	    nall ? all[(long)(nall * 0.99)] : 0.0, errors);
	free(all);
	conf_clear(&conf);
	mysql_library_end();
	return errors > 0 && tx == 0;
usage:
	fprintf(stderr, "usage: dbtx -c FILE [-t THREADS] [-s SECONDS] "
	    "[-k SKU] [-n COUNT]\n");
	return 2;
}
