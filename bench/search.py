#!/usr/bin/env python3
"""The first page of `hookbox inbox list --where ...` over a large inbox.

Fills a fresh SQLite inbox (created by `hookbox migrate`, so the schema and indexes are
hookbox's own) with --rows events spread evenly over 30 days, across 4 endpoints, each a
realistic Stripe-like JSON body (~700 bytes) naming one of 5,000 customers; every tenth row
is a form body. Then it times, each --repeat times (the best and the median are reported),
the first page (--limit 100, the default) of:

  narrow:    --endpoint E --since <one day> --until <the next> --where /data/object/customer=X
  full scan: --where /data/object/customer=X      (no endpoint, no window: every body read
             newest first until a page is found; X is rare, so this reads nearly all)
  form:      --where form:From=+1555...           (a form field, full scan)

Each time is the whole `hookbox inbox list` process: start, config, open, query, print.
Target: the narrow case within 1 s at 1 M rows.

Beside them, in the same run: the ceiling, `hookbox inbox list` over the same endpoint and
day without --where (the process, the config and the window's index scan: what a search
cannot beat), and the peer, Debian's `sqlite3` shell answering the same two pointer searches
with SQLite's own json_extract() on the same file (no hookbox at all). The ratio column is
each case's median over the ceiling's.

  python3 bench/search.py --binary build/hookbox --rows 1000000
  python3 bench/search.py --binary build/hookbox --rows 10000   # a smoke run, seconds

PostgreSQL is left out: the filter's SQL is the same shape there (tests/inbox/reads_test.cc,
run against both backends, holds them to the same answers), but its timing needs a tuned
cluster.
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

from harness.servers import HookboxServe

ENDPOINTS = ["stripe", "github", "shopify", "twilio"]
TYPES = ["invoice.paid", "invoice.created", "charge.succeeded", "customer.updated",
         "payment_intent.succeeded", "invoice.payment_failed"]
DAYS = 30
CUSTOMERS = 5000
# Never served: only the inbox verbs read it (migrate, inbox list).
CONFIG = """\
listen: 127.0.0.1:0
admin_listen: ""
database: {db}
endpoints:
{endpoints}"""
ENDPOINT = "  - name: {0}\n    path: /hooks/{0}\n    verify: none\n    event_id: body:/id\n"


def fmt(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def body_for(i, customer, rng):
    if i % 10 == 9:
        return ("From=%2B1555" + "%07d" % (i % 10_000_000) + "&To=%2B15550000000&Body=hello+number+"
                + str(i) + "&MessageSid=SM" + "%032x" % i).encode()
    doc = {
        "id": "evt_%024x" % i,
        "object": "event",
        "api_version": "2024-06-20",
        "created": 1764547200 + i,
        "type": TYPES[i % len(TYPES)],
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": "req_%014x" % rng.getrandbits(56), "idempotency_key": None},
        "data": {"object": {
            "id": "in_%024x" % i,
            "object": "invoice",
            "customer": customer,
            "amount_due": rng.randrange(100, 100000),
            "amount_paid": 0,
            "currency": "usd",
            "paid": bool(i % 3),
            "status": "open",
            "lines": {"object": "list", "data": [
                {"id": "il_%020x" % (i * 2 + k), "amount": 1000 * (k + 1), "quantity": k + 1,
                 "description": "Line item number %d of invoice %d" % (k, i)} for k in range(2)]},
            "metadata": {"order_id": "ord_%d" % i, "source": "bench"},
        }},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def fill(db_path, rows, seed):
    rng = random.Random(seed)
    end = datetime(2026, 12, 1, tzinfo=timezone.utc)
    start = end - timedelta(days=DAYS)
    step = (end - start) / rows
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA synchronous=OFF")
    t0 = time.monotonic()
    with db:
        batch = []
        for i in range(rows):
            endpoint = ENDPOINTS[i % len(ENDPOINTS)]
            customer = "cus_%05d" % rng.randrange(CUSTOMERS)
            body = body_for(i, customer, rng)
            received = fmt(start + step * i)
            batch.append((endpoint, "ev-%d" % i, "body:/id", TYPES[i % len(TYPES)],
                          "sha-%d" % i, "{}", body, "processed", received, received))
            if len(batch) == 10000:
                db.executemany(
                    "INSERT INTO inbox (endpoint, event_id, id_source, event_type, body_sha256,"
                    " headers, body, status, received_at, processed_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
                batch.clear()
        if batch:
            db.executemany(
                "INSERT INTO inbox (endpoint, event_id, id_source, event_type, body_sha256,"
                " headers, body, status, received_at, processed_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
    db.execute("ANALYZE")
    db.close()
    return time.monotonic() - t0, start, end


def timed(argv, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True)
        times.append(time.monotonic() - t0)
        if r.returncode != 0:
            sys.exit("failed: %s\n%s" % (" ".join(argv), r.stderr))
        out = r.stdout
    return min(times), statistics.median(times), len(json.loads(out or "[]"))


def peer_query(db_path, where):
    """The sqlite3 shell's answer to the same first page, by json_extract."""
    sql = "SELECT id FROM inbox WHERE " + where + " ORDER BY received_at DESC, id DESC LIMIT 100;"
    return ["sqlite3", "-readonly", "-json", db_path, sql]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default="build/hookbox")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", help="keep the inbox here (default: a temporary directory)")
    args = ap.parse_args()

    workdir = args.workdir or tempfile.mkdtemp(prefix="hookbox-bench-search-")
    os.makedirs(workdir, exist_ok=True)
    db_path = os.path.join(workdir, "inbox.db")
    if os.path.exists(db_path):
        os.remove(db_path)
    hb = HookboxServe(workdir, args.binary, CONFIG, db=db_path,
                      endpoints="".join(ENDPOINT.format(e) for e in ENDPOINTS))
    hb.write_config()
    subprocess.run(hb.command("migrate"), check=True, capture_output=True)
    fill_s, start, end = fill(db_path, args.rows, seed=25)
    size_mb = os.path.getsize(db_path) / 1e6
    print("filled %d rows (%.0f MB) in %.1f s: %s" % (args.rows, size_mb, fill_s, db_path))

    # A customer of the stripe endpoint on day 15, and its one-day window.
    db = sqlite3.connect(db_path)
    day = start + timedelta(days=15)
    since, until = fmt(day), fmt(day + timedelta(days=1))
    row = db.execute("SELECT body FROM inbox WHERE endpoint = 'stripe' AND received_at >= ?"
                     " AND received_at < ? AND substr(body, 1, 1) = X'7B' LIMIT 1",
                     (since, until)).fetchone()
    customer = json.loads(row[0])["data"]["object"]["customer"]
    form_row = db.execute("SELECT body FROM inbox WHERE substr(body, 1, 5) = CAST('From=' AS BLOB)"
                          " ORDER BY id LIMIT 1").fetchone()
    sender = form_row[0].decode().split("&")[0].split("=", 1)[1].replace("%2B", "+")
    db.close()

    base = hb.command("inbox", "list") + ["--json"]
    window = "endpoint = 'stripe' AND received_at >= '%s' AND received_at < '%s'" % (since, until)
    # The body is a BLOB, which SQLite's JSON functions refuse; json_valid() first, as a form
    # body would make json_extract() fail the whole query.
    customer_is = ("CASE WHEN json_valid(CAST(body AS TEXT)) THEN json_extract(CAST(body AS TEXT),"
                   " '$.data.object.customer') END = '%s'" % customer)
    cases = [
        ("ceiling: --endpoint stripe, one day, no --where",
         base + ["--endpoint", "stripe", "--since", since, "--until", until]),
        ("narrow: --endpoint stripe, one day, --where customer",
         base + ["--endpoint", "stripe", "--since", since, "--until", until,
                 "--where", "/data/object/customer=" + customer]),
        ("full scan: --where customer",
         base + ["--where", "/data/object/customer=" + customer]),
        ("full scan: --where form:From (the oldest form row)",
         base + ["--where", "form:From=" + sender]),
        ("peer: sqlite3 json_extract, stripe, one day, customer",
         peer_query(db_path, window + " AND " + customer_is)),
        ("peer: sqlite3 json_extract, full scan, customer",
         peer_query(db_path, customer_is)),
    ]
    print("%-55s %9s %9s %6s %9s" % ("case (first page, limit 100)", "best s", "median s", "rows",
                                     "/ceiling"))
    ceiling = None
    for name, argv in cases:
        best, median, n = timed(argv, args.repeat)
        ceiling = ceiling or median
        print("%-55s %9.3f %9.3f %6d %8.1fx" % (name, best, median, n, median / ceiling))
    if not args.workdir:
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
