#!/usr/bin/env python3
"""The benchmark harness behind `make bench`, `make bench-replicas`, `make bench-handlers`,
`make bench-scale` and `make bench-console` (bench/bench.sh builds everything and calls it):
`run.py MODE ...` runs the scenario bench/scenarios/MODE.py, whose opening paragraph says
what it measures:
  table      the table: ceiling, hookbox on SQLite and on PostgreSQL, adnanh/webhook
  replicas   hookbox on PostgreSQL, one replica against two, each capped by a cgroup
  handlers   hookbox's exec, file and http handlers end to end, beside adnanh/webhook; a
             fast handler's start latency beside a slow one's backlog (isolation.py)
  scale      accept latency at 10 k vs 1 M rows, RSS, the purge of 1 M rows under load
  console    the console's pages with 1 M rows in the inbox
The parts they share (servers, PostgreSQL, cgroups, wrk, pre-filled inboxes, the report)
are the package bench/harness/. Standard library only.

Results go to bench/out/*.json and, with --results FILE, into FILE between its
`<!-- BEGIN name -->` and `<!-- END name -->` markers.

--smoke proves a scenario still runs, in seconds (bench.sh: BENCH_SMOKE=1): the same servers,
wrk and report with every size cut down (SMOKE below); its figures mean nothing.
"""
import argparse
import os
import signal
import sys

from harness.cgroups import CAP_PERIOD_US, CAP_QUOTA_US
from harness.host import BENCH
from scenarios import console, handlers, replicas, scale, table

SMOKE = ("one round of 1 s, at most 10 s of waiting for handlers or the purge, inboxes of "
         "1,000 and 10,000 rows (scale, console), 5 GETs of each console page, 20 slow jobs "
         "and 2 s of fast events (handlers' isolation row)")
SCENARIOS = {"table": table, "replicas": replicas, "handlers": handlers, "scale": scale,
             "console": console}


def main():
    ap = argparse.ArgumentParser(description="hookbox benchmark harness (see bench/bench.sh)")
    ap.add_argument("mode", choices=list(SCENARIOS))
    ap.add_argument("--hookbox", required=True)
    ap.add_argument("--ceiling", required=True)
    ap.add_argument("--webhook", default="/usr/bin/webhook")
    ap.add_argument("--data", required=True, help="deliveries for the timed runs")
    ap.add_argument("--warmup-data", required=True, help="other deliveries, for warm-ups")
    ap.add_argument("--scale-data", help="deliveries for the purge window")
    ap.add_argument("--out", required=True)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--purge-max", type=int, default=120, help="longest purge window, s")
    ap.add_argument("--drain-max", type=int, default=120,
                    help="handlers: longest wait after the load for its jobs to be done, s")
    ap.add_argument("--handler-concurrency", type=int,
                    help="handlers: `concurrency: N` written into each handler (default: none)")
    ap.add_argument("--handler-workers", type=int,
                    help="handlers: `workers: N` written into the handler rows' configs "
                         "(default: none, the daemon's default)")
    ap.add_argument("--accept-only-key", default="workers: 0",
                    help="handlers: the top-level YAML that makes the accept-only row's jobs "
                         "wait (default: \"workers: 0\")")
    ap.add_argument("--cap-cores", type=float, default=CAP_QUOTA_US / CAP_PERIOD_US,
                    help="replicas: each replica's CPU cap, in cores (default 0.5)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--wrk-threads", type=int, default=2)
    ap.add_argument("--server-threads", type=int, default=16)
    ap.add_argument("--only", help="regex: run only the servers whose name matches")
    ap.add_argument("--results", help="Markdown file to update between BEGIN/END markers")
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--pg-cluster", default=os.path.join(BENCH, "..", "tests", "pg", "cluster.sh"),
                    help="the script that starts and stops the PostgreSQL rows' cluster")
    ap.add_argument("--smoke", action="store_true",
                    help="a check that the scenario still runs, not a measurement: "
                         "%s; nothing written to --results" % SMOKE)
    args = ap.parse_args()
    # The inboxes of scale (small, large) and console (large); GETs of each console page.
    args.rows, args.gets = (10_000, 1_000_000), 200
    if args.smoke:
        args.rounds, args.duration = 1, 1
        args.drain_max, args.purge_max = min(args.drain_max, 10), min(args.purge_max, 10)
        args.rows, args.gets = (1_000, 10_000), 5
        args.results = None
    args.scale_data = args.scale_data or args.data
    for key in ("hookbox", "ceiling", "webhook", "data", "warmup_data", "scale_data",
                "out", "results", "pg_cluster"):
        if getattr(args, key):
            setattr(args, key, os.path.abspath(getattr(args, key)))
    os.makedirs(args.out, exist_ok=True)
    # SIGTERM as Ctrl-C: unwinds through the finally blocks that stop the servers and remove
    # the PostgreSQL cluster.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    SCENARIOS[args.mode].run(args)


if __name__ == "__main__":
    main()
