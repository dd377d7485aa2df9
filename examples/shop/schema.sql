-- The demo shop's own database (shop_db_name in its ini): what its
-- warehouse did because of idemorders' webhooks (public/warehouse.php).
-- The service's database is not the shop's to write: the shop reads the
-- stock there and keeps its own state here.
--
--	warehouse_webhooks	one row per webhook-id acted on: written in
--				the same transaction as the effect, so that a
--				second delivery of one event does nothing
--	warehouse_packed	the effect: the order was packed (on its
--				order.created), by the delivery of webhook_id
--
-- Each statement may run again.

CREATE TABLE IF NOT EXISTS warehouse_webhooks (
	webhook_id	VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	type		VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	order_id	VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	received_at	DATETIME(6) NOT NULL,
	PRIMARY KEY (webhook_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS warehouse_packed (
	order_id	VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	webhook_id	VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	packed_at	DATETIME(6) NOT NULL,
	PRIMARY KEY (order_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
