#!/usr/bin/env python3
"""tests/cluster/chaos.py -- exactly-once on a Galera cluster, through faults.

Chaos run (default): clients send create-order requests for fresh keys,
each key to two or three random web nodes at once, and retry a send
(same key, same body, any node, exponential backoff with full jitter)
after no answer, any 5xx and 409 REQUEST_IN_PROGRESS /
REQUEST_STATUS_UNCONFIRMED.  Bodies mix a few SKUs of the run and one
hot SKU.  A share of the created orders (--cancel-pct) is then
cancelled, each with a key of its own sent and retried the same way.  During the run one database node is SIGKILLed and brought back
by IST (`tools/dev cluster kill N` / `start N`), and another node's
responder pool and relay are SIGKILLed and started again.  Afterwards, on every
node, with wsrep_sync_wait=1:
  - identical row counts (orders, items, ledger rows, stock of the run);
  - at most one order per key, exactly one for a SUCCEEDED ledger row,
    none otherwise; no PROCESSING row;
  - every 201 for a key names the same orderId, which is the ledger's
    resource_id and answers GET (a 503 retried as a client would, for up
    to 30 s); no key gets both 201 and a final error;
  - stock + sold - restocked = initial, stock >= 0, and each SKU's
    restocked count is what its cancelled orders hold;
  - an order is CANCELLED exactly when its cancel key's cancel-order row
    SUCCEEDED; every 200 to a cancel names its order, now cancelled by
    that key; every cancel ends 200; no cancel row left PROCESSING;
  - no 500, no 410 (the keys are fresh), no key left without a final
    answer;
  - with --receiver, the events of the run's orders as the web nodes'
    relays delivered them to a receiver started here
    (tests/cluster/events_check.py): every event delivered, none lost,
    none for an order that does not exist, one effect per event after
    dedup by webhook-id, per order in order.

Quorum-loss test (--quorum): two database nodes are SIGKILLed; creates
sent to the third node's web server must be answered 503 (a 201 only
for a committed order) before the client's timeout, and its _health must
answer 503 once the node is non-Primary.  Then `tools/dev cluster up`
repairs the cluster; every key sent during the outage is retried until
it ends, and must end with exactly one order, every 201 naming it.

Prints one summary line on stdout and exits 1 on any violation (details
on stderr), 2 on a set-up error.  Python 3 standard library only.
`tools/dev cluster chaos|quorum [ARGS]` fills in --web, --cnf and --dev.
"""

import argparse
import base64
import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import events_check

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
RETRY_409 = ("REQUEST_IN_PROGRESS", "REQUEST_STATUS_UNCONFIRMED")


def log(msg):
    print("chaos.py: " + msg, file=sys.stderr, flush=True)


def join_kind(err):
    """How `tools/dev cluster start` says the node rejoined."""
    for kind, word in (("IST", "(IST)"), ("SST", "(SST)"),
                       ("no-transfer", "(no state transfer)")):
        if word in err:
            return kind
    return "?"


