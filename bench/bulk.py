#!/usr/bin/env python3
"""Benchmark of a bulk retry under load: `hookbox inbox retry --dead --yes` over
N dead jobs (100,000 by default) in a SQLite inbox (or, with --backend postgres, a database
of a throwaway, durable PostgreSQL cluster), run from a second process beside the
running daemon while signed deliveries keep arriving. It reports the retry's seconds and the
accepts' latency (p50/p99/max, measured by the clients) during the retry, against a window of
the same load without it.

  build/hookbox must exist (cmake --build build --target hookbox).
  python3 bench/bulk.py                 # 100,000 dead jobs: the lead runs it alone
  python3 bench/bulk.py --jobs 1000     # a smoke run, a few seconds
  python3 bench/bulk.py --backend postgres

The inbox is filled directly with sqlite3 (psql) after `hookbox migrate` (rows as hookbox
writes them: one dead job each, with its failed attempt). On PostgreSQL the tables are
ANALYZEd after the fill, as autovacuum would soon do to tables of that size, and the cluster
is checkpointed, so that neither lands in the run. The daemon runs with `workers: 0`, so the
re-armed jobs wait in the inbox and the run measures the retry's writes against the accepts,
not the handler.

The load: GitHub-signed deliveries (X-Hub-Signature-256) over --clients keep-alive
connections. By default it is open-loop: deliveries are due at a fixed --accept-rate (200/s),
whatever the answers do, and each latency runs from the moment its delivery was due, so time
spent queued behind a slow answer counts (as it would for a producer). --accept-rate 0 is the
old closed loop, each client sending back to back: it saturates the daemon and measures its
queueing more than the retry's effect. Both windows (without and with the retry) get the same
load, and the report gives p50/p99/max for each, the retry's CPU seconds (user + system, from
the kernel) and how long each of its write transactions held the lock (its "bulk writes" log
line). Standard library only.
"""
import argparse
import http.client
import json
import os
import queue
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from harness.postgres import PgCluster
from harness.report import percentile
from harness.servers import HookboxServe, remove_sqlite
from harness.signing import post_push, signature

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SECRET = "bench-bulk-secret"

CONFIG = """\
# Written by bench/bulk.py.
listen: 127.0.0.1:{port}
admin_listen: ""
database: "{db}"
durability: full
workers: 0
endpoints:
  - name: github
    path: /hooks/github
    provider: github
    secrets: [{{value: "{secret}"}}]
    routes:
      - events: ["*"]
        handlers:
          - name: sink
            exec: {{command: ["/bin/true"]}}
"""

FILL_SQL = """\
PRAGMA journal_mode=WAL;
PRAGMA synchronous=OFF;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {jobs})
INSERT INTO inbox (id, endpoint, event_id, id_source, event_type, body_sha256, headers, body,
                   status, received_at)
SELECT i, 'github', 'dead-' || i, 'header:X-GitHub-Delivery', 'push',
       lower(hex(randomblob(32))), '{{"X-GitHub-Event":"push"}}',
       CAST('{{"ref":"refs/heads/main","n":' || i || ',"pad":"' || lower(hex(randomblob(500)))
            || '"}}' AS BLOB),
       'dead',
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hours', '+' || (i * 3600 / {jobs}) || ' seconds')
FROM n;
INSERT INTO jobs (id, inbox_id, handler, status, attempts, next_attempt_at, last_error)
SELECT id, id, 'sink', 'dead', 12, received_at, 'exit 1' FROM inbox;
INSERT INTO attempts (id, job, number, started_at, finished_at, outcome, detail)
SELECT id, id, 1, received_at, received_at, 'failed', 'exit 1' FROM inbox;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
"""

# The same rows on PostgreSQL: ids from the identity columns, in the same order.
PG_FILL_SQL = """\
INSERT INTO inbox (endpoint, event_id, id_source, event_type, body_sha256, headers, body,
                   status, received_at)
SELECT 'github', 'dead-' || i, 'header:X-GitHub-Delivery', 'push',
       md5(i || 'a') || md5(i || 'b'), '{{"X-GitHub-Event":"push"}}',
       convert_to('{{"ref":"refs/heads/main","n":' || i || ',"pad":"' || repeat(md5(i::text), 31)
                  || '"}}', 'UTF8'),
       'dead', now() - interval '1 hour' + make_interval(secs => i * 3600.0 / {jobs})
FROM generate_series(1, {jobs}) AS i;
INSERT INTO jobs (inbox_id, handler, status, attempts, next_attempt_at, last_error)
SELECT id, 'sink', 'dead', 12, received_at, 'exit 1' FROM inbox ORDER BY id;
INSERT INTO attempts (job, number, started_at, finished_at, outcome, detail)
SELECT id, 1, next_attempt_at, next_attempt_at, 'failed', 'exit 1' FROM jobs ORDER BY id;
"""


