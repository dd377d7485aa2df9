-- idemorders: cancelling an order (POST /orders/{orderId}/cancel, ledger
-- operation 'cancel-order').  A cancelled order keeps its row and items
-- with status 'CANCELLED', the time, the reason and the Idempotency-Key
-- of its cancel (so that the audit finds the cancel's ledger row by its
-- unique key); each
-- stock row counts the quantity cancels put back, so that for every SKU
-- the initial stock = available + ordered (all items) - restocked, and a
-- restock done twice shows.  Each statement may run again.

ALTER TABLE orders
	ADD COLUMN IF NOT EXISTS cancelled_at DATETIME(6) NULL,
	ADD COLUMN IF NOT EXISTS cancel_reason VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
	ADD COLUMN IF NOT EXISTS cancel_key VARBINARY(255) NULL;
ALTER TABLE stock
	ADD COLUMN IF NOT EXISTS restocked BIGINT NOT NULL DEFAULT 0;