class Cluster:
    """The web nodes, the database nodes and the tools/dev commands."""

    def __init__(self, args):
        self.web = args.web
        self.cnf = args.cnf
        self.dev = args.dev
        if len(self.web) != len(self.cnf) or not self.web:
            sys.exit("chaos.py: give one --cnf per --web")

    def nodes(self):
        return list(range(1, len(self.web) + 1))

    def sql(self, n, stmt, sync=True, timeout=60):
        """Rows (lists of strings) of STMT on node N's database."""
        pre = "SET SESSION wsrep_sync_wait=1; " if sync else ""
        p = subprocess.run(
            ["mariadb", "--defaults-file=" + self.cnf[n - 1],
             "--connect-timeout=5", "-N", "-B", "idemorders",
             "-e", pre + stmt],
            capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError("node %d: %s: %s" % (n, stmt[:60],
                                                    p.stderr.strip()))
        return [line.split("\t") for line in p.stdout.splitlines()]

    def status(self, n, var):
        try:
            rows = self.sql(n, "SHOW GLOBAL STATUS LIKE '%s'" % var,
                            sync=False, timeout=10)
            return rows[0][1] if rows else ""
        except Exception:  # noqa: BLE001 -- a dead node has no status
            return ""

    def dev_cmd(self, *words):
        """Run tools/dev cluster WORDS; (seconds, rc, stderr)."""
        t0 = time.monotonic()
        p = subprocess.run([self.dev, "cluster"] + list(words),
                           capture_output=True, text=True, timeout=900)
        return time.monotonic() - t0, p.returncode, p.stderr

    def kill(self, what, n):
        """SIGKILL database node N (what "db") or its responder pool
        ("pool") with tools/dev; None when the fault took place (tools/dev
        says it killed it, and a database node no longer answers), else
        why not: a fault that did not happen proves nothing."""
        cmd, name = ("kill", "node") if what == "db" else ("kill-pool",
                                                            "pool")
        secs, rc, err = self.dev_cmd(cmd, str(n))
        if rc != 0 or ("kill -KILL %s %d " % (name, n)) not in err or \
                (what == "pool" and "kill -KILL relay %d " % n not in err):
            return "cluster %s %d (status %d): %s" % (cmd, n, rc,
                                                      err[-300:].strip())
        if what == "db" and self.status(n, "wsrep_local_state_comment"):
            return "database node %d still answers after its SIGKILL" % n
        return None


class Http:
    """One request at a time to a web node; never raises."""

    def __init__(self, timeout):
        self.timeout = timeout

    def request(self, url, user=None, key=None, body=None):
        """(status, code, json-or-None, headers, seconds); status 0: none."""
        headers = {}
        if user:
            tok = base64.b64encode(
                ("%s:%s" % (user, USERS[user])).encode()).decode()
            headers["Authorization"] = "Basic " + tok
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if key:
            headers["Idempotency-Key"] = key
        req = urllib.request.Request(url, data=data, headers=headers,
                                     method="POST" if data else "GET")
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                status, raw, hdrs = r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            status, hdrs = e.code, dict(e.headers)
            try:
                raw = e.read()
            except Exception:  # noqa: BLE001
                raw = b""
        except Exception:  # noqa: BLE001 -- refused, reset, timeout
            return 0, "", None, {}, time.monotonic() - t0
        secs = time.monotonic() - t0
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        code = doc.get("code", "") if isinstance(doc, dict) else ""
        return status, code, doc, hdrs, secs


class Run:
    """Keys, bodies, and every answer each key got."""

    def __init__(self, args, cluster):
        self.args = args
        self.cl = cluster
        self.rng = random.Random(args.seed)
        self.run_id = "%d%03d" % (int(time.time()) % 100000,
                                  self.rng.randrange(1000))
        self.http = Http(args.timeout)
        self.lock = threading.Lock()
        self.answers = {}   # key -> [(node, status, code, orderId, replayed)]
        self.finals = {}    # key -> final (status, code) of each send
        self.bodies = {}    # key -> (user, body)
        self.paths = {}     # key -> path under the mount ("" for a create)
        self.cancels = {}   # cancel key -> (the create's key, orderId)
        self.retries = 0
        self.get_retried = 0
        self.gave_up = []
        self.violations = []
        self.events = []

    def violation(self, msg):
        with self.lock:
            self.violations.append(msg)
        log("VIOLATION: " + msg)

    # -- stock of the run ------------------------------------------------

    def make_skus(self, n_plain, plain_stock, hot_stock):
        pfx = "CC%s" % self.run_id
        self.skus = [("%s-S%d" % (pfx, i), 100 * (i + 1))
                     for i in range(n_plain)]
        self.hot = ("%s-HOT" % pfx, 500)
        self.initial = {s: plain_stock for s, _ in self.skus}
        self.initial[self.hot[0]] = hot_stock
        values = ",".join("('%s','KRW',%d,%d)" % (s, p, self.initial[s])
                          for s, p in self.skus + [self.hot])
        self.cl.sql(1, "INSERT INTO stock (sku, currency, unit_price,"
                    " available) VALUES " + values)

    def body(self, hot_ok=True):
        r = self.rng
        items = []
        if hot_ok and r.random() < self.args.hot_share:
            items.append((self.hot, r.randint(1, 2)))
        n = r.randint(0 if items else 1, min(2, len(self.skus)))
        for sku in r.sample(self.skus, n):
            items.append((sku, r.randint(1, 3)))
        items.sort(key=lambda it: it[0][0])
        return {"currency": "KRW",
                "items": [{"sku": s, "qty": q} for (s, _), q in items],
                "amount": sum(p * q for (_, p), q in items)}

    # -- one send of a key, with retries ---------------------------------

    def send(self, key, first_node, deadline):
        user, body = self.bodies[key]
        node = first_node
        attempt = 0
        while True:
            url = self.cl.web[node - 1] + self.paths.get(key, "")
            status, code, doc, hdrs, _ = self.http.request(
                url, user, key, body)
            oid = doc.get("orderId") if isinstance(doc, dict) else None
            replayed = hdrs.get("Idempotent-Replayed") == "true"
            with self.lock:
                self.answers.setdefault(key, []).append(
                    (node, status, code, oid, replayed))
            retry = (status == 0 or status >= 500 or
                     (status == 409 and code in RETRY_409))
            if not retry:
                with self.lock:
                    self.finals.setdefault(key, []).append((status, code))
                return status
            if time.monotonic() > deadline:
                with self.lock:
                    self.gave_up.append(key)
                return None
            attempt += 1
            with self.lock:
                self.retries += 1
            cap = min(self.args.backoff_max,
                      self.args.backoff * (2 ** min(attempt, 10)))
            time.sleep(self.rng.uniform(0, cap))
            node = self.rng.choice(self.cl.nodes())

    def send_key(self, key, fanout):
        """Send KEY to FANOUT distinct random nodes at once."""
        nodes = self.rng.sample(self.cl.nodes(),
                                min(fanout, len(self.cl.nodes())))
        deadline = time.monotonic() + self.args.give_up
        ts = [threading.Thread(target=self.send, args=(key, n, deadline))
              for n in nodes]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    def new_key(self, i):
        key = "cc-%s-%d" % (self.run_id, i)
        user = "alice" if i % 3 else "bob"
        # Keys beyond --keys (the run waits for its faults) leave the
        # hot SKU alone: its stock is sized for --keys.
        with self.lock:
            self.bodies[key] = (user, self.body(i < self.args.keys))
        return key

    def cancel_of(self, key):
        """A cancel key for the order KEY created, or None if none was."""
        oids = {a[3] for a in self.answers.get(key, []) if a[1] == 201}
        if len(oids) != 1:
            return None
        oid = oids.pop()
        ckey = "cx" + key[2:]
        with self.lock:
            self.bodies[ckey] = (self.bodies[key][0],
                                 {"reason": "cluster chaos"})
            self.paths[ckey] = "/%s/cancel" % oid
            self.cancels[ckey] = (key, oid)
        return ckey

    # -- checks ------------------------------------------------------------

    def check_client(self):
        """Per key: one orderId over all 201s, never 201 and final error."""
        created = replays = finals = 0
        n500 = n410 = web500 = 0
        for key, ans in self.answers.items():
            if key in self.cancels:
                continue
            oids = {a[3] for a in ans if a[1] == 201}
            for a in ans:
                if a[1] == 201:
                    if a[4]:
                        replays += 1
                    else:
                        created += 1
                if a[1] == 500 and not a[2]:
                    # Not the responder's problem document: the web
                    # server's own 500 when a responder died mid-request.
                    web500 += 1
                elif a[1] == 500:
                    n500 += 1
                    self.violation("%s: 500 %s from node %d" % (key, a[2],
                                                                a[0]))
                if a[1] == 410:
                    n410 += 1
                    self.violation("%s: 410 %s for a fresh key (node %d)"
                                   % (key, a[2], a[0]))
                if a[1] == 409 and a[2] == "IDEMPOTENCY_KEY_REUSED":
                    self.violation("%s: 409 IDEMPOTENCY_KEY_REUSED for the"
                                   " same body (node %d)" % (key, a[0]))
            if len(oids) > 1:
                self.violation("%s: 201s name different orders %s" % (
                    key, sorted(str(o) for o in oids)))
            fin = {(s, c) for s, c in self.finals.get(key, [])
                   if s != 201}
            if oids and fin:
                self.violation("%s: 201 and also %s" % (key, sorted(fin)))
            if fin:
                finals += 1
        for key in self.gave_up:
            self.violation("%s: no final answer within %ds of retries"
                           % (key, self.args.give_up))
        self.web500 = web500
        return created, replays, finals, n500, n410

    def check_cancels(self):
        """Per cancel key: every final answer 200 naming its order, no 500
        of the responder's, no 410; returns (cancelled, cancel replays)."""
        cancelled = replays = 0
        for ckey, (key, oid) in self.cancels.items():
            for node, st, code, aoid, replayed in self.answers.get(ckey, []):
                if st == 200:
                    if replayed:
                        replays += 1
                    else:
                        cancelled += 1
                    if aoid != oid:
                        self.violation("%s: 200 names %s, not %s"
                                       % (ckey, aoid, oid))
                elif (st == 500 and code) or st == 410:
                    self.violation("%s: %d %s from node %d"
                                   % (ckey, st, code, node))
            for st, code in self.finals.get(ckey, []):
                if st != 200:
                    self.violation("%s: the cancel of %s ended %d %s"
                                   % (ckey, oid, st, code))
        return cancelled, replays

    def check_db(self, like):
        """The invariants on every node; the order count of node 1."""
        q_counts = (
            "SELECT (SELECT COUNT(*) FROM orders WHERE idempotency_key"
            " LIKE '{0}'), (SELECT COUNT(*) FROM order_items i JOIN orders o"
            " ON o.id = i.order_id WHERE o.idempotency_key LIKE '{0}'),"
            " (SELECT COUNT(*) FROM idempotency_records WHERE idem_key"
            " LIKE '{0}'), (SELECT COALESCE(SUM(available), 0) FROM stock"
            " WHERE sku LIKE 'CC{1}-%'), (SELECT COUNT(*) FROM orders WHERE"
            " idempotency_key LIKE '{0}' AND status = 'CANCELLED'),"
            " (SELECT COALESCE(SUM(restocked), 0) FROM stock WHERE sku LIKE"
            " 'CC{1}-%')").format(like, self.run_id)
        counts = {}
        for n in self.cl.nodes():
            counts[n] = tuple(self.cl.sql(n, q_counts)[0])
        if len(set(counts.values())) != 1:
            self.violation("row counts differ between nodes (orders, items,"
                           " ledger, stock, cancelled, restocked): %s"
                           % counts)
        rows = self.cl.sql(1, (
            "SELECT principal_id, idempotency_key, COUNT(*) FROM orders"
            " WHERE idempotency_key LIKE '%s' GROUP BY principal_id,"
            " idempotency_key HAVING COUNT(*) > 1") % like)
        for p, k, c in rows:
            self.violation("%s/%s: %s orders" % (p, k, c))
        ledger = {}
        for p, k, st, rid in self.cl.sql(1, (
                "SELECT principal_id, idem_key, status, COALESCE(resource_id,"
                " '') FROM idempotency_records WHERE idem_key LIKE '%s'")
                % like):
            ledger[k] = (p, st, rid)
            if st == "PROCESSING":
                self.violation("%s: ledger row left PROCESSING" % k)
        orders = {}
        for k, c in self.cl.sql(1, (
                "SELECT idempotency_key, COUNT(*) FROM orders WHERE"
                " idempotency_key LIKE '%s' GROUP BY idempotency_key")
                % like):
            orders[k] = int(c)
        for k in set(ledger) | set(orders):
            st = ledger.get(k, ("", "", ""))[1]
            want = 1 if st == "SUCCEEDED" else 0
            if orders.get(k, 0) != want:
                self.violation("%s: ledger %s but %d orders" % (
                    k, st or "(none)", orders.get(k, 0)))
        for key, ans in self.answers.items():
            oids = {a[3] for a in ans if a[1] == 201}
            if not oids:
                continue
            led = ledger.get(key)
            if not led or led[1] != "SUCCEEDED":
                self.violation("%s: answered 201 %s but the ledger has %s"
                               % (key, sorted(oids), led))
            elif led[2] not in oids or len(oids) != 1:
                self.violation("%s: answered 201 %s but the ledger names %s"
                               % (key, sorted(oids), led[2]))
            for oid in oids:
                self.check_get(key, oid)
            oos = [a for a in ans if a[1] == 409 and a[2] == "OUT_OF_STOCK"]
            if oos and led and led[1] != "FAILED_FINAL":
                self.violation("%s: 409 OUT_OF_STOCK but the ledger has %s"
                               % (key, led[1]))
        self.check_db_cancels(like)
        if hasattr(self, "initial"):
            sold = dict(self.cl.sql(1, (
                "SELECT i.sku, SUM(i.qty) FROM order_items i JOIN orders o"
                " ON o.id = i.order_id WHERE o.idempotency_key LIKE '%s'"
                " GROUP BY i.sku") % like))
            back = dict(self.cl.sql(1, (
                "SELECT i.sku, SUM(i.qty) FROM order_items i JOIN orders o"
                " ON o.id = i.order_id WHERE o.idempotency_key LIKE '%s'"
                " AND o.status = 'CANCELLED' GROUP BY i.sku") % like))
            for sku, avail, rest in self.cl.sql(1, (
                    "SELECT sku, available, restocked FROM stock WHERE sku"
                    " LIKE 'CC%s-%%'") % self.run_id):
                s, r = int(sold.get(sku, 0)), int(rest)
                if int(avail) < 0 or \
                        int(avail) + s - r != self.initial[sku]:
                    self.violation("%s: available %s + sold %d - restocked"
                                   " %d != initial %d" % (
                                       sku, avail, s, r, self.initial[sku]))
                if r != int(back.get(sku, 0)):
                    self.violation("%s: restocked %d, but its cancelled"
                                   " orders hold %d" % (
                                       sku, r, int(back.get(sku, 0))))
        return int(counts[1][0])

    def check_db_cancels(self, like):
        """An order is CANCELLED exactly when the cancel key it keeps has
        a SUCCEEDED cancel-order row; a 200 names a cancelled order."""
        state = {}
        for oid, st, ckey, lst in self.cl.sql(1, (
                "SELECT CONCAT('o-', o.id), o.status,"
                " COALESCE(o.cancel_key, ''), COALESCE(r.status, '') FROM"
                " orders o LEFT JOIN idempotency_records r ON"
                " r.principal_id = o.principal_id AND r.operation ="
                " 'cancel-order' AND r.idem_key = o.cancel_key WHERE"
                " o.idempotency_key LIKE '%s'") % like):
            state[oid] = (st, ckey)
            if (st == "CANCELLED") != (lst == "SUCCEEDED"):
                self.violation("%s: %s, its cancel key %r's row %s"
                               % (oid, st, ckey, lst or "(none)"))
        for (k,) in self.cl.sql(1, (
                "SELECT idem_key FROM idempotency_records WHERE operation ="
                " 'cancel-order' AND status = 'PROCESSING' AND idem_key LIKE"
                " 'cx%s'") % like[2:]):
            self.violation("%s: cancel ledger row left PROCESSING" % k)
        for ckey, (key, oid) in self.cancels.items():
            if any(a[1] == 200 for a in self.answers.get(ckey, [])) and \
                    state.get(oid) != ("CANCELLED", ckey):
                self.violation("%s: answered 200 but %s is %s"
                               % (ckey, oid, state.get(oid)))


    def check_get(self, key, oid):
        """GET the order on a random node as a client would: a 503 or no
        answer is "try again" (after Retry-After, for up to 30 s in
        all); anything but 200 naming the order after that is a
        violation.  Counts the GETs that needed a retry."""
        user = self.bodies[key][0]
        n = self.rng.choice(self.cl.nodes())
        url = "%s/%s" % (self.cl.web[n - 1], oid)
        t_end = time.monotonic() + 30
        while True:
            st, code, doc, hdrs, _ = self.http.request(url, user)
            if st not in (0, 503) or time.monotonic() >= t_end:
                break
            self.get_retried += 1
            try:
                wait = float(hdrs.get("Retry-After", "1"))
            except ValueError:
                wait = 1.0
            time.sleep(min(max(wait, 0.2), 5))
        if st != 200 or not isinstance(doc, dict) or \
                doc.get("orderId") != oid:
            self.violation("%s: GET %s on node %d answered %d %s" % (
                key, oid, n, st, code))

    def ensure_synced(self):
        """Every node Synced (cluster up if one is not); False on failure."""
        bad = [n for n in self.cl.nodes()
               if self.cl.status(n, "wsrep_local_state_comment") != "Synced"]
        if not bad:
            return True
        log("nodes %s not Synced after the run: tools/dev cluster up" % bad)
        secs, rc, err = self.cl.dev_cmd("up")
        if rc != 0:
            self.violation("cluster up after the run failed: %s"
                           % err.strip()[-300:])
            return False
        return True


def receiver_start(args, run_id):
    """The receiver of the relays' webhooks (None without --receiver)."""
    if not args.receiver:
        return None
    host, port = args.receiver.rsplit(":", 1)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return events_check.Receiver(
        repo, host, int(port), args.webhook_secret, os.path.join(
            args.log_dir or "/tmp", "receiver-%s.jsonl" % run_id),
        args.node_modules)


def chaos(args, cl):
    run = Run(args, cl)
    receiver = receiver_start(args, run.run_id)
    try:
        if receiver:
            receiver.before = events_check.relay_counts(
                lambda q: cl.sql(1, q))
        return chaos_run(args, cl, run, receiver)
    finally:
        if receiver:
            receiver.stop()


def chaos_run(args, cl, run, receiver):
    # Plain SKUs never run out; the hot one has --stock-pct of what the
    # first --keys keys ask for on average (1.5 a key that orders it).
    run.make_skus(5, 10 ** 6, max(1, int(args.keys * args.hot_share * 1.5 *
                                         args.stock_pct / 100)))
    t_start = time.monotonic()
    stop = threading.Event()
    counter = [0]
    fault_nodes = run.rng.sample(cl.nodes(), 2)

    faults_done = threading.Event()
    if args.no_kill:
        faults_done.set()

    def client(cid):
        while not stop.is_set():
            with run.lock:
                i = counter[0]
                # Keep sending new keys until the faults are over.
                if i >= args.keys and faults_done.is_set():
                    return
                counter[0] += 1
            key = run.new_key(i)
            run.send_key(key, run.rng.choice(args.fanout))
            if run.rng.random() * 100 < args.cancel_pct:
                ckey = run.cancel_of(key)
                if ckey:
                    run.send_key(ckey, run.rng.choice(args.fanout))
            if args.think:
                time.sleep(run.rng.uniform(0, args.think / 1000.0))

    def faults():
        try:
            kill_and_rejoin()
        except Exception as e:  # noqa: BLE001
            run.violation("the fault schedule failed: %s" % e)
        finally:
            faults_done.set()

    def kill_and_rejoin():
        db, pool = fault_nodes
        # A database node dies about a fifth into the run ...
        while counter[0] < args.keys * 0.2 and not stop.is_set():
            time.sleep(0.05)
        why = cl.kill("db", db)
        if why:
            run.violation("the fault did not take place: " + why)
        run.events.append("kill db%d" % db)
        log("SIGKILLed database node %d at key %d" % (db, counter[0]))
        time.sleep(args.down_for)
        secs, rc, err = cl.dev_cmd("start", str(db))
        kind = join_kind(err)
        if rc != 0:
            run.violation("cluster start %d failed: %s" % (db,
                                                           err[-300:]))
        run.events.append("rejoin db%d %s %.1fs" % (db, kind, secs))
        log("database node %d back (%s) in %.1fs at key %d" % (
            db, kind, secs, counter[0]))
        # ... and a responder pool a bit later.
        while counter[0] < args.keys * 0.6 and not stop.is_set():
            time.sleep(0.05)
        why = cl.kill("pool", pool)
        if why:
            run.violation("the fault did not take place: " + why)
        run.events.append("kill pool%d and relay%d" % (pool, pool))
        log("SIGKILLed pool %d at key %d" % (pool, counter[0]))
        time.sleep(2)
        secs, rc, err = cl.dev_cmd("start-pool", str(pool))
        if rc != 0:
            run.violation("start-pool %d failed: %s" % (pool, err[-300:]))
        run.events.append("restart pool%d" % pool)
        # Traffic on the restarted pool before the run ends.
        time.sleep(2)

    threads = [threading.Thread(target=client, args=(c,))
               for c in range(args.clients)]
    ft = None
    if not args.no_kill:
        ft = threading.Thread(target=faults)
        ft.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if ft:
        ft.join()
    elapsed = time.monotonic() - t_start
    created, replays, finals, n500, n410 = run.check_client()
    cancelled, cancel_replays = run.check_cancels()
    orders = -1
    ev = {}
    if run.ensure_synced():
        try:
            orders = run.check_db("cc-%s-%%" % run.run_id)
        except Exception as e:  # noqa: BLE001
            run.violation("database checks failed: %s" % e)
        if receiver:
            try:
                ev, evv = events_check.check(
                    lambda q: cl.sql(1, q), "cc-%s-%%" % run.run_id,
                    receiver.log, args.events_wait, receiver.before)
                for msg in evv:
                    run.violation("events: " + msg)
            except Exception as e:  # noqa: BLE001
                run.violation("events checks failed: %s" % e)
    sends = sum(len(a) for a in run.answers.values())
    statuses = {}
    for ans in run.answers.values():
        for a in ans:
            k = "%d" % a[1] if not a[2] else "%d/%s" % (a[1], a[2])
            statuses[k] = statuses.get(k, 0) + 1
    print("cluster-chaos: keys=%d requests=%d retries=%d created=%d "
          "replays=%d final_errors=%d http500=%d web500=%d http410=%d gave_up=%d "
          "orders=%d cancels=%d cancelled=%d cancel_replays=%d "
          "get_retried=%d seconds=%.0f faults=[%s]%s violations=%d" % (
              len(run.bodies) - len(run.cancels), sends, run.retries,
              created, replays, finals, n500, run.web500, n410,
              len(run.gave_up), orders, len(run.cancels), cancelled,
              cancel_replays, run.get_retried, elapsed,
              "; ".join(run.events), "".join(
                  " %s=%s" % kv for kv in ev.items()),
              len(run.violations)))
    log("answers: " + " ".join("%s=%d" % kv for kv in sorted(
        statuses.items())))
    return 1 if run.violations else 0


def quorum(args, cl):
    run = Run(args, cl)
    survivor = args.survivor
    others = [n for n in cl.nodes() if n != survivor]
    run.make_skus(1, 100000, 100000)
    run.args.hot_share = 0.0
    for n in cl.nodes():
        if cl.status(n, "wsrep_local_state_comment") != "Synced":
            log("node %d is not Synced: run tools/dev cluster up" % n)
            return 2
    url = cl.web[survivor - 1]
    health = []     # (seconds, http status, wsrep_cluster_status)
    outage = []     # (key, status, code, seconds)
    stop = threading.Event()
    t0 = time.monotonic()

    def poll_health():
        while not stop.is_set():
            cs = cl.status(survivor, "wsrep_cluster_status")
            st = run.http.request(url + "/_health")[0]
            health.append((time.monotonic() - t0, st, cs))
            time.sleep(0.5)

    def outage_send(i):
        key = run.new_key(i)
        user, body = run.bodies[key]
        st, code, doc, hdrs, secs = run.http.request(url, user, key, body)
        oid = doc.get("orderId") if isinstance(doc, dict) else None
        with run.lock:
            outage.append((key, st, code, secs))
            run.answers.setdefault(key, []).append(
                (survivor, st, code, oid, False))

    for n in others:
        why = cl.kill("db", n)
        if why:
            run.violation("the fault did not take place: " + why)
    log("SIGKILLed database nodes %s; sending to node %d" % (others,
                                                             survivor))
    hp = threading.Thread(target=poll_health)
    hp.start()
    senders = []
    for i in range(args.keys):
        t = threading.Thread(target=outage_send, args=(i,))
        t.start()
        senders.append(t)
        time.sleep(args.outage / args.keys)
    for t in senders:
        t.join()
    # Keep polling health a little once the node is non-Primary.
    time.sleep(2)
    stop.set()
    hp.join()

    n201 = sum(1 for o in outage if o[1] == 201)
    n503 = sum(1 for o in outage if o[1] == 503)
    unanswered = [o for o in outage if o[1] == 0]
    other = [o for o in outage if o[1] not in (0, 201, 503)]
    for o in unanswered:
        run.violation("%s: no answer from node %d within %ds" % (
            o[0], survivor, args.timeout))
    for o in other:
        run.violation("%s: answered %d %s during the outage (503 expected)"
                      % (o[0], o[1], o[2]))
    nonprim = [h for h in health if h[2] and h[2] != "Primary"]
    h200 = [h for h in nonprim if h[1] == 200]
    if h200:
        run.violation("_health answered 200 on non-Primary node %d in %d "
                      "of %d polls" % (survivor, len(h200), len(nonprim)))
    if not nonprim:
        run.violation("node %d never showed non-Primary" % survivor)
    max_s = max((o[3] for o in outage), default=0)
    log("outage answers: " + " ".join(
        "%s:%d/%s(%.2fs)" % (o[0].rsplit("-", 1)[1], o[1], o[2] or "-", o[3])
        for o in sorted(outage, key=lambda o: int(o[0].rsplit("-", 1)[1]))))

    log("repairing: tools/dev cluster up")
    secs, rc, err = cl.dev_cmd("up")
    if rc != 0:
        run.violation("cluster up failed: %s" % err.strip()[-400:])
        print("cluster-quorum: repair failed violations=%d"
              % len(run.violations))
        return 1
    repair = secs
    # Retry every outage key until it ends, on random nodes.
    ts = [threading.Thread(target=run.send,
                           args=(k, run.rng.choice(cl.nodes()),
                                 time.monotonic() + args.give_up))
          for k in list(run.bodies)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    created, replays, finals, n500, n410 = run.check_client()
    for key in run.bodies:
        if not any(a[1] == 201 for a in run.answers.get(key, [])):
            run.violation("%s: the retry after the repair did not succeed"
                          % key)
    orders = -1
    try:
        orders = run.check_db("cc-%s-%%" % run.run_id)
    except Exception as e:  # noqa: BLE001
        run.violation("database checks failed: %s" % e)
    if orders != len(run.bodies):
        run.violation("%d keys but %d orders after the repair" % (
            len(run.bodies), orders))
    print("cluster-quorum: survivor=n%d sends=%d answered_503=%d "
          "answered_201=%d other=%d unanswered=%d max_answer_s=%.2f "
          "health_polls_nonprimary=%d health_200_nonprimary=%d "
          "repair_s=%.1f retried_created=%d retried_replays=%d orders=%d "
          "violations=%d" % (
              survivor, len(outage), n503, n201, len(other), len(unanswered),
              max_s, len(nonprim), len(h200), repair, created, replays,
              orders, len(run.violations)))
    return 1 if run.violations else 0


def stall(args, cl):
    """Creates on the surviving nodes while node --victim is SIGKILLed."""
    run = Run(args, cl)
    run.make_skus(8, 10 ** 9, 10 ** 9)
    run.args.hot_share = 0.0
    victim = args.victim
    live = [n for n in cl.nodes() if n != victim]
    done = []       # (monotonic end, seconds, status, web node)
    stop = threading.Event()
    counter = [0]
    t0 = time.monotonic()

    def client(cid):
        node = live[cid % len(live)]
        while not stop.is_set():
            with run.lock:
                i = counter[0]
                counter[0] += 1
            key = run.new_key(i)
            user, body = run.bodies[key]
            st, code, _, _, secs = run.http.request(cl.web[node - 1], user,
                                                    key, body)
            with run.lock:
                done.append((time.monotonic(), secs, st, node))
            if args.think:
                time.sleep(args.think / 1000.0)

    ts = [threading.Thread(target=client, args=(c,))
          for c in range(args.clients)]
    for t in ts:
        t.start()
    time.sleep(args.stall_before)
    t_kill = time.monotonic()
    why = cl.kill("db", victim)
    if why:
        run.violation("the fault did not take place: " + why)
    time.sleep(args.down_for)
    secs, rc, err = cl.dev_cmd("start", str(victim))
    t_back = time.monotonic()
    kind = join_kind(err)
    time.sleep(args.stall_after)
    stop.set()
    for t in ts:
        t.join()
    ok = sorted(d[0] for d in done if d[2] == 201)
    # The longest stretch without a completed 201, from the kill on.
    gaps, prev = [], t_kill
    for t in ok:
        if t >= t_kill:
            gaps.append((t - prev, prev - t0))
            prev = t
    gap, gap_at = max(gaps, default=(0, 0))
    during = [d for d in done if d[0] >= t_kill and d[0] <= t_back]
    before = [d[1] for d in done if d[0] < t_kill and d[2] == 201]
    base = sorted(before)[len(before) // 2] if before else 0
    failed = [d for d in done if d[2] != 201]
    fs = {}
    for d in failed:
        fs[d[2]] = fs.get(d[2], 0) + 1
    log("failed answers (status: count): %s" % fs)
    print("cluster-stall: victim=db%d clients=%d live_web=%s creates=%d "
          "failed=%d (%s) write_stall_s=%.2f (at %.1fs, kill at %.1fs) "
          "max_latency_s=%.2f p50_before_ms=%.1f rejoin=%s %.1fs" % (
              victim, args.clients, ",".join("n%d" % n for n in live),
              len(ok), len(failed),
              ",".join("%d:%d" % kv for kv in sorted(fs.items())) or "-",
              gap, gap_at, t_kill - t0,
              max((d[1] for d in during), default=0), base * 1000, kind,
              secs))
    return 0


def main():
    ap = argparse.ArgumentParser(
        description="Chaos run and quorum-loss test on the Galera cluster")
    ap.add_argument("--web", action="append", default=[],
                    help="a web node's mount URL (once per node)")
    ap.add_argument("--cnf", action="append", default=[],
                    help="the node's my.cnf for the mariadb client")
    ap.add_argument("--dev", required=True, help="path of tools/dev")
    ap.add_argument("--log-dir", help="the responders' log directory")
    ap.add_argument("--quorum", action="store_true",
                    help="the quorum-loss test instead of the chaos run")
    ap.add_argument("--keys", type=int, default=None,
                    help="keys (chaos 600, quorum 12)")
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--fanout", type=lambda s: [int(x) for x in s.split(",")],
                    default=[2, 3], help="sends per key at once (2,3)")
    ap.add_argument("--hot-share", type=float, default=0.4,
                    help="share of keys ordering the hot SKU (0.4)")
    ap.add_argument("--stock-pct", type=int, default=85)
    ap.add_argument("--cancel-pct", type=int, default=30,
                    help="chaos: share of created orders then cancelled,"
                    " each with a key of its own sent like a create's (30)")
    ap.add_argument("--think", type=int, default=30,
                    help="pause 0..MS ms between a client's keys (30)")
    ap.add_argument("--timeout", type=int, default=60,
                    help="seconds a request may take (60)")
    ap.add_argument("--give-up", type=int, default=180,
                    help="seconds of retries before a send gives up (180)")
    ap.add_argument("--backoff", type=float, default=0.05)
    ap.add_argument("--backoff-max", type=float, default=2.0)
    ap.add_argument("--down-for", type=float, default=8.0,
                    help="seconds the killed database node stays down (8)")
    ap.add_argument("--no-kill", action="store_true")
    ap.add_argument("--survivor", type=int, default=1)
    ap.add_argument("--outage", type=float, default=12.0,
                    help="quorum: seconds over which the keys are sent (12)")
    ap.add_argument("--stall", action="store_true",
                    help="measure the write stall of a node kill instead")
    ap.add_argument("--victim", type=int, default=3)
    ap.add_argument("--stall-before", type=float, default=5.0)
    ap.add_argument("--stall-after", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--receiver", metavar="HOST:PORT",
                    help="chaos: start the relays' receiver there and"
                    " check the run's events")
    ap.add_argument("--webhook-secret", help="the relays' secret file")
    ap.add_argument("--node-modules",
                    help="where npm installed standardwebhooks")
    ap.add_argument("--events-wait", type=float, default=60.0,
                    help="seconds to wait for every event delivered (60)")
    args = ap.parse_args()
    if args.keys is None:
        args.keys = 12 if args.quorum else 600
    cl = Cluster(args)
    try:
        if args.stall:
            sys.exit(stall(args, cl))
        sys.exit(quorum(args, cl) if args.quorum else chaos(args, cl))
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        log("set-up error: %s" % e)
        sys.exit(2)


if __name__ == "__main__":
    main()
