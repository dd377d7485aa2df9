// The client against a real idemorders stack built with fault injection,
// through lighttpd and Apache, judged by the rows left in the database and
// by the requests the responder logged.  Needs LIGHTTPD_URL, APACHE_URL,
// DEV (tools/dev) and LOGDIR, as tests/clients/81-client-js.sh exports them;
// without them the tests are skipped (and that script counts them failed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { IdemordersClient, MemoryStorage } from '../idemorders-client.mjs';

const env = process.env;
const SERVERS = [['lighttpd', env.LIGHTTPD_URL], ['apache', env.APACHE_URL]];
const skip = !(env.LIGHTTPD_URL && env.APACHE_URL && env.DEV && env.LOGDIR) &&
    'no test stack (LIGHTTPD_URL, APACHE_URL, DEV, LOGDIR)';
const AUTH = 'Basic ' + Buffer.from('alice:alice-secret').toString('base64');
const TAG = `${Date.now().toString(36)}-${process.pid}`;
let serial = 0;

/* Tab-separated rows from the stack's database (values are ours, quoted). */
function sql(stmt) {
	return execFileSync(env.DEV, ['sql', stmt], { encoding: 'utf8' }).trim();
}

function q(s) {
	return `'${String(s).replace(/'/g, "''")}'`;
}

/* A fresh KRW SKU with `available` units at 1000 each. */
function newSku(prefix, available) {
	const sku = `${prefix}-${TAG}-${++serial}`.slice(0, 64);
	sql(`INSERT INTO stock (sku, currency, unit_price, available) VALUES (${q(sku)}, 'KRW', 1000, ${available})`);
	return sku;
}

function order(sku, qty) {
	return { currency: 'KRW', items: [{ sku, qty }], amount: qty * 1000 };
}

/* What the database holds for alice's key: orders, ledger rows, stock. */
function rows(key, sku) {
	const k = q(key);
	return {
		orders: sql(`SELECT CONCAT('o-', id) FROM orders WHERE principal_id = 'alice' AND idempotency_key = ${k} ORDER BY id`),
		ledger: sql(`SELECT status, COALESCE(resource_id, 'NULL') FROM idempotency_records WHERE principal_id = 'alice' AND operation = 'create-order' AND idem_key = ${k}`),
		stock: sql(`SELECT available FROM stock WHERE sku = ${q(sku)}`),
	};
}

/* "available<TAB>restocked" of `sku`. */
function stockRow(sku) {
	return sql(`SELECT available, restocked FROM stock WHERE sku = ${q(sku)}`);
}

/* One SUCCEEDED cancel ledger row for alice's `key` on `orderId`, the order CANCELLED by it. */
function assertOneCancel(key, orderId) {
	const k = q(key);
	assert.equal(sql(`SELECT COUNT(*), MIN(status), MIN(response_status), MIN(resource_id) FROM idempotency_records WHERE principal_id = 'alice' AND operation = 'cancel-order' AND idem_key = ${k}`),
	    `1\tSUCCEEDED\t200\t${orderId}`, 'one cancel ledger row, SUCCEEDED');
	assert.equal(sql(`SELECT status, cancel_key FROM orders WHERE id = ${Number(orderId.slice(2))}`),
	    `CANCELLED\t${key}`);
}

/* The POST lines the responder logged for `key` (one per request it answered). */
function loggedPosts(key) {
	let text = '';
	try {
		text = readFileSync(`${env.LOGDIR}/idemorders.log`, 'utf8');
	} catch {
		return 0;
	}
	return text.split('\n').filter((l) => / POST \/orders /.test(l) &&
	    l.includes(` key=${key} attempts=`)).length;
}

/*
 * A client on `url` whose fetch counts the requests it sends, whose first
 * attempt carries `fault` (X-Idemorders-Fault) and whose sleeps are
 * recorded.
 */
