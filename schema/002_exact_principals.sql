-- idemorders: principals and keys compare byte for byte, with no padding.
-- utf8mb4_bin and ascii_bin are PAD SPACE collations: 'alice' and
-- 'alice ' were one principal, in WHERE and in the unique keys.  VARBINARY
-- compares exactly on MariaDB and MySQL alike.  No two existing rows can
-- differ only by trailing spaces (the unique keys refused them), so the
-- change cannot create duplicates.  Each statement may run again.

ALTER TABLE orders
	MODIFY principal_id VARBINARY(255) NOT NULL,
	MODIFY idempotency_key VARBINARY(255) NOT NULL;

ALTER TABLE idempotency_records
	MODIFY principal_id VARBINARY(255) NOT NULL,
	MODIFY operation VARBINARY(32) NOT NULL,
	MODIFY idem_key VARBINARY(255) NOT NULL;
