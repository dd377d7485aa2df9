// The retry policy against a scripted fetch and a fake clock: which
// answers are retried, how long the client waits, when it stops, and
// what it does with the stored key.  The real stack is in stack.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
	IdemordersClient, MemoryStorage, backoffDelay, classify, parseRetryAfter,
	parseShouldRetry,
} from '../idemorders-client.mjs';

const ORDER = { currency: 'KRW', items: [{ sku: 'A-10', qty: 1 }], amount: 6000 };

/* An answer the scripted fetch gives: a Response, or an Error to throw. */
function answer(status, body = {}, headers = {}) {
	return new Response(JSON.stringify(body), {
		status,
		headers: { 'Content-Type': 'application/json', ...headers },
	});
}

function problem(status, code, headers = {}) {
	return new Response(JSON.stringify({ status, code }), {
		status,
		headers: { 'Content-Type': 'application/problem+json', ...headers },
	});
}

/* A client whose fetch plays `script` (one entry per attempt) on a fake clock. */
function scripted(script, options = {}) {
	const calls = [];
	const sleeps = [];
	let t = 1_000_000;
	const client = new IdemordersClient({
		url: 'http://shop.invalid/orders',
		storage: new MemoryStorage(),
		now: () => t,
		sleep: async (ms) => { sleeps.push(ms); t += ms; },
		random: () => 0.5,
		fetch: async (url, init) => {
			calls.push({ url, init, at: t });
			const next = script[Math.min(calls.length - 1, script.length - 1)];
			const v = typeof next === 'function' ? next() : next;
			if (v instanceof Error)
				throw v;
			return v.clone();
		},
		...options,
	});
	return { client, calls, sleeps, advance: (ms) => { t += ms; } };
}

test('backoff: full jitter under an exponential ceiling, capped', () => {
	assert.equal(backoffDelay(1, 200, 5000, () => 0), 0);
	assert.equal(backoffDelay(1, 200, 5000, () => 0.999999), 199);
	assert.equal(backoffDelay(3, 200, 5000, () => 0.5), 400);
	assert.equal(backoffDelay(10, 200, 5000, () => 0.5), 2500);
	for (let i = 0; i < 200; i++) {
		const d = backoffDelay(4, 200, 5000);
		assert.ok(d >= 0 && d < 1600, `delay ${d} outside [0, 1600)`);
	}
});

test('Retry-After: seconds, HTTP-date, past date, garbage', () => {
	const now = Date.parse('Tue, 01 Dec 2026 12:00:00 GMT');
	assert.equal(parseRetryAfter('3', now), 3000);
	assert.equal(parseRetryAfter(' 0 ', now), 0);
	assert.equal(parseRetryAfter('Tue, 01 Dec 2026 12:00:05 GMT', now), 5000);
	assert.equal(parseRetryAfter('Tue, 01 Dec 2026 11:00:00 GMT', now), 0);
	assert.equal(parseRetryAfter('soon', now), null);
	assert.equal(parseRetryAfter('-1', now), null);
	assert.equal(parseRetryAfter('1.5', now), null);
	assert.equal(parseRetryAfter(null, now), null);
});

test('classify: 2xx success; 5xx and undecided 409 retried; other 4xx final', () => {
	assert.equal(classify(201, null), 'success');
	assert.equal(classify(200, null), 'success');
	for (const s of [500, 502, 503, 504])
		assert.equal(classify(s, null), 'retry', String(s));
	assert.equal(classify(409, 'REQUEST_IN_PROGRESS'), 'retry');
	assert.equal(classify(409, 'REQUEST_STATUS_UNCONFIRMED'), 'retry');
	for (const [s, c] of [[409, 'IDEMPOTENCY_KEY_REUSED'], [409, 'OUT_OF_STOCK'],
	    [410, 'IDEMPOTENCY_KEY_EXPIRED'], [422, 'AMOUNT_MISMATCH'],
	    [400, 'VALIDATION_FAILED'], [401, 'UNAUTHENTICATED'], [404, null],
	    [409, null], [429, null]])
		assert.equal(classify(s, c), 'final', `${s} ${c}`);
});

