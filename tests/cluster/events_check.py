"""tests/cluster/events_check.py -- the events of a cluster run, checked
after it (imported by chaos.py and partition.py).

Receiver: the test receiver of the relays' webhooks
(tests/lib/webhook-receiver.cjs, on the npm standardwebhooks verifier),
started on the client side; every delivery it gets is a JSON line of its
log (id, type, orderId, verified, status, dup, at, answeredAt).

check(): once the run's keys are done, waits (bounded polling) until every
event of the run's orders is delivered, then checks, from the rows of one
node (causal reads) and the receiver's log:
  - the outbox: every order of the run has its order.created, every
    CANCELLED one its order.cancelled, and no event lacks its order;
  - none lost: every event of the run is 'delivered' in the database and
    was answered 2xx, verified, at the receiver (at least once);
  - no delivery for an event or an order that does not exist, and each
    delivery carries its event's type and order (as the outbox holds it);
  - dedup by webhook-id leaves exactly one effect per event: one verified
    2xx that was not a duplicate (the receiver's own dedup by id);
  - one event is never in flight twice at once: no try of an id reaches
    the receiver before the try before it was answered;
  - per order in order: an order.cancelled reaches the receiver only
    after its order.created was answered 2xx.
Python 3 standard library only; every loop is bounded.
"""

import json
import os
import subprocess
import time

CREATED, CANCELLED = "order.created", "order.cancelled"


