#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "conf.h"
#include "db.h"
#include "log.h"

#ifndef ER_STATEMENT_TIMEOUT
#define ER_STATEMENT_TIMEOUT	1969
#endif
#ifndef ER_CONNECTION_KILLED
#define ER_CONNECTION_KILLED	1927
#endif

/* Prepare a connection holder; nothing is opened yet. */
void
db_init(struct db *db, const struct conf *conf)
{
	memset(db, 0, sizeof(*db));
	db->conf = conf;
}

/* Record the error of the connection or of a statement and classify it. */
static int
db_classify(struct db *db, unsigned int err, const char *msg)
{
	db->last_errno = err;
	snprintf(db->last_error, sizeof(db->last_error), "%s", msg);
	switch (err) {
	case 0:
		return DB_OK;
	case ER_DUP_ENTRY:
		return DB_DUPLICATE;
	case ER_LOCK_DEADLOCK:
	case ER_LOCK_WAIT_TIMEOUT:
	case ER_STATEMENT_TIMEOUT:
	case ER_QUERY_INTERRUPTED:
		return DB_TRANSIENT;
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_CONN_HOST_ERROR:
	case CR_CONNECTION_ERROR:
	case CR_COMMANDS_OUT_OF_SYNC:
	case ER_CONNECTION_KILLED:
	case ER_SERVER_SHUTDOWN:
	case ER_ERROR_DURING_COMMIT:
	case ER_UNKNOWN_COM_ERROR:
	case 4031:	/* ER_CLIENT_INTERACTION_TIMEOUT */
	case 2055:	/* CR_SERVER_LOST_EXTENDED */
		db_disconnect(db);
		return DB_LOST;
	default:
		return DB_ERROR;
	}
}

/* Classify the last error of the connection. */
int
db_error(struct db *db)
{
	if (db->my == NULL)
		return db_classify(db, CR_SERVER_GONE_ERROR, "not connected");
	return db_classify(db, mysql_errno(db->my), mysql_error(db->my));
}

/* Classify the last error of a statement. */
int
db_stmt_error(struct db *db, MYSQL_STMT *st)
{
	return db_classify(db, mysql_stmt_errno(st), mysql_stmt_error(st));
}

/* Close every cached statement and the connection. */
void
db_disconnect(struct db *db)
{
	size_t	 i;

	for (i = 0; i < DBS_COUNT; i++) {
		if (db->stmts[i] != NULL)
			mysql_stmt_close(db->stmts[i]);
		db->stmts[i] = NULL;
	}
	if (db->my != NULL)
		mysql_close(db->my);
	db->my = NULL;
	db->read_open = 0;
	db->lock_wait_s = 0;
	db->stmt_time_ms = 0;
}

/*
 * Open the connection and set the session up: READ COMMITTED, explicit
 * transactions, UTC, strict SQL.  The client read/write timeouts are the
 * request deadline, the outer bound of any single wait.
 */
