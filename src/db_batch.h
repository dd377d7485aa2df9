/*
 * A batch: statements sent together in one round trip on a connection
 * of db.c.  The SQL is written by this program (sql.c), every value in
 * it a number formatted there or a string written as a hex literal, so
 * that no request byte can change it.  The server runs the statements
 * in order and stops at the first that fails; db_batch_run() reads and
 * checks every result.  A statement that must change an exact number of
 * rows before a COMMIT in the same batch is followed by
 * db_batch_guard(), which fails on the server otherwise, so the COMMIT
 * never runs; a read that must find no row before a write is followed
 * by db_batch_guard_found(), so that the write never runs when it did.
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
 * The statements are those of the table of sql.c, with their values
 * (sql.h names the placeholders): db_batch_sql() begins a statement,
 * db_batch_more() appends a fragment to it.
 */
#ifndef IDEMORDERS_DB_BATCH_H
#define IDEMORDERS_DB_BATCH_H

#include <stddef.h>
#include <mysql.h>

#include "buf.h"
#include "sql.h"

struct db;

#define DB_BATCH_MAX		16
#define DB_ROWS_ANY		(-1)	/* any number of rows changed */
#define DB_ROWS_RESULT		(-2)	/* a result set (kept for the caller) */

/* An operation's work is undone back to this savepoint. */
#define DB_BATCH_TO_SAVEPOINT	sql_text(SQL_TO_SAVEPOINT)

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

int	db_batch_sql(struct db_batch *, long long, enum sql_id, ...);
int	db_batch_more(struct db_batch *, enum sql_id, ...);

#endif