class SqliteInbox:
    """The inbox as a SQLite file of the work directory."""

    def __init__(self, work):
        self.database = os.path.join(os.path.abspath(work), "inbox.db")  # serve runs in work
        remove_sqlite(self.database)

    def fill(self, jobs):
        subprocess.run(["sqlite3", self.database], input=FILL_SQL.format(jobs=jobs), text=True,
                       check=True, stdout=subprocess.DEVNULL)

    def dead_left(self):
        return subprocess.run(["sqlite3", self.database,
                               "SELECT count(*) FROM jobs WHERE status = 'dead'"],
                              capture_output=True, text=True).stdout.strip()


class PostgresInbox:
    """The inbox as a new database of the cluster."""
    NAME = "hookbox_bulk"

    def __init__(self, cluster):
        self.cluster = cluster
        cluster.psql("postgres", "CREATE DATABASE %s" % self.NAME)
        self.database = cluster.url(self.NAME)

    def warm_wal(self, megabytes):
        """Writes about `megabytes` of WAL and checkpoints twice, so that the cluster keeps
        that many segments for reuse (up to min_wal_size), as a server that has run a while
        does: a fresh cluster has only the segments its fill wrote."""
        rows = megabytes * 1000
        self.cluster.psql("postgres", "CREATE TABLE warm AS SELECT repeat('x', 1000) AS x"
                          " FROM generate_series(1, %d)" % rows)
        self.cluster.psql("postgres", "DROP TABLE warm")
        for _ in range(2):
            self.cluster.psql("postgres", "CHECKPOINT")

    def fill(self, jobs):
        self.cluster.psql(self.NAME, PG_FILL_SQL.format(jobs=jobs))
        self.cluster.psql(self.NAME, "ANALYZE")
        self.cluster.psql("postgres", "CHECKPOINT")

    def dead_left(self):
        return self.cluster.psql(self.NAME, "SELECT count(*) FROM jobs WHERE status = 'dead'")


def log(msg):
    print("[bulk] " + msg, file=sys.stderr, flush=True)


class Load:
    """Signed deliveries over `clients` connections; each sample is (due time, seconds, ok).

    rate > 0: open loop, one delivery due every 1/rate s, latency from its due time.
    rate == 0: closed loop, each client back to back, latency from its send."""

    def __init__(self, port, clients, rate):
        self.port, self.clients, self.rate = port, clients, rate
        self.samples = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = []
        self.counter = 0
        self.due = queue.Queue()

    def next_id(self):
        with self.lock:
            self.counter += 1
            return "load-%d" % self.counter

    def send(self, conn):
        delivery = self.next_id()
        body = json.dumps({"ref": "refs/heads/main", "id": delivery, "pad": "x" * 1500}).encode()
        sig = signature(SECRET, body)
        try:
            return conn, post_push(conn, delivery, sig, body) == 200
        except (OSError, http.client.HTTPException):
            conn.close()
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10), False

    def client(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        local = []
        while not self.stop.is_set():
            if self.rate > 0:
                try:
                    t0 = self.due.get(timeout=0.1)
                except queue.Empty:
                    continue
            else:
                t0 = time.time()
            conn, ok = self.send(conn)
            local.append((t0, time.time() - t0, ok))
        with self.lock:
            self.samples.extend(local)

    def pace(self):
        start = time.time()
        k = 0
        while not self.stop.is_set():
            at = start + k / self.rate
            wait = at - time.time()
            if wait > 0:
                time.sleep(wait)
            self.due.put(at)
            k += 1

    def start(self):
        for _ in range(self.clients):
            t = threading.Thread(target=self.client, daemon=True)
            t.start()
            self.threads.append(t)
        if self.rate > 0:
            t = threading.Thread(target=self.pace, daemon=True)
            t.start()
            self.threads.append(t)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()


def summary(samples, start, end):
    lat = sorted(s[1] * 1000 for s in samples if start <= s[0] <= end)
    errors = sum(1 for s in samples if start <= s[0] <= end and not s[2])
    n = len(lat)
    secs = max(end - start, 1e-9)
    return {"requests": n, "rps": n / secs, "p50_ms": percentile(lat, 0.5),
            "p99_ms": percentile(lat, 0.99), "max_ms": lat[-1] if n else 0.0, "errors": errors}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=100_000, help="dead jobs to retry")
    ap.add_argument("--clients", type=int, default=8, help="concurrent delivery connections")
    ap.add_argument("--accept-rate", type=float, default=200,
                    help="deliveries per second, open loop; 0: closed loop, back to back")
    ap.add_argument("--baseline", type=float, default=5, help="seconds of load without retry")
    ap.add_argument("--hookbox", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                      "hookbox"))
    ap.add_argument("--out", default="", help="work directory (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--pg-setting", action="append", default=[], metavar="NAME=VALUE",
                    help="a server setting of the PostgreSQL cluster (ALTER SYSTEM, then a "
                         "reload), e.g. wal_init_zero=off; repeatable")
    ap.add_argument("--pg-warm-wal", type=int, default=0, metavar="MB",
                    help="write and drop about MB of WAL before the fill, so the cluster has "
                         "that many segments to reuse (with --pg-setting min_wal_size=...)")
    args = ap.parse_args()
    if args.backend == "sqlite" and (args.pg_setting or args.pg_warm_wal):
        ap.error("--pg-setting and --pg-warm-wal go with --backend postgres")
    # PostgreSQL's under bench/out (git-ignored), not a private temporary directory: the
    # cluster runs as Debian's postgres user, which must reach it.
    pg_out = os.path.join(ROOT, "bench", "out")
    if args.out:
        work = args.out
    elif args.backend == "sqlite":
        work = tempfile.mkdtemp(prefix="hookbox-bench-bulk-")
    else:
        os.makedirs(pg_out, exist_ok=True)
        work = tempfile.mkdtemp(prefix="bulk.", dir=pg_out)
    os.makedirs(work, exist_ok=True)
    try:
        if args.backend == "sqlite":
            run(args, work, SqliteInbox(work))
        else:
            run_postgres(args, work)
    finally:
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)


