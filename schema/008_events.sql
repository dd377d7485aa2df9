-- idemorders: the transactional outbox.  Every committed create
-- (order.created) and cancel (order.cancelled) writes one row here in
-- its own transaction, from its own uncommitted claim row (INSERT ...
-- SELECT ... FROM idempotency_records WHERE id = the claim AND status =
-- 'PROCESSING'), so that an event exists exactly when its order change
-- committed.  `idemorders relay` delivers them as signed webhooks.
--
--	id		the claim's ledger id (one event per claim)
--	webhook_id	the public id sent as webhook-id: never changes
--			across redeliveries; the receiver dedups on it
--	order_id, seq	the order and the event's place in its life (1
--			created, 2 cancelled): an order's event is
--			delivered only after every earlier one was
--	payload		the order as GET /orders/{id} showed it then
--	state		pending, delivered or dead (dead-lettered after
--			event_max_age; `idemorders events redeliver`)
--	attempts, next_attempt_at, last_status, last_error
--			the deliveries so far and when to try again
--	lease_owner, lease_until
--			the relay that claimed it and until when: a relay
--			that dies hands it over once the lease passed
--
-- event_endpoints remembers an endpoint that answered 410 Gone: no
-- event is sent there until `idemorders events enable`.
--
-- New tables only: online on a filled database.  Each statement may run
-- again.

CREATE TABLE IF NOT EXISTS events (
	id		BIGINT UNSIGNED NOT NULL,
	webhook_id	VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	type		VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	order_id	BIGINT UNSIGNED NOT NULL,
	seq		TINYINT UNSIGNED NOT NULL,
	principal_id	VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	payload		MEDIUMBLOB NOT NULL,
	created_at	DATETIME(6) NOT NULL,
	state		VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	attempts	INT UNSIGNED NOT NULL DEFAULT 0,
	next_attempt_at	DATETIME(6) NOT NULL,
	lease_owner	VARBINARY(64) NULL,
	lease_until	DATETIME(6) NULL,
	delivered_at	DATETIME(6) NULL,
	last_status	SMALLINT NULL,
	last_error	VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
	PRIMARY KEY (id),
	UNIQUE KEY events_webhook_id (webhook_id),
	UNIQUE KEY events_order_seq (order_id, seq),
	KEY events_due (state, next_attempt_at),
	KEY events_lease (lease_owner),
	KEY events_delivered (delivered_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS event_endpoints (
	url_sha256	BINARY(32) NOT NULL,
	url		VARCHAR(2048) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	disabled_at	DATETIME(6) NULL,
	disabled_reason	VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
	PRIMARY KEY (url_sha256)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
