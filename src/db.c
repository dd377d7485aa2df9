#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>
#ifdef HAVE_MA_PVIO_H
#include <ma_pvio.h>	/* per-call read/write bounds (MariaDB Connector/C) */
#endif

#include "buf.h"
#include "conf.h"
#include "db.h"
#include "log.h"
#include "sql.h"

#ifndef ER_STATEMENT_TIMEOUT
#define ER_STATEMENT_TIMEOUT	1969
#endif
/* Heard after a server-side timeout, before the client gives up. */
#define DB_IO_MARGIN_MS		500

#ifndef ER_CONNECTION_KILLED
#define ER_CONNECTION_KILLED	1927
#endif
#ifndef ER_TEMP_FILE_WRITE_FAILURE
#define ER_TEMP_FILE_WRITE_FAILURE	1878
#endif

/* errno 28 (ENOSPC) as the server writes it into a message (%M). */
#define DB_ENOSPC		28

/* The class of every error number that is not DB_ERROR. */
static const struct db_errclass {
	unsigned int	 code;
	int		 class;
	int		 drop;		/* the connection is unusable */
} db_errclasses[] = {
	{ ER_DUP_ENTRY,			DB_DUPLICATE,	0 },
	{ ER_LOCK_DEADLOCK,		DB_TRANSIENT,	0 },
	{ ER_LOCK_WAIT_TIMEOUT,		DB_TRANSIENT,	0 },
	{ ER_STATEMENT_TIMEOUT,		DB_TRANSIENT,	0 },
	{ ER_QUERY_INTERRUPTED,		DB_TRANSIENT,	0 },
	{ 3024,	/* MySQL: max_execution_time */	DB_TRANSIENT,	0 },
	{ ER_ERROR_DURING_COMMIT,	DB_TRANSIENT,	1 },	/* Galera 1180 */
	{ ER_SP_DOES_NOT_EXIST,		DB_TRANSIENT,	0 },	/* 1305: a savepoint
						   gone with a rolled-back
						   transaction (Galera) */
	{ CR_CONNECTION_ERROR,		DB_LOST,	1 },
	{ CR_CONN_HOST_ERROR,		DB_LOST,	1 },
	{ CR_UNKNOWN_HOST,		DB_LOST,	1 },
	{ CR_SERVER_GONE_ERROR,		DB_LOST,	1 },
	{ CR_SERVER_LOST,		DB_LOST,	1 },
	{ CR_COMMANDS_OUT_OF_SYNC,	DB_LOST,	1 },
	{ CR_SSL_CONNECTION_ERROR,	DB_LOST,	1 },
	{ 2055,	/* CR_SERVER_LOST_EXTENDED */	DB_LOST,	1 },
	{ ER_CONNECTION_KILLED,		DB_LOST,	1 },
	{ ER_SERVER_SHUTDOWN,		DB_LOST,	1 },
	{ 4031,	/* ER_CLIENT_INTERACTION_TIMEOUT */ DB_LOST,	1 },
	{ ER_CON_COUNT_ERROR,		DB_UNAVAILABLE,	1 },	/* 1040 */
	{ ER_TOO_MANY_USER_CONNECTIONS,	DB_UNAVAILABLE,	1 },	/* 1203 */
	{ ER_USER_LIMIT_REACHED,	DB_UNAVAILABLE,	1 },	/* 1226 */
	{ ER_OUTOFMEMORY,		DB_UNAVAILABLE,	0 },
	{ ER_OUT_OF_RESOURCES,		DB_UNAVAILABLE,	0 },
	{ ER_CANT_CREATE_THREAD,	DB_UNAVAILABLE,	1 },
	{ ER_OPTION_PREVENTS_STATEMENT,	DB_UNAVAILABLE,	0 },	/* 1290 */
	{ 1836,	/* ER_READ_ONLY_MODE */	DB_UNAVAILABLE,	0 },
	{ ER_MAX_PREPARED_STMT_COUNT_REACHED, DB_UNAVAILABLE, 0 }, /* 1461 */
	{ ER_UNKNOWN_COM_ERROR,		DB_UNAVAILABLE,	1 },	/* Galera 1047 */
};

static void	db_node_failed(struct db *, int);

/* The class of error number code (DB_ERROR for any other). */
static int
db_class_of(unsigned int code)
{
	size_t	 i;

	for (i = 0; i < sizeof(db_errclasses) / sizeof(db_errclasses[0]); i++)
		if (db_errclasses[i].code == code)
			return db_errclasses[i].class;
	return code == 0 ? DB_OK : DB_ERROR;
}

/*
 * 1 when a server error says that the database is out of space: a table
 * or tablespace full (1114), the disk full (1021), a temporary file that
 * could not be written (1878), or any error whose message carries errno
 * 28 (ENOSPC), which only the text holds: "Got error 28 ... from storage
 * engine" (1030), "Error writing file ... (errno: 28 ...)" (1026, 3),
 * MySQL's "(Errcode: 28 - ...)".
 */