function client(url, fault, options = {}) {
	const seen = { requests: 0, sleeps: [], starts: [], ends: [] };
	const c = new IdemordersClient({
		url: `${url}/orders`,
		headers: { Authorization: AUTH },
		attemptHeaders: (n) => (n === 1 && fault ? { 'X-Idemorders-Fault': fault } : {}),
		storage: options.storage || new MemoryStorage(),
		deadlineMs: 60000,
		tryTimeoutMs: 30000,
		baseDelayMs: 100,
		fetch: async (u, init) => {
			seen.requests++;
			seen.starts.push(Date.now());
			try {
				return await fetch(u, init);
			} finally {
				seen.ends.push(Date.now());
			}
		},
		sleep: (ms) => {
			seen.sleeps.push(ms);
			return new Promise((r) => setTimeout(r, ms));
		},
		...options,
	});
	return { c, seen };
}

/* A port of 127.0.0.1 where nothing listens: one just opened and closed. */
function closedPort() {
	return new Promise((resolve, reject) => {
		const srv = createServer();
		srv.on('error', reject);
		srv.listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

/* Wait until the responder pool answers health again after a crash. */
async function healthy(url) {
	for (let i = 0; i < 100; i++) {
		try {
			const r = await fetch(`${url}/orders/_health`);
			if (r.status === 200)
				return;
		} catch { /* not yet */ }
		await new Promise((r) => setTimeout(r, 200));
	}
}

for (const [name, url] of SERVERS) {
	for (const fault of ['after_commit=drop', 'after_commit=crash']) {
		test(`${name}: ${fault} on the first attempt ends in one order, replayed`, { skip }, async () => {
			const sku = newSku('JS-lost', 50);
			const { c, seen } = client(url, fault);
			const r = await c.createOrder(order(sku, 2), { ref: `lost-${sku}` });
			assert.equal(r.outcome, 'created', JSON.stringify(r.text));
			assert.equal(r.status, 201);
			assert.equal(r.replayed, true, 'the recovered answer is a replay');
			assert.ok(r.attempts >= 2, `attempts ${r.attempts}`);
			assert.equal(seen.requests, r.attempts);
			const db = rows(r.key, sku);
			assert.equal(db.orders, r.orderId, 'exactly one order, the one returned');
			assert.equal(db.ledger, `SUCCEEDED\t${r.orderId}`);
			assert.equal(db.stock, '48');
			await healthy(url);
		});
	}

	test(`${name}: before_commit=crash on the first attempt: the retry creates one order`, { skip }, async () => {
		const sku = newSku('JS-crash', 50);
		const { c } = client(url, 'before_commit=crash');
		const r = await c.createOrder(order(sku, 3));
		assert.equal(r.outcome, 'created');
		assert.equal(r.replayed, false, 'nothing was committed before');
		assert.ok(r.attempts >= 2);
		const db = rows(r.key, sku);
		assert.equal(db.orders, r.orderId);
		assert.equal(db.ledger, `SUCCEEDED\t${r.orderId}`);
		assert.equal(db.stock, '47');
		await healthy(url);
	});

	test(`${name}: 409 IDEMPOTENCY_KEY_REUSED is not retried`, { skip }, async () => {
		const sku = newSku('JS-reuse', 50);
		const key = `js-reuse-${sku}`;
		const first = client(url, null);
		const a = await first.c.createOrder(order(sku, 2), { key });
		assert.equal(a.outcome, 'created');
		const second = client(url, null);
		const b = await second.c.createOrder(order(sku, 3), { key });
		assert.equal(b.outcome, 'rejected');
		assert.equal(b.status, 409);
		assert.equal(b.code, 'IDEMPOTENCY_KEY_REUSED');
		assert.equal(b.attempts, 1);
		assert.equal(second.seen.requests, 1, 'one request sent');
		assert.equal(second.seen.sleeps.length, 0);
		assert.equal(loggedPosts(key), 2, 'the responder answered two requests for the key');
		const db = rows(key, sku);
		assert.equal(db.orders, a.orderId);
		assert.equal(db.stock, '48');
	});

	test(`${name}: 503 with Retry-After is retried after that long`, { skip }, async () => {
		const sku = newSku('JS-503', 50);
		const { c, seen } = client(url, 'after_ledger_insert=transient');
		const r = await c.createOrder(order(sku, 1));
		assert.equal(r.outcome, 'created');
		assert.equal(r.replayed, false);
		assert.equal(r.attempts, 2);
		assert.deepEqual(seen.sleeps, [1000], 'waited Retry-After: 1');
		const gap = seen.starts[1] - seen.ends[0];
		assert.ok(gap >= 990, `second attempt ${gap} ms after the 503`);
		const db = rows(r.key, sku);
		assert.equal(db.orders, r.orderId);
		assert.equal(db.stock, '49');
	});

	test(`${name}: 409 REQUEST_STATUS_UNCONFIRMED is retried and gets the replay`, { skip }, async () => {
		const sku = newSku('JS-unconf', 50);
		const key = `js-unconf-${sku}`;
		const a = await client(url, null).c.createOrder(order(sku, 2), { key });
		assert.equal(a.outcome, 'created');
		const { c, seen } = client(url, 'conflict_read=null');
		const r = await c.createOrder(order(sku, 2), { key });
		assert.equal(r.outcome, 'created');
		assert.equal(r.replayed, true);
		assert.equal(r.orderId, a.orderId);
		assert.equal(r.attempts, 2);
		assert.deepEqual(seen.sleeps, [1000]);
		assert.equal(rows(key, sku).orders, a.orderId);
	});
}

test('network errors are retried; the stored key then creates the order', { skip }, async () => {
	const storage = new MemoryStorage();
	const sku = newSku('JS-net', 50);
	const ref = `net-${sku}`;
	// Nothing listens there: connection refused.
	const down = client(`http://127.0.0.1:${await closedPort()}`, null,
	    { storage, deadlineMs: 3000 });
	const a = await down.c.createOrder(order(sku, 1), { ref });
	assert.equal(a.outcome, 'unknown');
	assert.equal(a.status, 0);
	assert.match(a.error, /network error|deadline/);
	assert.ok(a.attempts >= 2, `attempts ${a.attempts}`);
	assert.equal(down.seen.requests, a.attempts);
	assert.equal(storage.getItem(`idemorders:key:${ref}`), a.key, 'key kept');
	// The page is reloaded: a new client, the same storage, the same order.
	const up = client(env.LIGHTTPD_URL, null, { storage });
	const b = await up.c.createOrder(order(sku, 1), { ref });
	assert.equal(b.key, a.key);
	assert.equal(b.outcome, 'created');
	const again = await client(env.APACHE_URL, null, { storage }).c.createOrder(order(sku, 1), { ref });
	assert.equal(again.replayed, true);
	assert.equal(again.orderId, b.orderId);
	assert.equal(rows(a.key, sku).orders, b.orderId);
	assert.equal(rows(a.key, sku).stock, '49');
});

for (const [name, url] of SERVERS) {
	test(`${name}: a cancel restocks once, replays, and another key gets 409 ORDER_ALREADY_CANCELLED`, { skip }, async () => {
		const sku = newSku('JS-cancel', 50);
		const o = await client(url, null).c.createOrder(order(sku, 2));
		assert.equal(o.outcome, 'created', o.text);
		assert.equal(stockRow(sku), '48\t0');
		const key = `js-cancel-${sku}`;
		const a = await client(url, null).c.cancelOrder(o.orderId, { key, reason: 'changed my mind' });
		assert.equal(a.outcome, 'cancelled', a.text);
		assert.equal(a.status, 200);
		assert.equal(a.replayed, false);
		assert.equal(a.orderId, o.orderId);
		assert.equal(a.body.status, 'CANCELLED');
		assert.equal(typeof a.body.cancelledAt, 'string');
		assert.equal(stockRow(sku), '50\t2', 'restocked once');
		const b = await client(url, null).c.cancelOrder(o.orderId, { key, reason: 'changed my mind' });
		assert.equal(b.outcome, 'cancelled');
		assert.equal(b.replayed, true);
		assert.equal(b.text, a.text, 'the replay is byte for byte');
		const other = client(url, null);
		const c = await other.c.cancelOrder(o.orderId);
		assert.equal(c.outcome, 'rejected');
		assert.equal(c.status, 409);
		assert.equal(c.code, 'ORDER_ALREADY_CANCELLED');
		assert.equal(c.attempts, 1);
		assert.equal(other.seen.sleeps.length, 0);
		assert.equal(stockRow(sku), '50\t2', 'still restocked once');
		assertOneCancel(key, o.orderId);
	});

	for (const fault of ['after_commit=drop', 'after_commit=crash']) {
		test(`${name}: a cancel whose answer is lost (${fault}) is retried with its key: restocked once`, { skip }, async () => {
			const sku = newSku('JS-cancel-lost', 50);
			const o = await client(url, null).c.createOrder(order(sku, 3));
			assert.equal(o.outcome, 'created', o.text);
			const storage = new MemoryStorage();
			const { c, seen } = client(url, fault, { storage });
			const r = await c.cancelOrder(o.orderId, { ref: `cancel-${sku}` });
			assert.equal(r.outcome, 'cancelled', r.text);
			assert.equal(r.status, 200);
			assert.equal(r.replayed, true, 'the recovered answer is a replay');
			assert.ok(r.attempts >= 2, `attempts ${r.attempts}`);
			assert.equal(seen.requests, r.attempts);
			assert.equal(storage.getItem(`idemorders:key:cancel-${sku}`), r.key);
			assert.equal(stockRow(sku), '50\t3', 'restocked once');
			assertOneCancel(r.key, o.orderId);
			await healthy(url);
		});
	}

	test(`${name}: a cancel answered 503 with Retry-After is retried after that long`, { skip }, async () => {
		const sku = newSku('JS-cancel-503', 50);
		const o = await client(url, null).c.createOrder(order(sku, 1));
		const { c, seen } = client(url, 'after_ledger_insert=transient');
		const r = await c.cancelOrder(o.orderId);
		assert.equal(r.outcome, 'cancelled', r.text);
		assert.equal(r.replayed, false);
		assert.equal(r.attempts, 2);
		assert.deepEqual(seen.sleeps, [1000], 'waited Retry-After: 1');
		assert.equal(stockRow(sku), '50\t1');
		assertOneCancel(r.key, o.orderId);
	});
}

for (const [name, url] of SERVERS) {
	test(`${name}: listOrders pages through alice's newest orders; allOrders reaches them`, { skip }, async () => {
		const sku = newSku('JS-list', 10);
		const { c } = client(url, null);
		const made = [];
		for (let i = 0; i < 3; i++) {
			const r = await c.createOrder(order(sku, 1));
			assert.equal(r.outcome, 'created', r.text);
			made.unshift(r.orderId);
		}
		const p1 = await c.listOrders({ limit: 2 });
		assert.equal(p1.ok, true, p1.text);
		assert.deepEqual(p1.orders.map((o) => o.orderId), made.slice(0, 2));
		assert.equal(p1.hasMore, true);
		const p2 = await c.listOrders({ limit: 2, startingAfter: p1.nextCursor });
		assert.equal(p2.orders[0].orderId, made[2]);
		assert.equal(p2.prevCursor, made[2]);
		const back = await c.listOrders({ limit: 2, endingBefore: p2.prevCursor });
		assert.deepEqual(back.orders.map((o) => o.orderId), made.slice(0, 2));
		const seen = [];
		for await (const o of c.allOrders({ limit: 2 })) {
			seen.push(o.orderId);
			if (seen.length === 3)
				break;
		}
		assert.deepEqual(seen, made);
		const bad = await c.listOrders({ limit: 101 });
		assert.equal(bad.status, 400);
		assert.equal(bad.code, 'VALIDATION_FAILED');
	});
}
