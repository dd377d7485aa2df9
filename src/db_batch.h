/*
 * A batch: statements sent together in one round trip on a connection
 * of db.c.  The SQL is written by this program, every value in it a
 * number formatted here or a string written as a hex literal, so that
 * no request byte can change it.  The server runs the statements in order
 * and stops at the first that fails; db_batch_run() reads and checks
 * every result.  A statement that must change an exact number of rows
 * before a COMMIT in the same batch is followed by db_batch_guard(),
 * which fails on the server otherwise, so the COMMIT never runs; a read
 * that must find no row before a write is followed by
 * db_batch_guard_found(), so that the write never runs when it did.
 *
 * Every write after the ledger claim depends on the transaction's own
 * uncommitted claim row (db_batch_own_join(), db_batch_own_from()): on a
 * Galera node a conflict can roll the transaction back while a statement
 * of the batch runs and still answers OK, and the server then runs the
 * rest of the batch in a fresh transaction that the batch's COMMIT
 * commits.  There the claim row does not exist, so those writes change
 * nothing and their guards stop the batch, whatever the statements'
 * order.
 *
 * This file's table (db_sql) holds the SQL text of the whole program:
 * a module names a statement by its enum db_sql and gives its values,
 * which the builder writes by type (db_batch_sql(), db_sql_printf()):
 *
 *   %x  const char *, a string          as a hex literal X'...'
 *   %b  const char *, size_t: bytes     as a hex literal
 *   %n  const char * or NULL            a hex literal, or NULL
 *   %q  const char *: a word of [A-Za-z0-9_.-], as '...' (else refused)
 *   %d int  %ld long  %lld long long  %llu unsigned long long
 *   %t  enum db_sql: a fragment of the table, which has no placeholder
 *   %%  a per cent sign
 *
 * A prepared statement's text (with ? markers) is db_sql(id), as it
 * stands (no placeholder: a per cent sign is itself).
 */
#ifndef IDEMORDERS_DB_BATCH_H
#define IDEMORDERS_DB_BATCH_H

#include <stddef.h>
#include <mysql.h>

#include "buf.h"

struct db;

#define DB_BATCH_MAX		16
#define DB_ROWS_ANY		(-1)	/* any number of rows changed */
#define DB_ROWS_RESULT		(-2)	/* a result set (kept for the caller) */

