#include "config.h"

#include <stdarg.h>
#include <string.h>

#include "buf.h"
#include "sql.h"
#include "text.h"

/* Byte-exact equality of two string columns, whatever their collation. */
#define SAME(a, b)	"CAST(" a " AS BINARY) = CAST(" b " AS BINARY)"

/*
 * The quantity of each SKU in cancelled orders: one scan of orders in
 * primary key order, the items of each cancelled one by their primary
 * key (order_id, sku), summed by SKU (a temporary table of one row a
 * SKU).  STRAIGHT_JOIN keeps that order: from the items' SKU index, the
 * sum would look up the order of every item ever sold, one random read
 * each once orders outgrow the buffer pool.
 */
#define CANCELLED_QTY	"(SELECT i.sku, SUM(i.qty) AS qty FROM orders o " \
	"STRAIGHT_JOIN order_items i ON i.order_id = o.id " \
	"WHERE o.status = 'CANCELLED' GROUP BY i.sku)"

/* The SQL text of the program (sql.h names the placeholders). */
static const char *const sql_table[SQL_N] = {
	/*
	 * The session (db.c): set up at connect (READ COMMITTED, explicit
	 * transactions, UTC, strict SQL; whether the server is a Galera
	 * node, and then causal reads); a Galera node's state; the
	 * server-side waits bounded by what is left of a deadline (whole
	 * seconds of lock wait, a statement time in seconds to the
	 * millisecond).
	 */
	[SQL_DB_ISOLATION] = "SET SESSION TRANSACTION ISOLATION LEVEL "
	    "READ COMMITTED",
	[SQL_DB_SESSION] = "SET SESSION autocommit = 0, "
	    "time_zone = '+00:00', "
	    "sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'",
	[SQL_DB_GALERA] = "SELECT @@wsrep_on",
	[SQL_DB_CAUSAL_READS] = "SET SESSION wsrep_sync_wait = 1",
	[SQL_DB_NODE_STATE] = "SELECT "
	    "MAX(IF(VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT', "
	    "VARIABLE_VALUE, NULL)), "
	    "MAX(IF(VARIABLE_NAME = 'WSREP_CLUSTER_STATUS', "
	    "VARIABLE_VALUE, NULL)) FROM information_schema.GLOBAL_STATUS "
	    "WHERE VARIABLE_NAME IN ('WSREP_LOCAL_STATE_COMMENT', "
	    "'WSREP_CLUSTER_STATUS')",
	[SQL_DB_LIMITS] = "SET SESSION innodb_lock_wait_timeout = %d, "
	    "max_statement_time = %ld.%03ld",

	/* A batch's own statements and fragments (db_batch.c). */
	[SQL_COMMIT] = "COMMIT",
	[SQL_ROLLBACK] = "ROLLBACK",
	[SQL_SAVEPOINT] = "SAVEPOINT order_work",
	[SQL_TO_SAVEPOINT] = "ROLLBACK TO SAVEPOINT order_work",
	/*
	 * The largest BIGINT UNSIGNED plus one raises 1690 (an error, not
	 * a warning, in a SET): see db_batch_guard().
	 */
	[SQL_GUARD_ROWS] = "SET @idemorders_guard = "
	    "18446744073709551615 + (ROW_COUNT() <> %lld)",
	[SQL_GUARD_FOUND] = "SET @idemorders_guard = "
	    "18446744073709551615 + (FOUND_ROWS() <> %lld)",
	[SQL_OWN_JOIN] = " JOIN idempotency_records own ON own.id = %llu "
	    "AND own.status = 'PROCESSING'",
	[SQL_OWN_FROM] = " FROM idempotency_records WHERE id = %llu "
	    "AND status = 'PROCESSING'",
	/* A list of strings, "(X'..', X'..')"; a CASE on a stock row's SKU. */
	[SQL_LIST_FIRST] = "(%x",
	[SQL_LIST_NEXT] = ", %x",
	[SQL_LIST_END] = ")",
	[SQL_CASE_SKU] = " CASE s.sku",
	[SQL_CASE_WHEN_QTY] = " WHEN %x THEN %d",
	[SQL_CASE_END] = " END",
	[SQL_NULL] = "NULL",
	[SQL_INT] = "%d",
	/* Fault work_pause: a pause in seconds to the millisecond. */
	[SQL_BATCH_PAUSE] = "DO SLEEP(%d.%03d)",

	/*
	 * Orders and stock (store.c).  Prepared: bump the version of a
	 * stock row a rejection was judged on; one order with its items;
	 * the order a key created; a page of a principal's order ids (from
	 * the index on (principal_id, id): FORCE INDEX, as store_list_ids()
	 * says why) and those orders with their items.
	 */
	[SQL_STORE_TOUCH] = "UPDATE stock SET version = version + 1 "
	    "WHERE sku = ?",
	[SQL_STORE_GET_ORDER] = "SELECT o.status, o.currency, o.amount, "
	    "o.shipping, o.note, DATE_FORMAT(o.created_at, "
	    "'%Y-%m-%dT%H:%i:%sZ'), i.sku, i.qty, i.unit_price, "
	    "DATE_FORMAT(o.cancelled_at, '%Y-%m-%dT%H:%i:%sZ') "
	    "FROM orders o JOIN order_items i ON i.order_id = o.id "
	    "WHERE o.id = ? AND o.principal_id = ? ORDER BY i.sku",
	[SQL_STORE_BY_KEY] = "SELECT id, TIMESTAMPDIFF(SECOND, "
	    "created_at, UTC_TIMESTAMP(6)) FROM orders "
	    "WHERE principal_id = ? AND idempotency_key = ?",
	[SQL_STORE_LIST_FIRST] = "SELECT id FROM orders "
	    "FORCE INDEX (orders_principal_id) WHERE principal_id = ? "
	    "ORDER BY id DESC LIMIT ?",
	[SQL_STORE_LIST_AFTER] = "SELECT id FROM orders "
	    "FORCE INDEX (orders_principal_id) WHERE principal_id = ? "
	    "AND id <= ? ORDER BY id DESC LIMIT ?",
	[SQL_STORE_LIST_BEFORE] = "SELECT id FROM orders "
	    "FORCE INDEX (orders_principal_id) WHERE principal_id = ? "
	    "AND id >= ? ORDER BY id ASC LIMIT ?",
	[SQL_STORE_LIST_PAGE] = "SELECT STRAIGHT_JOIN o.id, o.status, "
	    "o.currency, o.amount, o.shipping, o.note, "
	    "DATE_FORMAT(o.created_at, '%Y-%m-%dT%H:%i:%sZ'), i.sku, i.qty, "
	    "i.unit_price, DATE_FORMAT(o.cancelled_at, '%Y-%m-%dT%H:%i:%sZ') "
	    "FROM orders o FORCE INDEX (orders_principal_id) "
	    "JOIN order_items i ON i.order_id = o.id "
	    "WHERE o.principal_id = ? AND o.id BETWEEN ? AND ? "
	    "ORDER BY o.id DESC, i.sku",
	/*
	 * Batched: the stock rows of a list of SKUs, locked or not; the
	 * order (its FROM is SQL_OWN_FROM); the stock decrease of one SKU
	 * or of several by CASE (after SQL_OWN_JOIN), each row checked
	 * against what the rules were judged on; the items.
	 */
	[SQL_STORE_STOCK] = "SELECT sku, currency, "
	    "unit_price, available FROM stock WHERE sku IN ",
	[SQL_STORE_STOCK_LOCK] = " ORDER BY sku FOR UPDATE",
	[SQL_STORE_STOCK_ORDER] = " ORDER BY sku",
	[SQL_STORE_ORDER] = "INSERT INTO orders (id, principal_id, "
	    "idempotency_key, currency, amount, shipping, note, status, "
	    "created_at) SELECT %llu, %x, %x, %b, %lld, %q, %b, 'CREATED', "
	    "FROM_UNIXTIME(%lld)",
	[SQL_STORE_STOCK_UPDATE] = "UPDATE stock s",
	[SQL_STORE_TAKE_ONE] = " SET s.available = s.available - %d "
	    "WHERE s.sku = %x AND s.available >= %d AND "
	    "s.unit_price = %lld AND s.currency = %b",
	[SQL_STORE_TAKE_CASE] = " SET s.available = s.available - CASE s.sku",
	[SQL_STORE_TAKE_WHERE] = " END WHERE s.sku IN ",
	[SQL_STORE_TAKE_CHECK] = " AND s.currency = %b AND CASE s.sku",
	[SQL_STORE_TAKE_WHEN] = " WHEN %x THEN s.available >= %d AND "
	    "s.unit_price = %lld",
	[SQL_STORE_LINES] = "INSERT INTO order_items "
	    "(order_id, sku, qty, unit_price) ",
	[SQL_STORE_LINE] = "SELECT %llu, %x, %d, %lld",
	[SQL_STORE_LINE_NEXT] = " UNION ALL SELECT %llu, %x, %d, %lld",
	/*
	 * A cancel: the order row, locked; its items with whether each SKU
	 * has a stock row; the order the cancel key already cancelled; the
	 * restock of one SKU or of several (SQL_CASE_*); the order's update.
	 */
	[SQL_STORE_CANCEL_ORDER] = "SELECT status, currency, amount, "
	    "shipping, note, "
	    "DATE_FORMAT(created_at, '%%Y-%%m-%%dT%%H:%%i:%%sZ'), "
	    "UNIX_TIMESTAMP(created_at) FROM orders WHERE id = %llu AND "
	    "principal_id = %x FOR UPDATE",
	[SQL_STORE_CANCEL_ITEMS] = "SELECT i.sku, i.qty, "
	    "i.unit_price, s.sku IS NOT NULL FROM order_items i "
	    "LEFT JOIN stock s ON s.sku = i.sku WHERE i.order_id = %llu "
	    "ORDER BY i.sku",
	[SQL_STORE_CANCEL_KEY] = "SELECT id, TIMESTAMPDIFF(SECOND, "
	    "cancelled_at, UTC_TIMESTAMP(6)) FROM orders WHERE "
	    "principal_id = %x AND cancel_key = %x",
	[SQL_STORE_RESTOCK_ONE] = " SET s.available = "
	    "s.available + %d, s.restocked = s.restocked + %d "
	    "WHERE s.sku = %x",
	[SQL_STORE_RESTOCK_AVAILABLE] = " SET s.available = s.available +",
	[SQL_STORE_RESTOCK_RESTOCKED] = ", s.restocked = s.restocked +",
	[SQL_STORE_RESTOCK_WHERE] = " WHERE s.sku IN ",
	[SQL_STORE_ORDER_UPDATE] = "UPDATE orders o",
	[SQL_STORE_CANCEL_SET] = " SET o.status = 'CANCELLED', "
	    "o.cancelled_at = FROM_UNIXTIME(%lld), o.cancel_reason = %b, "
	    "o.cancel_key = %x WHERE o.id = %llu AND o.status = 'CREATED'",

	[SQL_STOCK_UPSERT] = "INSERT INTO stock "
	    "(sku, currency, unit_price, available) VALUES (?, ?, ?, ?) "
	    "ON DUPLICATE KEY UPDATE currency = VALUES(currency), "
	    "unit_price = VALUES(unit_price), available = VALUES(available)",
	[SQL_STOCK_LIST] = "SELECT sku, currency, unit_price, available "
	    "FROM stock ORDER BY sku",

	/*
	 * The ledger, prepared and batched (every string a hex literal):
	 * the claim of a scope (one PROCESSING row), the fresh read of its
	 * committed row, the update of the caller's PROCESSING row to its
	 * final state with the exact response.
	 */
	[SQL_LEDGER_INSERT] = "INSERT INTO idempotency_records "
	    "(principal_id, operation, idem_key, request_fingerprint, status, "
	    "created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, "
	    "'PROCESSING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), "
	    "UTC_TIMESTAMP(6) + INTERVAL ? SECOND)",
	[SQL_LEDGER_READ] = "SELECT status, request_fingerprint, "
	    "COALESCE(response_status, 0), response_headers, response_body, "
	    "resource_id, expires_at <= UTC_TIMESTAMP(6) "
	    "FROM idempotency_records "
	    "WHERE principal_id = ? AND operation = ? AND idem_key = ?",
	[SQL_LEDGER_FINISH] = "UPDATE idempotency_records SET status = ?, "
	    "response_status = ?, response_headers = ?, response_body = ?, "
	    "resource_id = ?, updated_at = UTC_TIMESTAMP(6) "
	    "WHERE principal_id = ? AND operation = ? AND idem_key = ? "
	    "AND status = 'PROCESSING'",
	[SQL_LEDGER_BATCH_INSERT] = "INSERT INTO idempotency_records "
	    "(principal_id, operation, idem_key, request_fingerprint, status, "
	    "created_at, updated_at, expires_at) VALUES (%x, %x, %x, %x, "
	    "'PROCESSING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), "
	    "UTC_TIMESTAMP(6) + INTERVAL %ld SECOND)",
	[SQL_LEDGER_BATCH_READ] = "SELECT status, "
	    "request_fingerprint, COALESCE(response_status, 0), "
	    "response_headers, response_body, resource_id, "
	    "expires_at <= UTC_TIMESTAMP(6) FROM idempotency_records "
	    "WHERE principal_id = %x AND operation = %x AND idem_key = %x",
	[SQL_LEDGER_BATCH_FINISH] = "UPDATE idempotency_records SET "
	    "status = %q, response_status = %d, response_headers = %b, "
	    "response_body = %b, resource_id = %n, "
	    "updated_at = UTC_TIMESTAMP(6) "
	    "WHERE id = %llu AND status = 'PROCESSING'",

	/*
	 * The outbox (events.c): an event written from the claim's ledger
	 * row (its FROM is SQL_OWN_FROM); a relay's claim of due events
	 * and the read of what it took; the settlement of one delivery
	 * (counted by outcome first, while the lease still names the claim;
	 * then delivered, gone or another try); an endpoint disabled, read;
	 * the outbox's figures.
	 */
	[SQL_EVENTS_INSERT] = "INSERT INTO events (id, webhook_id, type, "
	    "order_id, seq, principal_id, payload, created_at, state, "
	    "next_attempt_at) SELECT %llu, %q, %q, %llu, %d, "
	    "principal_id, %b, UTC_TIMESTAMP(6), 'pending', UTC_TIMESTAMP(6)",
	[SQL_EVENTS_CLAIM] = "UPDATE events e SET lease_owner = %x, "
	    "lease_until = UTC_TIMESTAMP(6) + INTERVAL "
	    "%lld MICROSECOND WHERE e.state = 'pending' AND e.next_attempt_at "
	    "<= UTC_TIMESTAMP(6) AND (e.lease_until IS NULL OR e.lease_until "
	    "< UTC_TIMESTAMP(6)) AND NOT EXISTS (SELECT 1 FROM events p "
	    "WHERE p.order_id = e.order_id AND p.seq < e.seq AND p.state "
	    "<> 'delivered') ORDER BY e.next_attempt_at LIMIT %d",
	[SQL_EVENTS_CLAIMED] = "SELECT id, webhook_id, type, "
	    "order_id, DATE_FORMAT(created_at, '%%Y-%%m-%%dT%%H:%%i:%%sZ'), "
	    "attempts, payload FROM events WHERE lease_owner = %x "
	    "AND state = 'pending' ORDER BY order_id, seq",
	[SQL_EVENTS_COUNT] = "INSERT INTO event_deliveries "
	    "(relay, outcome, n) SELECT CONVERT(SUBSTRING_INDEX(lease_owner, "
	    "'/', 2) USING ascii), ",
	[SQL_EVENTS_COUNT_DELIVERED] = "'delivered'",
	[SQL_EVENTS_COUNT_GONE] = "'gone'",
	[SQL_EVENTS_COUNT_RETRY] = "IF(created_at < UTC_TIMESTAMP(6) - "
	    "INTERVAL %lld MICROSECOND, 'dead', 'retry')",
	[SQL_EVENTS_COUNT_WHERE] = ", 1 FROM events WHERE id = "
	    "%llu AND lease_owner = %x ON DUPLICATE KEY UPDATE n = n + 1",
	[SQL_EVENTS_DELIVERED_SET] = "UPDATE events SET state = "
	    "'delivered', delivered_at = UTC_TIMESTAMP(6), attempts = "
	    "attempts + 1, last_status = %d, last_error = NULL, "
	    "lease_owner = NULL, lease_until = NULL",
	[SQL_EVENTS_GONE_SET] = "UPDATE events SET "
	    "last_status = %d, lease_owner = NULL, lease_until = NULL",
	[SQL_EVENTS_RETRY_SET] = "UPDATE events SET attempts = "
	    "attempts + 1, last_status = ",
	[SQL_EVENTS_RETRY_REST] = ", last_error = %b, "
	    "next_attempt_at = UTC_TIMESTAMP(6) + "
	    "INTERVAL %lld MICROSECOND, state = IF(created_at < "
	    "UTC_TIMESTAMP(6) - INTERVAL %lld MICROSECOND, 'dead', "
	    "'pending'), lease_owner = NULL, lease_until = NULL",
	[SQL_EVENTS_SETTLE_WHERE] = " WHERE id = %llu AND lease_owner = %x",
	/*
	 * Deliveries that ended alike settled together: counted in one
	 * INSERT ... SELECT (no row when no lease is still the relay's),
	 * set in one UPDATE; the events WHERE each is still under the
	 * lease of the claim that took it.  A claimed event not started
	 * given back.
	 */
	[SQL_EVENTS_COUNT_MANY] = ", COUNT(*) FROM events WHERE ",
	[SQL_EVENTS_COUNT_GROUP] = " GROUP BY 1 ON DUPLICATE KEY UPDATE "
	    "n = n + VALUES(n)",
	[SQL_EVENTS_WHERE] = " WHERE ",
	[SQL_EVENTS_LEASED] = "(id = %llu AND lease_owner = %x)",
	[SQL_EVENTS_OR_LEASED] = " OR (id = %llu AND lease_owner = %x)",
	[SQL_EVENTS_RELEASE] = "UPDATE events SET lease_owner = NULL, "
	    "lease_until = NULL WHERE state = 'pending' AND (",
	[SQL_EVENTS_DISABLE] = "INSERT INTO event_endpoints "
	    "(url_sha256, url, disabled_at, disabled_reason) VALUES (%b, %x, "
	    "UTC_TIMESTAMP(6), %b) ON DUPLICATE KEY UPDATE disabled_at = "
	    "VALUES(disabled_at), disabled_reason = VALUES(disabled_reason)",
	[SQL_EVENTS_ENDPOINT] = "SELECT disabled_at FROM "
	    "event_endpoints WHERE disabled_at IS NOT NULL AND url_sha256 = %b",
	[SQL_EVENTS_STATS_PENDING] = "SELECT COUNT(*), "
	    "IFNULL(TIMESTAMPDIFF(MICROSECOND, MIN(created_at), "
	    "UTC_TIMESTAMP(6)), 0) FROM events WHERE state = 'pending'",
	[SQL_EVENTS_STATS_DEAD] = "SELECT COUNT(*) FROM events "
	    "WHERE state = 'dead'",
	[SQL_EVENTS_STATS_OUTCOMES] = "SELECT outcome, SUM(n) FROM "
	    "event_deliveries GROUP BY outcome",

	/*
	 * `idemorders events`: list (a state fragment, a limit), show,
	 * redeliver (a state fragment, or webhook ids one by one), enable.
	 */
	[SQL_EVENTS_LIST] = "SELECT webhook_id, type, "
	    "CONCAT('o-', order_id) AS order_id, state, attempts, "
	    "DATE_FORMAT(created_at, '%%Y-%%m-%%dT%%H:%%i:%%sZ') AS created, "
	    "IF(state = 'pending', DATE_FORMAT(next_attempt_at, "
	    "'%%Y-%%m-%%dT%%H:%%i:%%sZ'), NULL) AS next_attempt, last_status, "
	    "last_error FROM events WHERE %t ORDER BY id LIMIT %ld",
	[SQL_EVENTS_OPEN] = "state IN ('pending', 'dead')",
	[SQL_EVENTS_PENDING] = "state = 'pending'",
	[SQL_EVENTS_DEAD] = "state = 'dead'",
	[SQL_EVENTS_DELIVERED] = "state = 'delivered'",
	[SQL_EVENTS_ALL] = "1",
	[SQL_EVENTS_SHOW] = "SELECT webhook_id, type, "
	    "CONCAT('o-', order_id) AS order_id, principal_id, state, "
	    "attempts, created_at, next_attempt_at, delivered_at, "
	    "lease_owner, lease_until, last_status, last_error, payload "
	    "FROM events WHERE webhook_id = %x",
	[SQL_EVENTS_REDELIVER] = "UPDATE events SET state = "
	    "'pending', next_attempt_at = UTC_TIMESTAMP(6), lease_owner = "
	    "NULL, lease_until = NULL WHERE %t",
	[SQL_EVENTS_NOT_PENDING] = "state <> 'pending' AND webhook_id IN ",
	[SQL_EVENTS_ENABLE] = "UPDATE event_endpoints SET "
	    "disabled_at = NULL, disabled_reason = NULL WHERE url = %x",

	/*
	 * `idemorders audit`: each check one SELECT whose rows are the
	 * breaches (offending id, detail); each takes the epoch second
	 * from which rows are audited, then its parameter, if any (audit.c).
	 */
	[SQL_AUDIT_ORDER_WITHOUT_LEDGER] =
	    "SELECT CONCAT('o-', o.id), CONCAT('principal=', o.principal_id, "
	    "' key=', o.idempotency_key, ' created_at=', o.created_at, "
	    "IF(r.id IS NULL, ' no ledger row', CONCAT(' ledger-', r.id, ' is ', "
	    "r.status, ' naming ', IFNULL(r.resource_id, 'no order')))) "
	    "FROM orders o LEFT JOIN idempotency_records r "
	    "ON r.principal_id = o.principal_id AND r.operation = 'create-order' "
	    "AND r.idem_key = o.idempotency_key "
	    "AND " SAME("r.principal_id", "o.principal_id") " "
	    "AND " SAME("r.idem_key", "o.idempotency_key") " "
	    "WHERE o.created_at >= FROM_UNIXTIME(%lld) AND ((r.id IS NULL "
	    "AND o.created_at > UTC_TIMESTAMP(6) - INTERVAL %lld SECOND) "
	    "OR (r.id IS NOT NULL AND NOT (r.status IN ('SUCCEEDED', 'EXPIRED') "
	    "AND r.resource_id <=> CONCAT('o-', o.id))))",
	[SQL_AUDIT_DUPLICATE_ORDER_KEY] =
	    /*
	     * The groups from the columns of (principal, key) and the id
	     * alone (the unique index covers them: no row read per order),
	     * then created_at of the few duplicates' orders only.
	     */
	    "SELECT CONCAT('o-', d.mid), CONCAT('principal=', d.p, ' key=', "
	    "d.k, ' orders ', d.ids) FROM (SELECT MIN(id) AS mid, "
	    "MIN(principal_id) AS p, MIN(idempotency_key) AS k, "
	    "GROUP_CONCAT(CONCAT('o-', id) ORDER BY id SEPARATOR ',') AS ids "
	    "FROM orders GROUP BY principal_id, idempotency_key "
	    "HAVING COUNT(*) > COUNT(DISTINCT CAST(principal_id AS BINARY), "
	    "CAST(idempotency_key AS BINARY))) d "
	    "WHERE EXISTS (SELECT 1 FROM orders o WHERE o.principal_id = d.p "
	    "AND o.idempotency_key = d.k "
	    "AND o.created_at >= FROM_UNIXTIME(%lld))",
	[SQL_AUDIT_SUCCEEDED_WITHOUT_ORDER] =
	    "SELECT CONCAT('ledger-', r.id), CONCAT('principal=', r.principal_id, "
	    "' key=', r.idem_key, ' status=', r.status, ' resource_id=', "
	    "IFNULL(r.resource_id, 'NULL')) "
	    "FROM idempotency_records r LEFT JOIN orders o "
	    "ON o.id = CAST(SUBSTRING(r.resource_id, 3) AS UNSIGNED) "
	    "AND CONCAT('o-', o.id) = r.resource_id "
	    "AND " SAME("o.principal_id", "r.principal_id") " "
	    "AND " SAME("o.idempotency_key", "r.idem_key") " "
	    "WHERE r.created_at >= FROM_UNIXTIME(%lld) "
	    "AND r.operation = 'create-order' AND (r.status = 'SUCCEEDED' "
	    "OR (r.status = 'EXPIRED' AND r.resource_id IS NOT NULL)) "
	    "AND o.id IS NULL",
	[SQL_AUDIT_CANCELLED_WITHOUT_LEDGER] =
	    "SELECT CONCAT('o-', o.id), CONCAT('principal=', o.principal_id, "
	    "' cancel_key=', IFNULL(o.cancel_key, 'NULL'), ' cancelled_at=', "
	    "IFNULL(o.cancelled_at, 'NULL'), IF(r.id IS NULL, ' no ledger row', "
	    "CONCAT(' ledger-', r.id, ' is ', r.status, ' naming ', "
	    "IFNULL(r.resource_id, 'no order')))) "
	    "FROM orders o LEFT JOIN idempotency_records r "
	    "ON r.principal_id = o.principal_id AND r.operation = 'cancel-order' "
	    "AND r.idem_key = o.cancel_key "
	    "AND " SAME("r.principal_id", "o.principal_id") " "
	    "AND " SAME("r.idem_key", "o.cancel_key") " "
	    "WHERE o.status = 'CANCELLED' AND o.created_at >= FROM_UNIXTIME(%lld) "
	    "AND ((r.id IS NULL AND (o.cancelled_at IS NULL OR o.cancelled_at > "
	    "UTC_TIMESTAMP(6) - INTERVAL %lld SECOND)) "
	    "OR (r.id IS NOT NULL AND NOT (r.status IN ('SUCCEEDED', 'EXPIRED') "
	    "AND r.resource_id <=> CONCAT('o-', o.id))))",
	[SQL_AUDIT_CANCEL_WITHOUT_CANCELLED_ORDER] =
	    "SELECT CONCAT('ledger-', r.id), CONCAT('principal=', r.principal_id, "
	    "' key=', r.idem_key, ' status=', r.status, ' resource_id=', "
	    "IFNULL(r.resource_id, 'NULL')) "
	    "FROM idempotency_records r LEFT JOIN orders o "
	    "ON o.id = CAST(SUBSTRING(r.resource_id, 3) AS UNSIGNED) "
	    "AND CONCAT('o-', o.id) = r.resource_id "
	    "AND " SAME("o.principal_id", "r.principal_id") " "
	    "AND " SAME("o.cancel_key", "r.idem_key") " "
	    "AND o.status = 'CANCELLED' "
	    "WHERE r.created_at >= FROM_UNIXTIME(%lld) "
	    "AND r.operation = 'cancel-order' AND (r.status = 'SUCCEEDED' "
	    "OR (r.status = 'EXPIRED' AND r.resource_id IS NOT NULL)) "
	    "AND o.id IS NULL",
	[SQL_AUDIT_RESTOCK_MISMATCH] =
	    "SELECT s.sku, CONCAT('restocked=', s.restocked, ' cancelled=', "
	    "IFNULL(c.qty, 0)) FROM stock s LEFT JOIN " CANCELLED_QTY " c "
	    "ON c.sku = s.sku WHERE s.restocked <> IFNULL(c.qty, 0)",
	[SQL_AUDIT_ITEM_WITHOUT_STOCK] =
	    "SELECT CONCAT('o-', o.id), CONCAT('principal=', o.principal_id, "
	    "' sku=', i.sku, ' qty=', i.qty) FROM order_items i "
	    "JOIN orders o ON o.id = i.order_id "
	    "LEFT JOIN stock s ON s.sku = i.sku "
	    "WHERE s.sku IS NULL AND o.status <> 'CANCELLED' "
	    "AND o.created_at >= FROM_UNIXTIME(%lld)",
	[SQL_AUDIT_ORDER_WITHOUT_ITEMS] =
	    "SELECT CONCAT('o-', o.id), CONCAT('principal=', o.principal_id, "
	    "' key=', o.idempotency_key) FROM orders o "
	    "LEFT JOIN order_items i ON i.order_id = o.id "
	    "WHERE i.order_id IS NULL AND o.created_at >= FROM_UNIXTIME(%lld)",
	[SQL_AUDIT_NEGATIVE_STOCK] =
	    "SELECT sku, CONCAT('available=', available) FROM stock "
	    "WHERE available < 0",
	[SQL_AUDIT_PROCESSING_COMMITTED] =
	    "SELECT CONCAT('ledger-', id), CONCAT('principal=', principal_id, "
	    "' key=', idem_key, ' created_at=', created_at) "
	    "FROM idempotency_records WHERE status = 'PROCESSING' "
	    "AND created_at >= FROM_UNIXTIME(%lld)",
	[SQL_AUDIT_EXPIRES_AT_MISMATCH] =
	    "SELECT CONCAT('ledger-', id), CONCAT('principal=', principal_id, "
	    "' key=', idem_key, ' created_at=', created_at, ' expires_at=', "
	    "expires_at) FROM idempotency_records "
	    "WHERE created_at >= FROM_UNIXTIME(%lld) "
	    "AND ABS(TIMESTAMPDIFF(SECOND, created_at, expires_at) - %lld) > 1",
	[SQL_AUDIT_ORDER_WITHOUT_EVENT] =
	    "SELECT CONCAT('o-', o.id), CONCAT('principal=', o.principal_id, "
	    "' status=', o.status, ' created_at=', o.created_at, "
	    "IF(c.id IS NULL, ' no order.created', ''), "
	    "IF(o.status = 'CANCELLED' AND x.id IS NULL, ' no order.cancelled', "
	    "'')) FROM orders o "
	    "LEFT JOIN events c ON c.order_id = o.id AND c.seq = 1 "
	    "LEFT JOIN events x ON x.order_id = o.id AND x.seq = 2 "
	    "WHERE o.created_at >= FROM_UNIXTIME(%lld) "
	    "AND o.created_at > (SELECT applied_at FROM schema_migrations "
	    "WHERE version = '008_events') "
	    "AND o.created_at > UTC_TIMESTAMP(6) - INTERVAL %lld SECOND "
	    "AND (c.id IS NULL OR (o.status = 'CANCELLED' AND x.id IS NULL))",
	[SQL_AUDIT_EVENT_WITHOUT_ORDER] =
	    "SELECT e.webhook_id, CONCAT(e.type, ' o-', e.order_id, "
	    "IF(o.id IS NULL, ' no such order', CONCAT(' order ', o.status, "
	    "' of ', o.principal_id, ', event of ', e.principal_id))) "
	    "FROM events e LEFT JOIN orders o ON o.id = e.order_id "
	    "WHERE e.created_at >= FROM_UNIXTIME(%lld) AND (o.id IS NULL "
	    "OR NOT " SAME("o.principal_id", "e.principal_id") " "
	    "OR (e.seq = 2 AND o.status <> 'CANCELLED'))",
	[SQL_AUDIT_UNKNOWN_STATUS] =
	    "SELECT CONCAT('ledger-', id), CONCAT('principal=', principal_id, "
	    "' key=', idem_key, ' status=', status) FROM idempotency_records "
	    "WHERE status NOT IN ('PROCESSING', 'SUCCEEDED', 'FAILED_FINAL', "
	    "'EXPIRED') AND created_at >= FROM_UNIXTIME(%lld)",

	/*
	 * Both jobs walk one index, idem_jobs (tombstone_at,
	 * live_expires_at), on the generated columns that finishing a
	 * create leaves as they are: due rows are the live ones
	 * (tombstone_at IS NULL) in live_expires_at order (expires_at of a
	 * row that is not a tombstone), tombstones are the rows with a
	 * tombstone_at (when they became one), in that order.  The expiry
	 * orders by both columns, the index's order (tombstone_at is NULL
	 * throughout the range): by live_expires_at alone the server would
	 * read and sort every due row for each batch.
	 */
#define Q_EXPIRE(status) "UPDATE idempotency_records " \
    "SET status = 'EXPIRED', response_body = NULL, response_headers = NULL, " \
    "updated_at = UTC_TIMESTAMP(6) " \
    "WHERE tombstone_at IS NULL AND live_expires_at <= UTC_TIMESTAMP(6) " \
    "AND status = '" status "' " \
    "ORDER BY tombstone_at, live_expires_at LIMIT ?"
	[SQL_EXPIRE_SUCCEEDED] = Q_EXPIRE("SUCCEEDED"),
	[SQL_EXPIRE_FAILED_FINAL] = Q_EXPIRE("FAILED_FINAL"),
#undef Q_EXPIRE
	[SQL_EXPIRE_PURGE] = "DELETE FROM idempotency_records "
	    "WHERE tombstone_at <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND "
	    "ORDER BY tombstone_at LIMIT ?",
	/* Delivered events older than event_retention (0 keeps them). */
	[SQL_EXPIRE_PURGE_EVENTS] = "DELETE FROM events "
	    "WHERE delivered_at <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND "
	    "AND state = 'delivered' ORDER BY delivered_at LIMIT ?",
	[SQL_EXPIRE_COUNT_EVENTS] = "SELECT COUNT(*) FROM events "
	    "WHERE delivered_at <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND "
	    "AND state = 'delivered'",
	[SQL_EXPIRE_COUNT_DUE] = "SELECT COUNT(*) FROM "
	    "idempotency_records WHERE tombstone_at IS NULL "
	    "AND live_expires_at <= UTC_TIMESTAMP(6) "
	    "AND status IN ('SUCCEEDED', 'FAILED_FINAL')",
	[SQL_EXPIRE_COUNT_PURGE] = "SELECT COUNT(*) FROM "
	    "idempotency_records "
	    "WHERE tombstone_at <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND",

	/*
	 * Each version is claimed by a committed row ('applying'), so that
	 * two runs on two nodes of a cluster (where GET_LOCK is node-local)
	 * apply it once: the unique key decides, and the loser waits for
	 * 'applied'.
	 */
	[SQL_MIGRATE_CLAIM] = "INSERT INTO schema_migrations (version, "
	    "state, applied_at) VALUES (?, 'applying', UTC_TIMESTAMP(6))",
	[SQL_MIGRATE_STATE] = "SELECT state FROM schema_migrations "
	    "WHERE version = ?",
	[SQL_MIGRATE_DONE] = "UPDATE schema_migrations SET state = "
	    "'applied', applied_at = UTC_TIMESTAMP(6) WHERE version = ?",
	[SQL_MIGRATE_UNCLAIM] = "DELETE FROM schema_migrations "
	    "WHERE version = ? AND state = 'applying'",
	[SQL_MIGRATE_LOCK] = "SELECT GET_LOCK('idemorders.migrate', 60)",
	[SQL_MIGRATE_UNLOCK] = "DO RELEASE_LOCK('idemorders.migrate')",
	[SQL_MIGRATE_TABLE] = "CREATE TABLE IF NOT EXISTS schema_migrations ("
	    "version VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin "
	    "NOT NULL PRIMARY KEY, applied_at DATETIME(6) NOT NULL) "
	    "ENGINE=InnoDB",
	[SQL_MIGRATE_STATE_COLUMN] = "ALTER TABLE "
	    "schema_migrations ADD COLUMN IF NOT EXISTS state VARCHAR(16) "
	    "CHARACTER SET ascii NOT NULL DEFAULT 'applied'",
};

