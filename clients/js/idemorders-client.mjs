// idemorders-client.mjs -- create and cancel orders through idemorders,
// retrying safely: one Idempotency-Key per logical order (or cancel), kept
// across retries and page reloads (localStorage in a browser, memory
// otherwise), exponential backoff with full jitter inside an overall
// deadline, Retry-After honoured, and every answer told apart: created or
// cancelled (replayed or not), rejected for good, or unknown (the client
// gave up; retrying later with the same key is safe).
//
// One ES module for browsers and Node 18 or later (fetch, AbortController,
// crypto.getRandomValues: a page on plain HTTP works too); no
// dependencies.  The browser proves who it is as the mount asks: the
// shop's session cookie on the same origin (sent by default), or a
// bearer token from getHeaders.
//
//	import { IdemordersClient } from './idemorders-client.mjs';
//	const client = new IdemordersClient({ url: '/orders' });
//	const r = await client.createOrder(order, { ref: checkoutId });
//	if (r.outcome === 'created') ... r.body.orderId, r.replayed
//
// A checkout that can also be paid another way (a form the server
// handles, another device) has one key for all of them, made by the
// server with the checkout and rendered into the page: pass it as
// { key } instead of a ref (clients/README.md, "One checkout, one key").
// A cancel is the same: one key per cancel, made by the server with the
// order page's cancel form, on every path:
//
//	const c = await client.cancelOrder('o-42', { key: cancelKey, reason: 'changed my mind' });
//	if (c.outcome === 'cancelled') ... c.body.cancelledAt, c.replayed
//
// The caller's own orders, newest first, a page at a time (cursor
// paging: pass a page's nextCursor as startingAfter), or all of them:
//
//	const page = await client.listOrders({ limit: 20 });
//	for await (const o of client.allOrders()) ... o.orderId, o.status
//
// See clients/README.md for every option and outcome.

/** Problem codes of a 409 that mean "not decided yet: retry the key". */
export const RETRYABLE_CODES = Object.freeze([
	'REQUEST_IN_PROGRESS',
	'REQUEST_STATUS_UNCONFIRMED',
]);

/** 4xx statuses after which the key is kept: the order may exist. */
const KEEP_KEY_STATUSES = [401, 403, 407];

const STORAGE_PREFIX = 'idemorders:key:';

/** A Web Storage lookalike in memory (the default outside browsers). */
export class MemoryStorage {
	constructor() {
		this.map = new Map();
	}

	getItem(name) {
		return this.map.has(name) ? this.map.get(name) : null;
	}

	setItem(name, value) {
		this.map.set(name, String(value));
	}

	removeItem(name) {
		this.map.delete(name);
	}
}

/* Return localStorage when it is there and usable, else a MemoryStorage. */
function defaultStorage() {
	try {
		const ls = globalThis.localStorage;
		if (ls) {
			const probe = STORAGE_PREFIX + '_probe';
			ls.setItem(probe, '1');
			ls.removeItem(probe);
			return ls;
		}
	} catch {
		// Private browsing, storage disabled, or Node's --localstorage
		// without a file: fall through to memory.
	}
	return new MemoryStorage();
}

/*
 * Node 18 has no global Web Crypto without a flag; browsers always have
 * crypto.getRandomValues, so they never reach this import.
 */
const nodeCrypto = globalThis.crypto ? null :
    await import(/* webpackIgnore: true */ /* @vite-ignore */ 'node:crypto');

/*
 * Return a new random UUID (v4), synchronously.  crypto.randomUUID exists
 * only in a secure context (HTTPS, localhost); elsewhere the 16 random
 * bytes come from crypto.getRandomValues (RFC 9562 section 5.4).
 */
function randomUUID() {
	const c = globalThis.crypto || (nodeCrypto && nodeCrypto.webcrypto);
	if (c && typeof c.randomUUID === 'function')
		return c.randomUUID();
	if (!c || typeof c.getRandomValues !== 'function')
		throw new Error('IdemordersClient: no crypto.getRandomValues: cannot make an Idempotency-Key');
	const b = c.getRandomValues(new Uint8Array(16));
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-` +
	    `${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The delay before retry number `retry` (1 for the first retry):
 * full jitter, uniform in [0, min(capMs, baseMs * 2^(retry-1))).
 */
export function backoffDelay(retry, baseMs, capMs, random = Math.random) {
	const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, retry - 1));
	return Math.floor(random() * ceiling);
}