for (const [what, make] of [
	['500', () => problem(500, 'UNKNOWN_IDEMPOTENCY_STATE')],
	['502 from a gateway', () => new Response('<html>bad gateway</html>', { status: 502 })],
	['503', () => problem(503, 'RETRY_LIMIT_REACHED')],
	['504', () => new Response('', { status: 504 })],
	['409 REQUEST_IN_PROGRESS', () => problem(409, 'REQUEST_IN_PROGRESS')],
	['409 REQUEST_STATUS_UNCONFIRMED', () => problem(409, 'REQUEST_STATUS_UNCONFIRMED')],
	['a network error', () => new TypeError('fetch failed')],
]) {
	test(`retried: ${what}, then the replayed order; one key throughout`, async () => {
		const { client, calls } = scripted([make, make,
		    answer(201, { orderId: 'o-7' }, { 'Idempotent-Replayed': 'true' })]);
		const r = await client.createOrder(ORDER, { ref: 'cart-1' });
		assert.equal(r.outcome, 'created');
		assert.equal(r.ok, true);
		assert.equal(r.status, 201);
		assert.equal(r.replayed, true);
		assert.equal(r.orderId, 'o-7');
		assert.equal(r.attempts, 3);
		assert.equal(calls.length, 3);
		const keys = new Set(calls.map((c) => c.init.headers['Idempotency-Key']));
		assert.equal(keys.size, 1);
		assert.equal([...keys][0], r.key);
		assert.equal(client.storedKey('cart-1'), r.key, 'key kept after success');
		for (const c of calls)
			assert.equal(c.init.body, JSON.stringify(ORDER));
	});
}

for (const [status, code] of [[400, 'VALIDATION_FAILED'], [401, 'UNAUTHENTICATED'],
    [404, 'NOT_FOUND'], [409, 'IDEMPOTENCY_KEY_REUSED'], [409, 'OUT_OF_STOCK'],
    [410, 'IDEMPOTENCY_KEY_EXPIRED'], [413, 'PAYLOAD_TOO_LARGE'],
    [415, 'UNSUPPORTED_MEDIA_TYPE'], [422, 'AMOUNT_MISMATCH']]) {
	test(`not retried: ${status} ${code}`, async () => {
		const { client, calls, sleeps } = scripted([problem(status, code,
		    { 'Retry-After': '1' }), answer(201, { orderId: 'o-1' })]);
		const r = await client.createOrder(ORDER, { ref: 'cart-2' });
		assert.equal(calls.length, 1, 'exactly one request');
		assert.equal(sleeps.length, 0);
		assert.equal(r.outcome, 'rejected');
		assert.equal(r.ok, false);
		assert.equal(r.status, status);
		assert.equal(r.code, code);
		assert.equal(r.attempts, 1);
		const kept = [401, 409].includes(status) && code !== 'OUT_OF_STOCK';
		assert.equal(client.storedKey('cart-2') !== null, kept,
		    kept ? 'key kept: the order may exist' : 'key forgotten after a final answer');
	});
}

for (const [what, make] of [
	['503', () => problem(503, 'RETRY_LIMIT_REACHED')],
	['409 REQUEST_STATUS_UNCONFIRMED', () => problem(409, 'REQUEST_STATUS_UNCONFIRMED')],
	['a network error', () => new TypeError('fetch failed')],
]) {
	test(`cancel retried: ${what}, then the replay; one key, its own URL`, async () => {
		const { client, calls } = scripted([make, make,
		    answer(200, { orderId: 'o-7', status: 'CANCELLED' }, { 'Idempotent-Replayed': 'true' })]);
		const r = await client.cancelOrder('o-7', { ref: 'cancel-o-7', reason: 'changed "my" mind' });
		assert.equal(r.outcome, 'cancelled');
		assert.equal(r.ok, true);
		assert.equal(r.status, 200);
		assert.equal(r.replayed, true);
		assert.equal(r.orderId, 'o-7');
		assert.equal(r.attempts, 3);
		for (const c of calls) {
			assert.equal(c.url, 'http://shop.invalid/orders/o-7/cancel');
			assert.equal(c.init.method, 'POST');
			assert.equal(c.init.headers['Idempotency-Key'], r.key);
			assert.equal(c.init.headers['Content-Type'], 'application/json');
			assert.equal(c.init.body, '{"reason":"changed \\"my\\" mind"}');
		}
		assert.equal(client.storedKey('cancel-o-7'), r.key, 'key kept after success');
	});
}

