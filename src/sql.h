/*
 * The SQL text of the whole program, in one table (sql.c): a module
 * names a statement by its enum sql_id and gives its values, which the
 * builder writes by type (sql_printf(), and db_batch_sql() for a
 * statement of a batch): every value a number formatted here, a string
 * written as a hex literal or a word checked to be one, so that no
 * request byte can change the SQL:
 *
 *   %x  const char *, a string          as a hex literal X'...'
 *   %b  const char *, size_t: bytes     as a hex literal
 *   %n  const char * or NULL            a hex literal, or NULL
 *   %q  const char *: a word of [A-Za-z0-9_.-], as '...' (else refused)
 *   %d int  %ld long  %lld long long  %llu unsigned long long
 *   %03d, %03ld, ...: the number zero-padded to that many digits
 *   %t  enum sql_id: a fragment of the table, which has no placeholder
 *   %%  a per cent sign
 *
 * A prepared statement's text (with ? markers), or a statement that
 * takes no value, is sql_text(id), as it stands (no placeholder: a per
 * cent sign is itself).  Pure string formatting: no database client.
 */
#ifndef IDEMORDERS_SQL_H
#define IDEMORDERS_SQL_H

#include <stdarg.h>

#include "buf.h"

/* The statements of the program, by the module that runs them. */
enum sql_id {
	/* db.c */
	SQL_DB_ISOLATION,
	SQL_DB_SESSION,
	SQL_DB_GALERA,
	SQL_DB_CAUSAL_READS,
	SQL_DB_NODE_STATE,
	SQL_DB_LIMITS,
	/* db_batch.c */
	SQL_COMMIT,
	SQL_ROLLBACK,
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
	SQL_BATCH_PAUSE,
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

const char	*sql_text(enum sql_id);
int		 sql_printf(struct buf *, enum sql_id, ...);
int		 sql_vprintf(struct buf *, enum sql_id, va_list);

#endif
