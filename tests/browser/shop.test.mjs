// The demo shop (examples/shop) in headless Chromium, through lighttpd
// and Apache, on the session shop (checkout.php: the PHP session is the
// identity) and on the bearer shop (checkout-token.php: the page holds a
// token).  Judged by what the page shows and by the rows in the database:
// one order per checkout, and its principal is the signed-in customer.
// One checkout has one key on every path: the page's script and the form
// without JavaScript, in one tab or several, send the key the server made
// for the checkout, so mixing them still makes one order.
// An order page's "Cancel this order" has one key too, made by the server
// with the page: a double click, a lost answer and a reload, and the form
// without JavaScript put the order's stock back once (judged by the stock
// row's available and restocked and by the cancel's ledger row).
// "My orders" lists the customer's orders (newest first, paged) with their
// status and a Cancel button per cancellable order; each button's key is
// made by the server with the page and kept in the session, so the script,
// the form without it, a second tab and a reload send the same one: a
// double click, a lost answer and a reload, two tabs, and a sign-out in
// between each end in one cancel (the order CANCELLED once, one ledger
// row, the stock back once, one order.cancelled event).
// The warehouse (warehouse.php) packs each new order once its signed
// order.created arrives from a relay; the order page and "My orders" then
// say packed and offer no Cancel button (judged by the shop's own table).
// Run by tests/clients/83-browser.sh, which exports the shops' URLs, DEV,
// LOGDIR, CHROMIUM and NODE_DIR (where puppeteer-core is installed), and
// the warehouse relay's binary, config and user.
import { test as nodeTest, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';

const env = process.env;
const SHOPS = [
	['lighttpd', 'session', env.SHOP_LIGHTTPD_URL, '/checkout.php', '/order.php', '/my-orders.php'],
	['apache', 'session', env.SHOP_APACHE_URL, '/checkout.php', '/order.php', '/my-orders.php'],
	['lighttpd', 'bearer', env.BEARER_LIGHTTPD_URL, '/checkout-token.php', '/order-token.php', '/my-orders-token.php'],
	['apache', 'bearer', env.BEARER_APACHE_URL, '/checkout-token.php', '/order-token.php', '/my-orders-token.php'],
];
const skip = !(SHOPS.every((s) => s[2]) && env.DEV && env.LOGDIR && env.NODE_DIR &&
    env.LIGHTTPD_URL && env.RELAY_BIN && env.WAREHOUSE_RELAY_CONF && env.POOL_USER) &&
    'no test stack (SHOP_*_URL, BEARER_*_URL, DEV, LOGDIR, NODE_DIR, RELAY_BIN, WAREHOUSE_RELAY_CONF, POOL_USER)';
// BROWSER_TESTS: only the tests whose name matches (while working on a
// page); the others are not declared, so not counted.
const only = env.BROWSER_TESTS ? new RegExp(env.BROWSER_TESTS) : null;
const test = (name, opts, fn) => (only === null || only.test(name)) && nodeTest(name, opts, fn);
const CUSTOMERS = { ana: 'customer-1001', ben: 'customer-1002' };
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const DONE = ['created', 'replayed', 'rejected', 'unknown'];
const TAG = `${Date.now().toString(36)}-${process.pid}`;
let serial = 0;
let browser = null;

/* Tab-separated rows from the stack's database. */
function sql(stmt) {
	return execFileSync(env.DEV, ['sql', stmt], { encoding: 'utf8' }).trim();
}

function q(s) {
	return `'${String(s).replace(/'/g, "''")}'`;
}

/* A fresh KRW product with `available` units at 1000 each. */
function newSku(prefix, available = 50) {
	const sku = `BR-${prefix}-${TAG}-${++serial}`.slice(0, 64);
	sql(`INSERT INTO stock (sku, currency, unit_price, available) VALUES (${q(sku)}, 'KRW', 1000, ${available})`);
	return sku;
}

/* "principal<TAB>o-N" for every order holding `sku`. */
function ordersOf(sku) {
	return sql(`SELECT o.principal_id, CONCAT('o-', o.id) FROM orders o
	    JOIN order_items i ON i.order_id = o.id WHERE i.sku = ${q(sku)} ORDER BY o.id`);
}

function stockOf(sku) {
	return sql(`SELECT available FROM stock WHERE sku = ${q(sku)}`);
}

/* "principal<TAB>status<TAB>resource" for every ledger row of `key`. */
function ledgerOf(key) {
	return sql(`SELECT principal_id, status, COALESCE(resource_id, 'NULL')
	    FROM idempotency_records WHERE idem_key = ${q(key)} ORDER BY principal_id`);
}

/* Wait until the responder pool answers health again (after a crash). */
async function healthy() {
	for (let i = 0; i < 100; i++) {
		try {
			if ((await fetch(`${env.LIGHTTPD_URL}/orders/_health`)).status === 200)
				return;
		} catch { /* not yet */ }
		await new Promise((r) => setTimeout(r, 200));
	}
}

before(async () => {
	if (skip)
		return;
	const require = createRequire(`${env.NODE_DIR}/package.json`);
	const puppeteer = require('puppeteer-core');
	browser = await puppeteer.launch({
		executablePath: env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
		    '--disable-background-networking', '--disable-component-update',
		    '--disable-sync', '--no-proxy-server',
		    '--host-resolver-rules=MAP shop.test 127.0.0.1'],
	});
});

after(async () => {
	if (browser)
		await browser.close();
});

/*
 * A customer's own browser profile on a page, with every POST /orders the
 * page sends recorded: key, authorization, status, Idempotent-Replayed.
 */
async function customer(t, base) {
	const ctx = await browser.createBrowserContext();
	t.after(() => ctx.close());
	const page = await ctx.newPage();
	page.setDefaultTimeout(60000);
	const posts = [];
	const isOrderPost = (req) => req.method() === 'POST' &&
	    new URL(req.url()).pathname === '/orders';
	page.on('request', (req) => {
		if (isOrderPost(req)) {
			const h = req.headers();
			posts.push({ req, key: h['idempotency-key'], authorization: h.authorization || null,
			    status: null, replayed: null, done: false });
		}
	});
	const settle = (req, status, replayed) => {
		const p = posts.find((x) => x.req === req);
		if (p) {
			p.status = status;
			p.replayed = replayed;
			p.done = true;
		}
	};
	page.on('response', (res) => settle(res.request(), res.status(),
	    res.headers()['idempotent-replayed'] === 'true'));
	page.on('requestfailed', (req) => settle(req, 0, false));
	const c = { ctx, page, posts, base, isOrderPost };
	/* Wait until every POST sent so far has its answer (or failed). */
	c.settled = async () => {
		for (let i = 0; i < 600 && posts.some((p) => !p.done); i++)
			await new Promise((r) => setTimeout(r, 100));
		assert.ok(posts.every((p) => p.done), 'a POST /orders never finished');
	};
	return c;
}