int
db_connect(struct db *db)
{
	const struct conf	*c = db->conf;
	unsigned int		 connect_s, rw_s;
	my_bool			 off = 0;
	int			 rc;

	db_disconnect(db);
	db->my = mysql_init(NULL);
	if (db->my == NULL)
		return db_classify(db, CR_OUT_OF_MEMORY, "out of memory");
	connect_s = (unsigned int)((c->db_connect_timeout_ms + 999) / 1000);
	if (db->connect_budget_ms > 0 &&
	    db->connect_budget_ms < c->db_connect_timeout_ms)
		connect_s = (unsigned int)((db->connect_budget_ms + 999) / 1000);
	rw_s = (unsigned int)((c->request_deadline_ms + 999) / 1000) + 1;
	mysql_options(db->my, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
	mysql_options(db->my, MYSQL_OPT_READ_TIMEOUT, &rw_s);
	mysql_options(db->my, MYSQL_OPT_WRITE_TIMEOUT, &rw_s);
	mysql_options(db->my, MYSQL_OPT_RECONNECT, &off);
	mysql_options(db->my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (mysql_real_connect(db->my, c->db_socket ? NULL : c->db_host,
	    c->db_user, c->db_password, c->db_name,
	    c->db_socket ? 0 : c->db_port, c->db_socket, 0) == NULL) {
		rc = db_error(db);
		log_warnx("database connect failed: %s", db->last_error);
		db_disconnect(db);
		return rc == DB_OK ? DB_LOST : rc;
	}
	rc = db_exec(db, "SET SESSION TRANSACTION ISOLATION LEVEL "
	    "READ COMMITTED");
	if (rc == DB_OK)
		rc = db_exec(db, "SET SESSION autocommit = 0, "
		    "time_zone = '+00:00', "
		    "sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'");
	if (rc != DB_OK) {
		log_warnx("database session set-up failed: %s",
		    db->last_error);
		db_disconnect(db);
		return rc;
	}
	return DB_OK;
}

/* Connect if not connected. */
int
db_ensure(struct db *db)
{
	if (db->my != NULL)
		return DB_OK;
	return db_connect(db);
}

/* Check that the server answers, reconnecting once if it went away. */
int
db_ping(struct db *db)
{
	int	 rc;

	rc = db_ensure(db);
	if (rc != DB_OK)
		return rc;
	if (mysql_ping(db->my) == 0)
		return DB_OK;
	db_disconnect(db);
	rc = db_connect(db);
	if (rc != DB_OK)
		return rc;
	return mysql_ping(db->my) == 0 ? DB_OK : db_error(db);
}

/*
 * Bound the server-side waits of the next statements by what is left of
 * the request deadline: innodb_lock_wait_timeout (whole seconds, at most
 * lock_wait_timeout) and max_statement_time.  Values are rounded down to
 * whole seconds above one second, so that the common case sends nothing.
 */
int
db_wait_limits(struct db *db, long remaining_ms)
{
	char	 sql[160];
	long	 stmt_ms, cap_s;
	int	 lock_s, rc;

	if (remaining_ms >= 1000)
		stmt_ms = remaining_ms / 1000 * 1000;
	else
		stmt_ms = remaining_ms > 10 ? remaining_ms : 10;
	cap_s = db->conf->lock_wait_timeout_ms / 1000;
	lock_s = (int)(stmt_ms / 1000 < cap_s ? stmt_ms / 1000 : cap_s);
	if (lock_s < 1)
		lock_s = 1;
	if (lock_s == db->lock_wait_s && stmt_ms == db->stmt_time_ms)
		return DB_OK;
	snprintf(sql, sizeof(sql), "SET SESSION innodb_lock_wait_timeout = %d,"
	    " max_statement_time = %ld.%03ld", lock_s, stmt_ms / 1000,
	    stmt_ms % 1000);
	rc = db_exec(db, sql);
	if (rc != DB_OK)
		return rc;
	db->lock_wait_s = lock_s;
	db->stmt_time_ms = stmt_ms;
	return DB_OK;
}

/* Run a statement without parameters or results. */
int
db_exec(struct db *db, const char *sql)
{
	MYSQL_RES	*res;

	if (db->my == NULL)
		return db_error(db);
	if (mysql_query(db->my, sql) != 0)
		return db_error(db);
	res = mysql_store_result(db->my);
	if (res != NULL)
		mysql_free_result(res);
	return DB_OK;
}

/* Commit the open transaction. */
int
db_commit(struct db *db)
{
	if (db->my == NULL)
		return db_error(db);
	db->read_open = 0;
	if (mysql_commit(db->my) != 0)
		return db_error(db);
	return DB_OK;
}

/*
 * Roll the open transaction back.  A connection that cannot roll back is
 * dropped, which makes the server roll back instead.
 */
int
db_rollback(struct db *db)
{
	int	 rc;

	if (db->my == NULL)
		return DB_LOST;
	db->read_open = 0;
	if (mysql_rollback(db->my) == 0)
		return DB_OK;
	rc = db_error(db);
	db_disconnect(db);
	return rc;
}

/*
 * Mark the end of a read: with autocommit off, reads leave a transaction
 * open that holds no row locks and, under READ COMMITTED, no snapshot,
 * only metadata locks.  Rather than a round trip now, the next write
 * transaction continues it, or db_idle() ends it when the worker has
 * nothing to do.
 */
void
db_end_read(struct db *db)
{
	if (db->my != NULL)
		db->read_open = 1;
}

/* End a read-only transaction left open, so that DDL never waits on it. */
void
db_idle(struct db *db)
{
	if (db->read_open)
		db_rollback(db);
}

/*
 * Return the prepared statement for id, preparing sql on first use on
 * this connection.  NULL on failure, with the error recorded.
 */
MYSQL_STMT *
db_stmt(struct db *db, enum db_stmt_id id, const char *sql)
{
	MYSQL_STMT	*st;

	if (db->stmts[id] != NULL)
		return db->stmts[id];
	if (db->my == NULL) {
		db_error(db);
		return NULL;
	}
	st = mysql_stmt_init(db->my);
	if (st == NULL) {
		db_error(db);
		return NULL;
	}
	if (mysql_stmt_prepare(st, sql, strlen(sql)) != 0) {
		db_stmt_error(db, st);
		log_warnx("prepare failed: %s: %s", db->last_error, sql);
		mysql_stmt_close(st);
		return NULL;
	}
	db->stmts[id] = st;
	return st;
}

/* Bind the parameters and execute; the statement's results are stored. */
int
db_execute(struct db *db, MYSQL_STMT *st, MYSQL_BIND *params)
{
	if (params != NULL && mysql_stmt_bind_param(st, params) != 0)
		return db_stmt_error(db, st);
	if (mysql_stmt_execute(st) != 0)
		return db_stmt_error(db, st);
	return DB_OK;
}

/*
 * Fetch the next row into the bound results: 1 for a row, 0 at the end,
 * or a negative error class.  Truncated columns count as rows; callers
 * check the lengths.
 */
int
db_fetch(struct db *db, MYSQL_STMT *st)
{
	switch (mysql_stmt_fetch(st)) {
	case 0:
	case MYSQL_DATA_TRUNCATED:
		return 1;
	case MYSQL_NO_DATA:
		return 0;
	default:
		return db_stmt_error(db, st);
	}
}

/* Bind an input string of len bytes. */
void
db_bind_str(MYSQL_BIND *b, const char *s, size_t len)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)s;
	b->buffer_length = (unsigned long)len;
}

/* Bind a 64-bit integer, input or output. */
void
db_bind_i64(MYSQL_BIND *b, long long *v)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = v;
}

/* Bind an int, input or output. */
void
db_bind_int(MYSQL_BIND *b, int *v)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_LONG;
	b->buffer = v;
}

/* Bind an output string buffer of size bytes. */
void
db_bind_out_str(MYSQL_BIND *b, char *buf, size_t size, unsigned long *len,
    my_bool *is_null)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = buf;
	b->buffer_length = (unsigned long)size;
	b->length = len;
	b->is_null = is_null;
}