/**
 * A Retry-After value in milliseconds from `nowMs`: delta-seconds or an
 * HTTP-date (a date in the past is 0); null when absent or unreadable.
 */
export function parseRetryAfter(value, nowMs = Date.now()) {
	if (value === null || value === undefined)
		return null;
	const v = String(value).trim();
	if (v === '')
		return null;
	if (/^[0-9]+$/.test(v))
		return Number(v) * 1000;
	// An HTTP-date names its weekday or month; a bare number never gets here.
	if (!/[A-Za-z]/.test(v))
		return null;
	const t = Date.parse(v);
	if (Number.isNaN(t))
		return null;
	return Math.max(0, t - nowMs);
}

/**
 * A Should-Retry header value: true, false, or null when absent or
 * neither word.
 */
export function parseShouldRetry(value) {
	if (value === null || value === undefined)
		return null;
	const v = String(value).trim().toLowerCase();
	return v === 'true' ? true : v === 'false' ? false : null;
}

/**
 * What to do with an answer: 'success' (2xx); else, when the server
 * said Should-Retry (shouldRetry true or false), 'retry' or 'final' as
 * it said; else 'retry' for a 5xx and a 409 whose problem code says the
 * key is not decided yet, and 'final' for every other status.
 */
export function classify(status, code, shouldRetry = null) {
	if (status >= 200 && status < 300)
		return 'success';
	if (shouldRetry === true)
		return 'retry';
	if (shouldRetry === false)
		return 'final';
	if (status >= 500 && status < 600)
		return 'retry';
	if (status === 409 && RETRYABLE_CODES.includes(code))
		return 'retry';
	return 'final';
}

/* Resolve after `ms` milliseconds, or at once when `signal` aborts. */
function realSleep(ms, signal) {
	return new Promise((resolve) => {
		if (signal && signal.aborted) {
			resolve();
			return;
		}
		const done = () => {
			clearTimeout(timer);
			if (signal)
				signal.removeEventListener('abort', done);
			resolve();
		};
		const timer = setTimeout(done, ms);
		if (signal)
			signal.addEventListener('abort', done, { once: true });
	});
}

/* Parse a response body: JSON when it reads as JSON, else null. */
function parseBody(text) {
	if (text === '')
		return null;
	try {
		return JSON.parse(text);
	} catch {
		return null;
	}
}

export class IdemordersClient {
	/**
	 * options:
	 *   url            the mount's POST URL, e.g. '/orders' (required)
	 *   headers        headers for every attempt
	 *   getHeaders     async (attempt) => headers for attempt N, awaited
	 *                  before it is sent (e.g. { Authorization: 'Bearer '
	 *                  + token }, the token fetched or refreshed); when it
	 *                  throws, the call ends with outcome 'unknown' and the
	 *                  key is kept
	 *   attemptHeaders (attempt) => headers added to attempt N (1-based)
	 *   credentials    fetch's credentials ('same-origin' by default)
	 *   storage        getItem/setItem/removeItem; default localStorage
	 *                  when usable, else memory
	 *   deadlineMs     overall time for all attempts (30000)
	 *   maxAttempts    attempts at most (6)
	 *   tryTimeoutMs   one attempt at most (15000), never past the deadline
	 *   baseDelayMs    first backoff ceiling (200)
	 *   maxDelayMs     backoff ceiling cap (5000)
	 *   onAttempt      ({attempt, status, code, error, delayMs}) => void,
	 *                  after each attempt (delayMs null when it was the last)
	 *   fetch, sleep, now, random   replacements, for tests
	 */
	constructor(options = {}) {
		if (!options.url)
			throw new TypeError('IdemordersClient: url is required');
		this.url = options.url;
		this.headers = { ...(options.headers || {}) };
		this.getHeaders = options.getHeaders || null;
		this.attemptHeaders = options.attemptHeaders || null;
		this.credentials = options.credentials || 'same-origin';
		this.storage = options.storage || defaultStorage();
		this.deadlineMs = options.deadlineMs ?? 30000;
		this.maxAttempts = options.maxAttempts ?? 6;
		this.tryTimeoutMs = options.tryTimeoutMs ?? 15000;
		this.baseDelayMs = options.baseDelayMs ?? 200;
		this.maxDelayMs = options.maxDelayMs ?? 5000;
		this.onAttempt = options.onAttempt || null;
		this.fetch = options.fetch || globalThis.fetch.bind(globalThis);
		this.sleep = options.sleep || realSleep;
		this.now = options.now || (() => Date.now());
		this.random = options.random || Math.random;
		if (!(this.maxAttempts >= 1))
			throw new RangeError('IdemordersClient: maxAttempts must be at least 1');
	}