int
db_out_of_space(unsigned int code, const char *msg)
{
	static const char *const marks[] = { "errno: ", "errcode: ",
	    "error " };
	const char	*p;
	size_t		 i, len;
	char		*end;
	long		 n;

	if (code == ER_RECORD_FILE_FULL || code == ER_DISK_FULL ||
	    code == ER_TEMP_FILE_WRITE_FAILURE)
		return 1;
	if (msg == NULL)
		return 0;
	for (p = msg; *p != '\0'; p++) {
		for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
			len = strlen(marks[i]);
			if (strncasecmp(p, marks[i], len) != 0)
				continue;
			if (p[len] < '0' || p[len] > '9')
				continue;
			n = strtol(p + len, &end, 10);
			if (n == DB_ENOSPC && (*end < '0' || *end > '9'))
				return 1;
		}
	}
	return 0;
}

/* The name of an error class, for logs. */
const char *
db_class_name(int class)
{
	switch (class) {
	case DB_OK:
		return "ok";
	case DB_DUPLICATE:
		return "duplicate";
	case DB_TRANSIENT:
		return "transient";
	case DB_LOST:
		return "lost";
	case DB_UNKNOWN:
		return "outcome-unknown";
	case DB_UNAVAILABLE:
		return "unavailable";
	default:
		return "fatal";
	}
}

/*
 * Copy the name of the unique key from the message of a duplicate key
 * error ("Duplicate entry '...' for key 'NAME'"): "" when there is none.
 * The entry may hold any bytes, so the name is read from the end.
 */
static void
dup_key_of(const char *msg, char *name, size_t size)
{
	const char	*p, *e;
	size_t		 len;

	name[0] = '\0';
	if (msg == NULL)
		return;
	e = strrchr(msg, '\'');
	if (e == NULL || e[1] != '\0')
		return;
	for (p = e; p > msg && p[-1] != '\''; p--)
		;
	if (p == msg || p - 1 - msg < 9 ||
	    strncmp(p - 1 - 9, " for key ", 9) != 0)
		return;
	len = (size_t)(e - p);
	if (len >= size)
		return;
	memcpy(name, p, len);
	name[len] = '\0';
}

/*
 * The failure just recorded was one the caller planned for (a guard that
 * refused): it is not the request's database failure.
 */
void
db_expected(struct db *db)
{
	db->last_class = DB_OK;
}

/*
 * Record a failure where it happens: class (0: derived from code), the
 * error number and message, and for a duplicate key the name of the
 * unique key.  A failure that leaves the connection unusable marks it
 * broken.  Returns the class.
 */
int
db_fail(struct db *db, int class, unsigned int code, const char *msg)
{
	size_t	 i;

	if (class == DB_OK) {
		class = db_class_of(code);
		if (class == DB_OK)	/* a failure without a number */
			class = DB_ERROR;
		/* Out of space: nothing was written; retry later. */
		if (class == DB_ERROR && db_out_of_space(code, msg))
			class = DB_UNAVAILABLE;
	}
	for (i = 0; i < sizeof(db_errclasses) / sizeof(db_errclasses[0]); i++)
		if (db_errclasses[i].code == code && db_errclasses[i].drop)
			db->broken = 1;
	if (class == DB_LOST || class == DB_UNKNOWN)
		db->broken = 1;
	if (db->broken)
		db->move = 1;	/* the next connection tries the next node */
	if (code == ER_UNKNOWN_COM_ERROR)	/* a cluster node not ready */
		db_node_failed(db, 1);
	db->last_class = class;
	db->last_errno = code;
	if (code == ER_DUP_ENTRY)
		dup_key_of(msg, db->last_dup_key, sizeof(db->last_dup_key));
	else
		db->last_dup_key[0] = '\0';
	/* A caller may pass the message already recorded: keep it. */
	if (msg != db->last_error)
		snprintf(db->last_error, sizeof(db->last_error), "%s",
		    msg != NULL && msg[0] != '\0' ? msg : "no error message");
	return class;
}

/* Tell whether the last failure was a duplicate on the unique key name. */
int
db_dup_key_is(const struct db *db, const char *name)
{
	return db->last_errno == ER_DUP_ENTRY && db->last_dup_key[0] != '\0' &&
	    strcmp(db->last_dup_key, name) == 0;
}

/* Record the failure of the last call on the connection. */
int
db_conn_fail(struct db *db)
{
	return db_fail(db, DB_OK, mysql_errno(db->my), mysql_error(db->my));
}

/*
 * Record the failure of the last call on a statement.  A fetch that
 * lost the connection leaves the statement's error at 0 (Connector/C's
 * unbuffered fetch keeps it on the connection): take the connection's.
 */
