#include "config.h"

#include <stdarg.h>
#include <string.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "buf.h"
#include "db.h"
#include "db_batch.h"
#include "log.h"
#include "sql.h"

/* A batch's SQL: the largest order with its stored response, in hex. */
#define DB_BATCH_SQL_MAX	(1024 * 1024)

/* An empty batch; its SQL may grow to DB_BATCH_SQL_MAX bytes. */
void
db_batch_init(struct db_batch *b)
{
	memset(b, 0, sizeof(*b));
	buf_init(&b->sql, DB_BATCH_SQL_MAX);
	b->commit = -1;
#ifdef ENABLE_FAULT_INJECTION
	b->pause_after = -1;
#endif
}

/* Empty the batch for reuse, releasing its results. */
void
db_batch_reset(struct db_batch *b)
{
	int	 i;

	for (i = 0; i < DB_BATCH_MAX; i++) {
		if (b->res[i] != NULL)
			mysql_free_result(b->res[i]);
		b->res[i] = NULL;
		b->insert_id[i] = 0;
	}
	buf_reset(&b->sql);
	b->n = b->done = 0;
	b->commit = -1;
#ifdef ENABLE_FAULT_INJECTION
	b->pause_after = -1;
#endif
}

/* Release what the batch holds. */
void
db_batch_clear(struct db_batch *b)
{
	if (b == NULL)
		return;
	db_batch_reset(b);
	buf_free(&b->sql);
}

/*
 * Begin the next statement, expecting expect rows changed (or
 * DB_ROWS_ANY, DB_ROWS_RESULT), with fmt: program-made text only; the
 * caller appends hex literals and the rest of it.  0, or -1 when the
 * batch is full.
 */
int
db_batch_add(struct db_batch *b, long long expect, const char *fmt, ...)
{
	va_list	 ap;
	int	 rc;

	if (b->n == DB_BATCH_MAX)
		return -1;
	if (b->n > 0 && buf_adds(&b->sql, "; ") != BUF_OK)
		return -1;
	b->start[b->n] = b->sql.len;
	b->guard[b->n] = 0;
	va_start(ap, fmt);
	rc = buf_vprintf(&b->sql, fmt, ap);
	va_end(ap);
	if (rc != BUF_OK)
		return -1;
	b->expect[b->n++] = expect;
	return 0;
}

/*
 * Fail the batch on the server unless the statement before changed
 * exactly rows rows: the largest BIGINT UNSIGNED plus one raises 1690
 * (an error, not a warning, in a SET), and the statements after it, the
 * COMMIT among them, do not run.  No result set, no subquery: the
 * cheapest statement that can refuse.
 */
int
db_batch_guard(struct db_batch *b, long long rows)
{
	if (db_batch_sql(b, 0, SQL_GUARD_ROWS, rows) == -1)
		return -1;
	b->guard[b->n - 1] = 1;
	return 0;
}

/*
 * Fail the batch on the server unless the SELECT before returned exactly
 * rows rows (FOUND_ROWS(): its count, no second read), as
 * db_batch_guard() does for rows changed.
 */
int
db_batch_guard_found(struct db_batch *b, long long rows)
{
	if (db_batch_sql(b, 0, SQL_GUARD_FOUND, rows) == -1)
		return -1;
	b->guard[b->n - 1] = 1;
	return 0;
}

/* Whether the batch just run failed at statement i as a guard refusing. */
int
db_batch_refused(const struct db *db, const struct db_batch *b, int i)
{
	return b->done == i && db->last_errno == ER_DATA_OUT_OF_RANGE;
}

/* End the batch with COMMIT. */
int
db_batch_commit(struct db_batch *b)
{
	if (db_batch_sql(b, 0, SQL_COMMIT) == -1)
		return -1;
	b->commit = b->n - 1;
	return 0;
}

/* Set the savepoint an operation's work is undone to. */
int
db_batch_savepoint(struct db_batch *b)
{
	return db_batch_sql(b, 0, SQL_SAVEPOINT);
}

