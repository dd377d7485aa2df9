-- idemorders: a cancel key names one cancel for ever.  The ledger row of
-- a cancel key is purged some time after it expired; without it, the
-- same key could claim the scope again and cancel another order.  As
-- orders_principal_key keeps a create key to one order, this unique key
-- keeps a cancel key to one cancelled order (an order not cancelled has
-- no cancel key: NULL, which the index does not count), and the service
-- answers a purged cancel key with 410 naming the order it cancelled.
--
-- Online on a filled table: the index is built in place while the
-- table takes reads and writes (LOCK = NONE fails rather than block).
-- It fails with a duplicate-key error only if a purged cancel key
-- already cancelled a second order; those pairs are
--   SELECT principal_id, cancel_key, GROUP_CONCAT(id) FROM orders
--   WHERE cancel_key IS NOT NULL GROUP BY principal_id, cancel_key
--   HAVING COUNT(*) > 1;
-- Each statement may run again.

ALTER TABLE orders
	ADD UNIQUE KEY IF NOT EXISTS orders_principal_cancel_key (principal_id, cancel_key),
	ALGORITHM = INPLACE, LOCK = NONE;
