// How the client makes and keeps its Idempotency-Key: made and stored
// before the first await (two calls for one checkout in the same task
// share it), and made from crypto.getRandomValues where randomUUID is
// missing (a page on plain HTTP that is not localhost is not a secure
// context, and browsers give it no randomUUID).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IdemordersClient, MemoryStorage } from '../idemorders-client.mjs';

const ORDER = { currency: 'KRW', items: [{ sku: 'A-10', qty: 1 }], amount: 6000 };
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/* A client whose fetch answers 201 first and replays it after, like the service. */
function replaying(options = {}) {
	const calls = [];
	const client = new IdemordersClient({
		url: 'http://shop.invalid/orders',
		storage: new MemoryStorage(),
		sleep: async () => {},
		fetch: async (url, init) => {
			calls.push(init);
			const first = calls.filter((c) => c.headers['Idempotency-Key'] ===
			    init.headers['Idempotency-Key']).length === 1;
			return new Response(JSON.stringify({ orderId: `o-${calls.length}` }), {
				status: 201,
				headers: first ? {} : { 'Idempotent-Replayed': 'true' },
			});
		},
		...options,
	});
	return { client, calls };
}

/* Run `fn` with globalThis.crypto replaced by `fake`. */
async function withCrypto(fake, fn) {
	const saved = Object.getOwnPropertyDescriptor(globalThis, 'crypto');
	Object.defineProperty(globalThis, 'crypto', { value: fake, configurable: true, writable: true });
	try {
		return await fn();
	} finally {
		if (saved)
			Object.defineProperty(globalThis, 'crypto', saved);
		else
			delete globalThis.crypto;
	}
}

test('two createOrder calls for one checkout in the same task send one key', async () => {
	const { client, calls } = replaying();
	const [a, b] = await Promise.all([
		client.createOrder(ORDER, { ref: 'checkout-1' }),
		client.createOrder(ORDER, { ref: 'checkout-1' }),
	]);
	const keys = new Set(calls.map((c) => c.headers['Idempotency-Key']));
	assert.equal(keys.size, 1, `keys sent: ${[...keys].join(', ')}`);
	assert.equal(a.key, b.key);
	assert.equal(client.storedKey('checkout-1'), a.key);
	assert.equal([a.replayed, b.replayed].filter(Boolean).length, 1,
	    'one created, one replayed');
});

test('the key is stored before createOrder first awaits', async () => {
	const { client } = replaying();
	const p = client.createOrder(ORDER, { ref: 'checkout-2' });
	const stored = client.storedKey('checkout-2');
	const r = await p;
	assert.match(String(stored), UUID_V4, 'stored synchronously');
	assert.equal(r.key, stored);
});

test('keyFor returns the key itself, not a promise', () => {
	const { client } = replaying();
	const k = client.keyFor('checkout-3');
	assert.equal(typeof k, 'string');
	assert.equal(client.keyFor('checkout-3'), k);
});

test('without crypto.randomUUID the key is a v4 UUID from crypto.getRandomValues', async () => {
	let filled = 0;
	const fake = {
		getRandomValues(a) {
			filled++;
			for (let i = 0; i < a.length; i++)
				a[i] = (i * 37 + 11) & 0xff;
			return a;
		},
	};
	await withCrypto(fake, async () => {
		const { client, calls } = replaying();
		const r = await client.createOrder(ORDER, { ref: 'checkout-4' });
		assert.equal(r.outcome, 'created');
		assert.ok(filled >= 1, 'getRandomValues was used');
		// Bytes 0b 30 55 7a 9f c4 e9 0e 33 58 7d a2 c7 ec 11 36, with the
		// version (byte 6: 4x) and the variant (byte 8: 10xxxxxx) set.
		assert.equal(r.key, '0b30557a-9fc4-490e-b358-7da2c7ec1136');
		assert.match(r.key, UUID_V4);
		assert.equal(calls[0].headers['Idempotency-Key'], r.key);
	});
});

test('getRandomValues keys differ from call to call', async () => {
	const real = globalThis.crypto;
	await withCrypto({ getRandomValues: (a) => real.getRandomValues(a) }, async () => {
		const { client } = replaying();
		const seen = new Set();
		for (let i = 0; i < 50; i++) {
			const k = client.keyFor(`c-${i}`);
			assert.match(k, UUID_V4);
			seen.add(k);
		}
		assert.equal(seen.size, 50);
	});
});

test('with no random source at all createOrder fails clearly, sending nothing', async () => {
	await withCrypto({}, async () => {
		const { client, calls } = replaying();
		await assert.rejects(client.createOrder(ORDER, { ref: 'checkout-5' }),
		    /getRandomValues/);
		assert.equal(calls.length, 0);
	});
});