async function signIn(c, user) {
	const { page } = c;
	await page.goto(`${c.base}/login.php`);
	await page.type('#user', user);
	await page.type('#password', `${user}-secret`);
	await Promise.all([page.waitForNavigation(), page.click('#login-submit')]);
	const who = await page.$eval('#who', (el) => el.textContent);
	assert.match(who, new RegExp(CUSTOMERS[user]), 'signed in');
}

async function addToCart(c, sku, qty) {
	const { page } = c;
	await page.goto(`${c.base}/?q=${encodeURIComponent(sku)}`);
	const row = `tr[data-sku="${sku}"]`;
	await page.$eval(`${row} input[name=qty]`, (el, v) => { el.value = v; }, String(qty));
	await Promise.all([page.waitForNavigation(), page.click(`${row} button.add`)]);
	assert.ok(await page.$(`#cart tr[data-sku="${sku}"]`), 'in the cart');
}

/* Open the checkout page and wait for its script to show "Pay". */
async function openCheckout(c, path) {
	await c.page.goto(`${c.base}${path}`);
	await c.page.waitForSelector('#pay:not([hidden])');
}

/* What #status says once the checkout is decided. */
async function outcome(c) {
	await c.page.waitForFunction((done) => done.includes(
	    document.querySelector('#status')?.dataset.outcome), {}, DONE);
	await c.settled();
	// The page has the last answer too.
	await new Promise((r) => setTimeout(r, 200));
	return c.page.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
}

async function screenshot(c, name) {
	await c.page.screenshot({ path: `${env.LOGDIR}/browser/${name}.png`, fullPage: true });
}

/* Sign in, put `qty` of a fresh product in the cart, open the checkout. */
async function readyToPay(t, base, path, user, what, qty = 2) {
	const sku = newSku(what);
	const c = await customer(t, base);
	await signIn(c, user);
	await addToCart(c, sku, qty);
	await openCheckout(c, path);
	return { c, sku };
}

/*
 * Let the first POST /orders carry X-Idemorders-Fault: `fault`; with
 * hold, refuse every later one until c.release().
 */
async function faultFirstPost(c, fault, hold = false) {
	let n = 0;
	let holding = hold;
	await c.page.setRequestInterception(true);
	c.page.on('request', (req) => {
		if (req.isInterceptResolutionHandled())
			return;
		if (c.isOrderPost(req)) {
			n++;
			if (n === 1) {
				req.continue({ headers: { ...req.headers(), 'x-idemorders-fault': fault } });
				return;
			}
			if (holding) {
				req.abort('connectionrefused');
				return;
			}
		}
		req.continue();
	});
	c.release = () => { holding = false; };
}

/* A request from the page with the customer's credentials. */
function api(c, mode, method, path, headers = {}, body = undefined) {
	return c.page.evaluate(async (mode, method, path, headers, body) => {
		const h = { ...headers };
		if (mode === 'bearer') {
			const t = await fetch('/token.php', { cache: 'no-store' });
			if (t.ok)
				h.Authorization = `Bearer ${(await t.json()).access_token}`;
		}
		const r = await fetch(path, { method, headers: h, body,
		    credentials: mode === 'bearer' ? 'omit' : 'same-origin' });
		return { status: r.status, text: await r.text(),
		    replayed: r.headers.get('idempotent-replayed') };
	}, mode, method, path, headers, body);
}

/* "available<TAB>restocked" of `sku`. */
function stockRow(sku) {
	return sql(`SELECT available, restocked FROM stock WHERE sku = ${q(sku)}`);
}

/* "count<TAB>status<TAB>resource" of the cancel ledger rows of `key`. */
function cancelLedgerOf(key) {
	return sql(`SELECT COUNT(*), IFNULL(MIN(status), '-'), IFNULL(MIN(resource_id), '-')
	    FROM idempotency_records WHERE operation = 'cancel-order' AND idem_key = ${q(key)}`);
}

/* "status<TAB>cancel_key" of order `orderId`. */
function orderRow(orderId) {
	return sql(`SELECT status, IFNULL(cancel_key, '-') FROM orders WHERE id = ${Number(orderId.slice(2))}`);
}

const CANCEL_PATH = /^\/orders\/o-[0-9]+\/cancel$/;

/*
 * Record every cancel POST page `page` sends (c.cancels: key, status,
 * replayed); with `fault`, the first one carries X-Idemorders-Fault and,
 * with hold, every later one is refused until c.release().
 */
async function watchCancels(c, page, fault = null, hold = false) {
	c.cancels = c.cancels || [];
	const isCancel = (req) => req.method() === 'POST' && CANCEL_PATH.test(new URL(req.url()).pathname);
	page.on('request', (req) => {
		if (isCancel(req))
			c.cancels.push({ req, key: req.headers()['idempotency-key'], status: null,
			    replayed: null, done: false });
	});
	const settle = (req, status, replayed) => {
		const x = c.cancels.find((p) => p.req === req);
		if (x)
			Object.assign(x, { status, replayed, done: true });
	};
	page.on('response', (res) => settle(res.request(), res.status(),
	    res.headers()['idempotent-replayed'] === 'true'));
	page.on('requestfailed', (req) => settle(req, 0, false));
	if (fault === null)
		return;
	let n = 0;
	let holding = hold;
	await page.setRequestInterception(true);
	page.on('request', (req) => {
		if (req.isInterceptResolutionHandled())
			return;
		if (isCancel(req)) {
			n++;
			if (n === 1) {
				req.continue({ headers: { ...req.headers(), 'x-idemorders-fault': fault } });
				return;
			}
			if (holding) {
				req.abort('connectionrefused');
				return;
			}
		}
		req.continue();
	});
	c.release = () => { holding = false; };
}

/*
 * Hold the first POST to a path `path` matches until a second one is sent
 * (or 10 s passed), so that a double click's second click cannot find the
 * page already done on a loaded machine: both requests then reach the
 * service together.
 */