/* Append s (len bytes) to out as X'...'. */
static int
hex_literal(struct buf *out, const char *s, size_t len)
{
	char		  chunk[512];
	size_t		  i, k;

	if (buf_adds(out, "X'") != BUF_OK)
		return -1;
	for (i = 0; i < len; i += k) {
		k = len - i < sizeof(chunk) / 2 ? len - i : sizeof(chunk) / 2;
		text_hex_upper(chunk, s + i, k);
		if (buf_add(out, chunk, 2 * k) != BUF_OK)
			return -1;
	}
	if (buf_addc(out, '\'') != BUF_OK)
		return -1;
	return 0;
}

/* Append w to out as '...' when it is a word of [A-Za-z0-9_.-]. */
static int
word_literal(struct buf *out, const char *w)
{
	size_t	 i;

	if (w == NULL || w[0] == '\0')
		return -1;
	for (i = 0; w[i] != '\0'; i++)
		if (!((w[i] >= 'A' && w[i] <= 'Z') ||
		    (w[i] >= 'a' && w[i] <= 'z') ||
		    (w[i] >= '0' && w[i] <= '9') ||
		    w[i] == '_' || w[i] == '.' || w[i] == '-'))
			return -1;
	if (buf_addc(out, '\'') != BUF_OK || buf_adds(out, w) != BUF_OK ||
	    buf_addc(out, '\'') != BUF_OK)
		return -1;
	return 0;
}

