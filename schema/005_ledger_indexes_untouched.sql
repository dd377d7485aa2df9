-- idemorders: indexes that finishing a create never rewrites.  A create
-- inserts its ledger row PROCESSING and updates it to SUCCEEDED (or
-- FAILED_FINAL) in the same transaction; with indexes led by status, the
-- update moved the row in both of them.  Each job index now covers a
-- generated column whose value that update does not change: the
-- retention job walks live rows by expires_at (NULL once a tombstone),
-- the purge walks tombstones by the time they became one (updated_at of
-- an EXPIRED row, NULL before).  Each statement may run again.

ALTER TABLE idempotency_records
	ADD COLUMN IF NOT EXISTS live_expires_at DATETIME(6)
		AS (IF(status = 'EXPIRED', NULL, expires_at)) VIRTUAL,
	ADD COLUMN IF NOT EXISTS tombstone_at DATETIME(6)
		AS (IF(status = 'EXPIRED', updated_at, NULL)) VIRTUAL;
ALTER TABLE idempotency_records
	ADD INDEX IF NOT EXISTS idem_due (live_expires_at),
	ADD INDEX IF NOT EXISTS idem_tombstone_age (tombstone_at);
ALTER TABLE idempotency_records
	DROP INDEX IF EXISTS idem_retention,
	DROP INDEX IF EXISTS idem_tombstones;