async function pairPosts(page, path) {
	const held = [];
	await page.setRequestInterception(true);
	page.on('request', (req) => {
		if (req.isInterceptResolutionHandled())
			return;
		if (req.method() === 'POST' && path.test(new URL(req.url()).pathname) &&
		    held !== null) {
			held.push(req);
			if (held.length === 1) {
				setTimeout(() => {
					if (held.length === 1)
						held.splice(0).forEach((r) => r.continue());
				}, 10000);
				return;
			}
			held.splice(0).forEach((r) => r.continue());
			return;
		}
		req.continue();
	});
}

/* Ana signed in, with her order of 2 x a fresh product (50 stocked). */
async function anasOrder(t, base, mode, what) {
	const sku = newSku(what);
	const c = await customer(t, base);
	await signIn(c, 'ana');
	const body = JSON.stringify({ currency: 'KRW', items: [{ sku, qty: 2 }], amount: 2000 });
	const r = await api(c, mode, 'POST', '/orders',
	    { 'Content-Type': 'application/json', 'Idempotency-Key': `br-${what}-${TAG}-${++serial}` }, body);
	assert.equal(r.status, 201, r.text);
	const orderId = JSON.parse(r.text).orderId;
	assert.equal(stockRow(sku), '48\t0');
	return { c, sku, orderId };
}

/* What #status of the order page says once the cancel is decided. */
async function cancelOutcome(c, page = c.page) {
	await page.waitForFunction(() => ['cancelled', 'replayed', 'rejected', 'unknown'].includes(
	    document.querySelector('#status')?.dataset.outcome));
	for (let i = 0; i < 600 && (c.cancels || []).some((p) => !p.done); i++)
		await new Promise((r) => setTimeout(r, 100));
	assert.ok((c.cancels || []).every((p) => p.done), 'a cancel POST never finished');
	await new Promise((r) => setTimeout(r, 200));
	return page.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
}

/* The number of order.cancelled events of order `orderId`. */
function cancelEventsOf(orderId) {
	return sql(`SELECT COUNT(*) FROM events WHERE type = 'order.cancelled' AND order_id = ${Number(orderId.slice(2))}`);
}

/* Ana's newest `n` order ids, newest first. */
function anasNewest(n, offset = 0) {
	return sql(`SELECT CONCAT('o-', id) FROM orders WHERE principal_id = 'customer-1001'
	    ORDER BY id DESC LIMIT ${n} OFFSET ${offset}`).split('\n').filter(Boolean);
}

/* One cancel of `orderId` with `key`, judged by the database. */
function cancelledOnce(sku, orderId, key, stock = '50\t2') {
	assert.equal(orderRow(orderId), `CANCELLED\t${key}`, 'cancelled with the key of the page');
	assert.equal(cancelLedgerOf(key), `1\tSUCCEEDED\t${orderId}`, 'one cancel ledger row');
	assert.equal(sql(`SELECT COUNT(*) FROM idempotency_records WHERE operation = 'cancel-order'
	    AND resource_id = ${q(orderId)}`), '1', 'no other cancel of this order recorded');
	assert.equal(stockRow(sku), stock, 'restocked once');
	assert.equal(cancelEventsOf(orderId), '1', 'one order.cancelled event');
}

/* The rows of "My orders" on `page`: id, status shown, key, button. */
function listRows(page) {
	return page.$$eval('#orders tbody tr', (rows) => rows.map((r) => ({
		id: r.dataset.orderId,
		status: r.querySelector('.status').textContent.trim(),
		key: r.dataset.key || '',
		button: !!r.querySelector('button.cancel'),
	})));
}

/* Open "My orders" on `page` and wait for its script (if it runs). */
async function openList(page, url, script = true) {
	const res = await page.goto(url);
	assert.equal(res.status(), 200, `${url}: ${res.status()}`);
	if (script)
		await page.waitForSelector('#orders[data-ready="true"]');
	return res;
}

/* What the row of `orderId` says once its cancel is decided. */
async function rowOutcome(c, page, orderId) {
	await page.waitForFunction((id) => ['cancelled', 'replayed', 'rejected', 'unknown'].includes(
	    document.querySelector(`tr[data-order-id="${id}"]`)?.dataset.outcome), {}, orderId);
	for (let i = 0; i < 600 && (c.cancels || []).some((p) => !p.done); i++)
		await new Promise((r) => setTimeout(r, 100));
	assert.ok((c.cancels || []).every((p) => p.done), 'a cancel POST never finished');
	await new Promise((r) => setTimeout(r, 200));
	return page.$eval(`tr[data-order-id="${orderId}"]`, (el) => ({ ...el.dataset,
	    text: el.querySelector('.message').textContent,
	    status: el.querySelector('.status').textContent.trim() }));
}

