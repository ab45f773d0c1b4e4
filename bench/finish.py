#!/usr/bin/env python3
"""The finish path on its own, on both backends: bench/inbox/finish.cc (`bench_finish`, built
with -DHOOKBOX_BENCH_INBOX=ON) against a fresh SQLite file and a fresh database of a throwaway
PostgreSQL cluster (the PostgreSQL rows' own, durable: fsync and synchronous_commit on). Each
program given (--finish, repeatable: e.g. this tree's and an older commit's) runs on each
backend in turn, and the report gives, per backend and program, the median finishes/s of
batches of 64 (what the daemon does), of the same jobs one by one (the peer), their ratio,
and one-row commits/s beside batches/s (the ceiling of a path that commits each batch).

  make bench-finish                      # this tree's build-bench/bench_finish
  python3 bench/finish.py --finish A --finish B --events 2000 --rounds 3

Run it alone on the machine (bench/RESULTS.md, "How to run it"). Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.host import log  # noqa: E402
from harness.postgres import PgCluster  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_one(program, database, events, rounds):
    """The program's summary line, as a dict."""
    r = subprocess.run([program, database, str(events), str(rounds)], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("%s %s failed:\n%s" % (program, database, r.stderr))
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    for line in lines:
        log("%s on %s: %s" % (program, database.split("?")[0], json.dumps(line)))
    return lines[-1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--finish", action="append",
                   help="a bench_finish program (repeatable); default build-bench/bench_finish")
    p.add_argument("--events", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    programs = args.finish or [os.path.join(ROOT, "build-bench", "bench_finish")]
    rows = []
    # Under bench/out (git-ignored, the disk the other SQLite rows use), not a private
    # temporary directory: the cluster runs as Debian's postgres user, which must reach it.
    out = os.path.join(ROOT, "bench", "out")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="finish.", dir=out) as work:
        os.chmod(work, 0o755)
        cluster = PgCluster(os.path.join(ROOT, "tests", "pg", "cluster.sh"), work)
        with cluster.running(args):
            for i, program in enumerate(programs):
                sqlite = os.path.join(work, "inbox-%d.db" % i)
                rows.append(("SQLite", program, run_one(program, sqlite, args.events,
                                                        args.rounds)))
                db = "finish%d" % i
                cluster.psql("postgres", "CREATE DATABASE %s" % db)
                rows.append(("PostgreSQL %s" % cluster.version, program,
                             run_one(program, cluster.url(db), args.events, args.rounds)))
    print("| backend | program | batched finishes/s | one by one /s | batched ÷ one by one "
          "| batches/s | one-row commits/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for backend, program, s in rows:
        print("| %s | %s | %.0f | %.0f | %.2f | %.0f | %.0f |" % (
            backend, program, s["batched_per_s"], s["one_by_one_per_s"], s["ratio"],
            s["batches_per_s"], s["commits_per_s"]))


if __name__ == "__main__":
    main()