/* The statements of the program, by the module that runs them. */
enum db_sql {
	/* db_batch.c */
	SQL_COMMIT,
	SQL_SAVEPOINT,
	SQL_TO_SAVEPOINT,
	SQL_GUARD_ROWS,
	SQL_GUARD_FOUND,
	SQL_OWN_JOIN,
	SQL_OWN_FROM,
	SQL_LIST_FIRST,
	SQL_LIST_NEXT,
	SQL_LIST_END,
	SQL_CASE_SKU,
	SQL_CASE_WHEN_QTY,
	SQL_CASE_END,
	SQL_NULL,
	SQL_INT,
	/* store.c */
	SQL_STORE_TOUCH,
	SQL_STORE_GET_ORDER,
	SQL_STORE_BY_KEY,
	SQL_STORE_LIST_FIRST,
	SQL_STORE_LIST_AFTER,
	SQL_STORE_LIST_BEFORE,
	SQL_STORE_LIST_PAGE,
	SQL_STORE_STOCK,
	SQL_STORE_STOCK_LOCK,
	SQL_STORE_STOCK_ORDER,
	SQL_STORE_ORDER,
	SQL_STORE_STOCK_UPDATE,
	SQL_STORE_TAKE_ONE,
	SQL_STORE_TAKE_CASE,
	SQL_STORE_TAKE_WHERE,
	SQL_STORE_TAKE_CHECK,
	SQL_STORE_TAKE_WHEN,
	SQL_STORE_LINES,
	SQL_STORE_LINE,
	SQL_STORE_LINE_NEXT,
	SQL_STORE_CANCEL_ORDER,
	SQL_STORE_CANCEL_ITEMS,
	SQL_STORE_CANCEL_KEY,
	SQL_STORE_RESTOCK_ONE,
	SQL_STORE_RESTOCK_AVAILABLE,
	SQL_STORE_RESTOCK_RESTOCKED,
	SQL_STORE_RESTOCK_WHERE,
	SQL_STORE_ORDER_UPDATE,
	SQL_STORE_CANCEL_SET,
	/* stock_admin.c */
	SQL_STOCK_UPSERT,
	SQL_STOCK_LIST,
	/* ledger.c */
	SQL_LEDGER_INSERT,
	SQL_LEDGER_READ,
	SQL_LEDGER_FINISH,
	SQL_LEDGER_BATCH_INSERT,
	SQL_LEDGER_BATCH_READ,
	SQL_LEDGER_BATCH_FINISH,
	/* events.c */
	SQL_EVENTS_INSERT,
	SQL_EVENTS_CLAIM,
	SQL_EVENTS_CLAIMED,
	SQL_EVENTS_COUNT,
	SQL_EVENTS_COUNT_DELIVERED,
	SQL_EVENTS_COUNT_GONE,
	SQL_EVENTS_COUNT_RETRY,
	SQL_EVENTS_COUNT_WHERE,
	SQL_EVENTS_DELIVERED_SET,
	SQL_EVENTS_GONE_SET,
	SQL_EVENTS_RETRY_SET,
	SQL_EVENTS_RETRY_REST,
	SQL_EVENTS_SETTLE_WHERE,
	SQL_EVENTS_COUNT_MANY,
	SQL_EVENTS_COUNT_GROUP,
	SQL_EVENTS_WHERE,
	SQL_EVENTS_LEASED,
	SQL_EVENTS_OR_LEASED,
	SQL_EVENTS_RELEASE,
	SQL_EVENTS_DISABLE,
	SQL_EVENTS_ENDPOINT,
	SQL_EVENTS_STATS_PENDING,
	SQL_EVENTS_STATS_DEAD,
	SQL_EVENTS_STATS_OUTCOMES,
	/* cmd_events.c */
	SQL_EVENTS_LIST,
	SQL_EVENTS_OPEN,
	SQL_EVENTS_PENDING,
	SQL_EVENTS_DEAD,
	SQL_EVENTS_DELIVERED,
	SQL_EVENTS_ALL,
	SQL_EVENTS_SHOW,
	SQL_EVENTS_REDELIVER,
	SQL_EVENTS_NOT_PENDING,
	SQL_EVENTS_ENABLE,
	/* audit.c */
	SQL_AUDIT_ORDER_WITHOUT_LEDGER,
	SQL_AUDIT_DUPLICATE_ORDER_KEY,
	SQL_AUDIT_SUCCEEDED_WITHOUT_ORDER,
	SQL_AUDIT_CANCELLED_WITHOUT_LEDGER,
	SQL_AUDIT_CANCEL_WITHOUT_CANCELLED_ORDER,
	SQL_AUDIT_RESTOCK_MISMATCH,
	SQL_AUDIT_ITEM_WITHOUT_STOCK,
	SQL_AUDIT_ORDER_WITHOUT_ITEMS,
	SQL_AUDIT_NEGATIVE_STOCK,
	SQL_AUDIT_PROCESSING_COMMITTED,
	SQL_AUDIT_EXPIRES_AT_MISMATCH,
	SQL_AUDIT_ORDER_WITHOUT_EVENT,
	SQL_AUDIT_EVENT_WITHOUT_ORDER,
	SQL_AUDIT_UNKNOWN_STATUS,
	/* expire.c */
	SQL_EXPIRE_SUCCEEDED,
	SQL_EXPIRE_FAILED_FINAL,
	SQL_EXPIRE_PURGE,
	SQL_EXPIRE_PURGE_EVENTS,
	SQL_EXPIRE_COUNT_EVENTS,
	SQL_EXPIRE_COUNT_DUE,
	SQL_EXPIRE_COUNT_PURGE,
	/* migrate.c */
	SQL_MIGRATE_CLAIM,
	SQL_MIGRATE_STATE,
	SQL_MIGRATE_DONE,
	SQL_MIGRATE_UNCLAIM,
	SQL_MIGRATE_LOCK,
	SQL_MIGRATE_UNLOCK,
	SQL_MIGRATE_TABLE,
	SQL_MIGRATE_STATE_COLUMN,
	SQL_N
};

/* An operation's work is undone back to this savepoint. */
#define DB_BATCH_TO_SAVEPOINT	db_sql(SQL_TO_SAVEPOINT)

struct db_batch {
	struct buf		 sql;
	int			 n;		/* statements */
	long long		 expect[DB_BATCH_MAX];
	int			 commit;	/* index of COMMIT, or -1 */
	int			 done;		/* statements that succeeded */
	MYSQL_RES		*res[DB_BATCH_MAX];
	unsigned long long	 insert_id[DB_BATCH_MAX];
	size_t			 start[DB_BATCH_MAX];	/* offset in sql */
	int			 guard[DB_BATCH_MAX];	/* a guard? */
#ifdef ENABLE_FAULT_INJECTION
	int			 pause_after;	/* fault work_pause, or -1 */
	int			 pause_ms;
#endif
};

void	db_batch_init(struct db_batch *);
void	db_batch_reset(struct db_batch *);
void	db_batch_clear(struct db_batch *);
/* Program-made text of the tests and the bench; the service uses the table. */
int	db_batch_add(struct db_batch *, long long, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
int	db_batch_guard(struct db_batch *, long long);
int	db_batch_guard_found(struct db_batch *, long long);
int	db_batch_refused(const struct db *, const struct db_batch *, int);
int	db_batch_commit(struct db_batch *);
int	db_batch_savepoint(struct db_batch *);
int	db_batch_to_savepoint(struct db_batch *);
int	db_batch_own_join(struct db_batch *, unsigned long long);
int	db_batch_own_from(struct db_batch *, unsigned long long);
int	db_batch_run(struct db *, struct db_batch *);

const char	*db_sql(enum db_sql);
int		 db_batch_sql(struct db_batch *, long long, enum db_sql, ...);
int		 db_batch_more(struct db_batch *, enum db_sql, ...);
int		 db_sql_printf(struct buf *, enum db_sql, ...);

#endif
