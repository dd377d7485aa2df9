// The order page's script: "Cancel this order" cancels it with clients/js.
// The key is the cancel's own: the server made it when the page was first
// rendered for this order, keeps it in the session and renders it into
// the page (data-key); the form without JavaScript (order-cancel.php)
// sends the same one.  So every click, retry, reload and tab of this
// cancel sends the same key: the order's items go back once.  On the
// bearer shop the page sends a token from /token.php instead of the
// session cookie.
import { IdemordersClient } from '/assets/idemorders-client.mjs';

const box = document.getElementById('order');
const button = document.getElementById('cancel');
const status = document.getElementById('status');
const orderId = box.dataset.orderId;
const key = box.dataset.key;
const bearer = box.dataset.auth === 'bearer';
let done = false;

async function bearerHeader() {
	const res = await fetch('/token.php', { credentials: 'same-origin', cache: 'no-store' });
	if (res.status === 401)
		throw new Error('signed out');
	if (!res.ok)
		throw new Error(`no token (status ${res.status})`);
	return { Authorization: `Bearer ${(await res.json()).access_token}` };
}

const client = new IdemordersClient({
	url: box.dataset.ordersUrl,
	credentials: bearer ? 'omit' : 'same-origin',
	getHeaders: bearer ? bearerHeader : undefined,
	onAttempt: ({ delayMs }) => {
		if (delayMs !== null && !done)
			show('retrying', 'Not confirmed yet: retrying…');
	},
});

/* Say `text` to the customer; `kind` and `data` are for scripts and tests. */
function show(kind, text, data = {}) {
	status.textContent = text;
	status.className = kind;
	status.dataset.outcome = kind;
	status.dataset.orderId = orderId;
	status.dataset.replayed = data.replayed ? 'true' : 'false';
	status.dataset.code = data.code || '';
	status.dataset.key = key;
}

/* This browser's note that it sent the cancel and heard no final answer. */
const PENDING = `idemshop:cancel-pending:${orderId}`;
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

function render(r) {
	const data = { replayed: r.replayed, code: r.code };
	if (r.outcome === 'cancelled') {
		// Two clicks' answers: the first one that cancelled is what the
		// customer is told, whichever came back first.
		if (done && (r.replayed || status.dataset.outcome === 'cancelled'))
			return;
		done = true;
		pending(false);
		show(r.replayed ? 'replayed' : 'cancelled', r.replayed ?
		    `Your order ${orderId} is cancelled. It had already been cancelled by an earlier click: its items went back once.` :
		    `Your order ${orderId} is cancelled.`, data);
		const st = document.getElementById('order-status');
		if (st)
			st.textContent = 'CANCELLED';
		button.hidden = true;
		return;
	}
	if (done)
		return;
	if (r.outcome === 'rejected') {
		if (![401, 403, 407].includes(r.status))
			pending(false);
		show('rejected', r.status === 401 ?
		    'You are signed out: sign in again, then cancel. Nothing was changed.' :
		    r.code === 'ORDER_ALREADY_CANCELLED' ? `Your order ${orderId} was already cancelled.` :
		    r.code === 'ORDER_NOT_CANCELLABLE' ? `Your order ${orderId} can no longer be cancelled.` :
		    `The cancel was refused (${r.code || `status ${r.status}`}).`, data);
		return;
	}
	if (/signed out/.test(r.error || '')) {
		show('rejected', 'You are signed out: sign in again, then cancel. Nothing was changed.',
		    { code: 'UNAUTHENTICATED' });
		return;
	}
	show('unknown', 'We could not confirm the cancel yet. Try again: it cannot cancel twice.', data);
	button.textContent = 'Try again';
}

// The button stays enabled: a second click is safe (the same key).
button.addEventListener('click', async () => {
	if (!done)
		show('pending', 'Cancelling your order…');
	pending(true);
	render(await client.cancelOrder(orderId, { key }));
});

if (wasPending()) {
	show('unknown', 'An earlier cancel of this order was not confirmed. Try again: it cannot cancel twice.');
	button.textContent = 'Try again';
}
button.hidden = false;
