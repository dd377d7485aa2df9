// The checkout page's script: "Pay" creates the order with clients/js.
// The key is the checkout's own: the server made it with the checkout and
// keeps it in the session, and renders it into the page (data-key); the
// form without JavaScript (checkout-server.php) sends the same one.  So
// every click, retry, reload and tab of this checkout, with the script or
// without, sends the same key and can only ever make one order.  On the session shop the session
// cookie is the identity (same origin); on the bearer shop the page gets
// a token for the signed-in customer from /token.php and sends it as
// "Authorization: Bearer" instead.
import { IdemordersClient } from '/assets/idemorders-client.mjs';

const box = document.getElementById('checkout');
const pay = document.getElementById('pay');
const status = document.getElementById('status');
const ref = box.dataset.ref;
const key = box.dataset.key;
const order = JSON.parse(box.dataset.order);
const bearer = box.dataset.auth === 'bearer';
let token = null;
let placed = null;

/* The Authorization header, with a token fetched (again) when needed. */
async function bearerHeader() {
	if (token === null || Date.now() >= token.until) {
		const res = await fetch('/token.php', { credentials: 'same-origin', cache: 'no-store' });
		if (res.status === 401)
			throw new Error('signed out');
		if (!res.ok)
			throw new Error(`no token (status ${res.status})`);
		const t = await res.json();
		const life = Math.max(0, Number(t.expires_in) - 30);
		token = { value: t.access_token, until: Date.now() + life * 1000 };
	}
	return { Authorization: `Bearer ${token.value}` };
}

const client = new IdemordersClient({
	url: box.dataset.ordersUrl,
	credentials: bearer ? 'omit' : 'same-origin',
	getHeaders: bearer ? bearerHeader : undefined,
	onAttempt: ({ delayMs }) => {
		if (delayMs !== null && placed === null)
			show('retrying', 'Not confirmed yet: retrying…');
	},
});

/* Say `text` to the customer; `kind` and `data` are for scripts and tests. */
function show(kind, text, data = {}) {
	status.textContent = text;
	status.className = kind;
	status.dataset.outcome = kind;
	status.dataset.orderId = data.orderId || '';
	status.dataset.replayed = data.replayed ? 'true' : 'false';
	status.dataset.code = data.code || '';
	status.dataset.key = data.key || '';
}

/*
 * This browser's note that it sent this checkout's key and has not heard
 * a final answer (for the "not confirmed" message after a reload).
 */
const PENDING = `idemshop:pending:${ref}`;
function pending(on) {
	try {
		if (on)
			localStorage.setItem(PENDING, key);
		else
			localStorage.removeItem(PENDING);
	} catch { /* no storage: no message after a reload */ }
}
function wasPending() {
	try {
		return localStorage.getItem(PENDING) === key;
	} catch {
		return false;
	}
}

/*
 * Tell the shop what became of this checkout: 'ordered' (it closes the
 * checkout and empties the cart: the next checkout gets a new key) or
 * 'refused' (refused for good: the next checkout page makes a new one).
 */
async function settleCheckout(action) {
	const body = new URLSearchParams({ csrf: box.dataset.csrf, action, checkout: ref });
	const res = await fetch('/cart.php', { method: 'POST', body, credentials: 'same-origin' });
	if (res.status === 204)
		pending(false);
	if (res.status === 204 && action === 'ordered') {
		const cart = document.getElementById('cart-link');
		if (cart)
			cart.textContent = 'Cart (0)';
	}
}

/* A link to the order's page (where it can be cancelled). */
function showOrderLink(orderId) {
	let a = document.getElementById('order-link');
	if (!a) {
		const p = document.createElement('p');
		a = document.createElement('a');
		a.id = 'order-link';
		p.append(a);
		status.after(p);
	}
	a.href = `/${bearer ? 'order-token.php' : 'order.php'}?id=${encodeURIComponent(orderId)}`;
	a.textContent = `See your order ${orderId}`;
}

function render(r) {
	const data = { orderId: r.orderId, replayed: r.replayed, code: r.code, key: r.key };
	if (r.outcome === 'created') {
		// Two clicks' answers name the same order: the one that created
		// it is what the customer is told, whichever came back first.
		if (placed === r.orderId && (r.replayed || status.dataset.outcome === 'created'))
			return;
		placed = r.orderId;
		show(r.replayed ? 'replayed' : 'created', r.replayed ?
		    `Your order ${r.orderId} is placed. This checkout had already been submitted: nothing was ordered twice.` :
		    `Thank you: your order ${r.orderId} is placed.`, data);
		if (!pay.hidden) {
			pay.hidden = true;
			settleCheckout('ordered').catch(() => {});
		}
		showOrderLink(r.orderId);
		return;
	}
	if (placed !== null)
		return;
	if (r.outcome === 'rejected') {
		const text = r.status === 401 ?
		    'You are signed out: sign in again, then pay. Nothing was ordered.' :
		    r.code === 'OUT_OF_STOCK' ?
		    'Sorry: there is not enough stock for this order. Change your cart.' :
		    r.code === 'IDEMPOTENCY_KEY_REUSED' ?
		    'This checkout was already submitted with other contents: check your orders before paying again.' :
		    `The order was refused (${r.code || `status ${r.status}`}).`;
		show('rejected', text, data);
		// Refused for good (not a sign-in problem, not a key sent with
		// other contents): this key can never make an order.
		if (![401, 403, 407].includes(r.status) && r.code !== 'IDEMPOTENCY_KEY_REUSED')
			settleCheckout('refused').catch(() => {});
		return;
	}
	if (/signed out/.test(r.error || '')) {
		show('rejected', 'You are signed out: sign in again, then pay. Nothing was ordered.',
		    { ...data, code: 'UNAUTHENTICATED' });
		return;
	}
	show('unknown', 'We could not confirm your order yet. Try again: it cannot order twice.', data);
	pay.textContent = 'Try again';
}

// The button stays enabled: a second click is safe (the same checkout
// sends the same key), and a customer whose first click seemed lost can
// always press it again.
pay.addEventListener('click', async () => {
	if (placed === null)
		show('pending', 'Placing your order…');
	let r;
	try {
		pending(true);
		r = await client.createOrder(order, { key });
	} catch (e) {
		// Nothing was sent (no way to make a key in this browser).
		show('rejected', `This browser cannot place the order: ${e.message}`);
		return;
	}
	render(r);
});

if (wasPending()) {
	// An earlier visit pressed "Pay" and never heard back.
	show('unknown', 'An earlier payment of this checkout was not confirmed. Try again: it cannot order twice.',
	    { key });
	pay.textContent = 'Try again';
}
pay.hidden = false;