test('cancel without a reason sends {} and waits Retry-After', async () => {
	const { client, calls, sleeps } = scripted([problem(503, 'RETRY_LIMIT_REACHED',
	    { 'Retry-After': '2' }), answer(200, { orderId: 'o-9', status: 'CANCELLED' })]);
	const r = await client.cancelOrder('o-9', { key: 'cancel-key-1' });
	assert.equal(r.outcome, 'cancelled');
	assert.equal(r.replayed, false);
	assert.deepEqual(sleeps, [2000]);
	assert.deepEqual(calls.map((c) => c.init.body), ['{}', '{}']);
	assert.deepEqual(calls.map((c) => c.init.headers['Idempotency-Key']),
	    ['cancel-key-1', 'cancel-key-1']);
});

test('cancel: 409 ORDER_ALREADY_CANCELLED is final, the stored key forgotten', async () => {
	const { client, calls, sleeps } = scripted([problem(409, 'ORDER_ALREADY_CANCELLED')]);
	const r = await client.cancelOrder('o-3', { ref: 'cancel-o-3' });
	assert.equal(r.outcome, 'rejected');
	assert.equal(r.ok, false);
	assert.equal(r.code, 'ORDER_ALREADY_CANCELLED');
	assert.equal(calls.length, 1);
	assert.equal(sleeps.length, 0);
	assert.equal(client.storedKey('cancel-o-3'), null);
});

test('cancel refuses an order id that cannot be one, sending nothing', () => {
	const { client, calls } = scripted([answer(200, {})]);
	for (const bad of ['', '../o-1', 'o 1', 42, null])
		assert.throws(() => client.cancelOrder(bad), /orderId must be 1-64 characters/);
	assert.equal(calls.length, 0);
});

test('a replayed final rejection is reported as such and not retried', async () => {
	const { client, calls } = scripted([problem(409, 'OUT_OF_STOCK',
	    { 'Idempotent-Replayed': 'true' })]);
	const r = await client.createOrder(ORDER, { ref: 'cart-3' });
	assert.equal(calls.length, 1);
	assert.equal(r.outcome, 'rejected');
	assert.equal(r.replayed, true);
	assert.equal(r.code, 'OUT_OF_STOCK');
});

test('Retry-After in seconds is waited for exactly', async () => {
	const { client, sleeps } = scripted([problem(503, 'RETRY_LIMIT_REACHED',
	    { 'Retry-After': '2' }), answer(201, { orderId: 'o-2' })]);
	const r = await client.createOrder(ORDER);
	assert.equal(r.outcome, 'created');
	assert.equal(r.replayed, false);
	assert.deepEqual(sleeps, [2000]);
});

test('Retry-After as an HTTP-date is waited for until that date', async () => {
	let nowMs = Date.parse('Tue, 01 Dec 2026 12:00:00 GMT');
	const sleeps = [];
	let n = 0;
	const client = new IdemordersClient({
		url: 'http://shop.invalid/orders',
		storage: new MemoryStorage(),
		now: () => nowMs,
		sleep: async (ms) => { sleeps.push(ms); nowMs += ms; },
		fetch: async () => (++n === 1 ?
		    problem(409, 'REQUEST_IN_PROGRESS', { 'Retry-After': 'Tue, 01 Dec 2026 12:00:04 GMT' }) :
		    answer(201, { orderId: 'o-3' }, { 'Idempotent-Replayed': 'true' })),
	});
	const r = await client.createOrder(ORDER);
	assert.deepEqual(sleeps, [4000]);
	assert.equal(r.outcome, 'created');
	assert.equal(r.replayed, true);
});

test('a Retry-After past the deadline ends the retries at once, key kept', async () => {
	const { client, calls, sleeps } = scripted([problem(503, 'RETRY_LIMIT_REACHED',
	    { 'Retry-After': '60' })], { deadlineMs: 10000 });
	const r = await client.createOrder(ORDER, { ref: 'cart-4' });
	assert.equal(calls.length, 1);
	assert.deepEqual(sleeps, []);
	assert.equal(r.outcome, 'unknown');
	assert.equal(r.status, 503);
	assert.match(r.error, /past the deadline/);
	assert.equal(client.storedKey('cart-4'), r.key);
});