class Receiver:
    """tests/lib/webhook-receiver.cjs on HOST:PORT, logging to LOG."""

    def __init__(self, repo, host, port, secret_file, log, node_modules):
        self.log = log
        self.url = "http://%s:%d" % (host, port)
        mod = os.path.join(node_modules, "standardwebhooks")
        if not os.path.isdir(mod):
            raise RuntimeError("no %s (npm install standardwebhooks)" % mod)
        open(log, "a").close()
        env = dict(os.environ, NODE_PATH=node_modules)
        self.out = open(log + ".out", "ab")
        self.proc = subprocess.Popen(
            ["node", os.path.join(repo, "tests/lib/webhook-receiver.cjs"),
             str(port), secret_file, log, host], env=env,
            stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.out)
        for _ in range(100):
            if self.proc.poll() is not None:
                break
            try:
                import urllib.request
                with urllib.request.urlopen(self.url + "/_health",
                                            timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("the receiver does not answer on %s (see %s.out)"
                           % (self.url, log))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.out.close()


def read_log(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def oid_num(oid):
    s = str(oid or "")
    return s[2:] if s.startswith("o-") else s


def _events(sql, key_like):
    orders = {r[0]: r[1] for r in sql(
        "SELECT id, status FROM orders WHERE idempotency_key LIKE '%s'"
        % key_like)}
    events = {r[0]: dict(type=r[1], order=r[2], seq=int(r[3]), state=r[4])
              for r in sql(
        "SELECT e.webhook_id, e.type, e.order_id, e.seq, e.state FROM"
        " events e JOIN orders o ON o.id = e.order_id WHERE"
        " o.idempotency_key LIKE '%s'" % key_like)}
    return orders, events


def relay_counts(sql):
    """Deliveries (2xx) each relay process counted so far
    (event_deliveries: relay host/pid -> n)."""
    return {r[0]: int(r[1]) for r in sql(
        "SELECT relay, n FROM event_deliveries WHERE outcome = 'delivered'")}


def _ok(d):
    return d.get("verified") and isinstance(d.get("status"), int) and \
        200 <= d["status"] <= 299


def check(sql, key_like, log_path, wait_s=60.0, before=None):
    """The events of the orders whose key is LIKE KEY_LIKE.  SQL(stmt)
    gives the rows of one node, with causal reads; BEFORE, relay_counts()
    when the run began.  Returns (notes, violations): notes a dict for
    the summary line (delivered_by: how many deliveries each relay
    process recorded since BEFORE, most first)."""
    v = []
    t0 = time.monotonic()
    orders, events, log = {}, {}, []
    while True:
        orders, events = _events(sql, key_like)
        log = read_log(log_path)
        done = {d["id"] for d in log if _ok(d)}
        pending = [w for w, e in events.items()
                   if e["state"] != "delivered" or w not in done]
        if not pending or time.monotonic() - t0 > wait_s:
            break
        time.sleep(0.5)
    waited = time.monotonic() - t0
    # The outbox: an order's events, and no event without its order.
    have = {}
    for w, e in events.items():
        have.setdefault(e["order"], {})[e["type"]] = w
    for oid, st in orders.items():
        if CREATED not in have.get(oid, {}):
            v.append("order o-%s has no %s event" % (oid, CREATED))
        if st == "CANCELLED" and CANCELLED not in have.get(oid, {}):
            v.append("order o-%s is CANCELLED without its %s event"
                     % (oid, CANCELLED))
    orphans = sql("SELECT e.webhook_id, e.order_id FROM events e LEFT JOIN"
                  " orders o ON o.id = e.order_id WHERE o.id IS NULL"
                  " LIMIT 5")
    for w, oid in orphans:
        v.append("event %s names order o-%s, which does not exist"
                 % (w, oid))
    # Deliveries: each of an event that exists, with its type and order.
    tries = {}
    for d in log:
        tries.setdefault(d.get("id"), []).append(d)
    unknown = [w for w in tries if w not in events and w]
    known_elsewhere = set()
    if unknown:
        for i in range(0, len(unknown), 200):
            part = unknown[i:i + 200]
            known_elsewhere |= {r[0] for r in sql(
                "SELECT webhook_id FROM events WHERE webhook_id IN (%s)" %
                ",".join("'%s'" % w.replace("'", "") for w in part))}
    for w in unknown:
        if w not in known_elsewhere and any(d.get("verified")
                                            for d in tries[w]):
            v.append("delivery of %s, which is no event" % w)
    order_ids = {oid_num(d.get("orderId")) for d in log if d.get("verified")}
    order_ids.discard("")
    missing = order_ids - set(orders)
    if missing:
        found = set()
        ids = sorted(x for x in missing if x.isdigit())
        for i in range(0, len(ids), 200):
            found |= {r[0] for r in sql("SELECT id FROM orders WHERE id IN"
                                        " (%s)" % ",".join(ids[i:i + 200]))}
        for x in sorted(missing - found)[:5]:
            v.append("a delivery names order o-%s, which does not exist" % x)
    delivered = dups = overlaps = 0
    for w, e in sorted(events.items()):
        ds = sorted(tries.get(w, []), key=lambda d: d.get("at", 0))
        good = [d for d in ds if _ok(d)]
        if e["state"] != "delivered" or not good:
            v.append("event %s (%s of o-%s) not delivered after %.0fs:"
                     " state %s, %d tries at the receiver, %d answered 2xx"
                     % (w, e["type"], e["order"], waited, e["state"],
                        len(ds), len(good)))
            continue
        delivered += 1
        dups += len(good) - 1
        for d in good:
            if d.get("type") != e["type"] or \
                    oid_num(d.get("orderId")) != e["order"]:
                v.append("delivery of %s carried %s of %s, the event is"
                         " %s of o-%s" % (w, d.get("type"),
                                          d.get("orderId"), e["type"],
                                          e["order"]))
                break
        effects = [d for d in good if not d.get("dup")]
        if len(effects) != 1:
            v.append("event %s: %d effects after dedup by webhook-id, not 1"
                     % (w, len(effects)))
        for a, b in zip(ds, ds[1:]):
            if b.get("at", 0) < a.get("answeredAt", a.get("at", 0)):
                overlaps += 1
                v.append("event %s in flight twice at once: a try at %d"
                         " before the one at %d was answered at %d" % (
                             w, b.get("at", 0), a.get("at", 0),
                             a.get("answeredAt", 0)))
    # Per order in order.
    for oid, ts in have.items():
        if CREATED not in ts or CANCELLED not in ts:
            continue
        c_ok = [d.get("answeredAt", 0) for d in tries.get(ts[CREATED], [])
                if _ok(d)]
        x_at = [d.get("at", 0) for d in tries.get(ts[CANCELLED], [])]
        if x_at and (not c_ok or min(x_at) < min(c_ok)):
            v.append("o-%s: %s reached the receiver at %d, before its %s"
                     " was answered 2xx (%s)" % (
                         oid, CANCELLED, min(x_at), CREATED,
                         min(c_ok) if c_ok else "never"))
    notes = dict(events=len(events), delivered=delivered,
                 dup_deliveries=dups, events_wait_s="%.1f" % waited)
    if overlaps:
        notes["in_flight_twice"] = overlaps
    if before is not None:
        after = relay_counts(sql)
        by = sorted((n - before.get(r, 0) for r, n in after.items()),
                    reverse=True)
        notes["delivered_by"] = "/".join(str(n) for n in by if n > 0) or "0"

    return notes, v
