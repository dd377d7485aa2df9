-- idemorders: initial schema.  InnoDB, utf8mb4.  Keys and principals
-- compare byte for byte (binary collations): "Key-1" and "key-1" are two
-- keys.

CREATE TABLE IF NOT EXISTS stock (
	sku		VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	currency	CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	unit_price	BIGINT NOT NULL,
	available	INT NOT NULL,
	PRIMARY KEY (sku),
	CONSTRAINT stock_available_nonneg CHECK (available >= 0),
	CONSTRAINT stock_price_nonneg CHECK (unit_price >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The public id is "o-" followed by id.  UNIQUE (principal_id,
-- idempotency_key) means that even after the ledger row is purged an old
-- key can never create a second order.
CREATE TABLE IF NOT EXISTS orders (
	id		BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
	principal_id	VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	idempotency_key	VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	currency	CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	amount		BIGINT NOT NULL,
	shipping	VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	note		VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	status		VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	created_at	DATETIME(6) NOT NULL,
	PRIMARY KEY (id),
	UNIQUE KEY orders_principal_key (principal_id, idempotency_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS order_items (
	order_id	BIGINT UNSIGNED NOT NULL,
	sku		VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	qty		INT NOT NULL,
	unit_price	BIGINT NOT NULL,
	PRIMARY KEY (order_id, sku),
	KEY order_items_sku (sku),
	CONSTRAINT order_items_order FOREIGN KEY (order_id) REFERENCES orders (id),
	CONSTRAINT order_items_qty CHECK (qty > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The idempotency ledger.  The unique key alone decides which request owns
-- (principal, operation, key).  status: PROCESSING, SUCCEEDED,
-- FAILED_FINAL, EXPIRED.  response_headers holds "Name: value\r\n" lines.
CREATE TABLE IF NOT EXISTS idempotency_records (
	id			BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
	principal_id		VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	operation		VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	idem_key		VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	request_fingerprint	CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	status			VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	response_status		SMALLINT UNSIGNED NULL,
	response_headers	TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
	response_body		MEDIUMBLOB NULL,
	resource_id		VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
	created_at		DATETIME(6) NOT NULL,
	updated_at		DATETIME(6) NOT NULL,
	expires_at		DATETIME(6) NOT NULL,
	PRIMARY KEY (id),
	UNIQUE KEY idem_scope (principal_id, operation, idem_key),
	KEY idem_retention (status, expires_at),
	KEY idem_tombstones (status, updated_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
