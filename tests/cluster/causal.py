#!/usr/bin/env python3
"""Causal reads on a Galera node whose applier lags, measured on the
servers alone, then through the service.

Node 3's applier is made to wait: a session of node 3 holds LOCK TABLES
on a table of a database of its own (idemorders_causal, made afresh and
dropped at the end) while node 1 changes a row of it; the applier waits
for that lock (an explicit lock is not aborted by a replicated writeset)
for --hold seconds, and node 1's commits after it are visible on node 3
only once it is released.  The writesets stay a few rows: a large one
can make a killed node's gcache recovery run out of memory.

The servers alone (wsrep_sync_wait = 1 on node 3): a read that opens a
transaction waits for the cluster and sees node 1's row; a read inside a
transaction opened before node 1 committed does not wait (MariaDB skips
the causal wait in an active multi-statement transaction) and misses it.

The service: while threads keep every worker of web node 3 busy with
reads (GET /orders/{id}, which leave a read-only transaction open for
the worker's next request), an order is created through web node 1 while
node 3's applier waits, then read (GET) and cancelled through web node 3
at once.  Both must find the order: 200, never 404.

Prints "ok ..." / "FAIL ..." lines and "RESULT causal PASSED FAILED";
exits 1 when a check failed.

usage: causal.py --cnf N1.cnf --cnf N2.cnf --cnf N3.cnf --web1 URL
                 --web3 URL --user NAME:PASSWORD [--hold S] [--rounds N]
"""

import argparse
import base64
import json
import sys
import threading
import time
import urllib.error
import urllib.request

import pymysql

DB = "idemorders_causal"


def connect(cnf, db=None):
    return pymysql.connect(read_default_file=cnf, read_default_group="client",
                           database=db, autocommit=True, connect_timeout=10,
                           read_timeout=120)


def one(conn, sql):
    with conn.cursor() as c:
        c.execute(sql)
        return c.fetchone()


class Web:
    def __init__(self, user):
        self.auth = "Basic " + base64.b64encode(user.encode()).decode()

    def request(self, url, key=None, body=None):
        headers = {"Authorization": self.auth}
        data = None
        if body is not None:
            headers["Idempotency-Key"] = key
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        r = urllib.request.Request(url, data=data, headers=headers,
                                   method="POST" if data else "GET")
        try:
            with urllib.request.urlopen(r, timeout=30) as f:
                return f.status, json.loads(f.read())
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, {"raw": raw[:200].decode("latin-1")}


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, cond, what, got=""):
        if cond:
            self.passed += 1
            print("ok     " + what)
        else:
            self.failed += 1
            print("FAIL   %s: %s" % (what, got))


class Lag:
    """Node 3's applier waits on a lock for hold seconds from start()."""

    def __init__(self, args, n1):
        self.args, self.n1 = args, n1
        self.timer = None

    def start(self):
        lock = connect(self.args.cnf[2], DB)
        one(lock, "LOCK TABLES slow WRITE")
        one(self.n1, "UPDATE %s.slow SET v = v + 1" % DB)

        def release():
            one(lock, "UNLOCK TABLES")
            lock.close()

        self.timer = threading.Timer(self.args.hold, release)
        self.timer.start()

    def end(self):
        self.timer.join()


def servers_alone(args, n1, ck):
    n3 = connect(args.cnf[2], DB)
    one(n3, "SET SESSION wsrep_sync_wait = 1")
    one(n3, "SET SESSION autocommit = 0")
    lag = Lag(args, n1)
    seen, waited = {}, {}
    for i, how in enumerate(("inside an open transaction",
                             "opening a transaction")):
        one(n3, "ROLLBACK")
        if how.startswith("inside"):
            one(n3, "SELECT COUNT(*) FROM mark")	# opens it
        lag.start()
        one(n1, "INSERT INTO %s.mark VALUES (%d)" % (DB, i + 1))
        t = time.monotonic()
        seen[how] = one(n3, "SELECT COUNT(*) FROM mark WHERE id = %d"
                        % (i + 1))[0]
        waited[how] = round(time.monotonic() - t, 2)
        lag.end()
    one(n3, "ROLLBACK")
    n3.close()
    print("    node 3 saw node 1's row: %s, after (s): %s"
          % (json.dumps(seen), json.dumps(waited)))
    ck.check(seen["opening a transaction"] == 1,
             "servers alone: a read that opens a transaction waits and "
             "sees node 1's commit", seen)
    ck.check(seen["inside an open transaction"] == 0,
             "servers alone: a read inside a transaction opened before "
             "does not wait, and misses it (as measured)", seen)