for (const [server, mode, base, path, orderPath, listPath] of SHOPS) {
	const name = `${server} ${mode}`;
	const shot = `${server}-${mode}`;

	test(`${name}: My orders: newest first, paged, status, and a double click on Cancel: one cancel`, { skip }, async (t) => {
		const { c, sku, orderId } = await anasOrder(t, base, mode, 'my-dbl');
		// One more order, the newest.
		const r = await api(c, mode, 'POST', '/orders', { 'Content-Type': 'application/json',
		    'Idempotency-Key': `br-my-new-${TAG}-${++serial}` },
		    JSON.stringify({ currency: 'KRW', items: [{ sku, qty: 1 }], amount: 1000 }));
		assert.equal(r.status, 201, r.text);
		const newest = JSON.parse(r.text).orderId;
		await watchCancels(c, c.page);
		await pairPosts(c.page, CANCEL_PATH);
		await openList(c.page, `${base}${listPath}?limit=2`);
		await screenshot(c, `${shot}-my-orders`);
		let rows = await listRows(c.page);
		assert.deepEqual(rows.map((r) => r.id), anasNewest(2), 'ana\'s two newest, newest first');
		assert.equal(rows[0].id, newest);
		assert.equal(rows[1].id, orderId);
		assert.deepEqual(rows.map((r) => [r.status, r.button]), [['created', true], ['created', true]]);
		for (const r of rows)
			assert.match(r.key, UUID_V4);
		assert.notEqual(rows[0].key, rows[1].key, 'a key per order');
		// Paging: the next page starts after the last order of this one,
		// and comes back.
		await Promise.all([c.page.waitForNavigation(), c.page.click('#next')]);
		await c.page.waitForSelector('#orders[data-ready="true"]');
		const page2 = await listRows(c.page);
		assert.deepEqual(page2.map((r) => r.id), anasNewest(2, 2), 'the next page');
		await Promise.all([c.page.waitForNavigation(), c.page.click('#prev')]);
		await c.page.waitForSelector('#orders[data-ready="true"]');
		rows = await listRows(c.page);
		assert.deepEqual(rows.map((r) => r.id), [newest, orderId], 'back to the first page');
		const key = rows[1].key;
		await c.page.click(`tr[data-order-id="${orderId}"] button.cancel`, { count: 2 });
		const s = await rowOutcome(c, c.page, orderId);
		await screenshot(c, `${shot}-my-orders-cancelled`);
		assert.equal(s.outcome, 'cancelled', s.text);
		assert.equal(s.status, 'cancelled');
		assert.equal(c.cancels.length, 2, 'two clicks, two requests');
		assert.deepEqual(c.cancels.map((p) => [p.key, p.status]), [[key, 200], [key, 200]]);
		assert.equal(c.cancels.filter((p) => p.replayed).length, 1, 'the second one replayed');
		// 50 stocked, 2 + 1 ordered, the 2 of this order back once.
		cancelledOnce(sku, orderId, key, '49\t2');
		assert.equal(orderRow(newest), 'CREATED\t-', 'the other order untouched');
		// Reloaded: cancelled, no button; the other order still offers one.
		await openList(c.page, `${base}${listPath}?limit=2`);
		rows = await listRows(c.page);
		assert.deepEqual(rows.map((r) => [r.id, r.status, r.button]),
		    [[newest, 'created', true], [orderId, 'cancelled', false]]);
	});

	test(`${name}: My orders: the answer lost, reloaded, then the form without JavaScript and a second tab: one cancel`, { skip }, async (t) => {
		const { c, sku, orderId } = await anasOrder(t, base, mode, 'my-lost');
		// Two more tabs of the same customer, opened before the cancel:
		// one without JavaScript, one with.
		const nojs = await c.ctx.newPage();
		nojs.setDefaultTimeout(60000);
		await nojs.setJavaScriptEnabled(false);
		await openList(nojs, `${base}${listPath}`, false);
		const tab2 = await c.ctx.newPage();
		tab2.setDefaultTimeout(60000);
		await openList(tab2, `${base}${listPath}`);
		await watchCancels(c, c.page, 'after_commit=drop', true);
		await watchCancels(c, tab2);
		await c.page.bringToFront();
		await openList(c.page, `${base}${listPath}`);
		const row = `tr[data-order-id="${orderId}"]`;
		const key = await c.page.$eval(row, (el) => el.dataset.key);
		assert.equal(await nojs.$eval(row, (el) => el.dataset.key), key, 'the form has the same key');
		assert.equal(await tab2.$eval(row, (el) => el.dataset.key), key, 'the other tab has the same key');
		await c.page.click(`${row} button.cancel`);
		// The client retries; its retries do not get through.
		await c.page.waitForFunction((r) => document.querySelector(r).dataset.outcome === 'retrying', {}, row);
		assert.ok(c.cancels[0].status >= 500 || c.cancels[0].status === 0, `first answer ${c.cancels[0].status}`);
		assert.equal(c.cancels[0].key, key);
		assert.equal(orderRow(orderId), `CANCELLED\t${key}`, 'committed before the answer was lost');
		await c.page.reload();
		c.release();
		for (const p of c.cancels)
			p.done = true;
		await c.page.waitForSelector('#orders[data-ready="true"]');
		let rows = await listRows(c.page);
		let mine = rows.find((r) => r.id === orderId);
		assert.deepEqual([mine.status, mine.button], ['cancelled', false], 'the reloaded list shows it cancelled');
		// The form without JavaScript, rendered before: the same key, replayed.
		await nojs.bringToFront();
		await Promise.all([nojs.waitForNavigation(), nojs.click(`${row} button.cancel`)]);
		await nojs.waitForSelector('#status[data-outcome]');
		const f = await nojs.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
		await nojs.screenshot({ path: `${env.LOGDIR}/browser/${shot}-my-orders-nojs.png`, fullPage: true });
		assert.equal(f.outcome, 'replayed', f.text);
		assert.equal(f.key, key);
		// The second tab, rendered before: the same key, replayed.
		await tab2.bringToFront();
		const sent = c.cancels.length;
		await tab2.click(`${row} button.cancel`);
		const s = await rowOutcome(c, tab2, orderId);
		assert.equal(s.outcome, 'replayed', s.text);
		assert.equal(s.status, 'cancelled');
		assert.deepEqual(c.cancels.slice(sent).map((p) => [p.key, p.status, p.replayed]), [[key, 200, true]]);
		cancelledOnce(sku, orderId, key);
	});

	test(`${name}: My orders: signed out in between: refused, then signed in again it shows the one cancel`, { skip }, async (t) => {
		const { c, sku, orderId } = await anasOrder(t, base, mode, 'my-out');
		await watchCancels(c, c.page, 'after_commit=drop', true);
		await openList(c.page, `${base}${listPath}`);
		const row = `tr[data-order-id="${orderId}"]`;
		const key = await c.page.$eval(row, (el) => el.dataset.key);
		await c.page.click(`${row} button.cancel`);
		await c.page.waitForFunction((r) => document.querySelector(r).dataset.outcome === 'retrying', {}, row);
		assert.equal(orderRow(orderId), `CANCELLED\t${key}`, 'committed before the answer was lost');
		// Signed out (the header's form, from another tab), then the
		// click again on the page still open.
		const other = await c.ctx.newPage();
		await other.goto(`${base}/`);
		await Promise.all([other.waitForNavigation(), other.click('#logout')]);
		await other.close();
		c.release();
		await c.page.bringToFront();
		const sent = c.cancels.length;
		await c.page.click(`${row} button.cancel`);
		await c.page.waitForFunction((r) => /signed out/.test(document.querySelector(r).querySelector('.message').textContent), {}, row);
		await screenshot(c, `${shot}-my-orders-signed-out`);
		for (const p of c.cancels.slice(sent))
			assert.ok([401, 0].includes(p.status) || !p.done, `after sign-out: ${p.status}`);
		// Signed in again: the order is cancelled, nothing to press.
		await signIn(c, 'ana');
		await openList(c.page, `${base}${listPath}`);
		const rows = await listRows(c.page);
		const mine = rows.find((r) => r.id === orderId);
		assert.deepEqual([mine.status, mine.button], ['cancelled', false]);
		for (let i = 0; i < 600 && c.cancels.some((p) => !p.done); i++)
			await new Promise((r) => setTimeout(r, 100));
		cancelledOnce(sku, orderId, key);
	});

	test(`${name}: "Cancel this order", a real double click: one key, restocked once`, { skip }, async (t) => {
		const { c, sku, orderId } = await anasOrder(t, base, mode, 'cxl-dbl');
		await watchCancels(c, c.page);
		await pairPosts(c.page, CANCEL_PATH);
		await c.page.goto(`${base}${orderPath}?id=${orderId}`);
		await c.page.waitForSelector('#cancel:not([hidden])');
		const key = await c.page.$eval('#order', (el) => el.dataset.key);
		assert.match(key, UUID_V4);
		await screenshot(c, `${shot}-order`);
		await c.page.click('#cancel', { count: 2 });
		const s = await cancelOutcome(c);
		await screenshot(c, `${shot}-cancelled`);
		assert.equal(s.outcome, 'cancelled', s.text);
		assert.equal(c.cancels.length, 2, 'two clicks, two requests');
		assert.deepEqual(c.cancels.map((p) => p.key), [key, key], 'the key the page was rendered with');
		assert.deepEqual(c.cancels.map((p) => p.status), [200, 200]);
		assert.equal(c.cancels.filter((p) => p.replayed).length, 1, 'the second one replayed');
		assert.equal(await c.page.$eval('#order-status', (el) => el.textContent), 'CANCELLED');
		assert.equal(stockRow(sku), '50\t2', 'restocked once');
		assert.equal(orderRow(orderId), `CANCELLED\t${key}`);
		assert.equal(cancelLedgerOf(key), `1\tSUCCEEDED\t${orderId}`);
		// Reloaded, the page shows the order cancelled and offers nothing.
		await c.page.reload();
		assert.equal(await c.page.$eval('#status', (el) => el.dataset.outcome), 'cancelled');
		assert.equal(await c.page.$('#cancel'), null);
	});

	test(`${name}: a cancel whose answer is lost, the page reloaded: restocked once, the key replays`, { skip }, async (t) => {
		const { c, sku, orderId } = await anasOrder(t, base, mode, 'cxl-lost');
		await watchCancels(c, c.page, 'after_commit=drop', true);
		await c.page.goto(`${base}${orderPath}?id=${orderId}`);
		await c.page.waitForSelector('#cancel:not([hidden])');
		const key = await c.page.$eval('#order', (el) => el.dataset.key);
		await c.page.click('#cancel');
		// The client retries; its retries do not get through.
		await c.page.waitForFunction(() => document.querySelector('#status').dataset.outcome === 'retrying');
		assert.ok(c.cancels[0].status >= 500 || c.cancels[0].status === 0, `first answer ${c.cancels[0].status}`);
		assert.equal(c.cancels[0].key, key);
		assert.equal(orderRow(orderId), `CANCELLED\t${key}`, 'committed before the answer was lost');
		assert.equal(stockRow(sku), '50\t2');
		await c.page.reload();
		c.release();
		for (const p of c.cancels)
			p.done = true;
		const after = await c.page.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
		await screenshot(c, `${shot}-cancel-reloaded`);
		assert.equal(after.outcome, 'cancelled', `the reloaded page shows the order cancelled: ${after.text}`);
		assert.equal(await c.page.$('#cancel'), null, 'nothing left to press');
		// The page's key sent again (what a retry still in flight does):
		// the stored answer, nothing restocked again.
		const again = await api(c, mode, 'POST', `/orders/${orderId}/cancel`,
		    { 'Content-Type': 'application/json', 'Idempotency-Key': key }, '{}');
		assert.equal(again.status, 200, again.text);
		assert.equal(again.replayed, 'true');
		assert.equal(JSON.parse(again.text).status, 'CANCELLED');
		assert.equal(stockRow(sku), '50\t2', 'restocked once');
		assert.equal(cancelLedgerOf(key), `1\tSUCCEEDED\t${orderId}`);
	});

	test(`${name}: cancelled without JavaScript (two submits), then by the script: one key, restocked once`, { skip }, async (t) => {
		const { c, sku, orderId } = await anasOrder(t, base, mode, 'cxl-form');
		await watchCancels(c, c.page);
		await c.page.goto(`${base}${orderPath}?id=${orderId}`);
		await c.page.waitForSelector('#cancel:not([hidden])');
		const key = await c.page.$eval('#order', (el) => el.dataset.key);
		const tab = await c.ctx.newPage();
		tab.setDefaultTimeout(60000);
		await tab.setJavaScriptEnabled(false);
		await tab.goto(`${base}${orderPath}?id=${orderId}`);
		assert.equal(await tab.$eval('#order', (el) => el.dataset.key), key, 'one cancel, one key');
		await Promise.all([tab.waitForNavigation(), tab.click('#cancel-server', { count: 2 })]);
		await tab.waitForSelector('#status[data-outcome]');
		const f = await tab.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
		await tab.screenshot({ path: `${env.LOGDIR}/browser/${shot}-cancel-nojs.png`, fullPage: true });
		assert.ok(['cancelled', 'replayed'].includes(f.outcome), f.text);
		assert.equal(f.key, key);
		// Both submits have been answered once the stock shows it.
		await new Promise((r) => setTimeout(r, 500));
		assert.equal(stockRow(sku), '50\t2', 'restocked once');
		assert.equal(cancelLedgerOf(key), `1\tSUCCEEDED\t${orderId}`);
		// The page opened before, with the script: the same key, replayed.
		await c.page.bringToFront();
		await c.page.click('#cancel');
		const s = await cancelOutcome(c);
		assert.equal(s.outcome, 'replayed', s.text);
		assert.deepEqual(c.cancels.map((p) => [p.key, p.status, p.replayed]), [[key, 200, true]]);
		assert.equal(stockRow(sku), '50\t2', 'still restocked once');
	});

	test(`${name}: another customer's order page: 404, nothing to cancel`, { skip }, async (t) => {
		const { c, orderId } = await anasOrder(t, base, mode, 'cxl-ben');
		const mine = await c.page.goto(`${base}${orderPath}?id=${orderId}`);
		assert.equal(mine.status(), 200, 'ana sees her own order');
		await c.page.waitForSelector('#cancel:not([hidden])');
		const ben = await customer(t, base);
		await signIn(ben, 'ben');
		const res = await ben.page.goto(`${base}${orderPath}?id=${orderId}`);
		assert.equal(res.status(), 404);
		assert.equal(await ben.page.$('#cancel'), null);
		assert.equal(orderRow(orderId), 'CREATED\t-');
	});

	test(`${name}: sign in, cart, checkout, a real double click on Pay: one order`, { skip }, async (t) => {
		const { c, sku } = await readyToPay(t, base, path, 'ana', 'dbl');
		await screenshot(c, `${shot}-checkout`);
		await pairPosts(c.page, /^\/orders$/);
		await c.page.click('#pay', { count: 2 });
		const s = await outcome(c);
		await screenshot(c, `${shot}-created`);
		assert.equal(s.outcome, 'created', s.text);
		assert.match(s.orderId, /^o-[0-9]+$/);
		assert.equal(c.posts.length, 2, 'two clicks, two requests');
		assert.equal(new Set(c.posts.map((p) => p.key)).size, 1, 'one key');
		assert.match(c.posts[0].key, UUID_V4);
		assert.deepEqual(c.posts.map((p) => p.status).sort(), [201, 201]);
		assert.equal(c.posts.filter((p) => p.replayed).length, 1, 'the second one replayed');
		if (mode === 'bearer')
			assert.ok(c.posts.every((p) => /^Bearer \S+$/.test(p.authorization)), 'bearer token sent');
		else
			assert.ok(c.posts.every((p) => p.authorization === null));
		assert.equal(ordersOf(sku), `customer-1001\t${s.orderId}`);
		assert.equal(ledgerOf(c.posts[0].key), `customer-1001\tSUCCEEDED\t${s.orderId}`);
		assert.equal(stockOf(sku), '48');
		// The checkout is closed: the cart is empty for the next order.
		await c.page.waitForFunction(() => /\(0\)/.test(document.querySelector('#cart-link').textContent));
		// The confirmation links to the order's page, which offers the cancel.
		const href = await c.page.$eval('#order-link', (el) => el.getAttribute('href'));
		assert.equal(href, `${orderPath}?id=${s.orderId}`);
		await c.page.click('#order-link');
		await c.page.waitForSelector('#cancel:not([hidden])');
		assert.equal(await c.page.$eval('#order-status', (el) => el.textContent), 'CREATED');
	});

	test(`${name}: two clicks in one task send one key: one order`, { skip }, async (t) => {
		const { c, sku } = await readyToPay(t, base, path, 'ana', 'task');
		await c.page.evaluate(() => {
			const pay = document.getElementById('pay');
			pay.click();
			pay.click();
		});
		const s = await outcome(c);
		assert.equal(s.outcome, 'created', s.text);
		assert.equal(c.posts.length, 2);
		assert.equal(new Set(c.posts.map((p) => p.key)).size, 1, 'one key');
		assert.equal(ordersOf(sku), `customer-1001\t${s.orderId}`);
		assert.equal(stockOf(sku), '48');
	});

	test(`${name}: the answer lost, the page reloaded: the same key, the one order replayed`, { skip }, async (t) => {
		const { c, sku } = await readyToPay(t, base, path, 'ana', 'lost');
		await faultFirstPost(c, 'after_commit=drop', true);
		await c.page.click('#pay');
		// The client retries; its retries do not get through.
		await c.page.waitForFunction(() => document.querySelector('#status').dataset.outcome === 'retrying');
		const key = c.posts[0].key;
		assert.ok(c.posts[0].status >= 500 || c.posts[0].status === 0, `first answer ${c.posts[0].status}`);
		assert.equal(ordersOf(sku).split('\n').length, 1, 'committed before the answer was lost');
		await c.page.reload();
		await c.page.waitForSelector('#pay:not([hidden])');
		c.release();
		// What the old page had in flight ended with it.
		for (const p of c.posts)
			p.done = true;
		const before = await c.page.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
		assert.equal(before.outcome, 'unknown', 'the page says the payment was not confirmed');
		assert.equal(before.key, key);
		await screenshot(c, `${shot}-unconfirmed`);
		const sent = c.posts.length;
		await c.page.click('#pay');
		const s = await outcome(c);
		await screenshot(c, `${shot}-replayed`);
		assert.equal(s.outcome, 'replayed', s.text);
		assert.equal(s.replayed, 'true');
		assert.equal(c.posts[sent].key, key, 'the same key after the reload');
		assert.equal(c.posts[sent].status, 201);
		assert.equal(ordersOf(sku), `customer-1001\t${s.orderId}`);
		assert.equal(ledgerOf(key), `customer-1001\tSUCCEEDED\t${s.orderId}`);
		assert.equal(stockOf(sku), '48');
	});

	test(`${name}: a worker crash after COMMIT: one order`, { skip }, async (t) => {
		const { c, sku } = await readyToPay(t, base, path, 'ana', 'crash');
		await faultFirstPost(c, 'after_commit=crash');
		await c.page.click('#pay');
		const s = await outcome(c);
		assert.equal(s.outcome, 'replayed', s.text);
		assert.ok(c.posts.length >= 2);
		assert.ok(c.posts[0].status >= 500 || c.posts[0].status === 0, `first answer ${c.posts[0].status}`);
		assert.equal(new Set(c.posts.map((p) => p.key)).size, 1);
		assert.equal(ordersOf(sku), `customer-1001\t${s.orderId}`);
		assert.equal(stockOf(sku), '48');
		await healthy();
	});

	test(`${name}: ben's order is not ana's: 404, and ben's key makes ana's own`, { skip }, async (t) => {
		const ben = await readyToPay(t, base, path, 'ben', 'ab', 1);
		await ben.c.page.click('#pay');
		const b = await outcome(ben.c);
		assert.equal(b.outcome, 'created', b.text);
		const bKey = ben.c.posts[0].key;
		const ana = await customer(t, base);
		await signIn(ana, 'ana');
		const mine = await api(ana, mode, 'GET', `/orders/${b.orderId}`);
		assert.equal(mine.status, 404, mine.text);
		assert.ok(!mine.text.includes(ben.sku));
		const body = JSON.stringify({ currency: 'KRW', items: [{ sku: ben.sku, qty: 1 }], amount: 1000 });
		const p = await api(ana, mode, 'POST', '/orders',
		    { 'Content-Type': 'application/json', 'Idempotency-Key': bKey }, body);
		assert.ok(p.status === 201 || p.status === 409, `${p.status} ${p.text}`);
		assert.ok(!p.text.includes(b.orderId), `ana got ben's order: ${p.text}`);
		assert.notEqual(p.replayed, 'true');
		const a = JSON.parse(p.text).orderId;
		assert.equal(ordersOf(ben.sku), `customer-1002\t${b.orderId}\ncustomer-1001\t${a}`);
		assert.equal(ledgerOf(bKey),
		    `customer-1001\tSUCCEEDED\t${a}\ncustomer-1002\tSUCCEEDED\t${b.orderId}`);
		const own = await api(ana, mode, 'GET', `/orders/${a}`);
		assert.equal(own.status, 200, own.text);
	});

	test(`${name}: paid by script, answer lost, then paid without script: one order`, { skip }, async (t) => {
		const { c, sku } = await readyToPay(t, base, path, 'ana', 'mix');
		const pageKey = await c.page.$eval('#checkout', (el) => el.dataset.key);
		await faultFirstPost(c, 'after_commit=drop', true);
		await c.page.click('#pay');
		// The script retries; its retries do not get through.
		await c.page.waitForFunction(() => document.querySelector('#status').dataset.outcome === 'retrying');
		const key = c.posts[0].key;
		assert.ok(c.posts[0].status >= 500 || c.posts[0].status === 0, `first answer ${c.posts[0].status}`);
		assert.equal(ordersOf(sku).split('\n').length, 1, 'committed before the answer was lost');
		// The same customer pays the same checkout in a tab without JavaScript.
		const tab = await c.ctx.newPage();
		tab.setDefaultTimeout(60000);
		await tab.setJavaScriptEnabled(false);
		await tab.goto(`${base}${path}`);
		assert.equal(await tab.$eval('#checkout', (el) => el.dataset.ref),
		    await c.page.$eval('#checkout', (el) => el.dataset.ref), 'the same checkout');
		await Promise.all([tab.waitForNavigation(), tab.click('#pay-server')]);
		await tab.waitForSelector('#status[data-outcome]');
		const s = await tab.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
		await tab.screenshot({ path: `${env.LOGDIR}/browser/${shot}-script-then-form.png`, fullPage: true });
		assert.equal(s.outcome, 'created', s.text);
		assert.equal(s.replayed, 'true', `the form replays the script's order: ${s.text}`);
		assert.equal(ordersOf(sku), `customer-1001\t${s.orderId}`);
		assert.equal(ledgerOf(key), `customer-1001\tSUCCEEDED\t${s.orderId}`);
		assert.equal(stockOf(sku), '48');
		assert.equal(key, pageKey, 'the script sends the key the page was rendered with');
		// The script's tab, let through again: its own retries, or one
		// more click, send the same key and get the same order.
		c.release();
		await c.page.bringToFront();
		await c.page.evaluate(() => {
			const pay = document.getElementById('pay');
			if (!pay.hidden)
				pay.click();
		});
		const js = await outcome(c);
		assert.equal(js.outcome, 'replayed', js.text);
		assert.equal(js.orderId, s.orderId);
		assert.equal(new Set(c.posts.map((p) => p.key)).size, 1, 'one key');
		assert.equal(ordersOf(sku), `customer-1001\t${s.orderId}`);
	});

	test(`${name}: paid without script, then by script in a tab opened before: one order`, { skip }, async (t) => {
		const { c, sku } = await readyToPay(t, base, path, 'ana', 'tabs');
		const tab = await c.ctx.newPage();
		tab.setDefaultTimeout(60000);
		await tab.setJavaScriptEnabled(false);
		await tab.goto(`${base}${path}`);
		await Promise.all([tab.waitForNavigation(), tab.click('#pay-server')]);
		await tab.waitForSelector('#status[data-outcome]');
		const f = await tab.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
		assert.equal(f.outcome, 'created', f.text);
		assert.equal(f.replayed, 'false', f.text);
		await c.page.bringToFront();
		await c.page.click('#pay');
		const s = await outcome(c);
		await screenshot(c, `${shot}-form-then-script`);
		assert.equal(s.outcome, 'replayed', s.text);
		assert.equal(s.orderId, f.orderId);
		assert.equal(ordersOf(sku), `customer-1001\t${f.orderId}`);
		assert.equal(ledgerOf(c.posts[0].key), `customer-1001\tSUCCEEDED\t${f.orderId}`);
		assert.equal(stockOf(sku), '48');
	});

	test(`${name}: refused for good (out of stock), then restocked: a new checkout, a new key, one order`, { skip }, async (t) => {
		const sku = newSku('oos', 1);
		const c = await customer(t, base);
		await signIn(c, 'ana');
		await addToCart(c, sku, 1);
		await addToCart(c, sku, 1);
		await openCheckout(c, path);
		const first = await c.page.$eval('#checkout', (el) => ({ ref: el.dataset.ref, key: el.dataset.key }));
		const told = c.page.waitForResponse((res) => res.request().method() === 'POST' &&
		    new URL(res.url()).pathname === '/cart.php');
		await c.page.click('#pay');
		const r = await outcome(c);
		assert.equal(r.outcome, 'rejected', r.text);
		assert.equal(r.code, 'OUT_OF_STOCK');
		assert.equal((await told).status(), 204, 'the page told the shop the checkout was refused');
		sql(`UPDATE stock SET available = 5 WHERE sku = ${q(sku)}`);
		await openCheckout(c, path);
		const second = await c.page.$eval('#checkout', (el) => ({ ref: el.dataset.ref, key: el.dataset.key }));
		assert.notEqual(second.ref, first.ref, 'a new checkout');
		assert.notEqual(second.key, first.key, 'a new key: the refused one would replay the refusal');
		const sent = c.posts.length;
		await c.page.click('#pay');
		const s = await outcome(c);
		assert.equal(s.outcome, 'created', s.text);
		assert.equal(c.posts[sent].key, second.key);
		assert.equal(ordersOf(sku), `customer-1001\t${s.orderId}`);
		assert.equal(stockOf(sku), '3');
	});

	test(`${name}: signed out: 401, nothing written`, { skip }, async (t) => {
		const { c, sku } = await readyToPay(t, base, path, 'ana', 'out');
		// The header's "Sign out" form: POST with the CSRF token.
		const out = await c.page.evaluate(async () => {
			const csrf = document.querySelector('form[action="/logout.php"] input[name=csrf]').value;
			const r = await fetch('/logout.php', { method: 'POST', credentials: 'same-origin',
			    body: new URLSearchParams({ csrf }), redirect: 'manual' });
			return r.type === 'opaqueredirect' ? 303 : r.status;
		});
		assert.equal(out, 303, 'signed out');
		await c.page.click('#pay');
		const s = await outcome(c);
		await screenshot(c, `${shot}-signed-out`);
		assert.equal(s.outcome, 'rejected', s.text);
		assert.match(s.text, /signed out/);
		if (mode === 'bearer')
			assert.equal(c.posts.length, 0, 'no token, no request');
		else
			assert.deepEqual(c.posts.map((p) => p.status), [401]);
		const key = s.key || await c.page.$eval('#checkout', (el) => el.dataset.key) ||
		    await c.page.evaluate((ref) => localStorage.getItem(`idemorders:key:${ref}`),
		    await c.page.$eval('#checkout', (el) => el.dataset.ref));
		assert.match(key, UUID_V4);
		const raw = await api(c, 'session', 'POST', '/orders',
		    { 'Content-Type': 'application/json', 'Idempotency-Key': key },
		    JSON.stringify({ currency: 'KRW', items: [{ sku, qty: 2 }], amount: 2000 }));
		assert.equal(raw.status, 401, raw.text);
		assert.equal(ordersOf(sku), '');
		assert.equal(ledgerOf(key), '');
		assert.equal(stockOf(sku), '50');
	});

	test(`${name}: plain HTTP on shop.test (not a secure context): one order`, { skip }, async (t) => {
		const testBase = base.replace('127.0.0.1', 'shop.test');
		const { c, sku } = await readyToPay(t, testBase, path, 'ana', 'http');
		const ctx = await c.page.evaluate(() => ({ secure: window.isSecureContext,
		    randomUUID: typeof crypto.randomUUID }));
		assert.deepEqual(ctx, { secure: false, randomUUID: 'undefined' });
		await c.page.click('#pay');
		const s = await outcome(c);
		await screenshot(c, `${shot}-shop-test`);
		assert.equal(s.outcome, 'created', s.text);
		assert.match(c.posts[0].key, UUID_V4);
		assert.equal(ordersOf(sku), `customer-1001\t${s.orderId}`);
	});

	test(`${name}: without JavaScript, clients/php acts for the customer: one order for two submits`, { skip }, async (t) => {
		const sku = newSku('php');
		const c = await customer(t, base);
		await c.page.setJavaScriptEnabled(false);
		await signIn(c, 'ana');
		await addToCart(c, sku, 2);
		await c.page.goto(`${base}${path}`);
		await screenshot(c, `${shot}-nojs-checkout`);
		await Promise.all([c.page.waitForNavigation(), c.page.click('#pay-server', { count: 2 })]);
		await c.page.waitForSelector('#status[data-outcome]');
		const s = await c.page.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
		await screenshot(c, `${shot}-nojs-created`);
		assert.ok(['created', 'replayed', 'placed'].includes(s.outcome), s.text);
		// Both submits have been answered once the order shows up once.
		await new Promise((r) => setTimeout(r, 500));
		assert.equal(ordersOf(sku), `customer-1001\t${s.orderId}`);
		assert.equal(stockOf(sku), '48');
	});
}

