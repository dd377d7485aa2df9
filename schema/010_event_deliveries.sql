-- idemorders: the relay's deliveries by outcome, for GET /orders/_metrics
-- (idemorders_event_deliveries_total, the sum over rows).  Each relay
-- process counts its deliveries in rows of its own (relay: host/pid, the
-- start of its lease tokens), so that two relays, on one host or on
-- different Galera nodes, never write the same row.  The count moves in
-- the same transaction as the event's settlement, only when the relay
-- still held the event's lease.
--
--	outcome		delivered (a 2xx), retry (anything else: to be
--			tried again), dead (anything else, the event older
--			than event_max_age), gone (410: the endpoint
--			disabled)
--
-- A new table only: online on a filled database.  The statement may run
-- again.

CREATE TABLE IF NOT EXISTS event_deliveries (
	relay		VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	outcome		VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	n		BIGINT UNSIGNED NOT NULL,
	PRIMARY KEY (relay, outcome)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