test('backoff without Retry-After grows and stays under its ceilings', async () => {
	const { client, sleeps } = scripted([problem(500, 'X')],
	    { maxAttempts: 5, random: () => 0.999, baseDelayMs: 100, maxDelayMs: 300 });
	const r = await client.createOrder(ORDER);
	assert.equal(r.outcome, 'unknown');
	assert.equal(r.attempts, 5);
	assert.deepEqual(sleeps, [99, 199, 299, 299]);
});

test('the overall deadline bounds the attempts', async () => {
	const { client, calls, advance } = scripted([() => { advance(4000); return problem(503, 'X'); }],
	    { deadlineMs: 10000, maxAttempts: 100, random: () => 0 });
	const r = await client.createOrder(ORDER);
	assert.equal(r.outcome, 'unknown');
	assert.equal(calls.length, 3, 'attempts at 0 s, 4 s, 8 s; none at 12 s');
});

test('maxAttempts bounds the attempts', async () => {
	const { client, calls } = scripted([new TypeError('fetch failed')], { maxAttempts: 4 });
	const r = await client.createOrder(ORDER);
	assert.equal(calls.length, 4);
	assert.equal(r.outcome, 'unknown');
	assert.equal(r.status, 0);
	assert.match(r.error, /network error/);
});

test('one attempt is cut at tryTimeoutMs and retried', async () => {
	let n = 0;
	const client = new IdemordersClient({
		url: 'http://shop.invalid/orders',
		storage: new MemoryStorage(),
		tryTimeoutMs: 30,
		sleep: async () => {},
		fetch: (url, init) => {
			if (++n > 1)
				return Promise.resolve(answer(201, { orderId: 'o-4' }));
			return new Promise((resolve, reject) => {
				init.signal.addEventListener('abort', () =>
				    reject(new DOMException('aborted', 'AbortError')));
			});
		},
	});
	const r = await client.createOrder(ORDER);
	assert.equal(n, 2);
	assert.equal(r.outcome, 'created');
	assert.equal(r.attempts, 2);
});

test('the caller can abort the whole call', async () => {
	const ac = new AbortController();
	const client = new IdemordersClient({
		url: 'http://shop.invalid/orders',
		storage: new MemoryStorage(),
		sleep: async () => {},
		fetch: (url, init) => new Promise((resolve, reject) => {
			init.signal.addEventListener('abort', () =>
			    reject(new DOMException('aborted', 'AbortError')));
			setTimeout(() => ac.abort(), 5);
		}),
	});
	const r = await client.createOrder(ORDER, { signal: ac.signal });
	assert.equal(r.outcome, 'unknown');
	assert.equal(r.attempts, 1);
	assert.match(r.error, /aborted by the caller/);
});

test('aborting during the backoff ends the call without waiting it out', async () => {
	const ac = new AbortController();
	let n = 0;
	const client = new IdemordersClient({
		url: 'http://shop.invalid/orders',
		storage: new MemoryStorage(),
		fetch: async () => {
			n++;
			setTimeout(() => ac.abort(), 20);
			return problem(503, 'RETRY_LIMIT_REACHED', { 'Retry-After': '20' });
		},
	});
	const t0 = Date.now();
	const r = await client.createOrder(ORDER, { signal: ac.signal });
	assert.equal(n, 1);
	assert.equal(r.outcome, 'unknown');
	assert.equal(r.status, 503);
	assert.ok(Date.now() - t0 < 15000, 'did not wait the 20 s Retry-After');
});

test('attemptHeaders adds headers to the attempts it names only', async () => {
	const { client, calls } = scripted([problem(502, 'X'), answer(201, {})], {
		headers: { Authorization: 'Basic eDp5' },
		attemptHeaders: (n) => (n === 1 ? { 'X-Trace': 'first' } : {}),
	});
	await client.createOrder(ORDER);
	assert.equal(calls[0].init.headers['X-Trace'], 'first');
	assert.equal(calls[1].init.headers['X-Trace'], undefined);
	for (const c of calls) {
		assert.equal(c.init.headers.Authorization, 'Basic eDp5');
		assert.equal(c.init.headers['Content-Type'], 'application/json');
		assert.equal(c.init.method, 'POST');
	}
});

