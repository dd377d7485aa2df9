// The order page's script: "Cancel this order" cancels it with clients/js.
// The key is the cancel's own: the server made it when the page was first
// rendered for this order, keeps it in the session and renders it into
// the page (data-key); the form without JavaScript (order-cancel.php)
// sends the same one.  So every click, retry, reload and tab of this
// cancel sends the same key: the order's items go back once.  On the
// bearer shop the page sends a token from /token.php instead of the
// session cookie.
import { IdemordersClient } from '/assets/idemorders-client.mjs';
import { EARLIER_NOT_CONFIRMED, NOT_CONFIRMED, SIGNED_OUT, bearerHeader,
    notePending, refusal, refusalIsFinal, wasPending } from '/assets/cancel.mjs';

const box = document.getElementById('order');
const button = document.getElementById('cancel');
const status = document.getElementById('status');
const orderId = box.dataset.orderId;
const key = box.dataset.key;
const bearer = box.dataset.auth === 'bearer';
let done = false;

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

function render(r) {
	const data = { replayed: r.replayed, code: r.code };
	if (r.outcome === 'cancelled') {
		// Two clicks' answers: the first one that cancelled is what the
		// customer is told, whichever came back first.
		if (done && (r.replayed || status.dataset.outcome === 'cancelled'))
			return;
		done = true;
		notePending(orderId, key, false);
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
		if (refusalIsFinal(r))
			notePending(orderId, key, false);
		show('rejected', refusal(r, `Your order ${orderId}`), data);
		return;
	}
	if (/signed out/.test(r.error || '')) {
		show('rejected', SIGNED_OUT, { code: 'UNAUTHENTICATED' });
		return;
	}
	show('unknown', NOT_CONFIRMED, data);
	button.textContent = 'Try again';
}

// The button stays enabled: a second click is safe (the same key).
button.addEventListener('click', async () => {
	if (!done)
		show('pending', 'Cancelling your order…');
	notePending(orderId, key, true);
	render(await client.cancelOrder(orderId, { key }));
});

if (wasPending(orderId, key)) {
	show('unknown', EARLIER_NOT_CONFIRMED);
	button.textContent = 'Try again';
}
button.hidden = false;