static int
db_stmt_fail(struct db *db, MYSQL_STMT *st)
{
	if (mysql_stmt_errno(st) == 0 && mysql_errno(db->my) != 0)
		return db_conn_fail(db);
	return db_fail(db, DB_OK, mysql_stmt_errno(st), mysql_stmt_error(st));
}

/* Prepare a connection holder; nothing is opened yet. */
void
db_init(struct db *db, const struct conf *conf)
{
	memset(db, 0, sizeof(*db));
	db->conf = conf;
}

/*
 * Bound every wait of the calls that follow (connect, statements, lock
 * waits, the client's reads and writes) by budget_ms from now: a request
 * (or a job's step) begins.  A read-only transaction an earlier one left
 * open (db_end_read()) is ended before its first statement, in the same
 * round trip when that is a batch: on a Galera node, a read inside an
 * open transaction does not wait for the cluster (wsrep_sync_wait acts
 * only on a statement that opens one), so it could miss what another
 * node committed before this request came.
 */
void
db_set_deadline(struct db *db, long budget_ms)
{
	db->read_stale = db->read_open;
	clock_gettime(CLOCK_MONOTONIC, &db->deadline);
	db->deadline.tv_sec += budget_ms / 1000;
	db->deadline.tv_nsec += (budget_ms % 1000) * 1000000L;
	if (db->deadline.tv_nsec >= 1000000000L) {
		db->deadline.tv_sec++;
		db->deadline.tv_nsec -= 1000000000L;
	}
}

/*
 * Milliseconds left before the deadline (may be negative); LONG_MAX when
 * none was set (the jobs: their statements take as long as they need).
 */
long
db_remaining_ms(const struct db *db)
{
	struct timespec	 now;

	if (db->deadline.tv_sec == 0 && db->deadline.tv_nsec == 0)
		return LONG_MAX;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (db->deadline.tv_sec - now.tv_sec) * 1000 +
	    (db->deadline.tv_nsec - now.tv_nsec) / 1000000;
}

/*
 * Bound the client's next reads and writes on this connection by what is
 * left of the deadline (plus a margin, so that a server-side timeout is
 * heard before the client gives up; the margin alone once it passed).
 * Called before every read of a round trip, so that the waits of the
 * statements of one batch never add up past the deadline.
 */
void
db_bound_io(struct db *db)
{
#ifdef HAVE_MA_PVIO_H
	long	 left = db_remaining_ms(db);
	int	 ms;

	if (db->my == NULL || db->my->net.pvio == NULL)
		return;
	ms = left > 3600000L ? -1 : (int)(left > 0 ? left : 0) +
	    DB_IO_MARGIN_MS;
	db->my->net.pvio->timeout[PVIO_READ_TIMEOUT] = ms;
	db->my->net.pvio->timeout[PVIO_WRITE_TIMEOUT] = ms;
#else
	(void)db;
#endif
}

/*
 * Before a round trip: refuse it once the deadline has passed, else bound
 * its reads and writes by what is left.
 */
int
db_arm(struct db *db)
{
	if (db->my == NULL || db->broken)
		return db_fail(db, DB_LOST, CR_SERVER_GONE_ERROR,
		    "not connected");
	if (db_remaining_ms(db) <= 0)
		return db_fail(db, DB_TRANSIENT, 0, "request deadline passed");
	db_bound_io(db);
	if (db->read_stale) {
		/* An earlier request's read: see db_set_deadline(). */
		db->read_stale = db->read_open = 0;
		db->round_trips++;
		if (mysql_rollback(db->my) != 0)
			return db_conn_fail(db);
		db_bound_io(db);
	}
	return DB_OK;
}

/* Close every cached statement and the connection. */
void
db_disconnect(struct db *db)
{
	size_t	 i;

	for (i = 0; i < DB_STMT_MAX; i++) {
		if (db->stmts[i].st != NULL)
			mysql_stmt_close(db->stmts[i].st);
		db->stmts[i].st = NULL;
	}
	if (db->my != NULL)
		mysql_close(db->my);
	db->my = NULL;
	db->broken = 0;
	db->read_open = db->read_stale = 0;
	db->lock_wait_s = 0;
	db->stmt_time_ms = 0;
}

/*
 * Node n of db_host's comma-separated list ("host[:port],..."), into host
 * (size bytes) and *port; returns how many nodes the list has.
 */
static int
db_node(const struct conf *c, int n, char *host, size_t size,
    unsigned int *port)
{
	const char	*p = c->db_host, *end, *colon;
	size_t		 len;
	int		 i;

	for (i = 0; p != NULL && *p != '\0'; i++) {
		end = strchr(p, ',');
		len = end != NULL ? (size_t)(end - p) : strlen(p);
		if (i == n) {
			colon = memchr(p, ':', len);
			*port = c->db_port;
			if (colon != NULL) {
				*port = (unsigned int)strtoul(colon + 1, NULL,
				    10);
				len = (size_t)(colon - p);
			}
			snprintf(host, size, "%.*s", (int)len, p);
		}
		p = end != NULL ? end + 1 : NULL;
		if (i + 1 == DB_NODES_MAX)
			return DB_NODES_MAX;
	}
	return i > 0 ? i : 1;
}

