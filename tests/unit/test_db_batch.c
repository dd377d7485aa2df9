#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "buf.h"
#include "db_batch.h"
#include "events.h"
#include "ledger.h"
#include "order_input.h"
#include "order_view.h"
#include "response.h"
#include "store.h"
#include "unit.h"

#define OWN " JOIN idempotency_records own ON own.id = 9 AND " \
	"own.status = 'PROCESSING'"
#define OWN_FROM " FROM idempotency_records WHERE id = 9 AND " \
	"status = 'PROCESSING'"
#define GUARD(n) "SET @idemorders_guard = 18446744073709551615 + " \
	"(ROW_COUNT() <> " n ")"

/* The batched statements of an order are the text they always were. */
static void
test_order_text(void)
{
	struct db_batch		 b;
	struct order_input	 in;
	struct stock_row	 rows[2];
	char			 note[] = "n";

	memset(&in, 0, sizeof(in));
	memset(rows, 0, sizeof(rows));
	memcpy(in.currency, "EUR", 4);
	in.amount = 500;
	in.shipping = SHIPPING_EXPRESS;
	in.note = note;
	in.note_len = 1;
	in.nitems = 2;
	strcpy(in.items[0].sku, "A");
	in.items[0].qty = 2;
	strcpy(in.items[1].sku, "B");
	in.items[1].qty = 3;
	rows[0].unit_price = 100;
	rows[1].unit_price = 200;
	db_batch_init(&b);
	CU_ASSERT_EQUAL(store_batch_stock(&b, &in, 1), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "SELECT sku, currency, unit_price, "
	    "available FROM stock WHERE sku IN (X'41', X'42') ORDER BY sku "
	    "FOR UPDATE");
	db_batch_reset(&b);
	CU_ASSERT_EQUAL(store_batch_order(&b, 9, "p", "k", &in, 1000), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "INSERT INTO orders (id, "
	    "principal_id, idempotency_key, currency, amount, shipping, note, "
	    "status, created_at) SELECT 9, X'70', X'6B', X'455552', 500, "
	    "'express', X'6E', 'CREATED', FROM_UNIXTIME(1000)" OWN_FROM);
	db_batch_reset(&b);
	CU_ASSERT_EQUAL(store_batch_take(&b, 9, &in, rows), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "UPDATE stock s" OWN " SET "
	    "s.available = s.available - CASE s.sku WHEN X'41' THEN 2 WHEN "
	    "X'42' THEN 3 END WHERE s.sku IN (X'41', X'42') AND s.currency = "
	    "X'455552' AND CASE s.sku WHEN X'41' THEN s.available >= 2 AND "
	    "s.unit_price = 100 WHEN X'42' THEN s.available >= 3 AND "
	    "s.unit_price = 200 END; " GUARD("2"));
	db_batch_reset(&b);
	CU_ASSERT_EQUAL(store_batch_lines(&b, 9, &in, rows), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "INSERT INTO order_items (order_id, "
	    "sku, qty, unit_price) SELECT 9, X'41', 2, 100" OWN_FROM
	    " UNION ALL SELECT 9, X'42', 3, 200" OWN_FROM);
	db_batch_reset(&b);
	in.nitems = 1;
	CU_ASSERT_EQUAL(store_batch_take(&b, 9, &in, rows), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "UPDATE stock s" OWN " SET "
	    "s.available = s.available - 2 WHERE s.sku = X'41' AND "
	    "s.available >= 2 AND s.unit_price = 100 AND s.currency = "
	    "X'455552'; " GUARD("1"));
	db_batch_clear(&b);
}