/*
 * The shop's warehouse (examples/shop/public/warehouse.php) gets the
 * stack's events from a relay of its own for the test's time (`idemorders
 * relay -c WAREHOUSE_RELAY_CONF`, as the pool's user, the one that config
 * and its secret belong to): the stack's own relay sends to the test
 * receiver, which tests/http runs only while it needs it.
 */
function warehouseRelay(t) {
	const log = openSync(`${env.LOGDIR}/relay-warehouse.log`, 'a');
	const relay = spawn('setpriv', [`--reuid=${env.POOL_USER}`, `--regid=${env.POOL_USER}`,
	    '--init-groups', env.RELAY_BIN, 'relay', '-c', env.WAREHOUSE_RELAY_CONF],
	    { stdio: ['ignore', log, log] });
	const gone = new Promise((r) => relay.on('exit', r));
	t.after(async () => {
		relay.kill('SIGTERM');
		await Promise.race([gone, new Promise((r) => setTimeout(r, 30000))]);
		closeSync(log);
	});
	return relay;
}

/* "webhook rows<TAB>packed rows<TAB>packed by its order.created's id" of `orderId`. */
function warehouseRows(orderId) {
	const w = sql(`SELECT webhook_id FROM events WHERE order_id = ${Number(orderId.slice(2))} AND seq = 1`);
	return sql(`SELECT (SELECT COUNT(*) FROM idemshop.warehouse_webhooks WHERE webhook_id = ${q(w)}),
	    (SELECT COUNT(*) FROM idemshop.warehouse_packed WHERE order_id = ${q(orderId)}),
	    (SELECT COUNT(*) FROM idemshop.warehouse_packed WHERE order_id = ${q(orderId)} AND webhook_id = ${q(w)})`);
}