def run_postgres(args, work):
    """The benchmark on a throwaway cluster in `work`, with the settings asked for."""
    os.chmod(work, 0o755)
    cluster = PgCluster(os.path.join(ROOT, "tests", "pg", "cluster.sh"), work)
    with cluster.running(args):
        for setting in args.pg_setting:
            name, _, value = setting.partition("=")
            cluster.psql("postgres", "ALTER SYSTEM SET %s = '%s'" % (name, value))
        if args.pg_setting:
            cluster.psql("postgres", "SELECT pg_reload_conf()")
        inbox = PostgresInbox(cluster)
        if args.pg_warm_wal:
            t = time.time()
            inbox.warm_wal(args.pg_warm_wal)
            log("wrote about %d MB of WAL in %.1f s" % (args.pg_warm_wal, time.time() - t))
        run(args, work, inbox)


def run(args, work, inbox):
    """The benchmark on `inbox` (SqliteInbox, PostgresInbox), printed."""
    hb = HookboxServe(work, args.hookbox, CONFIG, db=inbox.database, secret=SECRET)
    hb.write_config()

    subprocess.run(hb.command("migrate"), check=True, stdout=subprocess.DEVNULL)
    t = time.time()
    inbox.fill(args.jobs)
    log("filled %d dead jobs in %.1f s" % (args.jobs, time.time() - t))

    hb.start()
    try:
        load = Load(hb.port, args.clients, args.accept_rate)
        load.start()
        time.sleep(1)  # warm-up, not measured
        b0 = time.time()
        time.sleep(args.baseline)
        b1 = r0 = time.time()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        retry = subprocess.run(hb.command("inbox", "retry", "--dead", "--yes", "--json"),
                               capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        r1 = time.time()
        load.finish()
    finally:
        hb.stop()
    if retry.returncode != 0:
        raise SystemExit("inbox retry failed (%d): %s" % (retry.returncode, retry.stderr))
    result = json.loads(retry.stdout)
    left = inbox.dead_left()
    writes = {}
    for line in retry.stderr.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if isinstance(j, dict) and j.get("msg") == "bulk writes":
            writes = j
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = {"backend": args.backend, "pg_settings": args.pg_setting, "jobs": args.jobs,
           "rearmed": result["rearmed"],
           "retry_seconds": r1 - r0, "retry_cpu_seconds": cpu,
           "transactions": writes.get("transactions"),
           "longest_hold_ms": writes.get("longest_hold_ms"),
           "mean_hold_ms": (writes["held_ms"] / writes["transactions"]
                            if writes.get("transactions") else None),
           "accept_rate": args.accept_rate,
           "retry_seconds_inbox": result.get("seconds"), "dead_left": int(left or 0),
           "clients": args.clients, "baseline": summary(load.samples, b0, b1),
           "during_retry": summary(load.samples, r0, r1), "work": work}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print("bulk retry of %d dead jobs (%s): re-armed %d in %.2f s (process %.2f s); %d left "
              "dead" % (args.jobs, args.backend, out["rearmed"], out["retry_seconds_inbox"] or 0,
                        out["retry_seconds"], out["dead_left"]))
        print("  retry CPU %.2f s; %s write transactions, each holding the lock %s ms on "
              "average, %s ms at most" % (out["retry_cpu_seconds"], out["transactions"],
                                          "%.1f" % out["mean_hold_ms"]
                                          if out["mean_hold_ms"] is not None else "?",
                                          "%.1f" % out["longest_hold_ms"]
                                          if out["longest_hold_ms"] is not None else "?"))
        if args.pg_setting:
            print("  PostgreSQL settings: %s" % ", ".join(args.pg_setting))
        print("  load: %s" % ("open loop, %g deliveries/s" % args.accept_rate
                              if args.accept_rate > 0 else
                              "closed loop, %d clients back to back" % args.clients))
        for what in ("baseline", "during_retry"):
            s = out[what]
            print("  accepts %-13s %6d requests %7.0f req/s  p50 %6.1f ms  p99 %6.1f ms  "
                  "max %6.1f ms  errors %d" % (what, s["requests"], s["rps"], s["p50_ms"],
                                               s["p99_ms"], s["max_ms"], s["errors"]))


if __name__ == "__main__":
    main()
