-- Demo stock (contract section 8).  Safe to load again: it resets the
-- four demo SKUs to their initial quantities and prices.
INSERT INTO stock (sku, currency, unit_price, available) VALUES
	('A-10', 'KRW', 6000, 100),
	('B-20', 'KRW', 2500, 50),
	('C-30', 'USD', 1999, 10),
	('Z-00', 'KRW', 1000, 0)
ON DUPLICATE KEY UPDATE currency = VALUES(currency),
	unit_price = VALUES(unit_price), available = VALUES(available);