for (const [server, mode, base, path, orderPath, listPath] of SHOPS) {
	const name = `${server} ${mode}`;
	const shot = `${server}-${mode}`;

	test(`${name}: the warehouse packs a new order on its signed webhook: the order page and My orders say packed`, { skip }, async (t) => {
		const relay = warehouseRelay(t);
		const { c, sku } = await readyToPay(t, base, path, 'ana', 'packed');
		await c.page.click('#pay');
		const s = await outcome(c);
		assert.equal(s.outcome, 'created', s.text);
		const orderId = s.orderId;
		assert.equal(ordersOf(sku), `customer-1001\t${orderId}`);
		// The relay delivers it (behind whatever other scripts left
		// pending): reload the order page until it says PACKED.
		let status = '';
		for (let i = 0; i < 90 && status !== 'PACKED'; i++) {
			assert.equal(relay.exitCode, null, `the warehouse's relay exited (${env.LOGDIR}/relay-warehouse.log)`);
			if (i > 0)
				await new Promise((r) => setTimeout(r, 2000));
			await c.page.goto(`${base}${orderPath}?id=${orderId}`);
			status = await c.page.$eval('#order-status', (el) => el.textContent);
		}
		await screenshot(c, `${shot}-packed`);
		assert.equal(status, 'PACKED', 'packed within 3 minutes');
		assert.equal(await c.page.$eval('#status', (el) => el.dataset.outcome), 'closed');
		assert.match(await c.page.$eval('#status', (el) => el.textContent), /packed/);
		assert.equal(await c.page.$('#cancel'), null, 'no Cancel button on a packed order');
		assert.equal(warehouseRows(orderId), '1\t1\t1', 'one webhook row, packed once, by its order.created');
		assert.equal(orderRow(orderId), 'CREATED\t-', 'the service\'s order untouched');
		await openList(c.page, `${base}${listPath}`);
		const row = (await listRows(c.page)).find((r) => r.id === orderId);
		assert.ok(row, 'the order is on My orders');
		assert.deepEqual([row.status, row.button, row.key], ['packed', false, ''], 'packed, no Cancel button');
		await screenshot(c, `${shot}-my-orders-packed`);
	});
}