def service(args, n1, ck):
    web = Web(args.user)
    body = {"currency": "KRW", "items": [{"sku": "A-10", "qty": 1}],
            "amount": 6000}
    run = "%d" % (time.time() * 1000)
    st, doc = web.request(args.web1, "causal-%s-0" % run, body)
    if st != 201:
        ck.check(False, "service: a first order", "%d %s" % (st, doc))
        return
    first = "%s/%s" % (args.web3, doc["orderId"])
    stop = threading.Event()
    gets = [0]

    def reader():
        while not stop.is_set():
            web.request(first)
            gets[0] += 1

    readers = [threading.Thread(target=reader) for _ in range(args.readers)]
    for t in readers:
        t.start()
    bad = []
    lag = Lag(args, n1)
    try:
        time.sleep(0.5)
        for i in range(1, args.rounds + 1):
            lag.start()
            st, doc = web.request(args.web1, "causal-%s-%d" % (run, i), body)
            if st != 201:
                bad.append("create %d: %d %s" % (i, st, doc.get("code")))
                continue
            oid = doc["orderId"]
            st, doc = web.request("%s/%s" % (args.web3, oid))
            if st != 200:
                bad.append("GET %s on node 3: %d %s" % (oid, st,
                                                         doc.get("code")))
            lag.end()
            lag.start()
            st, doc = web.request(args.web1, "causal-%s-%dc" % (run, i),
                                  body)
            if st != 201:
                bad.append("create %dc: %d %s" % (i, st, doc.get("code")))
                continue
            oid = doc["orderId"]
            st, doc = web.request("%s/%s/cancel" % (args.web3, oid),
                                  "cx-causal-%s-%d" % (run, i),
                                  {"reason": "causal"})
            if st != 200:
                bad.append("cancel %s on node 3: %d %s" % (
                    oid, st, doc.get("code")))
            lag.end()
    finally:
        if lag.timer is not None:
            lag.end()
        stop.set()
        for t in readers:
            t.join()
    print("    %d reads kept web node 3's workers busy" % gets[0])
    ck.check(gets[0] > args.rounds, "service: reads ran alongside",
             gets[0])
    ck.check(not bad, "service: %d orders created on node 1 read and "
             "cancelled at once through node 3 (200 each)" % (
                 2 * args.rounds), "; ".join(bad))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cnf", action="append", required=True)
    ap.add_argument("--web1", required=True)
    ap.add_argument("--web3", required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--hold", type=float, default=1.5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--readers", type=int, default=6)
    args = ap.parse_args()
    if len(args.cnf) != 3:
        ap.error("three --cnf, nodes 1 to 3")

    n1 = connect(args.cnf[0])
    for sql in ("DROP DATABASE IF EXISTS " + DB, "CREATE DATABASE " + DB,
                "CREATE TABLE %s.slow (id INT PRIMARY KEY, v INT NOT NULL) "
                "ENGINE=InnoDB" % DB,
                "CREATE TABLE %s.mark (id INT PRIMARY KEY) ENGINE=InnoDB" % DB,
                "INSERT INTO %s.slow VALUES (1, 0)" % DB):
        one(n1, sql)
    ck = Checks()
    n3 = connect(args.cnf[2])       # node 3 has the tables
    one(n3, "SET SESSION wsrep_sync_wait = 1")
    one(n3, "SELECT v FROM %s.slow" % DB)
    n3.close()
    try:
        servers_alone(args, n1, ck)
        service(args, n1, ck)
    finally:
        one(n1, "DROP DATABASE " + DB)
    print("RESULT causal %d %d" % (ck.passed, ck.failed))
    sys.exit(1 if ck.failed else 0)


if __name__ == "__main__":
    main()
