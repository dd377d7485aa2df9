// examples/shop/public/assets/cancel.mjs -- what the order page and "My
// orders" say about a cancel, and this browser's note that it sent one
// and heard no final answer (so that a reload can say so).

export const SIGNED_OUT =
    'You are signed out: sign in again, then cancel. Nothing was changed.';
export const NOT_CONFIRMED =
    'We could not confirm the cancel yet. Try again: it cannot cancel twice.';
export const EARLIER_NOT_CONFIRMED =
    'An earlier cancel of this order was not confirmed. Try again: it cannot cancel twice.';

/* The words for a refused cancel r; subject names the order ("This order"). */
export function refusal(r, subject) {
	if (r.status === 401)
		return SIGNED_OUT;
	if (r.code === 'ORDER_ALREADY_CANCELLED')
		return `${subject} was already cancelled.`;
	if (r.code === 'ORDER_NOT_CANCELLABLE')
		return `${subject} can no longer be cancelled.`;
	return `The cancel was refused (${r.code || `status ${r.status}`}).`;
}

/* Whether a refusal leaves the note: not when the customer was not let in. */
export function refusalIsFinal(r) {
	return ![401, 403, 407].includes(r.status);
}

const noteName = (orderId) => `idemshop:cancel-pending:${orderId}`;

/* Note (on) or forget (off) that the cancel of orderId with key is open. */
export function notePending(orderId, key, on) {
	try {
		if (on)
			localStorage.setItem(noteName(orderId), key);
		else
			localStorage.removeItem(noteName(orderId));
	} catch { /* no storage: no message after a reload */ }
}

export function wasPending(orderId, key) {
	try {
		return localStorage.getItem(noteName(orderId)) === key;
	} catch {
		return false;
	}
}

/* The bearer shop's Authorization header: a token from /token.php. */
export async function bearerHeader() {
	const res = await fetch('/token.php', { credentials: 'same-origin', cache: 'no-store' });
	if (res.status === 401)
		throw new Error('signed out');
	if (!res.ok)
		throw new Error(`no token (status ${res.status})`);
	return { Authorization: `Bearer ${(await res.json()).access_token}` };
}
