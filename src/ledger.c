#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_batch.h"
#include "ledger.h"
#include "response.h"
#include "sql.h"

#define READ_BODY_INLINE	(16 * 1024)

static const char *ledger_status_names[] = {
	[LEDGER_UNKNOWN] = "UNKNOWN",
	[LEDGER_PROCESSING] = "PROCESSING",
	[LEDGER_SUCCEEDED] = "SUCCEEDED",
	[LEDGER_FAILED_FINAL] = "FAILED_FINAL",
	[LEDGER_EXPIRED] = "EXPIRED",
};

/* The column value of a state. */
const char *
ledger_status_name(enum ledger_status st)
{
	if ((size_t)st >= sizeof(ledger_status_names) /
	    sizeof(ledger_status_names[0]))
		st = LEDGER_UNKNOWN;
	return ledger_status_names[st];
}

/* Whether a state is final: its stored response is replayed. */
int
ledger_terminal(enum ledger_status st)
{
	return st == LEDGER_SUCCEEDED || st == LEDGER_FAILED_FINAL;
}

/* The state of a column value (LEDGER_UNKNOWN for any other). */
static enum ledger_status
ledger_status_parse(const char *s)
{
	size_t	 i;

	for (i = LEDGER_PROCESSING; i < sizeof(ledger_status_names) /
	    sizeof(ledger_status_names[0]); i++)
		if (strcmp(s, ledger_status_names[i]) == 0)
			return (enum ledger_status)i;
	return LEDGER_UNKNOWN;
}

/*
 * Insert the PROCESSING row that claims the scope inside the caller's
 * transaction.  DB_DUPLICATE means another request owns it; a concurrent
 * owner that has not committed makes this wait (bounded by the session's
 * innodb_lock_wait_timeout) until it commits or rolls back.
 */
int
ledger_insert(struct db *db, const struct ledger_scope *s, const char *fp,
    long retention_s)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[5];
	long long	 ret = retention_s;
	int		 rc;

	rc = db_stmt(db, sql_text(SQL_LEDGER_INSERT), &st);
	if (rc != DB_OK)
		return rc;
	db_bind_str(&p[0], s->principal, strlen(s->principal));
	db_bind_str(&p[1], s->operation, strlen(s->operation));
	db_bind_str(&p[2], s->key, strlen(s->key));
	db_bind_str(&p[3], fp, strlen(fp));
	db_bind_i64(&p[4], &ret);
	return db_execute(db, st, p);
}

/* Prepare a record for ledger_read. */
void
ledger_record_init(struct ledger_record *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->headers, RESPONSE_HEADERS_MAX);
	buf_init(&r->body, RESPONSE_BODY_MAX);
}

/* Release what a record holds. */
void
ledger_record_clear(struct ledger_record *r)
{
	if (r == NULL)
		return;
	buf_free(&r->headers);
	buf_free(&r->body);
}

/*
 * Read the committed row of a scope with a fresh statement (READ
 * COMMITTED: a new snapshot per statement).  Returns 1 and fills rec, 0
 * when there is no row, or a negative db_err.
 */