	/** The key stored for logical order `ref`, or null. */
	storedKey(ref) {
		return this.storage.getItem(STORAGE_PREFIX + ref);
	}

	/**
	 * The key of logical order `ref`: the stored one, or a new one stored.
	 * Synchronous, so that two calls in one task find the same key.
	 */
	keyFor(ref) {
		const have = this.storedKey(ref);
		if (have)
			return have;
		const key = randomUUID();
		this.storage.setItem(STORAGE_PREFIX + ref, key);
		return key;
	}

	/** Forget the key of `ref` (the next call for it makes a new order or cancel). */
	forget(ref) {
		this.storage.removeItem(STORAGE_PREFIX + ref);
	}

	/**
	 * POST `order` (an object, sent as JSON) with one key for all attempts:
	 * opts.key (used as given), else the key stored for opts.ref (made and
	 * stored when there is none), else a new key for this call only.
	 * opts.signal aborts the whole call (then outcome 'unknown').
	 *
	 * Resolves to { outcome: 'created' | 'rejected' | 'unknown', ok,
	 * status, code, replayed, body, text, headers, attempts, key, orderId,
	 * error }.  Never rejects for HTTP or network failures.
	 */
	async createOrder(order, opts = {}) {
		const payload = typeof order === 'string' ? order : JSON.stringify(order);
		return this.#send(this.url, payload, opts, 'created');
	}

	/**
	 * Cancel order `orderId` (POST {url}/{orderId}/cancel, with
	 * { reason: opts.reason } when given, else {}) under the same rules
	 * as createOrder: one key for all attempts (opts.key, else the key
	 * stored for opts.ref, else a new key for this call only),
	 * Retry-After honoured, network errors, 5xx and an undecided key
	 * retried.  Resolves like createOrder, with outcome 'cancelled' on
	 * 200 (body: the order, status CANCELLED, cancelledAt); 'rejected'
	 * with ORDER_NOT_FOUND, ORDER_ALREADY_CANCELLED (another key
	 * cancelled it), ORDER_NOT_CANCELLABLE and the like.  A cancel puts
	 * the stock back once however often it is retried with its key; it
	 * never refunds a payment.  Throws a TypeError, synchronously, for an
	 * order id that cannot be one.
	 */
	cancelOrder(orderId, opts = {}) {
		if (typeof orderId !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(orderId))
			throw new TypeError('IdemordersClient: orderId must be 1-64 characters of A-Z a-z 0-9 . _ - (such as o-42), got ' +
			    JSON.stringify(orderId));
		const payload = JSON.stringify(opts.reason === undefined ||
		    opts.reason === null ? {} : { reason: opts.reason });
		const url = `${String(this.url).replace(/\/+$/, '')}/${orderId}/cancel`;
		return this.#send(url, payload, opts, 'cancelled');
	}

