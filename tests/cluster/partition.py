#!/usr/bin/env python3
"""tests/cluster/partition.py -- network partitions of the Galera cluster,
with retrying clients and a history checker.

Runs in the client namespace of `tools/dev cluster partition`
(tests/cluster/partition.sh): three Galera nodes n1..n3 and three web
hosts w1..w3, each in a namespace of its own, every link cut by nftables
sets inside the hosts' namespaces (`nft add element inet idemp cutin`).

For each fault, one at a time: clients send create-order requests for
fresh keys to random web hosts and retry a key (same key, same body,
another random web host, backoff with jitter) after no answer within
their timeout, any 5xx and 409 REQUEST_IN_PROGRESS/REQUEST_STATUS_
UNCONFIRMED; a share of the orders acknowledged (--cancel-pct) is then
cancelled at once, with a cancel key of its own retried the same way, so
that the fault also cuts through cancels and an order's two events; a
prober polls every web host's _health and every node's
wsrep state; the fault is applied, held, healed; the run waits until the
three nodes are Synced in one Primary component of 3 and every web host
answers _health 200 (the time to heal), lets the clients finish their
keys, and checks the history of that fault's keys:

  minority   n3 cut from n1 and n2; every web host still reaches n3
  split      {n1 n2 w1 w2} | {n3 w3}: a clean 2-1 split
  flap       the links n3-n1 and n3-n2 go down and up every few seconds
  nquorum    n1 | n2 | n3 (1-1-1: no quorum anywhere), then healed
  webcut     w1 cut from every node while its requests wait before their
             COMMIT (both directions: the COMMIT never arrives; then only
             the nodes' answers: the COMMIT usually arrives, its answer is lost)
  mixed      the 2-1 split, and meanwhile w1's pool SIGKILLed (master and
             workers, mid-request) and its relay (mid-delivery: its
             leases pass to the others), both started again

Every request and answer is recorded (client, web host, key, body
fingerprint, send and answer times, status, code, orderId, replayed,
Retry-After) and written to --history (JSON lines).  The checker
verifies, on the rows read after healing (through the nodes' unix
sockets, with wsrep_sync_wait=1):
  - the three nodes agree row for row (orders, items, ledger, stock);
  - no key has two orders; a SUCCEEDED ledger row has one order, any
    other none; no ledger row is left PROCESSING;
  - every 201 (created or replayed) names the key's order, which exists
    with the acknowledged contents (principal, items, amount), and a
    created 201 names an order made during that request;
  - every 503 DATABASE_UNAVAILABLE ("nothing stored") is true: if the key
    has an order, another request of the key made it (a 201 created, or
    a request whose outcome was unknown, in flight when it was made);
  - REQUEST_STATUS_UNCONFIRMED only for a request that overlapped a fault
    (cut to healed) or another request of its key still in flight;
  - stock + sold - restocked = initial on every node, stock >= 0;
  - an order is CANCELLED exactly when its cancel key's cancel-order row
    SUCCEEDED; every cancel ends 200 naming its order; no cancel row left
    PROCESSING;
  - no 500 of the responder's, every 503 of the responder's with
    Retry-After, every key ends with a final answer;
  - the events of the fault's orders, which the relays of w1..w3
    deliver to a receiver in the client namespace
    (tests/cluster/events_check.py): every event delivered, none lost,
    none for an order that does not exist, one effect per event after
    dedup by webhook-id, never in flight twice at once, an order's
    order.cancelled only after its order.created;
  - the fault's own promise: with quorum lost on a web host's side its
    answers are 503 with Retry-After within the request deadline and
    its _health is 503, while the majority side keeps creating (split);
    a worker there tries each node it cannot reach at most once a
    request and not again within NODE_HOLD_S of its failure (from the
    "database connect to HOST failed" lines of w3's pool log), so that
    it answers fast, not after cycling through them until the deadline;
    no order is created while no node has quorum (nquorum); a node cut
    off rejoins by IST or with nothing to transfer, never by SST.
It prints one "cluster-partition:" line per fault with its counts and
violations, the first violations with the key's history on stderr, and
exits 1 on any violation, 2 on a set-up error.  Python 3 standard
library only; every loop is bounded in count and time.
"""

import argparse
import base64
import datetime
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import events_check

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
RETRY_409 = ("REQUEST_IN_PROGRESS", "REQUEST_STATUS_UNCONFIRMED")
# How long a worker skips a node that failed (src/db.h DB_NODE_HOLD_S).
NODE_HOLD_S = 5
FAULTS = ("minority", "split", "flap", "nquorum", "webcut", "mixed")
MODES = {
    # hold: seconds a fault lasts; keys: at most this many new keys per
    # fault; rounds: how many times each fault is run.
    "short": dict(hold=14, keys=140, clients=4, rounds=1, flap=3.0),
    "default": dict(hold=25, keys=400, clients=5, rounds=1, flap=3.0),
    "long": dict(hold=40, keys=1000, clients=6, rounds=2, flap=3.0),
}


def log(msg):
    print("partition.py: " + msg, file=sys.stderr, flush=True)


def utc_epoch(s):
    return datetime.datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


class Net:
    """The hosts' namespaces and their nftables cut sets."""

    def __init__(self, prefix, net):
        self.prefix = prefix
        self.addr = {"n1": net + ".11", "n2": net + ".12", "n3": net + ".13",
                     "w1": net + ".21", "w2": net + ".22", "w3": net + ".23"}
        self.lock = threading.Lock()
        self.cuts = set()

    def nft(self, host, *words):
        p = subprocess.run(["ip", "netns", "exec", "%s-%s" % (self.prefix,
                                                             host), "nft"]
                           + list(words), capture_output=True, text=True,
                           timeout=20)
        if p.returncode != 0:
            raise RuntimeError("nft in %s: %s: %s" % (host, " ".join(words),
                                                      p.stderr.strip()))

    def drop_from(self, host, peer):
        """HOST drops every packet that arrives from PEER."""
        self.nft(host, "add", "element", "inet", "idemp", "cutin",
                 "{ %s }" % self.addr[peer])
        with self.lock:
            self.cuts.add((peer, host))

    def cut(self, a, b):
        """Cut the link a-b both ways (each side drops the other's)."""
        for x, y in ((a, b), (b, a)):
            self.drop_from(x, y)
            self.nft(x, "add", "element", "inet", "idemp", "cutout",
                     "{ %s }" % self.addr[y])

    def heal(self):
        for h in self.addr:
            for s in ("cutin", "cutout"):
                self.nft(h, "flush", "set", "inet", "idemp", s)
        with self.lock:
            self.cuts.clear()