test('one key per logical order: kept across calls, forgotten on request', async () => {
	const { client, calls } = scripted([new TypeError('fetch failed')], { maxAttempts: 2 });
	const a = await client.createOrder(ORDER, { ref: 'cart-9' });
	assert.equal(a.outcome, 'unknown');
	const b = await client.createOrder(ORDER, { ref: 'cart-9' });
	assert.equal(b.key, a.key, 'the same logical order keeps its key');
	const other = await client.createOrder(ORDER, { ref: 'cart-10' });
	assert.notEqual(other.key, a.key);
	client.forget('cart-9');
	const c = await client.createOrder(ORDER, { ref: 'cart-9' });
	assert.notEqual(c.key, a.key);
	assert.equal(calls.length, 8);
	assert.match(a.key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test('the default storage is localStorage when there is one', async () => {
	const saved = Object.getOwnPropertyDescriptor(globalThis, 'localStorage');
	const fake = new MemoryStorage();
	Object.defineProperty(globalThis, 'localStorage', { value: fake, configurable: true });
	try {
		const client = new IdemordersClient({ url: 'http://x.invalid/orders',
		    fetch: async () => answer(201, {}) });
		const r = await client.createOrder(ORDER, { ref: 'cart-ls' });
		assert.equal(fake.getItem('idemorders:key:cart-ls'), r.key);
	} finally {
		if (saved)
			Object.defineProperty(globalThis, 'localStorage', saved);
		else
			delete globalThis.localStorage;
	}
});

test('getHeaders is awaited before every attempt and what it gives is sent', async () => {
	let n = 0;
	const { client, calls } = scripted([problem(502, 'X'), answer(201, { orderId: 'o-5' })], {
		headers: { 'X-Shop': 'demo' },
		getHeaders: async (attempt) => {
			n++;
			await new Promise((r) => setTimeout(r, 1));
			return { Authorization: `Bearer token-${attempt}` };
		},
	});
	const r = await client.createOrder(ORDER, { ref: 'cart-bearer' });
	assert.equal(r.outcome, 'created');
	assert.equal(n, 2);
	assert.equal(calls[0].init.headers.Authorization, 'Bearer token-1');
	assert.equal(calls[1].init.headers.Authorization, 'Bearer token-2');
	for (const c of calls) {
		assert.equal(c.init.headers['X-Shop'], 'demo');
		assert.equal(c.init.headers['Idempotency-Key'], r.key);
		assert.equal(c.init.credentials, 'same-origin', 'the session cookie goes along');
	}
});

test('getHeaders failing ends the call as unknown, key kept, nothing sent', async () => {
	const { client, calls } = scripted([answer(201, {})], {
		getHeaders: async () => { throw new Error('token: 401'); },
	});
	const r = await client.createOrder(ORDER, { ref: 'cart-notoken' });
	assert.equal(calls.length, 0);
	assert.equal(r.outcome, 'unknown');
	assert.equal(r.status, 0);
	assert.match(r.error, /token: 401/);
	assert.equal(client.storedKey('cart-notoken'), r.key, 'the key is kept for the retry');
});

test('credentials can be set: include for a mount on another origin', async () => {
	const { client, calls } = scripted([answer(201, {})], { credentials: 'include' });
	await client.createOrder(ORDER);
	assert.equal(calls[0].init.credentials, 'include');
});

test('Should-Retry decides when the server sends it', () => {
	assert.equal(parseShouldRetry('true'), true);
	assert.equal(parseShouldRetry(' False '), false);
	assert.equal(parseShouldRetry(null), null);
	assert.equal(parseShouldRetry('maybe'), null);
	assert.equal(classify(409, 'OUT_OF_STOCK', true), 'retry');
	assert.equal(classify(500, 'INTERNAL_ERROR', false), 'final');
	assert.equal(classify(503, null, null), 'retry');
	assert.equal(classify(201, null, true), 'success');
});

test('Should-Retry: true on a 409 OUT_OF_STOCK retries the same key after Retry-After', async () => {
	const { client, calls, sleeps } = scripted([
	    problem(409, 'OUT_OF_STOCK', { 'Should-Retry': 'true', 'Retry-After': '3' }),
	    answer(201, { orderId: 'o-8' })]);
	const r = await client.createOrder(ORDER, { ref: 'cart-sr' });
	assert.equal(r.outcome, 'created');
	assert.deepEqual(sleeps, [3000]);
	assert.equal(calls.length, 2);
	assert.equal(calls[0].init.headers['Idempotency-Key'], calls[1].init.headers['Idempotency-Key']);
});

test('Should-Retry: false on a 500 is final: one attempt', async () => {
	const { client, calls } = scripted([
	    problem(500, 'INTERNAL_ERROR', { 'Should-Retry': 'false' })]);
	const r = await client.cancelOrder('o-5', { key: 'k-sr' });
	assert.equal(r.outcome, 'rejected');
	assert.equal(calls.length, 1);
});

test('cancel: Should-Retry: true on a 503 keeps the key until the final answer', async () => {
	const { client, calls, sleeps } = scripted([
	    problem(503, 'SERVICE_UNAVAILABLE', { 'Should-Retry': 'true', 'Retry-After': '1' }),
	    problem(409, 'REQUEST_IN_PROGRESS', { 'Should-Retry': 'true' }),
	    answer(200, { orderId: 'o-4', status: 'CANCELLED' })]);
	const r = await client.cancelOrder('o-4', { ref: 'cancel-o-4', reason: 'r' });
	assert.equal(r.outcome, 'cancelled');
	assert.equal(sleeps[0], 1000);
	assert.equal(new Set(calls.map((c) => c.init.headers['Idempotency-Key'])).size, 1);
	assert.deepEqual(calls.map((c) => c.init.body), Array(3).fill('{"reason":"r"}'));
});

test('listOrders: the query, the cursors of the page, GET without a key', async () => {
	const { client, calls } = scripted([answer(200, {
	    data: [{ orderId: 'o-9' }, { orderId: 'o-7' }], has_more: true })]);
	const p = await client.listOrders({ limit: 2, startingAfter: 'o-10' });
	assert.equal(calls[0].url, 'http://shop.invalid/orders?limit=2&starting_after=o-10');
	assert.equal(calls[0].init.method, 'GET');
	assert.equal(calls[0].init.headers['Idempotency-Key'], undefined);
	assert.equal(p.ok, true);
	assert.deepEqual(p.orders.map((o) => o.orderId), ['o-9', 'o-7']);
	assert.equal(p.hasMore, true);
	assert.equal(p.nextCursor, 'o-7');
	assert.equal(p.prevCursor, 'o-9');
});

test('listOrders: the first page has no prevCursor, the last no nextCursor', async () => {
	const { client, calls } = scripted([answer(200, {
	    data: [{ orderId: 'o-2' }], has_more: false })]);
	const p = await client.listOrders();
	assert.equal(calls[0].url, 'http://shop.invalid/orders');
	assert.equal(p.nextCursor, null);
	assert.equal(p.prevCursor, null);
});

test('listOrders: 503 retried after Retry-After, 400 not retried', async () => {
	const a = scripted([problem(503, 'SERVICE_UNAVAILABLE', { 'Retry-After': '1' }),
	    answer(200, { data: [], has_more: false })]);
	const p = await a.client.listOrders({ endingBefore: 'o-3' });
	assert.equal(p.ok, true);
	assert.deepEqual(a.sleeps, [1000]);
	const b = scripted([problem(400, 'VALIDATION_FAILED')]);
	const q = await b.client.listOrders({ limit: 0 });
	assert.equal(q.ok, false);
	assert.equal(q.code, 'VALIDATION_FAILED');
	assert.equal(b.calls.length, 1);
});

test('allOrders walks every page with starting_after', async () => {
	const { client, calls } = scripted([
	    answer(200, { data: [{ orderId: 'o-6' }, { orderId: 'o-5' }], has_more: true }),
	    answer(200, { data: [{ orderId: 'o-3' }], has_more: false })]);
	const seen = [];
	for await (const o of client.allOrders({ limit: 2 }))
		seen.push(o.orderId);
	assert.deepEqual(seen, ['o-6', 'o-5', 'o-3']);
	assert.deepEqual(calls.map((c) => c.url), ['http://shop.invalid/orders?limit=2',
	    'http://shop.invalid/orders?limit=2&starting_after=o-5']);
});