int
ledger_read(struct db *db, const struct ledger_scope *s,
    struct ledger_record *rec)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[3], r[7];
	char		 hdrs[RESPONSE_HEADERS_MAX], *body = NULL;
	unsigned long	 len[7];
	my_bool		 nul[7];
	int		 rc, found = 0;

	rc = db_stmt(db, sql_text(SQL_LEDGER_READ), &st);
	if (rc != DB_OK)
		return rc;
	db_bind_str(&p[0], s->principal, strlen(s->principal));
	db_bind_str(&p[1], s->operation, strlen(s->operation));
	db_bind_str(&p[2], s->key, strlen(s->key));
	rc = db_execute(db, st, p);
	if (rc != DB_OK)
		return rc;
	body = malloc(READ_BODY_INLINE);
	if (body == NULL) {
		rc = db_fail(db, DB_ERROR, 0, "out of memory");
		goto out;
	}
	memset(rec->status, 0, sizeof(rec->status));
	memset(rec->fingerprint, 0, sizeof(rec->fingerprint));
	memset(rec->resource_id, 0, sizeof(rec->resource_id));
	db_bind_out_str(&r[0], rec->status, sizeof(rec->status) - 1, &len[0],
	    &nul[0]);
	db_bind_out_str(&r[1], rec->fingerprint, sizeof(rec->fingerprint) - 1,
	    &len[1], &nul[1]);
	db_bind_int(&r[2], &rec->response_status);
	db_bind_out_str(&r[3], hdrs, sizeof(hdrs), &len[3], &nul[3]);
	db_bind_out_str(&r[4], body, READ_BODY_INLINE, &len[4], &nul[4]);
	r[4].buffer_type = MYSQL_TYPE_BLOB;
	db_bind_out_str(&r[5], rec->resource_id, sizeof(rec->resource_id) - 1,
	    &len[5], &nul[5]);
	db_bind_int(&r[6], &rec->expired);
	rc = db_bind_result(db, st, r);
	if (rc != DB_OK)
		goto out;
	rc = db_fetch(db, st);
	if (rc <= 0)
		goto out;
	found = 1;
	buf_reset(&rec->headers);
	buf_reset(&rec->body);
	if (!nul[3] && (len[3] > sizeof(hdrs) ||
	    buf_add(&rec->headers, hdrs, len[3]) != BUF_OK)) {
		rc = db_fail(db, DB_ERROR, 0, "stored response headers too large");
		goto out;
	}
	if (!nul[4] && len[4] > READ_BODY_INLINE) {
		/* A large body: fetch the whole column again. */
		char	*big;

		if (len[4] > RESPONSE_BODY_MAX) {
			rc = db_fail(db, DB_ERROR, 0, "stored response body too large");
			goto out;
		}
		big = malloc(len[4]);
		if (big == NULL) {
			rc = db_fail(db, DB_ERROR, 0, "out of memory");
			goto out;
		}
		free(body);
		body = big;
		r[4].buffer = body;
		r[4].buffer_length = len[4];
		rc = db_fetch_column(db, st, &r[4], 4);
		if (rc != DB_OK)
			goto out;
	}
	if (!nul[4] && buf_add(&rec->body, body, len[4]) != BUF_OK) {
		rc = db_fail(db, DB_ERROR, 0, "stored response body too large");
		goto out;
	}
	if (nul[5])
		rec->resource_id[0] = '\0';
	rec->state = ledger_status_parse(rec->status);
	rc = 1;
out:
	while (found && rc > 0 && db_fetch(db, st) == 1)
		;	/* the unique key allows one row; drain anyway */
	db_stmt_done(db, st);
	free(body);
	return rc;
}

/*
 * Turn the caller's PROCESSING row into its final state with the exact
 * response to replay.  Exactly one row must change.
 */
int
ledger_finish(struct db *db, const struct ledger_scope *s,
    enum ledger_status state, const struct response *resp,
    const char *resource_id)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[8];
	const char	*status = ledger_status_name(state);
	int		 code = resp->status, rc;

	rc = db_stmt(db, sql_text(SQL_LEDGER_FINISH), &st);
	if (rc != DB_OK)
		return rc;
	db_bind_str(&p[0], status, strlen(status));
	db_bind_int(&p[1], &code);
	db_bind_str(&p[2], resp->headers.p ? resp->headers.p : "",
	    resp->headers.len);
	db_bind_str(&p[3], resp->body.p ? resp->body.p : "", resp->body.len);
	p[3].buffer_type = MYSQL_TYPE_BLOB;
	if (resource_id != NULL)
		db_bind_str(&p[4], resource_id, strlen(resource_id));
	else {
		memset(&p[4], 0, sizeof(p[4]));
		p[4].buffer_type = MYSQL_TYPE_NULL;
	}
	db_bind_str(&p[5], s->principal, strlen(s->principal));
	db_bind_str(&p[6], s->operation, strlen(s->operation));
	db_bind_str(&p[7], s->key, strlen(s->key));
	rc = db_execute(db, st, p);
	if (rc != DB_OK)
		return rc;
	if (mysql_stmt_affected_rows(st) != 1)
		return db_fail(db, DB_ERROR, 0, "the ledger row to finish is "
		    "not PROCESSING");
	return DB_OK;
}

