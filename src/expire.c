/*
 * Retention.  Terminal rows (SUCCEEDED,
 * FAILED_FINAL) whose expires_at has passed by the database's clock
 * become EXPIRED tombstones: response dropped, fingerprint and
 * resource_id kept, so that a late retry still gets 410 and never a new
 * order.  PROCESSING rows are never touched by time alone.  Tombstones
 * older than tombstone_retention are deleted (0 keeps them), and so are
 * delivered events older than event_retention (0 keeps them).
 *
 * Each batch is one short transaction of at most `batch` rows, so live
 * traffic waits at most one batch, and the job pauses `pause` ms after
 * each full batch, so that its share of the server stays small while
 * creates go on (at the default 200 ms after a batch of 1000 rows that
 * took ~90 ms on a filled database, a third of what it would take back
 * to back, still several times a busy shop's create rate).  Two runs at once are safe: a row a
 * concurrent run already changed no longer matches the WHERE clause when
 * its lock is granted (READ COMMITTED re-checks it), so each row is
 * counted once.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "db.h"
#include "expire.h"
#include "log.h"
#include "mono.h"
#include "sql.h"

#define EXPIRE_TRIES	20	/* attempts of one batch */

/*
 * Run one statement with the given integer parameters; *rows receives
 * the affected rows, or the single value a COUNT(*) query returns.
 */
static int
run(struct db *db, enum sql_id sql, long long *params, int np, int is_count,
    long long *rows)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[2], r[1];
	int		 i, rc;

	rc = db_stmt_prepare(db, sql_text(sql), strlen(sql_text(sql)), &st);
	if (rc != DB_OK)
		return rc;
	for (i = 0; i < np; i++)
		db_bind_i64(&p[i], &params[i]);
	rc = db_execute(db, st, np ? p : NULL);
	if (rc != DB_OK)
		goto out;
	if (is_count) {
		db_bind_i64(&r[0], rows);
		rc = db_bind_result(db, st, r);
		if (rc != DB_OK)
			goto out;
		rc = db_fetch(db, st);
		if (rc == 0)
			rc = db_fail(db, DB_ERROR, 0, "COUNT(*) returned no row");
		else if (rc == 1)
			rc = DB_OK;
	} else
		*rows = (long long)mysql_stmt_affected_rows(st);
out:
	mysql_stmt_close(st);
	return rc;
}

/*
 * Repeat one batched statement, committing each batch, until done.  A
 * batch that loses a deadlock or a lock wait to a concurrent job (or,
 * on Galera, a certification conflict) is rolled back and run again;
 * a lost connection is reconnected.
 */
static int
batches(struct db *db, enum sql_id sql, long long *params, int np,
    long batch, long pause_ms, long long *total, long *nbatches)
{
	long long	 rows, t0;
	int		 rc, tries = 0;

	do {
		t0 = mono_ms();
		rc = db_ensure(db);
		if (rc == DB_OK)
			rc = run(db, sql, params, np, 0, &rows);
		if (rc == DB_OK)
			rc = db_commit(db);
		if (rc != DB_OK) {
			db_rollback(db);
			if ((rc == DB_TRANSIENT || rc == DB_LOST ||
			    rc == DB_UNKNOWN) && ++tries < EXPIRE_TRIES) {
				/* An unknown COMMIT is safe to redo: the
				 * statement only matches rows still due. */
				log_info("expire: batch retried (%s: %s)",
				    db_class_name(rc), db->last_error);
				mono_sleep_ms(random() % 200 + 10);
				rows = batch;
				continue;
			}
			return rc;
		}
		tries = 0;
		/* Each batch's time, its locks' upper bound (log_level = debug). */
		log_debug("expire: batch of %lld %s in %lld ms", rows,
		    sql == SQL_EXPIRE_PURGE ? "purged" : "expired", mono_ms() - t0);
		*total += rows;
		if (rows > 0)
			(*nbatches)++;
		if (rows >= batch && pause_ms > 0) {
			/* Another batch follows: let live traffic have the server. */
			mono_sleep_ms(pause_ms);
		}
	} while (rows >= batch);
	return DB_OK;
}

/*
 * Expire due rows and purge old tombstones, batch rows at a time,
 * pause_ms between batches.  With dry_run nothing changes and the counts
 * say what would.
 */
int
expire_run(const struct conf *conf, long batch, long pause_ms, int dry_run,
    struct expire_stats *st)
{
	struct db	 db;
	long long	 p[2];
	int		 i, rc;

	memset(st, 0, sizeof(*st));
	db_init(&db, conf);
	rc = db_connect(&db);
	if (rc != DB_OK) {
		log_warnx("cannot connect to the database: %s", db.last_error);
		return -1;
	}
	p[0] = conf->tombstone_retention_ms / 1000;
	if (dry_run) {
		rc = run(&db, SQL_EXPIRE_COUNT_DUE, NULL, 0, 1, &st->expired);
		if (rc == DB_OK && conf->tombstone_retention_ms > 0)
			rc = run(&db, SQL_EXPIRE_COUNT_PURGE, p, 1, 1,
			    &st->purged);
		p[0] = conf->event_retention_ms / 1000;
		if (rc == DB_OK && conf->event_retention_ms > 0)
			rc = run(&db, SQL_EXPIRE_COUNT_EVENTS, p, 1, 1,
			    &st->events_purged);
		db_rollback(&db);
		goto out;
	}
	for (i = 0; rc == DB_OK && i < 2; i++) {
		p[0] = batch;
		rc = batches(&db, i == 0 ? SQL_EXPIRE_SUCCEEDED :
		    SQL_EXPIRE_FAILED_FINAL, p, 1, batch, pause_ms,
		    &st->expired, &st->batches);
	}
	if (rc == DB_OK && conf->tombstone_retention_ms > 0) {
		p[0] = conf->tombstone_retention_ms / 1000;
		p[1] = batch;
		rc = batches(&db, SQL_EXPIRE_PURGE, p, 2, batch, pause_ms,
		    &st->purged, &st->batches);
	}
	if (rc == DB_OK && conf->event_retention_ms > 0) {
		p[0] = conf->event_retention_ms / 1000;
		p[1] = batch;
		rc = batches(&db, SQL_EXPIRE_PURGE_EVENTS, p, 2, batch,
		    pause_ms, &st->events_purged, &st->batches);
	}
out:
	if (rc != DB_OK)
		log_warnx("expire: %s", db.last_error);
	db_disconnect(&db);
	return rc == DB_OK ? 0 : -1;
}