/* A cancel's writes, a ledger finish, a delivery's settlement. */
static void
test_cancel_ledger_event_text(void)
{
	struct db_batch		 b;
	struct order_view_item	 items[2];
	struct response		 resp;
	struct event_row	 r;

	memset(items, 0, sizeof(items));
	strcpy(items[0].sku, "A");
	items[0].qty = 2;
	strcpy(items[1].sku, "B");
	items[1].qty = 3;
	db_batch_init(&b);
	CU_ASSERT_EQUAL(store_batch_cancel(&b, 9, 5, items, 2, 1000, "k", "r",
	    1), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "UPDATE stock s" OWN " SET "
	    "s.available = s.available + CASE s.sku WHEN X'41' THEN 2 WHEN "
	    "X'42' THEN 3 END, s.restocked = s.restocked + CASE s.sku WHEN "
	    "X'41' THEN 2 WHEN X'42' THEN 3 END WHERE s.sku IN (X'41', "
	    "X'42'); " GUARD("2") "; UPDATE orders o" OWN " SET o.status = "
	    "'CANCELLED', o.cancelled_at = FROM_UNIXTIME(1000), "
	    "o.cancel_reason = X'72', o.cancel_key = X'6B' WHERE o.id = 5 AND "
	    "o.status = 'CREATED'; " GUARD("1"));
	db_batch_reset(&b);
	response_init(&resp);
	resp.status = 201;
	CU_ASSERT_EQUAL(buf_adds(&resp.headers, "H"), BUF_OK);
	CU_ASSERT_EQUAL(buf_adds(&resp.body, "B"), BUF_OK);
	CU_ASSERT_EQUAL(ledger_batch_finish(&b, 7, LEDGER_SUCCEEDED, &resp,
	    "o-1"), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "UPDATE idempotency_records SET "
	    "status = 'SUCCEEDED', response_status = 201, response_headers = "
	    "X'48', response_body = X'42', resource_id = X'6F2D31', "
	    "updated_at = UTC_TIMESTAMP(6) WHERE id = 7 AND status = "
	    "'PROCESSING'; " GUARD("1"));
	response_clear(&resp);
	db_batch_reset(&b);
	event_row_init(&r);
	r.id = 3;
	CU_ASSERT_EQUAL(events_batch_settle(&b, &r, "t", EVENT_RETRY, 0, "e",
	    2, 5), 0);
	CU_ASSERT_EQUAL(b.n, EVENT_SETTLE_STATEMENTS);
	CU_ASSERT_EQUAL(db_batch_commit(&b), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "INSERT INTO event_deliveries (relay, "
	    "outcome, n) SELECT CONVERT(SUBSTRING_INDEX(lease_owner, '/', 2) "
	    "USING ascii), IF(created_at < UTC_TIMESTAMP(6) - INTERVAL 5000 "
	    "MICROSECOND, 'dead', 'retry'), 1 FROM events WHERE id = 3 AND "
	    "lease_owner = X'74' ON DUPLICATE KEY UPDATE n = n + 1; UPDATE "
	    "events SET attempts = attempts + 1, last_status = NULL, "
	    "last_error = X'65', next_attempt_at = UTC_TIMESTAMP(6) + INTERVAL "
	    "2000 MICROSECOND, state = IF(created_at < UTC_TIMESTAMP(6) - "
	    "INTERVAL 5000 MICROSECOND, 'dead', 'pending'), lease_owner = "
	    "NULL, lease_until = NULL WHERE id = 3 AND lease_owner = X'74'; "
	    "COMMIT");
	event_row_clear(&r);
	db_batch_clear(&b);
}

/* Deliveries settled together; leases given back. */
static void
test_events_together_text(void)
{
	struct db_batch		 b;
	struct event_row	 r;
	struct event_lease	 l[2] = { { 3, "t" }, { 4, "u" } };

	db_batch_init(&b);
	CU_ASSERT_EQUAL(events_batch_settle_delivered(&b, l, 2, 204), 0);
	CU_ASSERT_EQUAL(b.n, EVENT_SETTLE_STATEMENTS);
	CU_ASSERT_EQUAL(db_batch_commit(&b), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "INSERT INTO event_deliveries (relay, "
	    "outcome, n) SELECT CONVERT(SUBSTRING_INDEX(lease_owner, '/', 2) "
	    "USING ascii), 'delivered', COUNT(*) FROM events WHERE (id = 3 "
	    "AND lease_owner = X'74') OR (id = 4 AND lease_owner = X'75') "
	    "GROUP BY 1 ON DUPLICATE KEY UPDATE n = n + VALUES(n); UPDATE "
	    "events SET state = 'delivered', delivered_at = UTC_TIMESTAMP(6), "
	    "attempts = attempts + 1, last_status = 204, last_error = NULL, "
	    "lease_owner = NULL, lease_until = NULL WHERE (id = 3 AND "
	    "lease_owner = X'74') OR (id = 4 AND lease_owner = X'75'); COMMIT");
	/* One delivered event alone takes the same shape. */
	db_batch_reset(&b);
	event_row_init(&r);
	r.id = 3;
	CU_ASSERT_EQUAL(events_batch_settle(&b, &r, "t", EVENT_DELIVERED, 204,
	    NULL, 0, 0), 0);
	CU_ASSERT_EQUAL(b.n, EVENT_SETTLE_STATEMENTS);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.sql.p, "COUNT(*) FROM events WHERE "
	    "(id = 3 AND lease_owner = X'74') GROUP BY 1"));
	event_row_clear(&r);
	db_batch_reset(&b);
	CU_ASSERT_EQUAL(events_batch_release(&b, l, 1), 0);
	CU_ASSERT_STRING_EQUAL(b.sql.p, "UPDATE events SET lease_owner = NULL, "
	    "lease_until = NULL WHERE state = 'pending' AND ((id = 3 AND "
	    "lease_owner = X'74')); COMMIT");
	db_batch_clear(&b);
}

static const struct unit_test tests[] = {
	{ "an order's statements", test_order_text },
	{ "a cancel's, the ledger's, a delivery's", test_cancel_ledger_event_text },
	{ "deliveries settled together, leases given back",
	    test_events_together_text },
	{ NULL, NULL },
};

const struct unit_suite test_db_batch_suite = { "db_batch", NULL, NULL,
    tests };