/* How many nodes db_host lists (1 with db_socket). */
static int
db_nodes(const struct db *db)
{
	char		 host[256];
	unsigned int	 port;

	if (db->conf->db_socket != NULL)
		return 1;
	return db_node(db->conf, 0, host, sizeof(host), &port);
}

/* CLOCK_MONOTONIC in milliseconds. */
static long long
db_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether node i failed less than DB_NODE_HOLD_S before now. */
static int
db_marked(const struct db *db, int i, long long now)
{
	return db->marks[i].at_ms != 0 &&
	    now - db->marks[i].at_ms < DB_NODE_HOLD_S * 1000LL;
}

/*
 * The node in use failed: it could not be reached (answered 0), or it
 * answered that it cannot serve (1).  Only with several nodes: a single
 * node is always tried.
 */
static void
db_node_failed(struct db *db, int answered)
{
	if (db->conf == NULL || db_nodes(db) == 1)
		return;
	db->marks[db->node].at_ms = db_now_ms();
	db->marks[db->node].answered = answered;
}

/*
 * 1 when db_host lists several nodes and each of them failed less than
 * DB_NODE_HOLD_S ago (in this request or just before it): trying again
 * now would only wait for them once more.
 */
int
db_nodes_down(const struct db *db)
{
	long long	 now = db_now_ms();
	int		 i, n;

	n = db_nodes(db);
	if (n == 1)
		return 0;
	for (i = 0; i < n; i++)
		if (!db_marked(db, i, now))
			return 0;
	return 1;
}

/*
 * Choose the node of the next connection: the same one, the next one
 * after a failure that broke the connection, or the first (preferred)
 * one again DB_FAILBACK_S after leaving it; a node that failed less than
 * DB_NODE_HOLD_S ago is passed over for the next one that did not.  When
 * all did, the one that failed longest ago among those that answered
 * (a node out of the Primary component answers at once, and is the one
 * to come back when its partition heals), else among all: a node that
 * cannot be reached costs a connect timeout each time it is tried.
 */
static int
db_pick_node(struct db *db)
{
	long long	 now;
	int		 i, k, n;

	n = db_nodes(db);
	if (n == 1)
		return 0;
	if (db->move)
		db->node = (db->node + 1) % n;
	else if (db->node != 0 && time(NULL) - db->moved_at >= DB_FAILBACK_S)
		db->node = 0;
	db->move = 0;
	now = db_now_ms();
	for (i = 0; i < n; i++)
		if (!db_marked(db, (db->node + i) % n, now))
			break;
	if (i < n)
		db->node = (db->node + i) % n;
	else {
		for (k = 0, i = 1; i < n; i++)
			if (db->marks[i].answered > db->marks[k].answered ||
			    (db->marks[i].answered == db->marks[k].answered &&
			    db->marks[i].at_ms < db->marks[k].at_ms))
				k = i;
		db->node = k;
	}
	if (db->node == 0)
		db->moved_at = 0;
	else if (db->moved_at == 0)
		db->moved_at = time(NULL);
	return n;
}

/* A name lookup of its own, owned by the resolver's thread once started. */
struct db_lookup {
	struct gaicb	 cb;
	struct addrinfo	 hints;
	char		 name[256];
};

/*
 * Resolve host into a numeric address (addr, size bytes) within ms
 * milliseconds, so that a name in db_host waits no longer than the
 * connect itself (the system resolver's own timeouts may be far longer).
 * An address, or "localhost" (the server's default unix socket), is kept
 * as it is.  A lookup still running when the time is up is cancelled;
 * one that cannot be is left, with its memory, to the resolver's thread.
 * Returns DB_OK or DB_LOST, recorded.
 */