/* Append fragment id of the table, which has no placeholder, to out. */
static int
fragment(struct buf *out, enum sql_id id)
{
	const char	*p;

	if ((unsigned)id >= SQL_N || sql_table[id] == NULL)
		return -1;
	for (p = sql_table[id]; *p != '\0'; p++) {
		if (*p == '%' && *++p != '%')
			return -1;
		if (buf_addc(out, *p) != BUF_OK)
			return -1;
	}
	return 0;
}

/*
 * Append statement or fragment id of the table to out, its placeholders
 * filled from ap by type (sql.h).  0, or -1 when out is full, the id or
 * a placeholder unknown, or a %q value not a word.
 */
int
sql_vprintf(struct buf *out, enum sql_id id, va_list ap)
{
	const char	*p, *s, *run;
	size_t		 len;
	int		 rc = BUF_OK, width;

	if ((unsigned)id >= SQL_N || sql_table[id] == NULL)
		return -1;
	for (p = run = sql_table[id]; *p != '\0'; p++) {
		if (*p != '%')
			continue;
		if (buf_add(out, run, (size_t)(p - run)) != BUF_OK)
			return -1;
		p++;
		width = 0;
		if (*p == '0') {
			/* A number zero-padded to width digits. */
			for (p++; *p >= '0' && *p <= '9' && width < 100; p++)
				width = width * 10 + (*p - '0');
			if (*p != 'd' && *p != 'l')
				return -1;
		}
		if (*p == '%')
			rc = buf_addc(out, '%');
		else if (*p == 'x') {
			s = va_arg(ap, const char *);
			rc = hex_literal(out, s, strlen(s)) == 0 ? BUF_OK : -1;
		} else if (*p == 'b') {
			s = va_arg(ap, const char *);
			len = va_arg(ap, size_t);
			rc = hex_literal(out, s != NULL ? s : "", len) == 0 ?
			    BUF_OK : -1;
		} else if (*p == 'n') {
			s = va_arg(ap, const char *);
			rc = s == NULL ? buf_adds(out, "NULL") :
			    hex_literal(out, s, strlen(s)) == 0 ? BUF_OK : -1;
		} else if (*p == 'q')
			rc = word_literal(out, va_arg(ap, const char *)) == 0 ?
			    BUF_OK : -1;
		else if (*p == 't')
			rc = fragment(out, va_arg(ap, enum sql_id)) == 0 ?
			    BUF_OK : -1;
		else if (*p == 'd')
			rc = buf_printf(out, "%0*d", width, va_arg(ap, int));
		else if (strncmp(p, "lld", 3) == 0) {
			rc = buf_printf(out, "%0*lld", width,
			    va_arg(ap, long long));
			p += 2;
		} else if (strncmp(p, "llu", 3) == 0) {
			rc = buf_printf(out, "%0*llu", width,
			    va_arg(ap, unsigned long long));
			p += 2;
		} else if (strncmp(p, "ld", 2) == 0) {
			rc = buf_printf(out, "%0*ld", width, va_arg(ap, long));
			p++;
		} else
			return -1;
		if (rc != BUF_OK)
			return -1;
		run = p + 1;
	}
	return buf_add(out, run, (size_t)(p - run)) == BUF_OK ? 0 : -1;
}

/* The text of statement id as it stands, or NULL for an unknown id. */
const char *
sql_text(enum sql_id id)
{
	return (unsigned)id < SQL_N ? sql_table[id] : NULL;
}

/* Append statement id of the table with its values to out. */
int
sql_printf(struct buf *out, enum sql_id id, ...)
{
	va_list	 ap;
	int	 rc;

	va_start(ap, id);
	rc = sql_vprintf(out, id, ap);
	va_end(ap);
	return rc;
}
