-- idemorders: a version per stock row.  A final rejection judged on a
-- stock row bumps it in the rejecting transaction, so that on a
-- multi-primary cluster (Galera) the rejection and any concurrent change
-- of that row on another node conflict at certification: one of them is
-- rolled back and judged again, and no rejection is recorded from a stale
-- view of the stock.
ALTER TABLE stock ADD COLUMN version BIGINT UNSIGNED NOT NULL DEFAULT 0;
