/*
 * One persistent MariaDB/MySQL connection per worker: session set-up,
 * reconnect, prepared statements kept for the life of the connection,
 * error classes, and the per-attempt wait limits that push a request's
 * remaining deadline into the server.
 */
#ifndef IDEMORDERS_DB_H
#define IDEMORDERS_DB_H

#include <stddef.h>
#include <mysql.h>

struct conf;

/* Error classes; every db_* call returns one of these. */
enum db_err {
	DB_OK = 0,
	DB_DUPLICATE = -1,	/* 1062: the unique key is taken */
	DB_TRANSIENT = -2,	/* deadlock, lock wait or statement timeout */
	DB_LOST = -3,		/* connection gone; reconnect before reuse */
	DB_ERROR = -4,		/* anything else: a bug or a broken schema */
};

/* Statements prepared once per connection. */
enum db_stmt_id {
	DBS_LEDGER_INSERT = 0,
	DBS_LEDGER_READ,
	DBS_LEDGER_FINISH,
	DBS_ORDER_INSERT,
	DBS_ITEM_INSERT,
	DBS_STOCK_DECREASE,
	DBS_ORDER_GET,
	DBS_STOCK_LOCK,		/* + n - 1 for n SKUs, n <= DB_STOCK_LOCK_CACHED */
	DBS_COUNT = DBS_STOCK_LOCK + 16,
};
#define DB_STOCK_LOCK_CACHED	16

struct db {
	const struct conf	*conf;
	MYSQL			*my;		/* NULL when disconnected */
	MYSQL_STMT		*stmts[DBS_COUNT];
	long			 connect_budget_ms;	/* 0: db_connect_timeout */
	int			 read_open;	/* a read-only transaction */
	int			 lock_wait_s;	/* session values now set */
	long			 stmt_time_ms;
	unsigned int		 last_errno;
	char			 last_error[256];
};

void	db_init(struct db *, const struct conf *);
int	db_connect(struct db *);
int	db_ensure(struct db *);
void	db_disconnect(struct db *);
int	db_ping(struct db *);
int	db_wait_limits(struct db *, long);
int	db_exec(struct db *, const char *);
int	db_commit(struct db *);
int	db_rollback(struct db *);
void	db_end_read(struct db *);
void	db_idle(struct db *);
MYSQL_STMT *db_stmt(struct db *, enum db_stmt_id, const char *);
int	db_execute(struct db *, MYSQL_STMT *, MYSQL_BIND *);
int	db_fetch(struct db *, MYSQL_STMT *);
int	db_stmt_error(struct db *, MYSQL_STMT *);
int	db_error(struct db *);

void	db_bind_str(MYSQL_BIND *, const char *, size_t);
void	db_bind_i64(MYSQL_BIND *, long long *);
void	db_bind_int(MYSQL_BIND *, int *);
void	db_bind_out_str(MYSQL_BIND *, char *, size_t, unsigned long *,
	    my_bool *);

#endif