static int
db_resolve(struct db *db, const char *host, long ms, char *addr, size_t size)
{
	struct db_lookup	*lk;
	struct gaicb		*list[1];
	struct timespec		 ts, end, now;
	unsigned char		 bin[sizeof(struct in6_addr)];
	char			 why[320];
	int			 rc;

	if (strcmp(host, "localhost") == 0 ||
	    inet_pton(AF_INET, host, bin) == 1 ||
	    inet_pton(AF_INET6, host, bin) == 1) {
		snprintf(addr, size, "%s", host);
		return DB_OK;
	}
	lk = calloc(1, sizeof(*lk));
	if (lk == NULL)
		return db_fail(db, DB_LOST, CR_OUT_OF_MEMORY, "out of memory");
	snprintf(lk->name, sizeof(lk->name), "%s", host);
	lk->hints.ai_family = AF_UNSPEC;
	lk->hints.ai_socktype = SOCK_STREAM;
	lk->cb.ar_name = lk->name;
	lk->cb.ar_request = &lk->hints;
	list[0] = &lk->cb;
	rc = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	if (rc != 0) {
		free(lk);
		snprintf(why, sizeof(why), "cannot look up %s: %s", host,
		    gai_strerror(rc));
		return db_fail(db, DB_LOST, CR_UNKNOWN_HOST, why);
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while ((rc = gai_error(&lk->cb)) == EAI_INPROGRESS) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		ts.tv_sec = end.tv_sec - now.tv_sec;
		ts.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (ts.tv_nsec < 0) {
			ts.tv_sec--;
			ts.tv_nsec += 1000000000L;
		}
		if (ts.tv_sec < 0)
			break;
		gai_suspend((const struct gaicb *const *)list, 1, &ts);
	}
	if (rc == EAI_INPROGRESS) {
		if (gai_cancel(&lk->cb) == EAI_CANCELED)
			free(lk);
		snprintf(why, sizeof(why), "looking up %s took longer than "
		    "%ld ms", host, ms);
		return db_fail(db, DB_LOST, CR_UNKNOWN_HOST, why);
	}
	if (rc != 0 || lk->cb.ar_result == NULL || getnameinfo(
	    lk->cb.ar_result->ai_addr, lk->cb.ar_result->ai_addrlen, addr,
	    (socklen_t)size, NULL, 0, NI_NUMERICHOST) != 0) {
		snprintf(why, sizeof(why), "cannot look up %s: %s", host,
		    rc != 0 ? gai_strerror(rc) : "no address");
		if (lk->cb.ar_result != NULL)
			freeaddrinfo(lk->cb.ar_result);
		free(lk);
		return db_fail(db, DB_LOST, CR_UNKNOWN_HOST, why);
	}
	freeaddrinfo(lk->cb.ar_result);
	free(lk);
	return DB_OK;
}

/*
 * On a Galera node, whether it may take work: Synced, and part of the
 * Primary component.  DB_OK, or DB_UNAVAILABLE with the reason (a node
 * that is joining, donating or cut off from the quorum).  Any other
 * server is always ready.
 */
int
db_node_ready(struct db *db)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	char		 why[200];
	int		 rc;

	if (!db->galera)
		return DB_OK;
	rc = db_arm(db);
	if (rc != DB_OK)
		return rc;
	db->round_trips++;
	if (mysql_query(db->my, sql_text(SQL_DB_NODE_STATE)) != 0) {
		rc = db_conn_fail(db);
		/*
		 * With causal reads on, a node outside the Primary component
		 * fails this read itself: its causal wait cannot be served
		 * (1205; the status table takes no row lock).  That is a node
		 * that cannot serve, not a busy database: move on.
		 */
		if (db->last_errno == ER_LOCK_WAIT_TIMEOUT) {
			rc = db_fail(db, DB_UNAVAILABLE, ER_UNKNOWN_COM_ERROR,
			    "cluster node cannot serve causal reads (not in "
			    "the Primary component)");
			db->broken = db->move = 1;
		}
		return rc;
	}
	res = mysql_store_result(db->my);
	if (res == NULL)
		return db_conn_fail(db);
	row = mysql_fetch_row(res);
	rc = DB_OK;
	if (row == NULL || row[0] == NULL || row[1] == NULL ||
	    strcmp(row[0], "Synced") != 0 || strcmp(row[1], "Primary") != 0) {
		snprintf(why, sizeof(why), "cluster node is %s, %s",
		    row != NULL && row[0] != NULL ? row[0] : "in no state",
		    row != NULL && row[1] != NULL ? row[1] : "not Primary");
		rc = db_fail(db, DB_UNAVAILABLE, ER_UNKNOWN_COM_ERROR, why);
		db->broken = db->move = 1;
	}
	mysql_free_result(res);
	return rc;
}

/*
 * A TCP link to the server that goes silent (a network cut drops its
 * packets; nothing resets it) fails within db_connect_timeout instead of
 * holding a request for its whole deadline: what is sent must be
 * acknowledged within it (TCP_USER_TIMEOUT), and while an answer is
 * awaited, keepalive probes ask the server's host (its kernel answers
 * them however long a statement runs) from half of it on.  Best effort:
 * a failure leaves the kernel's defaults.
 */
static void
db_watch_link(struct db *db)
{
	unsigned int	 ms = (unsigned int)db->conf->db_connect_timeout_ms;
	int		 fd = (int)mysql_get_socket(db->my), on = 1;
	int		 idle = (int)(ms / 2000), intvl = 1, cnt;

	if (fd < 0)
		return;
	if (idle < 1)
		idle = 1;
	cnt = (int)(ms / 1000) - idle;
	if (cnt < 1)
		cnt = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle,
	    sizeof(idle)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
	    sizeof(intvl)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms,
	    sizeof(ms)) == -1)
		log_debug("database link watch: %s", strerror(errno));
}

