#!/usr/bin/env python3
"""Exactly once when a conflict lands inside the final batch of a create
(--op create, the default) or of a cancel (--op cancel).

For every K in 0..--max-k: a create is sent to web node 3 with the fault
work_pause=K:MS (a fault build: the batch that ends in COMMIT gets a DO
SLEEP after its K-th statement, guards not counted, in the same round
trip).  While that sleep runs (seen in node 3's process list), node 1
commits a restock of the order's SKU (+100): when node 3's transaction
holds that stock row, the restock's writeset BF-aborts it inside the
batch.  Then, per key, on every node (causal reads):

    order exists  <=>  ledger row SUCCEEDED  <=>  stock decreased

(the SKU is the key's own: 10 units, +100 restocked, 1 ordered), and
the three nodes hold the same rows.  With --op cancel the order is made
first (no fault), the cancel is paused, and per key:

    order CANCELLED  <=>  cancel's ledger row SUCCEEDED  <=>  its
    quantity put back (available and restocked)

Prints one line per K (stderr), then "cluster-workpause: ...
violations=N"; exits 1 on any violation.

usage: work-pause.py --web URL3 --cnf N1.cnf --cnf N2.cnf --cnf N3.cnf
                     --db NAME [--op create|cancel]
                     [--user alice:alice-secret] [--max-k 7]
                     [--pause-ms 3000] [--run ID]
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


def connect(cnf, db):
    return pymysql.connect(read_default_file=cnf, read_default_group="client",
                           database=db, autocommit=True, connect_timeout=10,
                           read_timeout=60)


def query(conn, sql, args=None):
    with conn.cursor() as c:
        c.execute(sql, args)
        return c.fetchall()


def post(url, user, key, fault, body, out):
    req = urllib.request.Request(url, data=body.encode(), method="POST")
    if fault is None:
        fault = ""
    req.add_header("Authorization", "Basic " +
                   base64.b64encode(user.encode()).decode())
    req.add_header("Content-Type", "application/json")
    req.add_header("Idempotency-Key", key)
    if fault:
        req.add_header("X-Idemorders-Fault", fault)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            out.append((r.status, r.read().decode(errors="replace")))
    except urllib.error.HTTPError as e:
        out.append((e.code, e.read().decode(errors="replace")))
    except Exception as e:      # no answer: recorded, judged by the rows
        out.append((0, repr(e)))


def wait_sleep(conn, db, deadline):
    while time.monotonic() < deadline:
        n = query(conn, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                  "WHERE DB = %s AND INFO LIKE 'DO SLEEP%%'", (db,))[0][0]
        if n > 0:
            return True
        time.sleep(0.02)
    return False


def bf_aborts(conn):
    return int(query(conn, "SHOW GLOBAL STATUS LIKE "
                     "'wsrep_local_bf_aborts'")[0][1])


def create(url, user, key, sku, fault=None):
    body = json.dumps({"currency": "KRW", "amount": 100,
                       "items": [{"sku": sku, "qty": 1}]})
    out = []
    post(url, user, key, fault, body, out)
    return out


def check_create(conns, key, sku, paused):
    """order exists <=> ledger SUCCEEDED <=> stock decreased, on every node."""
    views = []
    for c in conns:
        orders = query(c, "SELECT COUNT(*) FROM orders WHERE "
                       "principal_id = 'alice' AND idempotency_key = %s",
                       (key,))[0][0]
        led = query(c, "SELECT status FROM idempotency_records WHERE "
                    "principal_id = 'alice' AND operation = "
                    "'create-order' AND idem_key = %s", (key,))
        avail = query(c, "SELECT available FROM stock WHERE sku = %s",
                      (sku,))[0][0]
        views.append((orders, led[0][0] if led else None, avail))
    orders, led, avail = views[0]
    restock = 100 if paused else 0
    decreased = avail == 10 + restock - 1
    ok = (len(set(views)) == 1 and orders in (0, 1) and
          (orders == 1) == (led == "SUCCEEDED") == decreased and
          avail in (10 + restock, 10 + restock - 1))
    return ok, "order=%d ledger=%s stock=%d" % (orders, led, avail), views


def check_cancel(conns, key, oid, sku, paused):
    """order CANCELLED <=> cancel ledger SUCCEEDED <=> stock restocked."""
    views = []
    for c in conns:
        st = query(c, "SELECT status FROM orders WHERE id = %s",
                   (int(oid[2:]),))[0][0]
        led = query(c, "SELECT status FROM idempotency_records WHERE "
                    "principal_id = 'alice' AND operation = "
                    "'cancel-order' AND idem_key = %s", (key,))
        avail, restocked = query(c, "SELECT available, restocked FROM stock "
                                 "WHERE sku = %s", (sku,))[0]
        views.append((st, led[0][0] if led else None, avail, restocked))
    st, led, avail, restocked = views[0]
    base = 9 + (100 if paused else 0)
    back = avail == base + 1 and restocked == 1
    ok = (len(set(views)) == 1 and
          (st == "CANCELLED") == (led == "SUCCEEDED") == back and
          (back or (avail == base and restocked == 0)))
    return ok, "order=%s ledger=%s stock=%d restocked=%d" % (
        st, led, avail, restocked), views


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--web", required=True)
    ap.add_argument("--cnf", action="append", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--user", default="alice:alice-secret")
    ap.add_argument("--op", choices=("create", "cancel"), default="create")
    ap.add_argument("--max-k", type=int, default=7)
    ap.add_argument("--pause-ms", type=int, default=3000)
    ap.add_argument("--run", default=str(int(time.time())))
    args = ap.parse_args()
    if len(args.cnf) != 3:
        ap.error("three --cnf, nodes 1 to 3")
    conns = [connect(c, args.db) for c in args.cnf]
    for c in conns:
        query(c, "SET SESSION wsrep_sync_wait = 1")
    n1, n3 = conns[0], conns[2]
    violations = aborted = 0
    for k in range(args.max_k + 1):
        sku = "WP-%s-%s-%d" % (args.op, args.run, k)
        key = "wp-%s-%s-%d" % (args.op, args.run, k)
        fault = "work_pause=%d:%d" % (k, args.pause_ms)
        query(n1, "INSERT INTO stock (sku, currency, unit_price, available) "
              "VALUES (%s, 'KRW', 100, 10)", (sku,))
        query(n3, "SELECT available FROM stock WHERE sku = %s", (sku,))
        oid = None
        if args.op == "cancel":
            made = create(args.web, args.user, key + "-order", sku)
            if not made or made[0][0] != 201:
                sys.exit("k=%d: the order to cancel: %r" % (k, made))
            oid = json.loads(made[0][1])["orderId"]
            query(n3, "SELECT status FROM orders WHERE id = %s",
                  (int(oid[2:]),))
        before = bf_aborts(n3)
        out = []
        if args.op == "create":
            t = threading.Thread(target=lambda: out.extend(
                create(args.web, args.user, key, sku, fault)))
        else:
            t = threading.Thread(target=post, args=(
                args.web.rstrip("/") + "/" + oid + "/cancel", args.user, key,
                fault, "{}", out))
        t.start()
        paused = wait_sleep(n3, args.db, time.monotonic() + 30)
        if paused:
            query(n1, "UPDATE stock SET available = available + 100 "
                  "WHERE sku = %s", (sku,))
        t.join()
        after = bf_aborts(n3)
        aborted += after > before
        if args.op == "create":
            ok, what, views = check_create(conns, key, sku, paused)
        else:
            ok, what, views = check_cancel(conns, key, oid, sku, paused)
        status = out[0][0] if out else 0
        print("%s k=%d paused=%s bf_aborts+%d answer=%d %s%s%s" % (
            args.op, k, "yes" if paused else "no", after - before, status,
            what, "" if len(set(views)) == 1 else
            " nodes differ: %r" % (views,), "" if ok else "  VIOLATION"),
            file=sys.stderr)
        if not ok:
            violations += 1
            print("    answer: %s" % (out[0][1][:300] if out else "-"),
                  file=sys.stderr)
    print("cluster-workpause: op=%s ks=%d bf_aborted=%d violations=%d" % (
        args.op, args.max_k + 1, aborted, violations))
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