	/**
	 * One page of the caller's own orders, newest first (GET {url}):
	 * opts.limit (1-100; the server's default 20 when absent), and at
	 * most one cursor, opts.startingAfter (the orders older than this
	 * order id) or opts.endingBefore (the newer ones).  A read: network
	 * errors and 5xx are retried within the deadline, Retry-After
	 * honoured.  Resolves to { ok, status, code, orders, hasMore,
	 * nextCursor, prevCursor, body, text, headers, attempts, error }:
	 * orders as GET {url}/{orderId} shows each; nextCursor the
	 * startingAfter of the next (older) page, null when there is none;
	 * prevCursor the endingBefore of the previous (newer) page, or null.
	 * A refusal (400 VALIDATION_FAILED naming the parameter, 401) is ok
	 * false with its code.  Never rejects for HTTP or network failures.
	 */
	async listOrders(opts = {}) {
		const q = new URLSearchParams();
		if (opts.limit !== undefined && opts.limit !== null)
			q.set('limit', String(opts.limit));
		if (opts.startingAfter)
			q.set('starting_after', opts.startingAfter);
		if (opts.endingBefore)
			q.set('ending_before', opts.endingBefore);
		const qs = q.toString();
		const url = String(this.url) + (qs ? '?' + qs : '');
		const deadline = this.now() + this.deadlineMs;
		let last = null;
		let attempt = 0;
		for (;;) {
			const left = deadline - this.now();
			if (left <= 0 || (opts.signal && opts.signal.aborted)) {
				last = last || this.#noAnswer(left <= 0 ?
				    'deadline passed before the first attempt' :
				    'aborted by the caller');
				break;
			}
			let extra = {};
			if (this.getHeaders) {
				try {
					extra = (await this.getHeaders(attempt + 1)) || {};
				} catch (e) {
					last = this.#noAnswer(`getHeaders failed: ${(e && e.message) || e}`);
					break;
				}
			}
			attempt++;
			last = await this.#get(url, Math.min(this.tryTimeoutMs, left),
			    opts.signal, extra);
			if (last.status !== 0 && (last.status < 500 || last.status > 599))
				break;
			if (attempt >= this.maxAttempts || (opts.signal && opts.signal.aborted))
				break;
			const ra = parseRetryAfter(last.headers.get('retry-after'), this.now());
			const d = ra !== null ? ra : backoffDelay(attempt,
			    this.baseDelayMs, this.maxDelayMs, this.random);
			if (this.now() + d >= deadline)
				break;
			await this.sleep(d, opts.signal);
		}
		const ok = last.status === 200 && last.body !== null &&
		    Array.isArray(last.body.data);
		const orders = ok ? last.body.data : [];
		const older = ok && orders.length > 0 &&
		    (opts.endingBefore ? true : last.body.has_more === true);
		const newer = ok && orders.length > 0 &&
		    (opts.endingBefore ? last.body.has_more === true :
		    Boolean(opts.startingAfter));
		return {
			ok,
			status: last.status,
			code: last.code,
			orders,
			hasMore: ok ? last.body.has_more === true : false,
			nextCursor: older ? orders[orders.length - 1].orderId : null,
			prevCursor: newer ? orders[0].orderId : null,
			body: last.body,
			text: last.text,
			headers: last.headers,
			attempts: attempt,
			error: ok ? null : (last.error || (last.status ? `HTTP ${last.status}` : null)),
		};
	}

	/**
	 * Every order of the caller, newest first, page by page (opts.limit
	 * a page, default 100), from opts.startingAfter when given: an async
	 * iterator.  Throws an Error carrying the page (error.page) when a
	 * page cannot be read.
	 */
	async *allOrders(opts = {}) {
		let cursor = opts.startingAfter || null;
		for (;;) {
			const page = await this.listOrders({ limit: opts.limit ?? 100,
			    startingAfter: cursor, signal: opts.signal });
			if (!page.ok) {
				const e = new Error(`IdemordersClient: listing orders failed: ${page.code || page.error}`);
				e.page = page;
				throw e;
			}
			yield* page.orders;
			if (!page.nextCursor)
				return;
			cursor = page.nextCursor;
		}
	}

	/* One GET; a network error or timeout gives status 0 and its message. */
	#get(url, timeoutMs, signal, extra) {
		return this.#request(url, {
			method: 'GET',
			headers: { ...this.headers, ...extra },
		}, timeoutMs, signal);
	}

	/*
	 * One request (INIT: method, headers, body), bounded by timeoutMs and
	 * the caller's signal; a network error or timeout gives status 0 and
	 * its message.
	 */
	async #request(url, init, timeoutMs, signal) {
		const ac = new AbortController();
		const onAbort = () => ac.abort();
		if (signal)
			signal.addEventListener('abort', onAbort, { once: true });
		const timer = setTimeout(() => ac.abort(), timeoutMs);
		try {
			const res = await this.fetch(url, {
				...init,
				credentials: this.credentials,
				signal: ac.signal,
			});
			const text = await res.text();
			const body = parseBody(text);
			const code = body && typeof body.code === 'string' ? body.code : null;
			return { status: res.status, headers: res.headers, text, body,
			    code, error: null };
		} catch (e) {
			const why = ac.signal.aborted ?
			    (signal && signal.aborted ? 'aborted by the caller' :
			    `no answer within ${timeoutMs} ms`) :
			    `network error: ${e && e.cause && e.cause.code ? e.cause.code : (e && e.message) || e}`;
			return this.#noAnswer(why);
		} finally {
			clearTimeout(timer);
			if (signal)
				signal.removeEventListener('abort', onAbort);
		}
	}

	/*
	 * POST `payload` to `url` with one key for every attempt, retrying
	 * what may be retried; `done` is the outcome of a 2xx.  The key is
	 * made and stored before the first await: a second call for the
	 * same ref (a double click, a second handler) finds it.
	 */
	async #send(url, payload, opts, done) {
		const ref = opts.ref ?? null;
		let key = opts.key ?? null;
		if (key === null)
			key = ref !== null ? this.keyFor(ref) : randomUUID();
		const start = this.now();
		const deadline = start + this.deadlineMs;
		let last = null;
		let attempt = 0;

		for (;;) {
			const remaining = deadline - this.now();
			if (remaining <= 0) {
				last = last || this.#noAnswer('deadline passed before the first attempt');
				break;
			}
			if (opts.signal && opts.signal.aborted) {
				// The last answer stays the result.
				if (last)
					last.error = 'aborted by the caller';
				else
					last = this.#noAnswer('aborted by the caller');
				break;
			}
			let extra = {};
			if (this.getHeaders) {
				try {
					extra = (await this.getHeaders(attempt + 1)) || {};
				} catch (e) {
					const why = `getHeaders failed: ${(e && e.message) || e}`;
					if (last)
						last.error = why;
					else
						last = this.#noAnswer(why);
					last.outcome = 'unknown';
					break;
				}
			}
			const left = deadline - this.now();
			if (left <= 0) {
				last = last || this.#noAnswer('deadline passed before the first attempt');
				break;
			}
			attempt++;
			last = await this.#attempt(url, payload, key, attempt,
			    Math.min(this.tryTimeoutMs, left), opts.signal, extra);
			const verdict = last.status === 0 ? 'retry' :
			    classify(last.status, last.code,
			    parseShouldRetry(last.headers.get('should-retry')));
			let delay = null;
			if (verdict === 'retry' && attempt < this.maxAttempts &&
			    !(opts.signal && opts.signal.aborted)) {
				const ra = parseRetryAfter(last.headers.get('retry-after'),
				    this.now());
				const d = ra !== null ? ra : backoffDelay(attempt,
				    this.baseDelayMs, this.maxDelayMs, this.random);
				// No attempt starts at or past the deadline.
				if (this.now() + d < deadline)
					delay = d;
				else
					last.error = last.error || `next attempt would start past the deadline (wait ${d} ms)`;
			}
			if (this.onAttempt) {
				this.onAttempt({ attempt, status: last.status,
				    code: last.code, error: last.error, delayMs: delay });
			}
			if (verdict !== 'retry') {
				last.outcome = verdict === 'success' ? done : 'rejected';
				break;
			}
			if (delay === null) {
				last.outcome = 'unknown';
				break;
			}
			await this.sleep(delay, opts.signal);
		}
		if (!last.outcome)
			last.outcome = 'unknown';
		this.#settleKey(ref, opts.key ?? null, last);
		return this.#result(last, attempt, key);
	}

	/* One POST; a network error or timeout gives status 0 and its message. */
	#attempt(url, payload, key, attempt, timeoutMs, signal, extra) {
		const headers = {
			...this.headers,
			...extra,
			'Content-Type': 'application/json',
			'Idempotency-Key': key,
			...(this.attemptHeaders ? this.attemptHeaders(attempt) || {} : {}),
		};
		return this.#request(url, { method: 'POST', headers, body: payload },
		    timeoutMs, signal);
	}

	#noAnswer(why) {
		return { status: 0, headers: new Headers(), text: '', body: null,
		    code: null, error: why };
	}

	/*
	 * Keep the stored key while the order may exist (created, unknown,
	 * authentication trouble, key used for another body); forget it after
	 * any other final answer, so that a changed cart gets a new key.
	 */
	#settleKey(ref, givenKey, last) {
		if (ref === null || givenKey !== null)
			return;
		if (last.outcome !== 'rejected')
			return;
		if (KEEP_KEY_STATUSES.includes(last.status))
			return;
		if (last.code === 'IDEMPOTENCY_KEY_REUSED')
			return;
		this.forget(ref);
	}

	#result(last, attempts, key) {
		const replayed = (last.headers.get('idempotent-replayed') || '')
		    .trim().toLowerCase() === 'true';
		const orderId = last.body && typeof last.body.orderId === 'string' ?
		    last.body.orderId : null;
		return {
			outcome: last.outcome,
			ok: last.outcome === 'created' || last.outcome === 'cancelled',
			status: last.status,
			code: last.code,
			replayed,
			body: last.body,
			text: last.text,
			headers: last.headers,
			attempts,
			key,
			orderId,
			error: last.error,
		};
	}
}
