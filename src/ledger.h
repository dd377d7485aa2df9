/*
 * The idempotency ledger (table idempotency_records): one row per
 * (principal, operation, key).  The unique key alone decides which
 * request owns a scope.
 */
#ifndef IDEMORDERS_LEDGER_H
#define IDEMORDERS_LEDGER_H

#include <mysql.h>

#include "buf.h"
#include "fingerprint.h"

struct db;
struct db_batch;
struct response;

#define LEDGER_OPERATION_CREATE_ORDER	"create-order"
#define LEDGER_OPERATION_CANCEL_ORDER	"cancel-order"
#define LEDGER_RESOURCE_MAX		64

/* The states of a ledger row (column status). */
enum ledger_status {
	LEDGER_UNKNOWN = 0,	/* a value this program does not know */
	LEDGER_PROCESSING,	/* claimed; never committed */
	LEDGER_SUCCEEDED,
	LEDGER_FAILED_FINAL,
	LEDGER_EXPIRED,		/* a tombstone */
};

struct ledger_scope {
	const char	*principal;
	const char	*operation;
	const char	*key;
};

struct ledger_record {
	enum ledger_status state;
	char		 status[17];	/* the column as read */
	char		 fingerprint[FINGERPRINT_HEX_LEN + 1];
	int		 response_status;	/* 0 when none stored */
	struct buf	 headers;
	struct buf	 body;
	char		 resource_id[LEDGER_RESOURCE_MAX + 1];
	int		 expired;	/* expires_at passed, by the DB clock */
};

int	ledger_insert(struct db *, const struct ledger_scope *, const char *,
	    long);
int	ledger_read(struct db *, const struct ledger_scope *,
	    struct ledger_record *);
int	ledger_finish(struct db *, const struct ledger_scope *,
	    enum ledger_status, const struct response *, const char *);
const char *ledger_status_name(enum ledger_status);
int	ledger_batch_read(struct db_batch *, const struct ledger_scope *);
int	ledger_record_from_result(MYSQL_RES *, struct ledger_record *);
int	ledger_batch_insert(struct db_batch *, const struct ledger_scope *,
	    const char *, long);
int	ledger_batch_finish(struct db_batch *, unsigned long long,
	    enum ledger_status, const struct response *, const char *);
int	ledger_terminal(enum ledger_status);
void	ledger_record_init(struct ledger_record *);
void	ledger_record_clear(struct ledger_record *);

#endif