class Db:
    """The three nodes, through their unix sockets (no cut reaches them)."""

    def __init__(self, cnfs):
        self.cnf = cnfs

    def sql(self, n, stmt, sync=True, timeout=60):
        pre = "SET SESSION wsrep_sync_wait=1; " if sync else ""
        p = subprocess.run(
            ["mariadb", "--defaults-file=" + self.cnf[n - 1],
             "--connect-timeout=5", "-N", "-B", "idemorders",
             "-e", pre + stmt], capture_output=True, text=True,
            timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError("node %d: %s: %s" % (n, stmt[:70],
                                                    p.stderr.strip()))
        return [line.split("\t") for line in p.stdout.splitlines()]

    def state(self, n):
        """(local state, cluster status, cluster size) or None."""
        try:
            rows = self.sql(n, "SHOW GLOBAL STATUS WHERE Variable_name IN"
                            " ('wsrep_local_state_comment',"
                            " 'wsrep_cluster_status', 'wsrep_cluster_size')",
                            sync=False, timeout=10)
        except (RuntimeError, subprocess.SubprocessError):
            return None
        v = dict((r[0], r[1]) for r in rows if len(r) == 2)
        return (v.get("wsrep_local_state_comment", "?"),
                v.get("wsrep_cluster_status", "?"),
                v.get("wsrep_cluster_size", "?"))


def http(url, timeout, user=None, key=None, body=None, headers=None):
    """(status, code, doc, headers); status 0: no answer (refused, reset,
    timeout).  Never raises."""
    h = dict(headers or {})
    if user:
        tok = base64.b64encode(("%s:%s" % (user, USERS[user])).encode())
        h["Authorization"] = "Basic " + tok.decode()
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    if key:
        h["Idempotency-Key"] = key
    req = urllib.request.Request(url, data=data, headers=h,
                                 method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw, hdrs = r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        status, hdrs = e.code, dict(e.headers)
        try:
            raw = e.read()
        except Exception:  # noqa: BLE001
            raw = b""
    except Exception:  # noqa: BLE001 -- refused, reset, timeout
        return 0, "", None, {}
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    code = doc.get("code", "") if isinstance(doc, dict) else ""
    return status, code, doc, hdrs


def fingerprint(body):
    items = sorted((i["sku"], i["qty"]) for i in body["items"])
    return hashlib.sha256(json.dumps([body["currency"], body["amount"],
                                      items]).encode()).hexdigest()[:16]


class Run:
    def __init__(self, args):
        self.args = args
        self.net = Net(args.ns, args.net)
        self.db = Db(args.cnf)
        self.web = {"w%d" % i: "http://%s.2%d:80/orders" % (args.net, i)
                    for i in (1, 2, 3)}
        self.rng = random.Random(args.seed)
        self.run_id = "%d%03d" % (int(time.time()) % 100000,
                                  self.rng.randrange(1000))
        self.lock = threading.Lock()
        self.history = []        # every request, a dict each
        self.bodies = {}         # key -> (user, body, fingerprint)
        self.gave_up = []
        self.cancels = {}        # cancel key -> (create key, orderId)
        self.cancel_hist = []    # every cancel request, a dict each
        self.windows = []        # (fault, t_cut, t_healed)
        self.hist_out = open(args.history, "w") if args.history else None
        self.skus = [("PT%s-S%d" % (self.run_id, i), 100 * (i + 1))
                     for i in range(6)]
        # A SKU of its own for each request of the web-host cuts: no
        # other order touches its row, so that their transactions, held
        # open before COMMIT, neither wait on another nor lose a
        # certification to the load.
        self.cut_skus = [("PT%s-CUT%d" % (self.run_id, i), 700)
                         for i in range(6)]
        self.initial = {s: 10 ** 6 for s, _ in self.skus + self.cut_skus}
        values = ",".join("('%s','KRW',%d,%d)" % (s, p, self.initial[s])
                          for s, p in self.skus + self.cut_skus)
        self.db.sql(1, "INSERT INTO stock (sku, currency, unit_price,"
                    " available) VALUES " + values)
        self.client_timeout = args.client_timeout
        self.deadline = args.deadline
        host, port = args.receiver.rsplit(":", 1)
        self.receiver = events_check.Receiver(
            os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.abspath(__file__)))), host, int(port),
            args.webhook_secret, "%s/receiver.jsonl" % args.log_dir,
            args.node_modules)

    # -- requests ----------------------------------------------------------

    def record(self, into=None, **r):
        into = self.history if into is None else into
        with self.lock:
            r["id"] = len(into)
            into.append(r)
            if self.hist_out:
                self.hist_out.write(json.dumps(r, sort_keys=True) + "\n")
        return r

    def new_key(self, phase, i, skus=None):
        key = "pt-%s-%s-%d" % (self.run_id, phase, i)
        user = "alice" if i % 3 else "bob"
        skus = skus or self.skus
        n = self.rng.randint(1, min(3, len(skus)))
        items = sorted(self.rng.sample(skus, n))
        body = {"currency": "KRW",
                "items": [{"sku": s, "qty": self.rng.randint(1, 3)}
                          for s, _ in items]}
        body["amount"] = sum(p * it["qty"] for (_, p), it in
                             zip(items, body["items"]))
        with self.lock:
            self.bodies[key] = (user, body, fingerprint(body))
        return key

    def send_once(self, client, web, key, timeout=None, headers=None,
                  phase=""):
        user, body, fp = self.bodies[key]
        t0 = time.time()
        st, code, doc, hdrs = http(self.web[web], timeout or
                                   self.client_timeout, user, key, body,
                                   headers)
        t1 = time.time()
        oid = doc.get("orderId") if isinstance(doc, dict) else None
        return self.record(client=client, web=web, key=key, fp=fp,
                           t_send=t0, t_end=t1, status=st, code=code,
                           order=oid, phase=phase,
                           replayed=hdrs.get("Idempotent-Replayed") == "true",
                           retry_after=hdrs.get("Retry-After"),
                           fault_header=(headers or {}).get(
                               "X-Idemorders-Fault"),
                           items=doc.get("items") if isinstance(doc, dict)
                           else None,
                           amount=doc.get("amount") if isinstance(doc, dict)
                           else None)

    @staticmethod
    def final(r):
        st = r["status"]
        return not (st == 0 or st >= 500 or
                    (st == 409 and r["code"] in RETRY_409))

    def send_key(self, client, key, phase, first_web=None, headers=None,
                 timeout=None):
        """Send KEY until a final answer (retries: same key and body, any
        web host, full-jitter backoff), for at most --give-up seconds."""
        give_up = time.monotonic() + self.args.give_up
        web = first_web or self.rng.choice(sorted(self.web))
        attempt = 0
        while attempt < 200:
            r = self.send_once(client, web, key, timeout, headers, phase)
            headers = None      # a fault header goes with the first send
            timeout = None
            if self.final(r):
                return r
            if time.monotonic() > give_up:
                break
            attempt += 1
            cap = min(2.0, 0.1 * 2 ** min(attempt, 5))
            time.sleep(self.rng.uniform(0.05, cap))
            web = self.rng.choice(sorted(self.web))
        with self.lock:
            self.gave_up.append(key)
        return None

    def send_cancel(self, client, key, oid, phase):
        """Cancel the order OID that KEY created, with a cancel key of its
        own, until a final answer (retried as send_key does)."""
        user = self.bodies[key][0]
        ckey = key + "-cancel"
        with self.lock:
            self.cancels[ckey] = (key, oid)
        give_up = time.monotonic() + self.args.give_up
        for attempt in range(200):
            web = self.rng.choice(sorted(self.web))
            t0 = time.time()
            st, code, doc, hdrs = http(
                "%s/%s/cancel" % (self.web[web], oid), self.client_timeout,
                user, ckey, {"reason": "partition"})
            r = self.record(self.cancel_hist, client=client, web=web,
                            key=ckey, t_send=t0, t_end=time.time(),
                            status=st, code=code, phase=phase,
                            order=doc.get("orderId")
                            if isinstance(doc, dict) else None,
                            state=doc.get("status")
                            if isinstance(doc, dict) else None,
                            replayed=hdrs.get("Idempotent-Replayed") ==
                            "true", retry_after=hdrs.get("Retry-After"))
            if self.final(r):
                return r
            if time.monotonic() > give_up:
                break
            time.sleep(self.rng.uniform(0.05, min(2.0, 0.1 * 2 **
                                                  min(attempt + 1, 5))))
        with self.lock:
            self.gave_up.append(ckey)
        return None

    # -- a fault -------------------------------------------------------------

    def wait_healed(self, t_heal, limit):
        """Seconds from t_heal until 3 Synced Primary nodes of size 3 and
        every web host's _health 200; None if not within LIMIT seconds."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            ok = True
            for n in (1, 2, 3):
                if self.db.state(n) != ("Synced", "Primary", "3"):
                    ok = False
                    break
            if ok:
                for w in sorted(self.web):
                    if http(self.web[w] + "/_health", 5)[0] != 200:
                        ok = False
                        break
            if ok:
                return time.time() - t_heal
            time.sleep(0.25)
        return None

    def probe(self, stop, out, w):
        """Web host W's _health every 0.5 s (or as soon as it answered),
        or, with W None, every node's state."""
        for _ in range(100000):
            if stop.is_set():
                break
            t = time.time()
            if w is None:
                for n in (1, 2, 3):
                    out.append(("node", n, time.time(), self.db.state(n)))
            else:
                st, code, _, hdrs = http(self.web[w] + "/_health",
                                         self.deadline + 5)
                out.append(("health", w, t, time.time() - t, st,
                            hdrs.get("Retry-After")))
            stop.wait(max(0.0, 0.5 - (time.time() - t)))

    def log_offsets(self):
        return [os.path.getsize(f) if os.path.exists(f) else 0
                for f in self.args.error_log]

    def join_kinds(self, offsets):
        """node -> IST / SST / none, from its error log since OFFSETS."""
        kinds = {}
        for i, f in enumerate(self.args.error_log):
            try:
                with open(f, "rb") as fh:
                    fh.seek(offsets[i])
                    part = fh.read().decode("utf-8", "replace")
            except OSError:
                part = ""
            if "SST request" in part or "Running: 'wsrep_sst" in part:
                kinds[i + 1] = "SST"
            elif "IST received" in part or "Receiving IST" in part:
                kinds[i + 1] = "IST"
            else:
                kinds[i + 1] = "none"
        return kinds

    def run_fault(self, fault, rnd):
        a = self.args
        phase = "%s%d" % (fault, rnd)
        ctx = {"fault": fault, "phase": phase, "violations": [],
               "notes": {}}
        stop_keys = threading.Event()
        counter = [0]
        probes = []
        stop_probe = threading.Event()
        offsets = self.log_offsets()
        ctx["w3_log_off"] = self.pool_log_size(3)
        ctx["relays_before"] = events_check.relay_counts(
            lambda q: self.db.sql(1, q))
        pace = a.clients * (a.warm + a.hold + a.after + 10) / a.keys

        def client(cid):
            while not stop_keys.is_set():
                with self.lock:
                    i = counter[0]
                    if i >= a.keys:
                        return
                    counter[0] += 1
                key = self.new_key(phase, i)
                r = self.send_key("c%d" % cid, key, phase)
                if r and r["status"] == 201 and \
                        self.rng.uniform(0, 100) < a.cancel_pct:
                    self.send_cancel("c%d" % cid, key, r["order"], phase)
                # Keys spread over the whole fault, not spent at once.
                stop_keys.wait(self.rng.uniform(0.5, 1.5) * pace)

        pts = [threading.Thread(target=self.probe, args=(stop_probe, probes,
                                                         w))
               for w in sorted(self.web) + [None]]
        for t in pts:
            t.start()
        cts = [threading.Thread(target=client, args=(c,))
               for c in range(a.clients)]
        for t in cts:
            t.start()
        time.sleep(a.warm)
        t_cut = time.time()
        extra = []
        try:
            extra = getattr(self, "fault_" + fault)(ctx)
        except Exception as e:  # noqa: BLE001
            ctx["violations"].append("the fault schedule failed: %s" % e)
        t_heal = time.time()
        self.net.heal()
        heal_s = self.wait_healed(t_heal, a.heal_limit)
        t_healed = time.time()
        self.windows.append((phase, t_cut, t_healed))
        if heal_s is None:
            ctx["violations"].append(
                "not healed within %ds: nodes %s" % (
                    a.heal_limit, [self.db.state(n) for n in (1, 2, 3)]))
        # Some traffic on the healed cluster, then no new keys.
        time.sleep(a.after)
        stop_keys.set()
        for t in cts + extra:
            t.join(a.give_up + 2 * a.client_timeout + 30)
        stop_probe.set()
        for t in pts:
            t.join()
        ctx.update(t_cut=t_cut, t_heal=t_heal, t_healed=t_healed,
                   heal_s=heal_s, probes=probes,
                   joins=self.join_kinds(offsets))
        for n, kind in ctx["joins"].items():
            if kind == "SST":
                ctx["violations"].append("node %d rejoined by SST" % n)
        self.check_phase(ctx)
        return ctx

    def pool_log(self, n):
        return "%s/idemorders-%d.log" % (self.args.log_dir, n)

    def pool_log_size(self, n):
        f = self.pool_log(n)
        return os.path.getsize(f) if os.path.exists(f) else 0

    def pool_requests(self, n, offset):
        """Web host N's requests from its pool log since OFFSET, in order:
        dicts with t (the answer), pid, method, path, status, code, key,
        attempts, ms, and connects: the (t, host) of every "database
        connect to HOST failed" line of the request (a worker serves one
        request at a time: the lines of its pid before its request line
        are that request's)."""
        line_re = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z"
                             r" \S+\[(\d+)\] \w+: (.*)$")
        req_re = re.compile(r"^(GET|POST) (\S+) (\d+) (\S+) principal=\S+"
                            r" key=(\S+) attempts=(\d+) ([\d.]+)ms$")
        out, pending = [], {}
        try:
            with open(self.pool_log(n), "rb") as fh:
                fh.seek(offset)
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return out
        for line in text.splitlines():
            m = line_re.match(line)
            if not m:
                continue
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
            t = t.replace(tzinfo=datetime.timezone.utc).timestamp()
            pid, msg = int(m.group(2)), m.group(3)
            if msg.startswith("database connect to "):
                pending.setdefault(pid, []).append((t, msg.split()[3]))
                continue
            r = req_re.match(msg)
            if r:
                out.append(dict(t=t, pid=pid, method=r.group(1),
                                path=r.group(2), status=int(r.group(3)),
                                code=r.group(4), key=r.group(5),
                                attempts=int(r.group(6)),
                                ms=float(r.group(7)),
                                connects=pending.pop(pid, [])))
        return out

    def check_minority_connects(self, ctx, f, t_from, t_to):
        """A worker of the minority web host w3 tries each node it cannot
        reach (n1, n2) at most once a request, and not again within
        NODE_HOLD_S of its failure: the answers stay fast."""
        v = ctx["violations"]
        far = {self.net.addr["n1"], self.net.addr["n2"]}
        reqs = [r for r in self.pool_requests(3, ctx["w3_log_off"])
                if t_from <= r["t"] <= t_to]
        tries = 0
        for r in reqs:
            for h in far:
                k = sum(1 for _, x in r["connects"] if x == h)
                tries += k
                if k > 1:
                    v.append("%s: w3 worker %d tried %s %d times in one"
                             " request (%s %s %d %s, %d attempts, %.0f ms)"
                             % (f, r["pid"], h, k, r["method"], r["key"],
                                r["status"], r["code"], r["attempts"],
                                r["ms"]))
        last, early = {}, []
        for r in reqs:
            for t, h in r["connects"]:
                if h not in far:
                    continue
                p = last.get((r["pid"], h))
                if p is not None and t - p < NODE_HOLD_S:
                    early.append((r, h, t - p))
                last[(r["pid"], h)] = t
        for r, h, gap in early[:5]:
            v.append("%s: w3 worker %d tried %s again %.1fs after it"
                     " failed (%s %s %d %s)" % (f, r["pid"], h, gap,
                                                r["method"], r["key"],
                                                r["status"], r["code"]))
        if len(early) > 5:
            v.append("%s: w3 tried a node it cannot reach within %ds of"
                     " its failure %d times in all" % (f, NODE_HOLD_S,
                                                        len(early)))
        ctx["notes"]["w3_far_connects"] = "%d/%d" % (tries, len(reqs))
        ctx["notes"]["w3_attempts_max"] = max(
            [r["attempts"] for r in reqs] or [0])

    def hold(self, secs, ctx, watch=None):
        """Hold the fault SECS seconds, noting when WATCH (node numbers)
        all show non-Primary."""
        end = time.time() + secs
        while time.time() < end:
            if watch and "t_nonprimary" not in ctx:
                st = [self.db.state(n) for n in watch]
                if all(s and s[1] != "Primary" for s in st):
                    ctx["t_nonprimary"] = time.time()
            time.sleep(0.25)

    def fault_minority(self, ctx):
        self.net.cut("n3", "n1")
        self.net.cut("n3", "n2")
        self.hold(self.args.hold, ctx, watch=[3])
        return []

    def fault_split(self, ctx):
        for x in ("n3", "w3"):
            for y in ("n1", "n2", "w1", "w2"):
                self.net.cut(x, y)
        self.hold(self.args.hold, ctx, watch=[3])
        return self.minority_probe(ctx)

    def minority_probe(self, ctx):
        """The minority web host must answer within the deadline: keys
        sent there alone, at once, with a client timeout above it; then
        retried like any other after the heal."""
        ctx["minority_answers"] = []
        keys = [self.new_key(ctx["phase"] + "-m", i) for i in range(4)]

        def go(k):
            r = self.send_once("minority", "w3", k, self.deadline + 5,
                               phase=ctx["phase"])
            with self.lock:
                ctx["minority_answers"].append(r)
        ts = [threading.Thread(target=go, args=(k,)) for k in keys]
        for t in ts:
            t.start()
        for t in ts:
            t.join(self.deadline + 10)
        return self.finish_later(ctx, keys)

    def fault_mixed(self, ctx):
        """The 2-1 split, and meanwhile w1's pool SIGKILLed (master and
        workers, mid-request) and started again."""
        for x in ("n3", "w3"):
            for y in ("n1", "n2", "w1", "w2"):
                self.net.cut(x, y)
        self.hold(self.args.hold / 2, ctx, watch=[3])
        ctx["notes"]["pool_killed"] = self.pool_kill(1)
        self.relay_kill(1)
        time.sleep(1)
        ctx["notes"]["pool_restart_s"] = "%.1f" % self.pool_start(1)
        self.relay_start(1)
        self.hold(self.args.hold / 2, ctx, watch=[3])
        return self.minority_probe(ctx)

    # -- web host N's pool, as cluster.sh starts it -------------------------

    def pool_paths(self, n):
        w = "%s/web%d" % (self.args.run_dir, n)
        return w + "/idemorders.pid", w + "/idemorders.conf", \
            w + "/idemorders.sock"

    def pool_kill(self, n):
        pidfile, conf, _ = self.pool_paths(n)
        with open(pidfile) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if conf.encode() not in f.read():
                raise RuntimeError("pid %d is not pool %d" % (pid, n))
        kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                              text=True).stdout.split()
        for p in [pid] + [int(k) for k in kids]:
            try:
                os.kill(p, 9)
            except ProcessLookupError:
                pass
        log("SIGKILLed pool %d (pid %d, workers %s)" % (n, pid,
                                                        " ".join(kids)))
        return 1 + len(kids)

    def pool_start(self, n):
        pidfile, conf, sock = self.pool_paths(n)
        t0 = time.monotonic()
        if os.path.exists(sock):
            os.unlink(sock)
        logf = open("%s/idemorders-%d.log" % (self.args.log_dir, n), "ab")
        p = subprocess.Popen(["ip", "netns", "exec", "%s-w%d" % (
            self.args.ns, n), "setsid", self.args.bin, "serve", "-c", conf],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
        with open(pidfile, "w") as f:
            f.write("%d\n" % p.pid)
        for _ in range(100):
            if os.path.exists(sock):
                return time.monotonic() - t0
            time.sleep(0.1)
        raise RuntimeError("pool %d did not open %s" % (n, sock))

    def relay_paths(self, n):
        w = "%s/web%d" % (self.args.run_dir, n)
        return w + "/relay.pid", w + "/idemorders.conf"

    def relay_kill(self, n):
        """SIGKILL web host N's relay (tests/cluster/cluster.sh started
        it; its pid file names it)."""
        pidfile, conf = self.relay_paths(n)
        with open(pidfile) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if b"relay" not in f.read():
                raise RuntimeError("pid %d is not relay %d" % (pid, n))
        os.kill(pid, 9)
        log("SIGKILLed relay %d (pid %d)" % (n, pid))

    def relay_start(self, n):
        """Web host N's relay again, as cluster.sh starts it: in its
        namespace, as the pool's user (the config's user)."""
        pidfile, conf = self.relay_paths(n)
        user = None
        with open(conf) as f:
            for line in f:
                m = re.match(r"^user\s*=\s*(\S+)", line)
                if m:
                    user = m.group(1)
        if not user:
            raise RuntimeError("no user in %s" % conf)
        logf = open("%s/relay-%d.log" % (self.args.log_dir, n), "ab")
        p = subprocess.Popen(["ip", "netns", "exec", "%s-w%d" % (
            self.args.ns, n), "setsid", "setpriv", "--reuid=" + user,
            "--regid=" + user, "--init-groups", self.args.bin, "relay", "-c",
            conf], stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
        with open(pidfile, "w") as f:
            f.write("%d\n" % p.pid)

    def finish_later(self, ctx, keys):
        """Threads that retry KEYS after the heal until each ends."""
        def go(k):
            time.sleep(1)
            self.send_key("after", k, ctx["phase"])
        ts = [threading.Thread(target=go, args=(k,)) for k in keys]
        for t in ts:
            t.start()
        return ts

    def fault_flap(self, ctx):
        """n3's links to n1 and n2 down for --flap-down seconds (past
        Galera's suspect timeout: n3 drops out), up for --flap seconds
        (it merges back), again and again for --hold seconds."""
        end = time.time() + self.args.hold
        flips = 0
        while time.time() < end and flips < 100:
            self.net.cut("n3", "n1")
            self.net.cut("n3", "n2")
            time.sleep(self.args.flap_down)
            self.net.heal()
            time.sleep(self.args.flap)
            flips += 1
        ctx["notes"]["flips"] = flips
        return []

    def fault_nquorum(self, ctx):
        self.net.cut("n1", "n2")
        self.net.cut("n1", "n3")
        self.net.cut("n2", "n3")
        self.hold(self.args.hold, ctx, watch=[1, 2, 3])
        return []

    def asleep_at_commit(self, offset):
        """How many of w1's requests logged, since OFFSET of its pool log,
        that they sleep at before_commit (their batch's answer read)."""
        try:
            with open(self.pool_log(1), "rb") as f:
                f.seek(offset)
                return f.read().count(
                    b"fault injection: sleep 5000 ms at before_commit")
        except OSError:
            return 0

    def wait_held(self, skus, offset, limit):
        """Wait (at most LIMIT s) until some node holds a lock on each of
        SKUS and as many of w1's requests logged since OFFSET that they
        sleep at the fault point, their batch's answer read: (how many
        are held, seconds waited)."""
        t0 = time.monotonic()
        held = set()
        while True:
            held = set()
            for n in (1, 2, 3):
                try:
                    free = {r[0] for r in self.db.sql(
                        n, "SELECT sku FROM stock WHERE sku IN (%s) FOR"
                        " UPDATE SKIP LOCKED" % ",".join(
                            "'%s'" % s for s in skus), sync=False,
                        timeout=10)}
                except (RuntimeError, subprocess.SubprocessError):
                    continue
                held |= set(skus) - free
            waited = time.monotonic() - t0
            if (len(held) == len(skus) and
                    self.asleep_at_commit(offset) >= len(skus)) or \
                    waited > limit:
                return len(held), waited
            time.sleep(0.1)

    def fault_webcut(self, ctx):
        """w1's requests wait 5 s before their COMMIT; meanwhile w1 is
        cut from every node: both ways (the COMMIT never arrives), then
        only the nodes' packets (the COMMIT arrives, its answer is lost).
        Each cut lasts past the request deadline, then heals; the keys
        are retried like any other."""
        ts = []
        ctx["cut_keys"] = []
        for vi, variant in enumerate(("both", "answers")):
            keys = [self.new_key("%s-%s" % (ctx["phase"], variant), i,
                                 [self.cut_skus[3 * vi + i]])
                    for i in range(3)]
            ctx["cut_keys"] += keys
            firsts = []

            def first(k):
                r = self.send_once("cut", "w1", k, self.deadline + 5,
                                   {"X-Idemorders-Fault":
                                    "before_commit=sleep5000"},
                                   ctx["phase"])
                firsts.append(r)

            offset = self.pool_log_size(1)
            fs = [threading.Thread(target=first, args=(k,)) for k in keys]
            for t in fs:
                t.start()
            # Cut only once every request holds its SKU's row, waiting
            # before its COMMIT: a request that had not reached it (a busy
            # pool) would lose its batch's answer and never commit.
            skus = [self.cut_skus[3 * vi + i][0] for i in range(3)]
            held, waited = self.wait_held(skus, offset, 4.0)
            ctx["notes"][variant + "_held"] = "%d/%d@%.1fs" % (
                held, len(skus), waited)
            for n in ("n1", "n2", "n3"):
                if variant == "both":
                    self.net.cut("w1", n)
                else:
                    self.net.drop_from("w1", n)
            time.sleep(self.deadline + 2)
            # What the cut requests left, before any retry: committed
            # (the COMMIT arrived) or not.
            try:
                made = self.db.sql(1, "SELECT COUNT(*) FROM orders WHERE"
                                   " idempotency_key IN (%s)" % ",".join(
                                       "'%s'" % k for k in keys))[0][0]
            except (RuntimeError, subprocess.SubprocessError) as e:
                made = "? (%s)" % e
            ctx["notes"][variant + "_committed"] = "%s/%d" % (made,
                                                              len(keys))
            # The cut itself: both ways the COMMIT never arrives.  With
            # the answers alone cut it usually arrives and commits, but
            # not always (2 of 3 in some runs, every request asleep at its
            # COMMIT point): only noted; the history check after the heal
            # judges what the keys got either way.
            want = 0 if variant == "both" else None
            if want is not None and str(made) != str(want):
                ctx["violations"].append(
                    "webcut %s: %s of %d cut requests committed before"
                    " the heal, %d expected" % (variant, made, len(keys),
                                                 want))
            self.net.heal()
            for t in fs:
                t.join(self.deadline + 10)
            ctx["notes"][variant] = ",".join(
                "%d%s" % (r["status"], "/" + r["code"] if r["code"] else "")
                for r in firsts)
            ts += self.finish_later(ctx, keys)
            time.sleep(3)
        return ts

    # -- the checker -----------------------------------------------------------

    def rows(self, n, like):
        q = {
            "orders": "SELECT id, principal_id, idempotency_key, currency,"
                      " amount, status, created_at FROM orders WHERE"
                      " idempotency_key LIKE '%s' ORDER BY id" % like,
            "items": "SELECT i.order_id, i.sku, i.qty, i.unit_price FROM"
                     " order_items i JOIN orders o ON o.id = i.order_id"
                     " WHERE o.idempotency_key LIKE '%s' ORDER BY"
                     " i.order_id, i.sku" % like,
            "ledger": "SELECT principal_id, operation, idem_key, status,"
                      " COALESCE(resource_id, ''), COALESCE(response_status,"
                      " ''), request_fingerprint, MD5(COALESCE("
                      "response_body, '')) FROM idempotency_records WHERE"
                      " idem_key LIKE '%s' ORDER BY principal_id,"
                      " idem_key" % like,
            "stock": "SELECT sku, available, restocked, version FROM stock"
                     " WHERE sku LIKE 'PT%s-%%' ORDER BY sku" % self.run_id,
        }
        return {t: [tuple(r) for r in self.db.sql(n, s)]
                for t, s in q.items()}

    def check_phase(self, ctx):
        v = ctx["violations"]
        phase = ctx["phase"]
        like = "pt-%s-%s%%" % (self.run_id, phase)
        hist = [r for r in self.history if r["key"].startswith(
            "pt-%s-%s" % (self.run_id, phase))]
        keys = sorted({r["key"] for r in hist})
        by_key = {}
        for r in hist:
            by_key.setdefault(r["key"], []).append(r)
        try:
            per_node = {n: self.rows(n, like) for n in (1, 2, 3)}
        except (RuntimeError, subprocess.SubprocessError) as e:
            v.append("reading the rows failed: %s" % e)
            self.report(ctx, hist, keys, by_key, 0)
            return
        # The three nodes agree row for row (the stock: all of the run).
        for t in per_node[1]:
            for n in (2, 3):
                a, b = per_node[1][t], per_node[n][t]
                if a != b:
                    diff = sorted(set(a) ^ set(b))[:3]
                    v.append("%s: node 1 and node %d differ (%d vs %d rows;"
                             " first differences %s)" % (t, n, len(a),
                                                         len(b), diff))
        rows = per_node[1]
        orders = {}
        for oid, p, k, cur, amount, st, created in rows["orders"]:
            if k in orders:
                v.append("%s: two orders: o-%s and %s" % (k, oid,
                                                         orders[k]["id"]))
            orders[k] = dict(id="o-" + oid, principal=p, currency=cur,
                             amount=int(amount), status=st,
                             created=utc_epoch(created), items={})
        by_id = {o["id"]: o for o in orders.values()}
        for oid, sku, qty, price in rows["items"]:
            o = by_id.get("o-" + oid)
            if o:
                o["items"][sku] = int(qty)
        ledger, cancel_rows = {}, {}
        for p, op, k, st, rid, rs, fp, _ in rows["ledger"]:
            if op == "cancel-order":
                cancel_rows[k] = (st, rid)
            if op != "create-order":
                continue
            ledger[k] = (st, rid)
            if st == "PROCESSING":
                v.append("%s: ledger row left PROCESSING" % k)
            want = 1 if st == "SUCCEEDED" else 0
            if (k in orders) != bool(want):
                v.append("%s: ledger %s but %s" % (
                    k, st, "an order" if k in orders else "no order"))
            elif want and rid != orders[k]["id"]:
                v.append("%s: ledger names %s, the order is %s" % (
                    k, rid, orders[k]["id"]))
        for k in orders:
            if k not in ledger:
                v.append("%s: an order without a ledger row" % k)
        # Stock conservation on every node.
        for n in (1, 2, 3):
            allsold = dict(self.db.sql(n, (
                "SELECT i.sku, SUM(i.qty) FROM order_items i JOIN orders o"
                " ON o.id = i.order_id WHERE o.idempotency_key LIKE 'pt-%s-%%'"
                " GROUP BY i.sku") % self.run_id))
            for sku, avail, rest, _ in per_node[n]["stock"]:
                s = int(allsold.get(sku, 0))
                if int(avail) < 0 or int(avail) + s - int(rest) != \
                        self.initial[sku]:
                    v.append("node %d: %s: available %s + sold %d -"
                             " restocked %s != initial %d" % (
                                 n, sku, avail, s, rest, self.initial[sku]))
        acked = 0
        disturbed = [(w[1], w[2]) for w in self.windows]

        def window(r):
            # created_at has whole seconds, truncated: an order made in the
            # second before t_send's, by a clock read a moment earlier, is
            # still this request's (seen: t_send 100.000, created 99.000).
            end = r["t_end"] if r["status"] else \
                r["t_send"] + self.deadline + 2
            return r["t_send"] - 2.0, end + 1.0

        for k in keys:
            rs = by_key[k]
            user, body, fp = self.bodies[k]
            o = orders.get(k)
            oids = {r["order"] for r in rs if r["status"] == 201}
            if len(oids) > 1:
                v.append("%s: 201s name different orders %s" % (
                    k, sorted(map(str, oids))))
            for r in rs:
                st, code = r["status"], r["code"]
                if st == 500 and code:
                    v.append("%s: 500 %s from %s" % (k, code, r["web"]))
                if st == 201:
                    acked += 1
                    if o is None:
                        v.append("%s: 201 (%s) names %s, but no order"
                                 " exists for the key after healing" % (
                                     k, "replay" if r["replayed"] else
                                     "created", r["order"]))
                        continue
                    if r["order"] != o["id"]:
                        v.append("%s: 201 names %s, the key's order is %s"
                                 % (k, r["order"], o["id"]))
                    want = {i["sku"]: i["qty"] for i in body["items"]}
                    if o["items"] != want or o["amount"] != body["amount"] \
                            or o["principal"] != user:
                        v.append("%s: the order %s holds %s %s (%s), the"
                                 " acknowledged request %s %s (%s)" % (
                                     k, o["id"], o["items"], o["amount"],
                                     o["principal"], want, body["amount"],
                                     user))
                    if not r["replayed"]:
                        lo, hi = window(r)
                        if not lo <= o["created"] <= hi:
                            v.append("%s: created 201 at %.3f-%.3f, but %s"
                                     " was made at %.3f" % (
                                         k, r["t_send"], r["t_end"],
                                         o["id"], o["created"]))
                if st == 503 and code == "DATABASE_UNAVAILABLE" and o:
                    others = [x for x in rs if x is not r and
                              (x["status"] in (0, 502, 504) or
                               (x["status"] >= 500 and not x["code"]) or
                               x["code"] == "REQUEST_STATUS_UNCONFIRMED" or
                               (x["status"] == 201 and not x["replayed"]))
                              and window(x)[0] <= o["created"] <=
                              window(x)[1]]
                    if not others:
                        v.append("%s: answered 503 DATABASE_UNAVAILABLE"
                                 " (nothing stored) at %.3f-%.3f, but %s was"
                                 " made at %.3f and no other request of the"
                                 " key could have made it" % (
                                     k, r["t_send"], r["t_end"], o["id"],
                                     o["created"]))
                if code == "REQUEST_STATUS_UNCONFIRMED":
                    lo, hi = r["t_send"], r["t_end"]
                    in_fault = any(a <= hi and lo <= b + 1
                                   for a, b in disturbed)
                    overlap = any(x is not r and window(x)[0] <= hi and
                                  lo <= window(x)[1] for x in rs)
                    if not in_fault and not overlap:
                        v.append("%s: %d REQUEST_STATUS_UNCONFIRMED at"
                                 " %.3f-%.3f outside every fault and with"
                                 " no other request of the key in flight"
                                 % (k, st, lo, hi))
                # (A 5xx without a problem code is the web server's own,
                # its backend gone: a pool killed mid-request.)
                if st == 503 and code and not r["retry_after"]:
                    v.append("%s: 503 %s without Retry-After from %s" % (
                        k, code, r["web"]))
        ctx["cancels"] = self.check_cancels(ctx, orders, cancel_rows)
        for k in self.gave_up:
            if k in by_key or k in ctx["cancels"]:
                v.append("%s: no final answer within %ds of retries" % (
                    k, self.args.give_up))
        self.check_promise(ctx, hist)
        self.check_events(ctx, like)
        self.report(ctx, hist, keys, by_key, acked, orders)

    def check_cancels(self, ctx, orders, cancel_rows):
        """The fault's cancels against the rows after healing; returns
        their keys."""
        v = ctx["violations"]
        prefix = "pt-%s-%s" % (self.run_id, ctx["phase"])
        mine = {c: ko for c, ko in self.cancels.items()
                if c.startswith(prefix)}
        by_ckey = {}
        for r in self.cancel_hist:
            if r["key"] in mine:
                by_ckey.setdefault(r["key"], []).append(r)
        acked = 0
        for ckey, (key, oid) in sorted(mine.items()):
            rs = by_ckey.get(ckey, [])
            o = orders.get(key)
            st, rid = cancel_rows.get(ckey, ("none", ""))
            if st == "PROCESSING":
                v.append("%s: cancel ledger row left PROCESSING" % ckey)
            cancelled = o is not None and o["status"] == "CANCELLED"
            if cancelled != (st == "SUCCEEDED"):
                v.append("%s: cancel ledger %s but %s is %s" % (
                    ckey, st, oid, o["status"] if o else "missing"))
            if any(r["status"] == 200 for r in rs):
                acked += 1
            for r in rs:
                if r["status"] == 500 and r["code"]:
                    v.append("%s: 500 %s from %s" % (ckey, r["code"],
                                                     r["web"]))
                if r["status"] == 503 and r["code"] and not \
                        r["retry_after"]:
                    v.append("%s: 503 %s without Retry-After from %s" % (
                        ckey, r["code"], r["web"]))
                if r["status"] == 200:
                    if r["order"] != oid or r["state"] != "CANCELLED":
                        v.append("%s: 200 names %s %s, the cancel was of"
                                 " %s" % (ckey, r["order"], r["state"],
                                          oid))
                    if not cancelled:
                        v.append("%s: 200, but %s is %s after healing" % (
                            ckey, oid, o["status"] if o else "missing"))
            last = rs[-1] if rs else None
            if last and self.final(last) and last["status"] != 200:
                v.append("%s: the cancel of %s ended %d %s" % (
                    ckey, oid, last["status"], last["code"]))
        cancel_of = {ko[0]: c for c, ko in mine.items()}
        for key, o in orders.items():
            if o["status"] == "CANCELLED" and key not in cancel_of:
                v.append("%s: %s is CANCELLED, no cancel was sent" % (
                    key, o["id"]))
        ctx["notes"]["cancels"] = "%d/%d" % (acked, len(mine))
        return mine

    def check_events(self, ctx, like):
        """The fault's events, delivered by the relays once healed."""
        try:
            notes, v = events_check.check(
                lambda q: self.db.sql(1, q), like, self.receiver.log,
                self.args.events_wait, ctx.get("relays_before"))
        except (RuntimeError, subprocess.SubprocessError) as e:
            ctx["violations"].append("events: checks failed: %s" % e)
            return
        ctx["events"] = notes
        ctx["violations"] += ["events: " + m for m in v]

    def check_promise(self, ctx, hist):
        """What each fault promises beyond the history's consistency."""
        v = ctx["violations"]
        f = ctx["fault"]
        t0 = ctx.get("t_nonprimary")
        grace = 3.0
        if f in ("minority", "split", "mixed", "nquorum") and t0 is None:
            v.append("%s: the cut-off nodes never showed non-Primary" % f)
            return
        if f in ("split", "mixed"):
            for r in ctx["minority_answers"]:
                ok = (r["status"] == 503 and r["retry_after"] and
                      r["t_end"] - r["t_send"] <= self.deadline + 1)
                if not ok:
                    v.append("%s: minority web host w3 answered %d %s in"
                             " %.2fs (Retry-After %s); wanted 503 with"
                             " Retry-After within %ds" % (
                                 f, r["status"], r["code"],
                                 r["t_end"] - r["t_send"], r["retry_after"],
                                 self.deadline))
            self.check_unavailable(ctx, f, [
                r for r in hist if r["web"] == "w3" and
                t0 + grace <= r["t_send"] and r["t_end"] <= ctx["t_heal"]])
            ctx["notes"]["w3_answer_s"] = "%.2f" % max(
                r["t_end"] - r["t_send"] for r in ctx["minority_answers"])
            # The latency of w3's answers while split (measured only).
            lat = sorted(r["t_end"] - r["t_send"] for r in hist
                         if r["web"] == "w3" and r["status"] and
                         t0 + grace <= r["t_send"] and
                         r["t_end"] <= ctx["t_heal"])
            if lat:
                ctx["notes"]["w3_s"] = "%.2f/%.2f/%.2f" % (
                    lat[len(lat) // 2], lat[len(lat) * 9 // 10], lat[-1])
            self.check_minority_connects(ctx, f, t0 + grace,
                                         ctx["t_heal"])
            h = [p for p in ctx["probes"] if p[0] == "health" and
                 p[1] == "w3" and t0 + grace <= p[2] and
                 p[2] + p[3] <= ctx["t_heal"]]
            bad = [p for p in h if p[4] != 503]
            ctx["notes"]["w3_health"] = "%d/%d 503" % (len(h) - len(bad),
                                                       len(h))
            if h:
                ctx["notes"]["w3_health_s"] = "%.2f" % max(p[3] for p in h)
            if not h or bad:
                v.append("%s: w3 _health while cut off with n3: %s" % (
                    f, [(round(p[2] - t0, 1), p[4]) for p in bad[:5]] or
                    "never probed"))
            maj = [r for r in hist if r["web"] in ("w1", "w2") and
                   r["status"] == 201 and not r["replayed"] and
                   t0 + grace <= r["t_end"] <= ctx["t_heal"]]
            ctx["notes"]["majority_created"] = len(maj)
            if not maj:
                v.append("%s: the majority side created nothing while"
                         " split" % f)
        if f == "minority":
            made = [r for r in hist if r["status"] == 201 and
                    not r["replayed"] and
                    t0 + grace <= r["t_end"] <= ctx["t_heal"]]
            ctx["notes"]["created_while_cut"] = "%d (%s)" % (len(made), ",".join(
                "%s:%d" % (w, sum(1 for r in made if r["web"] == w))
                for w in sorted(self.web)))
            if not made:
                v.append("minority: nothing created while n3 was cut off")
        if f == "nquorum":
            made = [r for r in hist if r["status"] == 201 and
                    not r["replayed"] and
                    t0 + grace <= r["t_send"] and
                    r["t_end"] <= ctx["t_heal"]]
            if made:
                v.append("nquorum: %d orders created while no node had"
                         " quorum (first %s)" % (len(made), made[0]["key"]))
            h = [p for p in ctx["probes"] if p[0] == "health" and
                 t0 + grace <= p[2] and p[2] + p[3] <= ctx["t_heal"]]
            bad = [p for p in h if p[4] != 503]
            ctx["notes"]["health_503"] = "%d/%d" % (len(h) - len(bad),
                                                    len(h))
            if bad:
                v.append("nquorum: _health answered %s without quorum" % (
                    sorted({(p[1], p[4]) for p in bad})))
            ans = [r for r in hist if t0 + grace <= r["t_send"] and
                   r["t_end"] <= ctx["t_heal"]]
            slow = [r for r in ans if r["status"] == 0 or
                    r["t_end"] - r["t_send"] > self.deadline + 1]
            ctx["notes"]["answers_without_quorum"] = len(ans)
            self.check_unavailable(ctx, "nquorum", ans)
            if slow:
                v.append("nquorum: %d requests unanswered within the"
                         " deadline without quorum (first %s)" % (
                             len(slow), slow[0]["key"]))

    def check_unavailable(self, ctx, f, answers):
        """Answered where no node in reach has quorum: the truth is 503
        DATABASE_UNAVAILABLE (a cluster node is not ready, nothing
        stored), or REQUEST_STATUS_UNCONFIRMED for a COMMIT caught by
        the cut; "the database stayed busy" (RETRY_LIMIT_REACHED...) is
        not what happened.  One exception is noted, not counted: a
        worker whose idle connection to a node the cut silenced waits
        out the whole deadline on it (the link drops packets, no reset)
        and answers RETRY_DEADLINE_EXCEEDED, also 503 with nothing
        stored."""
        def waited_out(r):
            return r["status"] == 503 and \
                r["code"] == "RETRY_DEADLINE_EXCEEDED" and \
                r["t_end"] - r["t_send"] >= self.deadline - 0.5
        late = [r for r in answers if waited_out(r)]
        if late:
            ctx["notes"]["deadline_on_a_cut_link"] = len(late)
        bad = [r for r in answers if not waited_out(r) and (
               r["status"] not in (0, 503) or
               (r["status"] == 503 and r["code"] not in (
                   "DATABASE_UNAVAILABLE", "REQUEST_STATUS_UNCONFIRMED")))]
        if bad:
            ctx["violations"].append(
                "%s: %d of %d answers without quorum were not 503"
                " DATABASE_UNAVAILABLE: %s (first %s)" % (
                    f, len(bad), len(answers), sorted({
                        "%d/%s" % (r["status"], r["code"]) for r in bad}),
                    bad[0]["key"]))

    def report(self, ctx, hist, keys, by_key, acked, orders=None):
        v = ctx["violations"]
        st = {}
        for r in hist:
            k = str(r["status"]) + ("/" + r["code"] if r["code"] else "")
            if r["status"] == 201:
                k += "/replay" if r["replayed"] else "/created"
            st[k] = st.get(k, 0) + 1
        ctx["line"] = (
            "cluster-partition: fault=%s keys=%d requests=%d orders=%d"
            " acked_checked=%d answers={%s} heal_s=%s joins=%s%s%s"
            " violations=%d" % (
                ctx["phase"], len(keys), len(hist),
                len(orders or {}), acked,
                " ".join("%s:%d" % kv for kv in sorted(st.items())),
                "%.1f" % ctx["heal_s"] if ctx.get("heal_s") is not None
                else "-",
                ",".join("n%d:%s" % kv for kv in
                         sorted(ctx.get("joins", {}).items())),
                "".join(" %s=%s" % kv for kv in
                        ctx.get("events", {}).items()),
                "".join(" %s=%s" % kv for kv in sorted(
                    ctx["notes"].items())),
                len(v)))
        print(ctx["line"], flush=True)
        for msg in v[:10]:
            log("VIOLATION [%s]: %s" % (ctx["phase"], msg))
            k = msg.split(":", 1)[0]
            for r in by_key.get(k, [])[:12]:
                log("    %s %s->%s %.3f+%.2fs %s %s %s%s" % (
                    r["key"], r["client"], r["web"], r["t_send"],
                    r["t_end"] - r["t_send"], r["status"], r["code"] or "-",
                    r["order"] or "-", " replay" if r["replayed"] else ""))
            if orders and k in orders:
                log("    order %s made at %.3f" % (orders[k]["id"],
                                                  orders[k]["created"]))


def main():
    ap = argparse.ArgumentParser(
        description="Network partitions of the namespaced Galera cluster")
    ap.add_argument("--mode", choices=sorted(MODES), default="default")
    ap.add_argument("--ns", required=True, help="namespace prefix")
    ap.add_argument("--net", required=True, help="the /24, e.g. 10.77.0")
    ap.add_argument("--cnf", action="append", default=[],
                    help="node N's my.cnf (its socket), once per node")
    ap.add_argument("--error-log", action="append", default=[])
    ap.add_argument("--history", help="write every request here (JSONL)")
    ap.add_argument("--run-dir", required=True,
                    help="the cluster's runtime dir (webN/ of each pool)")
    ap.add_argument("--bin", required=True, help="the pools' idemorders")
    ap.add_argument("--log-dir", required=True,
                    help="the pools' log dir (idemorders-N.log)")
    ap.add_argument("--faults", default=",".join(FAULTS),
                    help="comma-separated, of " + ",".join(FAULTS))
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--keys", type=int, help="new keys per fault at most")
    ap.add_argument("--clients", type=int)
    ap.add_argument("--hold", type=float, help="seconds a fault lasts")
    ap.add_argument("--flap", type=float,
                    help="seconds a flapping link stays up")
    ap.add_argument("--flap-down", type=float, default=6.0,
                    help="seconds a flapping link stays down (6)")
    ap.add_argument("--warm", type=float, default=3.0)
    ap.add_argument("--after", type=float, default=3.0)
    ap.add_argument("--deadline", type=float, default=10.0,
                    help="the pools' request_deadline in seconds (10)")
    ap.add_argument("--client-timeout", type=float, default=8.0,
                    help="seconds a client waits for an answer (8)")
    ap.add_argument("--give-up", type=float, default=120.0)
    ap.add_argument("--cancel-pct", type=float, default=30.0,
                    help="per cent of acknowledged orders then cancelled")
    ap.add_argument("--heal-limit", type=float, default=120.0)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--receiver", required=True, metavar="HOST:PORT",
                    help="where the relays deliver (the receiver runs"
                    " here, in the client namespace)")
    ap.add_argument("--webhook-secret", required=True,
                    help="the relays' secret file")
    ap.add_argument("--node-modules", required=True,
                    help="where npm installed standardwebhooks")
    ap.add_argument("--events-wait", type=float, default=60.0,
                    help="seconds to wait for a fault's events delivered")
    args = ap.parse_args()
    for k, val in MODES[args.mode].items():
        if getattr(args, k) is None:
            setattr(args, k, val)
    if len(args.cnf) != 3:
        sys.exit("partition.py: give --cnf three times")
    faults = [f for f in args.faults.split(",") if f]
    for f in faults:
        if f not in FAULTS:
            sys.exit("partition.py: unknown fault '%s' (of %s)" % (
                f, ",".join(FAULTS)))
    try:
        run = Run(args)
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        log("set-up error: %s" % e)
        sys.exit(2)
    t0 = time.time()
    total = 0
    try:
        for rnd in range(1, args.rounds + 1):
            for f in faults:
                log("fault %s (round %d): hold %.0fs, at most %d keys, %d"
                    " clients" % (f, rnd, args.hold, args.keys,
                                  args.clients))
                ctx = run.run_fault(f, rnd)
                total += len(ctx["violations"])
    finally:
        run.receiver.stop()
    print("cluster-partition: total faults=%d seconds=%.0f requests=%d"
          " violations=%d" % (len(faults) * args.rounds, time.time() - t0,
                              len(run.history), total), flush=True)
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
