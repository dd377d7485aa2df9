/*
 * The idempotency ledger (table idempotency_records): one row per
 * (principal, operation, key).  The unique key alone decides which
 * request owns a scope.
 */
#ifndef IDEMORDERS_LEDGER_H
#define IDEMORDERS_LEDGER_H

#include "buf.h"
#include "fingerprint.h"

struct db;
struct response;

#define LEDGER_OPERATION_CREATE_ORDER	"create-order"
#define LEDGER_RESOURCE_MAX		64

struct ledger_scope {
	const char	*principal;
	const char	*operation;
	const char	*key;
};

struct ledger_record {
	char		 status[17];
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
int	ledger_finish(struct db *, const struct ledger_scope *, const char *,
	    const struct response *, const char *);
void	ledger_record_init(struct ledger_record *);
void	ledger_record_clear(struct ledger_record *);

#endif