/* Undo the work back to the savepoint (DB_BATCH_TO_SAVEPOINT). */
int
db_batch_to_savepoint(struct db_batch *b)
{
	return db_batch_sql(b, 0, SQL_TO_SAVEPOINT);
}

/*
 * Append to an UPDATE's table list the join that makes it change rows
 * only while the transaction's own claim row (ledger id claim, still
 * PROCESSING, so uncommitted) exists.
 */
int
db_batch_own_join(struct db_batch *b, unsigned long long claim)
{
	return db_batch_more(b, SQL_OWN_JOIN, claim);
}

/*
 * Append the FROM of an INSERT ... SELECT that inserts only while the
 * transaction's own claim row exists (as db_batch_own_join()).
 */
int
db_batch_own_from(struct db_batch *b, unsigned long long claim)
{
	return db_batch_more(b, SQL_OWN_FROM, claim);
}

/*
 * Begin the next statement of the batch, expecting expect rows changed
 * (or DB_ROWS_ANY, DB_ROWS_RESULT): statement id of the table with its
 * values (sql.h).  0, or -1 when the batch is full or a value is
 * refused.
 */
int
db_batch_sql(struct db_batch *b, long long expect, enum sql_id id, ...)
{
	va_list	 ap;
	int	 rc;

	if (b->n == DB_BATCH_MAX)
		return -1;
	if (b->n > 0 && buf_adds(&b->sql, "; ") != BUF_OK)
		return -1;
	b->start[b->n] = b->sql.len;
	b->guard[b->n] = 0;
	va_start(ap, id);
	rc = sql_vprintf(&b->sql, id, ap);
	va_end(ap);
	if (rc == -1)
		return -1;
	b->expect[b->n++] = expect;
	return 0;
}

/* Append fragment id of the table with its values to the statement. */
int
db_batch_more(struct db_batch *b, enum sql_id id, ...)
{
	va_list	 ap;
	int	 rc;

	if (b->n == 0)
		return -1;
	va_start(ap, id);
	rc = sql_vprintf(&b->sql, id, ap);
	va_end(ap);
	return rc;
}

#ifdef ENABLE_FAULT_INJECTION
/*
 * Fault work_pause: the index of the statement before which the batch
 * pauses, after its pause_after-th statement not counting guards (a
 * guard stays right after the statement it checks), or b->n.
 */
static int
pause_index(const struct db_batch *b)
{
	int	 i, writes = 0;

	if (b->pause_after == 0)
		return 0;
	for (i = 0; i < b->n; i++) {
		if (!b->guard[i] && ++writes == b->pause_after) {
			i++;
			while (i < b->n && b->guard[i])
				i++;
			return i;
		}
	}
	return b->n;
}

/* Write into out the batch's SQL with a DO SLEEP before statement p. */
static int
pause_sql(const struct db_batch *b, int p, struct buf *out)
{
	size_t	 at = p < b->n ? b->start[p] : b->sql.len;

	if (buf_add(out, b->sql.p, at) != BUF_OK ||
	    (p >= b->n && buf_adds(out, "; ") != BUF_OK) ||
	    sql_printf(out, SQL_BATCH_PAUSE, b->pause_ms / 1000,
	    b->pause_ms % 1000) == -1 ||
	    (p < b->n && buf_adds(out, "; ") != BUF_OK) ||
	    buf_add(out, b->sql.p + at, b->sql.len - at) != BUF_OK)
		return -1;
	return 0;
}
#endif

/*
 * Send the batch and read every result: statement i must succeed and
 * change expect[i] rows (or return a result set, kept in res[i]).  On
 * failure, b->done statements succeeded; the class is that of the
 * failing statement, except that a batch that may have reached its
 * COMMIT (the connection lost on the way, or the COMMIT itself failed
 * other than by a deadlock) is DB_UNKNOWN.  A read-only transaction an
 * earlier request left open is ended by a ROLLBACK sent ahead, and in a
 * fault build the fault work_pause adds a DO SLEEP to a batch that ends
 * in COMMIT; their answers are read and skipped.
 */