/*
 * Batched forms: the same statements as above,
 * written for db_batch_run() with every string as a hex literal.
 */

/* Add the claim of the scope: one PROCESSING row (its id names the order). */
int
ledger_batch_insert(struct db_batch *b, const struct ledger_scope *s,
    const char *fp, long retention_s)
{
	return db_batch_sql(b, 1, SQL_LEDGER_BATCH_INSERT, s->principal,
	    s->operation, s->key, fp, retention_s);
}

/*
 * Add a fresh read of the committed row of a scope (READ COMMITTED: the
 * statement's own snapshot; causal on a cluster node) to a batch, its
 * result kept for ledger_record_from_result().
 */
int
ledger_batch_read(struct db_batch *b, const struct ledger_scope *s)
{
	return db_batch_sql(b, DB_ROWS_RESULT, SQL_LEDGER_BATCH_READ,
	    s->principal, s->operation, s->key);
}

/*
 * Fill rec from the result of ledger_batch_read(): 1, 0 when there is no
 * row, -1 when the row does not fit a record.
 */
int
ledger_record_from_result(MYSQL_RES *res, struct ledger_record *rec)
{
	MYSQL_ROW	 row;
	unsigned long	*len;

	if (res == NULL || mysql_num_fields(res) != 7)
		return -1;
	row = mysql_fetch_row(res);
	if (row == NULL)
		return 0;
	len = mysql_fetch_lengths(res);
	if (len == NULL || row[0] == NULL || row[1] == NULL ||
	    len[0] >= sizeof(rec->status) ||
	    len[1] >= sizeof(rec->fingerprint) ||
	    (row[5] != NULL && len[5] >= sizeof(rec->resource_id)))
		return -1;
	memcpy(rec->status, row[0], len[0]);
	rec->status[len[0]] = '\0';
	memcpy(rec->fingerprint, row[1], len[1]);
	rec->fingerprint[len[1]] = '\0';
	rec->response_status = row[2] != NULL ? atoi(row[2]) : 0;
	buf_reset(&rec->headers);
	buf_reset(&rec->body);
	if ((row[3] != NULL && buf_add(&rec->headers, row[3], len[3]) !=
	    BUF_OK) || (row[4] != NULL && buf_add(&rec->body, row[4],
	    len[4]) != BUF_OK))
		return -1;
	rec->resource_id[0] = '\0';
	if (row[5] != NULL) {
		memcpy(rec->resource_id, row[5], len[5]);
		rec->resource_id[len[5]] = '\0';
	}
	rec->expired = row[6] != NULL && strcmp(row[6], "1") == 0;
	rec->state = ledger_status_parse(rec->status);
	return 1;
}

/*
 * Add the update of the caller's PROCESSING row (by its id, which the
 * claim in this transaction returned) to its final state with the exact
 * response, and a guard: exactly one row changes, or the batch stops
 * there.
 */
int
ledger_batch_finish(struct db_batch *b, unsigned long long id,
    enum ledger_status state, const struct response *resp,
    const char *resource_id)
{
	if (db_batch_sql(b, 1, SQL_LEDGER_BATCH_FINISH,
	    ledger_status_name(state), resp->status, resp->headers.p,
	    resp->headers.len, resp->body.p, resp->body.len, resource_id,
	    id) == -1)
		return -1;
	return db_batch_guard(b, 1);
}
