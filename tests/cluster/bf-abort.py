#!/usr/bin/env python3
"""What a Galera node does with a BF abort that lands inside a
multi-statement packet, measured on the servers alone (no idemorders).

Node 3 is sent one COM_QUERY packet (autocommit off):

    SET autocommit = 0; INSERT INTO claim VALUES (1);
    UPDATE hot SET v = v + 1 WHERE id = 1; DO SLEEP(S);
    INSERT INTO tail VALUES (1); COMMIT

While its DO SLEEP runs (seen in node 3's process list), node 1 commits
UPDATE hot SET v = v + 100 WHERE id = 1, whose writeset, applied on
node 3, needs the row lock node 3's transaction holds: a brute-force
(BF) abort.  Recorded: what each statement of the packet answered,
node 3's wsrep_local_bf_aborts before and after, and the rows of the
three tables on every node (causal reads).

The tables live in a database of their own (idemorders_bfabort), made
afresh and dropped at the end, so the service's rows are never touched.

--expect OUTCOME compares the measurement with OUTCOME, one word per
field (see outcome()): the run exits 1 when they differ.  It prints the
measurement as JSON and "RESULT bf-abort PASSED FAILED".

usage: bf-abort.py --cnf N1.cnf --cnf N2.cnf --cnf N3.cnf [--sleep S]
                   [--expect OUTCOME]
"""

import argparse
import json
import sys
import threading
import time

import pymysql
from pymysql.constants import CLIENT

DB = "idemorders_bfabort"


def connect(cnf, db=None, multi=False):
    return pymysql.connect(read_default_file=cnf, read_default_group="client",
                           database=db, autocommit=True,
                           client_flag=CLIENT.MULTI_STATEMENTS if multi else 0,
                           connect_timeout=10, read_timeout=120)


def one(conn, sql):
    with conn.cursor() as c:
        c.execute(sql)
        return c.fetchone()


def bf_aborts(conn):
    return int(one(conn, "SHOW GLOBAL STATUS LIKE "
                   "'wsrep_local_bf_aborts'")[1])


def run_packet(cnf, sleep_s, answers):
    """Send the packet to node 3 as one COM_QUERY; record each answer."""
    stmts = ["SET autocommit = 0", "INSERT INTO claim VALUES (1)",
             "UPDATE hot SET v = v + 1 WHERE id = 1",
             "DO SLEEP(%d)" % sleep_s, "INSERT INTO tail VALUES (1)",
             "COMMIT"]
    conn = connect(cnf, DB, multi=True)
    try:
        cur = conn.cursor()
        i = 0
        try:
            cur.execute("; ".join(stmts))
            answers.append([stmts[i], "OK %d" % cur.rowcount])
            while True:
                i += 1
                more = cur.nextset()
                if not more:
                    break
                answers.append([stmts[i] if i < len(stmts) else "?",
                                "OK %d" % cur.rowcount])
        except pymysql.MySQLError as e:
            answers.append([stmts[i] if i < len(stmts) else "?",
                            "ERROR %d" % e.args[0]])
    finally:
        conn.close()


def wait_sleeping(conn, deadline):
    """Until node 3's packet is inside its DO SLEEP (its process list)."""
    while time.monotonic() < deadline:
        n = one(conn, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                "WHERE DB = '%s' AND INFO LIKE 'DO SLEEP%%'" % DB)[0]
        if n > 0:
            return True
        time.sleep(0.05)
    return False


def outcome(m):
    """The measurement in a few words (what --expect compares)."""
    words = []
    for a in m["answers"]:
        words.append(a[1].split()[0] + ("" if a[1].startswith("OK")
                                        else a[1].split()[1]))
    return {
        "answers": " ".join(words),
        "bf_aborts": m["bf_aborts_after"] - m["bf_aborts_before"],
        "rows": sorted(set(json.dumps(r) for r in m["rows"].values())),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cnf", action="append", required=True)
    ap.add_argument("--sleep", type=int, default=4)
    ap.add_argument("--expect")
    args = ap.parse_args()
    if len(args.cnf) != 3:
        ap.error("three --cnf, nodes 1 to 3")

    n1 = connect(args.cnf[0])
    for sql in ("DROP DATABASE IF EXISTS " + DB, "CREATE DATABASE " + DB,
                "CREATE TABLE %s.claim (id INT PRIMARY KEY) ENGINE=InnoDB" % DB,
                "CREATE TABLE %s.hot (id INT PRIMARY KEY, v INT NOT NULL) "
                "ENGINE=InnoDB" % DB,
                "CREATE TABLE %s.tail (id INT PRIMARY KEY) ENGINE=InnoDB" % DB,
                "INSERT INTO %s.hot VALUES (1, 0)" % DB):
        one(n1, sql)
    n3 = connect(args.cnf[2])
    one(n3, "SET SESSION wsrep_sync_wait = 1")
    if one(n3, "SELECT v FROM %s.hot WHERE id = 1" % DB)[0] != 0:
        sys.exit("node 3 does not see the hot row")

    before = bf_aborts(n3)
    answers = []
    t = threading.Thread(target=run_packet, args=(args.cnf[2], args.sleep,
                                                  answers))
    t.start()
    if not wait_sleeping(n3, time.monotonic() + 30):
        t.join()
        sys.exit("node 3's packet never reached its DO SLEEP: %r" % answers)
    one(n1, "UPDATE %s.hot SET v = v + 100 WHERE id = 1" % DB)
    t.join()
    after = bf_aborts(n3)

    rows = {}
    for i, cnf in enumerate(args.cnf, 1):
        c = connect(cnf)
        one(c, "SET SESSION wsrep_sync_wait = 1")
        rows["node%d" % i] = {
            "claim": [r[0] for r in query(c, "SELECT id FROM %s.claim "
                                          "ORDER BY id" % DB)],
            "hot_v": one(c, "SELECT v FROM %s.hot WHERE id = 1" % DB)[0],
            "tail": [r[0] for r in query(c, "SELECT id FROM %s.tail ORDER BY id"
                                         % DB)],
        }
        c.close()
    one(n1, "DROP DATABASE " + DB)
    version = one(n3, "SELECT VERSION()")[0]
    m = {"version": version, "answers": answers, "bf_aborts_before": before,
         "bf_aborts_after": after, "rows": rows}
    print(json.dumps(m, indent=1))
    o = outcome(m)
    print("outcome: " + json.dumps(o))
    passed = failed = 0
    if args.expect is not None:
        want = json.loads(args.expect)
        for k in sorted(want):
            if o.get(k) == want[k]:
                print("ok: %s = %s" % (k, json.dumps(want[k])))
                passed += 1
            else:
                print("FAIL: %s: expected %s, got %s" % (
                    k, json.dumps(want[k]), json.dumps(o.get(k))))
                failed += 1
    print("RESULT bf-abort %d %d" % (passed, failed))
    sys.exit(1 if failed else 0)


def query(conn, sql):
    with conn.cursor() as c:
        c.execute(sql)
        return c.fetchall()


if __name__ == "__main__":
    main()
