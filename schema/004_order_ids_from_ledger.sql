-- idemorders: an order takes the id of the ledger row that claimed its
-- key, allocated with the claim, so that the order, its items, the stock,
-- the ledger row and COMMIT can go in one round trip.  Ledger ids start
-- above every order id made before (orders.id kept its own counter), so
-- the two never collide.  On Galera, auto_increment_increment/offset keep
-- ids unique across nodes.
SET @idemorders_next = GREATEST(
	(SELECT COALESCE(MAX(id), 0) + 1 FROM orders),
	(SELECT COALESCE(MAX(id), 0) + 1 FROM idempotency_records));
SET @idemorders_sql = CONCAT('ALTER TABLE idempotency_records AUTO_INCREMENT = ',
	@idemorders_next);
PREPARE idemorders_stmt FROM @idemorders_sql;
EXECUTE idemorders_stmt;
DEALLOCATE PREPARE idemorders_stmt;
