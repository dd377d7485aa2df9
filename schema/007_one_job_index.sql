-- idemorders: one index serves both retention jobs.  005 gave each job
-- its own index, idem_due (live_expires_at) and idem_tombstone_age
-- (tombstone_at); every ledger row had an entry in both, a NULL one in
-- the index it is not due in, so every claim wrote three secondary
-- entries.  One index on (tombstone_at, live_expires_at) serves both:
-- a live row's entry is (NULL, expires_at), so the retention job reads
-- tombstone_at IS NULL AND live_expires_at <= now in expires_at order;
-- a tombstone's is (the time it became one, NULL), so the purge reads
-- tombstone_at <= cutoff in that order.  Finishing a create changes
-- neither column; expiry moves the row's one entry.  The generated
-- columns stay.  Each statement may run again.  On a filled ledger the
-- ADD INDEX reads every row once (about 10 s per million rows on the
-- bench machine) and takes no table lock; the DROPs only change the
-- data dictionary.

ALTER TABLE idempotency_records
	ADD INDEX IF NOT EXISTS idem_jobs (tombstone_at, live_expires_at);
ALTER TABLE idempotency_records
	DROP INDEX IF EXISTS idem_due,
	DROP INDEX IF EXISTS idem_tombstone_age;
