/*
 * One persistent MariaDB/MySQL connection per worker: session set-up,
 * reconnect, prepared statements kept for the life of the connection,
 * error classes, and the per-attempt wait limits that push a request's
 * remaining deadline into the server.
 */
#ifndef IDEMORDERS_DB_H
#define IDEMORDERS_DB_H

#include <stddef.h>
#include <time.h>
#include <mysql.h>

struct conf;

/*
 * Error classes; every db_* call that can fail returns one of these, and
 * records the class, the server's or the client's error number and its
 * message in struct db at the moment of the failure (see db_failure()).
 */
enum db_err {
	DB_OK = 0,
	DB_DUPLICATE = -1,	/* 1062: a unique key is taken */
	DB_TRANSIENT = -2,	/* deadlock, lock wait or statement timeout,
				   deadline: rolled back, retry */
	DB_LOST = -3,		/* connection lost before COMMIT: nothing
				   committed; reconnect before reuse */
	DB_UNKNOWN = -4,	/* COMMIT sent but its answer lost or
				   ambiguous: read the ledger to know */
	DB_UNAVAILABLE = -5,	/* read-only, too many connections, no
				   statements left, node not ready, out of
				   space (db_out_of_space()): retry later,
				   nothing written */
	DB_ERROR = -6,		/* anything else: a refused statement, a
				   broken schema, a bug */
};

/*
 * Statements prepared once per connection (db_stmt()), known by their
 * text's address: a caller's statement text is a constant of its own
 * (sql_text() of sql.c's table, bench/dbtx's), so the cache needs no
 * names of the floors above.
 */
#define DB_STMT_MAX		16
#define DB_NODES_MAX		16	/* in db_host's list */
#define DB_FAILBACK_S		30	/* then try the first node again */
#define DB_NODE_HOLD_S		5	/* a node that failed is skipped */

/*
 * A node of db_host's list that failed: it could not be reached, or it
 * answered that it cannot serve (not Synced and Primary, out of
 * connections).  A worker skips it for DB_NODE_HOLD_S while another node
 * is not marked.
 */
struct db_mark {
	long long		 at_ms;		/* CLOCK_MONOTONIC; 0: none */
	int			 answered;	/* it answered, not ready */
};

/*
 * A connection and what it knows.  After a failure of class DB_LOST or
 * DB_UNKNOWN (or a node that is not ready) the connection is "broken":
 * its statements stay allocated but are never used again, and the next
 * db_ensure() or db_rollback() closes it.  So a caller may still hand a
 * statement of the failed call to db_stmt_done(), which then does
 * nothing.
 */
struct db {
	const struct conf	*conf;
	MYSQL			*my;		/* NULL when disconnected */
	struct {
		const char	*sql;		/* the text, by address */
		MYSQL_STMT	*st;
	}			 stmts[DB_STMT_MAX];
	int			 broken;	/* drop before the next use */
	int			 read_open;	/* a read-only transaction */
	int			 read_stale;	/* ...an earlier request's */
	unsigned long		 round_trips;	/* statements or batches sent */
	int			 lock_wait_s;	/* session values now set */
	long			 stmt_time_ms;
	struct timespec		 deadline;	/* CLOCK_MONOTONIC; 0: none */

	/* db_host may list several nodes (a Galera cluster). */
	int			 node;		/* index into db_host's list */
	int			 move;		/* take the next node */
	time_t			 moved_at;	/* left the first node then */
	int			 galera;	/* the server is a wsrep node */
	struct db_mark		 marks[DB_NODES_MAX];

	/* The last failure, recorded where it happened. */
	int			 last_class;
	unsigned int		 last_errno;
	char			 last_error[256];
	char			 last_dup_key[65];	/* a 1062's unique
							   key, or "" */
};

void	db_init(struct db *, const struct conf *);
void	db_set_deadline(struct db *, long);
long	db_remaining_ms(const struct db *);
int	db_connect(struct db *);
int	db_ensure(struct db *);
void	db_disconnect(struct db *);
int	db_ping(struct db *);
int	db_nodes_down(const struct db *);
int	db_node_ready(struct db *);
int	db_wait_limits(struct db *);
int	db_read_limits(struct db *);
int	db_exec(struct db *, const char *);
int	db_commit(struct db *);
int	db_rollback(struct db *);
void	db_end_read(struct db *);
void	db_idle(struct db *);
int	db_stmt(struct db *, const char *, MYSQL_STMT **);
int	db_stmt_prepare(struct db *, const char *, size_t, MYSQL_STMT **);
int	db_execute(struct db *, MYSQL_STMT *, MYSQL_BIND *);
int	db_bind_result(struct db *, MYSQL_STMT *, MYSQL_BIND *);
int	db_fetch(struct db *, MYSQL_STMT *);
int	db_fetch_column(struct db *, MYSQL_STMT *, MYSQL_BIND *,
	    unsigned int);
void	db_stmt_done(struct db *, MYSQL_STMT *);
/* The steps of a round trip of one's own (db_batch.c). */
int	db_arm(struct db *);
void	db_bound_io(struct db *);
int	db_conn_fail(struct db *);
int	db_fail(struct db *, int, unsigned int, const char *);
void	db_expected(struct db *);
int	db_dup_key_is(const struct db *, const char *);
int	db_out_of_space(unsigned int, const char *);
const char *db_class_name(int);

void	db_bind_str(MYSQL_BIND *, const char *, size_t);
void	db_bind_i64(MYSQL_BIND *, long long *);
void	db_bind_int(MYSQL_BIND *, int *);
void	db_bind_out_str(MYSQL_BIND *, char *, size_t, unsigned long *,
	    my_bool *);

#endif