int
db_batch_run(struct db *db, struct db_batch *b)
{
	MYSQL_RES	*res;
	const char	*sql = b->sql.p;
	size_t		 len = b->sql.len;
	long long	 changed;
	int		 rc, st, i = 0, raw, wrong = -1, pause = -1, skip = 0;
	struct buf	 fresh;
#ifdef ENABLE_FAULT_INJECTION
	struct buf	 paused;
#endif

	buf_init(&fresh, DB_BATCH_SQL_MAX + 64);
#ifdef ENABLE_FAULT_INJECTION
	buf_init(&paused, DB_BATCH_SQL_MAX + 64);
	if (b->pause_after >= 0 && b->commit >= 0) {
		pause = pause_index(b);
		if (pause_sql(b, pause, &paused) == -1) {
			rc = db_fail(db, DB_ERROR, 0, "the batch does not fit");
			goto out;
		}
		log_info("fault injection: a pause of %d ms before statement "
		    "%d of %d", b->pause_ms, pause + 1, b->n);
		sql = paused.p;
		len = paused.len;
	}
#endif
	b->done = 0;
	if (db->read_stale) {
		/*
		 * An earlier request's read left its transaction open: end
		 * it first, in this round trip (see db_set_deadline()).
		 */
		if (sql_printf(&fresh, SQL_ROLLBACK) == -1 ||
		    buf_adds(&fresh, "; ") != BUF_OK ||
		    buf_add(&fresh, sql, len) != BUF_OK) {
			rc = db_fail(db, DB_ERROR, 0, "the batch does not fit");
			goto out;
		}
		sql = fresh.p;
		len = fresh.len;
		skip = 1;
		db->read_stale = db->read_open = 0;
	}
	rc = db_arm(db);
	if (rc != DB_OK)
		goto out;
	db->round_trips++;
	if (mysql_real_query(db->my, sql, (unsigned long)len) != 0)
		goto failed;
	for (raw = 0;; raw++) {
		db_bound_io(db);
		res = mysql_store_result(db->my);
		if (res == NULL && (mysql_field_count(db->my) != 0 ||
		    mysql_errno(db->my) != 0))
			goto failed;
		if (raw >= skip && raw - skip != pause) {
			if (i < b->n) {
				if (res != NULL) {
					if (b->expect[i] != DB_ROWS_RESULT &&
					    wrong < 0)
						wrong = i;
					b->res[i] = res;
					res = NULL;
				} else {
					changed = (long long)
					    mysql_affected_rows(db->my);
					if (b->expect[i] != DB_ROWS_ANY &&
					    changed != b->expect[i] &&
					    wrong < 0)
						wrong = i;
				}
				b->insert_id[i] = mysql_insert_id(db->my);
			}
			if (wrong < 0)
				b->done = i + 1;
			i++;
		}
		if (res != NULL)
			mysql_free_result(res);
		db_bound_io(db);
		st = mysql_next_result(db->my);
		if (st > 0 || (st == -1 && mysql_errno(db->my) != 0))
			goto failed;	/* statement i, or its answer */
		if (st == -1)
			break;
	}
	if (wrong >= 0 || i != b->n) {
		rc = db_fail(db, DB_ERROR, 0, i != b->n ? "a batch returned "
		    "another number of results" : "a batched statement changed "
		    "another number of rows");
		log_warnx("batch statement %d of %d: %s", wrong + 1, b->n,
		    db->last_error);
		if (b->commit >= 0 && i > b->commit)
			rc = db_fail(db, DB_UNKNOWN, 0, db->last_error);
		goto out;
	}
	rc = DB_OK;
	goto out;
failed:
	/* Statement i failed; the server ran none after it. */
	rc = db_conn_fail(db);
	if (b->commit < 0 || i < b->commit)
		rc = rc == DB_LOST && b->commit >= 0 ? db_fail(db,
		    DB_UNKNOWN, db->last_errno, db->last_error) : rc;
	else if (rc != DB_TRANSIENT || db->last_errno != ER_LOCK_DEADLOCK)
		rc = db_fail(db, DB_UNKNOWN, db->last_errno, db->last_error);
out:
#ifdef ENABLE_FAULT_INJECTION
	buf_free(&paused);
#endif
	buf_free(&fresh);
	return rc;
}
