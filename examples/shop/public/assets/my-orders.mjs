// "My orders": each row's Cancel button cancels its order with clients/js.
// The key is that cancel's own: the server made it when it rendered the
// button, keeps it in the session and renders it into the row (data-key);
// the button's form without JavaScript (order-cancel.php) sends the same
// one, and so do the order's own page, a second tab and a reload.  So the
// order's items go back once however often the button is pressed.  On
// the bearer shop the page sends a token from /token.php instead of the
// session cookie.
import { IdemordersClient } from '/assets/idemorders-client.mjs';
import { EARLIER_NOT_CONFIRMED, NOT_CONFIRMED, SIGNED_OUT, bearerHeader,
    notePending, refusal, refusalIsFinal, wasPending } from '/assets/cancel.mjs';

const table = document.getElementById('orders');
const bearer = table.dataset.auth === 'bearer';

function wire(row) {
	const orderId = row.dataset.orderId;
	const key = row.dataset.key;
	const form = row.querySelector('form');
	const button = row.querySelector('button.cancel');
	const message = row.querySelector('.message');
	let done = false;

	/* Say `text` in the row; `kind` and `data` are for scripts and tests. */
	function show(kind, text, data = {}) {
		message.textContent = text;
		message.className = `message ${kind}`;
		row.dataset.outcome = kind;
		row.dataset.replayed = data.replayed ? 'true' : 'false';
		row.dataset.code = data.code || '';
	}

	function cancelled() {
		row.querySelector('.status').textContent = 'cancelled';
		row.dataset.status = 'CANCELLED';
		button.hidden = true;
	}

	const client = new IdemordersClient({
		url: table.dataset.ordersUrl,
		credentials: bearer ? 'omit' : 'same-origin',
		getHeaders: bearer ? bearerHeader : undefined,
		onAttempt: ({ delayMs }) => {
			if (delayMs !== null && !done)
				show('retrying', 'Not confirmed yet: retrying…');
		},
	});

	function render(r) {
		const data = { replayed: r.replayed, code: r.code };
		if (r.outcome === 'cancelled') {
			// A double click's two answers: the one that cancelled is
			// what the customer is told, whichever came back first.
			if (done && (r.replayed || row.dataset.outcome === 'cancelled'))
				return;
			done = true;
			notePending(orderId, key, false);
			show(r.replayed ? 'replayed' : 'cancelled', r.replayed ?
			    'Cancelled. An earlier click had already cancelled it: its items went back once.' :
			    'Cancelled.', data);
			cancelled();
			return;
		}
		if (done)
			return;
		if (r.outcome === 'rejected') {
			if (refusalIsFinal(r))
				notePending(orderId, key, false);
			if (r.code === 'ORDER_ALREADY_CANCELLED')
				cancelled();
			show('rejected', refusal(r, 'This order'), data);
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
	form.addEventListener('submit', async (ev) => {
		ev.preventDefault();
		if (!done)
			show('pending', 'Cancelling…');
		notePending(orderId, key, true);
		render(await client.cancelOrder(orderId, { key }));
	});

	if (wasPending(orderId, key)) {
		show('unknown', EARLIER_NOT_CONFIRMED);
		button.textContent = 'Try again';
	}
}

for (const row of table.querySelectorAll('tbody tr[data-order-id]')) {
	if (row.dataset.key)
		wire(row);
	else
		notePending(row.dataset.orderId, '', false);
}
table.dataset.ready = 'true';