/*
 * Open the connection and set the session up: READ COMMITTED, explicit
 * transactions, UTC, strict SQL; on a Galera node, causal reads
 * (wsrep_sync_wait = 1: every read sees every transaction committed
 * anywhere in the cluster before it) and a node that is Synced and
 * Primary.  The deadline in force bounds it all; in_request tells
 * whether a request's deadline bounds the statements that follow.
 */
static int
db_open(struct db *db, int in_request)
{
	const struct conf	*c = db->conf;
	MYSQL_RES		*res;
	MYSQL_ROW		 row;
	char			 host[256], addr[256];
	unsigned int		 connect_s, port = c->db_port;
	long			 left, ms;
	my_bool			 off = 0;
	int			 rc;

	db_disconnect(db);
	db_pick_node(db);
	left = db_remaining_ms(db);
	if (left <= 0)
		return db_fail(db, DB_TRANSIENT, 0, "request deadline passed");
	ms = c->db_connect_timeout_ms < left ? c->db_connect_timeout_ms : left;
	connect_s = (unsigned int)((ms + 999) / 1000);
	if (c->db_socket == NULL) {
		db_node(c, db->node, host, sizeof(host), &port);
		rc = db_resolve(db, host, ms, addr, sizeof(addr));
		if (rc != DB_OK) {
			db->move = 1;
			db_node_failed(db, 0);
			log_warnx("database connect to %s failed: %s", host,
			    db->last_error);
			return rc;
		}
	}
	db->my = mysql_init(NULL);
	if (db->my == NULL)
		return db_fail(db, DB_UNAVAILABLE, CR_OUT_OF_MEMORY,
		    "out of memory");
	mysql_options(db->my, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
#ifndef HAVE_MA_PVIO_H
	if (in_request) {
		/* Without per-call bounds: the whole deadline, once. */
		unsigned int rw_s = (unsigned int)((c->request_deadline_ms +
		    999) / 1000) + 1;

		mysql_options(db->my, MYSQL_OPT_READ_TIMEOUT, &rw_s);
		mysql_options(db->my, MYSQL_OPT_WRITE_TIMEOUT, &rw_s);
	}
#endif
	mysql_options(db->my, MYSQL_OPT_RECONNECT, &off);
	mysql_options(db->my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (mysql_real_connect(db->my, c->db_socket ? NULL : addr,
	    c->db_user, c->db_password, c->db_name,
	    c->db_socket ? 0 : port, c->db_socket,
	    CLIENT_MULTI_STATEMENTS) == NULL) {
		rc = db_conn_fail(db);
		if (rc == DB_ERROR || rc == DB_TRANSIENT)
			rc = db_fail(db, DB_LOST, db->last_errno,
			    db->last_error);
		db->move = 1;
		db_node_failed(db, rc == DB_UNAVAILABLE);
		log_warnx("database connect to %s failed: %s (%u)",
		    c->db_socket ? c->db_socket : host, db->last_error,
		    db->last_errno);
		db_disconnect(db);
		return rc;
	}
	if (c->db_socket == NULL)
		db_watch_link(db);
	rc = db_exec(db, sql_text(SQL_DB_ISOLATION));
	if (rc == DB_OK)
		rc = db_exec(db, sql_text(SQL_DB_SESSION));
	/* A Galera node?  (@@wsrep_on is OFF, or unknown, elsewhere.) */
	db->galera = 0;
	if (rc == DB_OK)
		db->round_trips++;
	if (rc == DB_OK &&
	    mysql_query(db->my, sql_text(SQL_DB_GALERA)) == 0) {
		res = mysql_store_result(db->my);
		if (res != NULL) {
			row = mysql_fetch_row(res);
			db->galera = row != NULL && row[0] != NULL &&
			    strcmp(row[0], "1") == 0;
			mysql_free_result(res);
		}
	}
	if (rc == DB_OK && db->galera)
		rc = db_exec(db, sql_text(SQL_DB_CAUSAL_READS));
	if (rc == DB_OK)
		rc = db_node_ready(db);
	if (rc != DB_OK) {
		log_warnx("database session set-up on %s failed: %s (%u)",
		    c->db_socket ? c->db_socket : host, db->last_error,
		    db->last_errno);
		db->move = 1;
		db_node_failed(db, rc == DB_UNAVAILABLE);
		db_disconnect(db);
		return rc;
	}
	db->marks[db->node].at_ms = 0;
	return DB_OK;
}

/*
 * Connect and set the session up within the smaller of
 * db_connect_timeout and what is left of the deadline (outside a
 * request, db_connect_timeout alone): a server that stalls after the
 * handshake never holds a worker for longer.
 */
int
db_connect(struct db *db)
{
	struct timespec	 saved = db->deadline;
	long		 left = db_remaining_ms(db);
	int		 rc;

	if (left > db->conf->db_connect_timeout_ms)
		db_set_deadline(db, db->conf->db_connect_timeout_ms);
	rc = db_open(db, left != LONG_MAX);
	db->deadline = saved;
	return rc;
}

/* Connect if not connected, or if the connection broke. */
int
db_ensure(struct db *db)
{
	if (db->broken)
		db_disconnect(db);
	if (db->my != NULL)
		return DB_OK;
	return db_connect(db);
}

/*
 * Check that the server answers (and, on a Galera node, that it is
 * Synced and Primary), reconnecting once if it went away.
 */
int
db_ping(struct db *db)
{
	int	 rc, tries;

	for (tries = 0; tries < 2; tries++) {
		rc = db_ensure(db);
		if (rc != DB_OK)
			return rc;
		rc = db_arm(db);
		if (rc != DB_OK)
			return rc;
		db->round_trips++;
		if (mysql_ping(db->my) == 0)
			return db_node_ready(db);
		rc = db_conn_fail(db);
		if (rc != DB_LOST)
			return rc;
	}
	return rc;
}

/* Set the session's lock wait (whole seconds) and statement time (ms). */
static int
db_session_limits(struct db *db, int lock_s, long stmt_ms)
{
	struct buf	 sql;
	int		 rc;

	if (lock_s == db->lock_wait_s && stmt_ms == db->stmt_time_ms)
		return DB_OK;
	buf_init(&sql, 256);
	if (sql_printf(&sql, SQL_DB_LIMITS, lock_s, stmt_ms / 1000,
	    stmt_ms % 1000) == -1)
		rc = db_fail(db, DB_ERROR, CR_OUT_OF_MEMORY, "out of memory");
	else
		rc = db_exec(db, sql.p);
	buf_free(&sql);
	if (rc != DB_OK)
		return rc;
	db->lock_wait_s = lock_s;
	db->stmt_time_ms = stmt_ms;
	return DB_OK;
}

/*
 * Bound the server-side waits of the next statements by what is left of
 * the deadline: innodb_lock_wait_timeout (whole seconds, rounded down, at
 * most lock_wait_timeout, 0 when less than a second is left) and
 * max_statement_time.  Values are rounded down to whole seconds above one
 * second, so that the common case sends nothing.
 */
int
db_wait_limits(struct db *db)
{
	long	 left, stmt_ms, cap_s;
	int	 lock_s;

	left = db_remaining_ms(db);
	if (left <= 0)
		return db_fail(db, DB_TRANSIENT, 0, "request deadline passed");
	stmt_ms = left >= 1000 ? left / 1000 * 1000 : left;
	cap_s = db->conf->lock_wait_timeout_ms / 1000;
	lock_s = (int)(stmt_ms / 1000 < cap_s ? stmt_ms / 1000 : cap_s);
	return db_session_limits(db, lock_s, stmt_ms);
}

/*
 * Before a read: the server-side statement time left by an earlier
 * request must not be shorter than this read's deadline (by more than the
 * second that db_wait_limits() rounds off).  Reads take no row locks, and
 * the client's own timeouts bound them, so a longer limit is left as it
 * is (no round trip).
 */
int
db_read_limits(struct db *db)
{
	long	 left, stmt_ms;

	left = db_remaining_ms(db);
	if (left <= 0)
		return db_fail(db, DB_TRANSIENT, 0, "request deadline passed");
	if (db->stmt_time_ms == 0 || db->stmt_time_ms + 1000 >= left)
		return DB_OK;
	stmt_ms = left >= 1000 ? (left + 999) / 1000 * 1000 : left;
	return db_session_limits(db, db->lock_wait_s, stmt_ms);
}

/* Run a statement without parameters or results. */
int
db_exec(struct db *db, const char *sql)
{
	MYSQL_RES	*res;
	int		 rc;

	rc = db_arm(db);
	if (rc != DB_OK)
		return rc;
	db->round_trips++;
	if (mysql_query(db->my, sql) != 0)
		return db_conn_fail(db);
	res = mysql_store_result(db->my);
	if (res != NULL)
		mysql_free_result(res);
	else if (mysql_field_count(db->my) != 0)
		return db_conn_fail(db);
	return DB_OK;
}

/*
 * Commit the open transaction.  A COMMIT that fails with a deadlock
 * (Galera: certification failed) rolled back; any other failure leaves
 * the outcome unknown (DB_UNKNOWN): the caller reads the ledger.
 */
int
db_commit(struct db *db)
{
	int	 rc;

	rc = db_arm(db);
	if (rc != DB_OK)
		return rc;	/* nothing sent */
	db->read_open = db->read_stale = 0;
	db->round_trips++;
	if (mysql_commit(db->my) == 0)
		return DB_OK;
	rc = db_conn_fail(db);
	if (rc == DB_TRANSIENT && db->last_errno == ER_LOCK_DEADLOCK)
		return rc;
	return db_fail(db, DB_UNKNOWN, db->last_errno, db->last_error);
}

/*
 * Roll the open transaction back.  A connection that cannot roll back,
 * or that broke, is dropped, which makes the server roll back instead.
 * The failure that led here stays the recorded one.
 */
int
db_rollback(struct db *db)
{
	db->read_open = db->read_stale = 0;
	if (db->my == NULL)
		return DB_OK;
	if (!db->broken) {
		if (db_remaining_ms(db) > 0) {
			db_arm(db);
			db->round_trips++;
			if (mysql_rollback(db->my) == 0)
				return DB_OK;
		}
		log_debug("rollback failed (%u): dropping the connection",
		    mysql_errno(db->my));
	}
	db_disconnect(db);
	return DB_LOST;
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
	if (db->my != NULL && !db->broken)
		db->read_open = 1;
}

/*
 * The worker is idle: end a read-only transaction left open, so that DDL
 * never waits on it, and drop a broken connection.
 */
void
db_idle(struct db *db)
{
	if (db->broken)
		db_disconnect(db);
	else if (db->read_open) {
		db_set_deadline(db, db->conf->db_connect_timeout_ms);
		db_rollback(db);
	}
}

/*
 * Prepare sql as a statement of its own (the caller closes it with
 * mysql_stmt_close()).  The error is recorded before anything else.
 */
int
db_stmt_prepare(struct db *db, const char *sql, size_t len, MYSQL_STMT **out)
{
	MYSQL_STMT	*st;
	int		 rc;

	*out = NULL;
	rc = db_arm(db);
	if (rc != DB_OK)
		return rc;
	st = mysql_stmt_init(db->my);
	if (st == NULL)
		return db_fail(db, DB_UNAVAILABLE, CR_OUT_OF_MEMORY,
		    "out of memory");
	db->round_trips++;
	if (mysql_stmt_prepare(st, sql, (unsigned long)len) != 0) {
		rc = db_stmt_fail(db, st);
		log_warnx("prepare failed: %s (%u): %s", db->last_error,
		    db->last_errno, sql);
		mysql_stmt_close(st);
		return rc;
	}
	*out = st;
	return DB_OK;
}

/*
 * Set *out to the prepared statement of the constant text sql, preparing
 * it on first use on this connection.  The connection keeps it, under
 * the text's address, in one of DB_STMT_MAX slots.
 */
int
db_stmt(struct db *db, const char *sql, MYSQL_STMT **out)
{
	size_t	 i;
	int	 rc;

	for (i = 0; i < DB_STMT_MAX; i++)
		if (db->stmts[i].sql == sql || db->stmts[i].sql == NULL)
			break;
	if (i == DB_STMT_MAX)
		return db_fail(db, DB_ERROR, CR_OUT_OF_MEMORY, "too many "
		    "prepared statements for one connection");
	if (db->stmts[i].st != NULL && !db->broken) {
		*out = db->stmts[i].st;
		return DB_OK;
	}
	rc = db_stmt_prepare(db, sql, strlen(sql), out);
	if (rc == DB_OK) {
		db->stmts[i].sql = sql;
		db->stmts[i].st = *out;
	}
	return rc;
}

/* Bind the parameters and execute; results are read by db_fetch(). */
int
db_execute(struct db *db, MYSQL_STMT *st, MYSQL_BIND *params)
{
	int	 rc;

	rc = db_arm(db);
	if (rc != DB_OK)
		return rc;
	if (params != NULL && mysql_stmt_bind_param(st, params) != 0)
		return db_stmt_fail(db, st);
	db->round_trips++;
	if (mysql_stmt_execute(st) != 0)
		return db_stmt_fail(db, st);
	return DB_OK;
}

/* Bind the result columns of an executed statement. */
int
db_bind_result(struct db *db, MYSQL_STMT *st, MYSQL_BIND *r)
{
	if (mysql_stmt_bind_result(st, r) != 0)
		return db_stmt_fail(db, st);
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
		return db_stmt_fail(db, st);
	}
}

/* Fetch column col of the current row again into b (a larger buffer). */
int
db_fetch_column(struct db *db, MYSQL_STMT *st, MYSQL_BIND *b, unsigned int col)
{
	if (mysql_stmt_fetch_column(st, b, col, 0) != 0)
		return db_stmt_fail(db, st);
	return DB_OK;
}

/*
 * Release the result of a statement.  On a broken connection nothing is
 * touched: the statement is closed with the connection.
 */
void
db_stmt_done(struct db *db, MYSQL_STMT *st)
{
	if (st != NULL && db->my != NULL && !db->broken)
		mysql_stmt_free_result(st);
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
