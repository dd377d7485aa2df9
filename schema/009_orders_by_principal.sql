-- idemorders: the index GET /orders reads a principal's orders from,
-- newest first, with a cursor: (principal_id, id).  The unique key
-- (principal_id, idempotency_key) finds a principal's orders too, but
-- in key order, so a page would sort every order of the principal.
-- With this index a page reads its own rows and one more, whatever the
-- principal or the table holds.  Each statement may run again.  On a
-- filled table the ADD INDEX reads every row once and takes no table
-- lock (ALGORITHM=INPLACE, LOCK=NONE: creates and cancels go on while
-- it runs).

ALTER TABLE orders
	ADD INDEX IF NOT EXISTS orders_principal_id (principal_id, id),
	ALGORITHM=INPLACE, LOCK=NONE;
