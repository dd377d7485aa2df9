// tests/lib/webhook-receiver.cjs -- the test receiver of the relay's
// webhooks, verified by the published Standard Webhooks library (npm
// standardwebhooks), which no one here wrote.
//
//   node webhook-receiver.cjs PORT SECRET_FILE LOG [HOST]
//
// listens on HOST:PORT (HOST 127.0.0.1 unless given); over TLS when
// RECEIVER_TLS_CERT and RECEIVER_TLS_KEY name a PEM certificate (its
// chain) and key.
//
// POST /webhook     verify (signature, timestamp within 5 minutes): a
//                   delivery that fails is answered 400; one that passes
//                   is answered as the control says (200 by default).
//                   Every request is one JSON line in LOG: n, at (ms),
//                   id, ts, verified, why (when not), type, orderId,
//                   status (the answer), dup (the id was seen verified).
// POST /_control    {"status": N, "retryAfter": "S", "delayMs": N,
//                   "count": N, "id": ID}: the next count verified
//                   deliveries (all while count is absent) of webhook-id
//                   ID (of any while it is absent) get that answer, after
//                   delayMs; {} restores 200 at once.  Instead of a
//                   status, "reset": true answers with a TCP reset
//                   (RST) and "garbage": true with bytes that are not
//                   HTTP, then closes (status "reset" / "garbage" in
//                   the log).  "kill": PID sends SIGKILL to PID when
//                   such a delivery arrives, before it is answered.
// GET /_health      200
'use strict';
const http = require('http');
const https = require('https');
const fs = require('fs');
const { Webhook } = require('standardwebhooks');

const [port, secretFile, logFile, host] = process.argv.slice(2);
const wh = new Webhook(fs.readFileSync(secretFile, 'utf8').trim());
let control = {};
let n = 0;
const seen = new Set();

function read(req) {
	return new Promise((resolve, reject) => {
		const parts = [];
		req.on('data', (c) => parts.push(c));
		req.on('end', () => resolve(Buffer.concat(parts)));
		req.on('error', reject);
	});
}

const tls = process.env.RECEIVER_TLS_CERT ? {
	cert: fs.readFileSync(process.env.RECEIVER_TLS_CERT),
	key: fs.readFileSync(process.env.RECEIVER_TLS_KEY),
} : null;

function createServer(handler) {
	return tls ? https.createServer(tls, handler) : http.createServer(handler);
}

const server = createServer(async (req, res) => {
	const body = await read(req);
	if (req.method === 'GET' && req.url === '/_health') {
		res.writeHead(200).end('ok\n');
		return;
	}
	if (req.method === 'POST' && req.url === '/_control') {
		control = JSON.parse(body.toString('utf8') || '{}');
		res.writeHead(204).end();
		return;
	}
	if (req.method !== 'POST' || req.url !== '/webhook') {
		res.writeHead(404).end();
		return;
	}
	const rec = { n: ++n, at: Date.now(), id: req.headers['webhook-id'],
	    ts: req.headers['webhook-timestamp'], verified: false };
	let status = 200;
	let delay = 0;
	const headers = {};
	try {
		const ev = wh.verify(body.toString('utf8'), req.headers);
		rec.verified = true;
		rec.type = ev.type;
		rec.orderId = ev.data && ev.data.orderId;
		rec.orderStatus = ev.data && ev.data.status;
		rec.dup = seen.has(rec.id);
		if ((control.status !== undefined || control.reset ||
		    control.garbage) &&
		    (control.id === undefined || control.id === rec.id) &&
		    (control.count === undefined || control.count > 0)) {
			status = control.reset ? 'reset' :
			    control.garbage ? 'garbage' : control.status;
			delay = control.delayMs || 0;
			if (control.retryAfter !== undefined)
				headers['Retry-After'] = String(control.retryAfter);
			if (control.kill !== undefined) {
				try {
					process.kill(control.kill, 'SIGKILL');
					rec.killed = control.kill;
				} catch (e) {
					rec.killed = e.message;
				}
			}
			if (control.count !== undefined)
				control.count--;
		}
		if (typeof status === 'number' && status >= 200 && status <= 299)
			seen.add(rec.id);
	} catch (e) {
		rec.why = e.message;
		status = 400;
	}
	rec.status = status;
	const answer = () => {
		rec.answeredAt = Date.now();
		fs.appendFileSync(logFile, JSON.stringify(rec) + '\n');
		if (status === 'reset') {
			req.socket.resetAndDestroy();
			return;
		}
		if (status === 'garbage') {
			req.socket.end('SSH-2.0-OpenSSH_9.2\r\n\x00\xff not http\r\n\r\n');
			return;
		}
		res.writeHead(status, headers).end();
	};
	if (delay > 0)
		setTimeout(answer, delay);
	else
		answer();
});
server.keepAliveTimeout = 60000;
server.listen(Number(port), host || '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
