"""`make bench` (bench/bench.sh table): the table.

In ONE run, side by side, every server gets the same pre-generated signed deliveries
(bench/gen_deliveries.py) from wrk (bench/deliveries.lua) with the same connections:
  ceiling         a bare cpp-httplib server set up like hookbox's listener (bench/ceiling.cc)
  durable limit   the same server doing the least durable work: the HMAC check, the id and
                  body appended to one file, a group fdatasync before the 200
                  (bench/durable_limit.cc)
  hookbox ...     `durability: full` and `normal`; accept-only (`workers: 0`: the route's
                  jobs are created and wait in the inbox) and with the `file` handler running
                  in 4 workers (each event written to a file, fsynced); and full,
                  accept-only with `tracing.otlp` exporting every delivery's spans to a
                  local stand-in collector (bench/harness/collector.py)
  hookbox full, PostgreSQL
                  accept-only on a throwaway PostgreSQL cluster (tests/pg/cluster.sh, started
                  here with fsync and full_page_writes back on, stopped and removed at the
                  end): one replica, and two replicas (two hookbox processes on one database,
                  each on its own port, each loaded by its own wrk process with half the
                  threads, connections and deliveries; the figures merged)
  adnanh/webhook  verifying the same X-Hub-Signature-256 (payload-hmac-sha256) and running
                  /bin/true
Each round runs every server once (a fresh database per hookbox run, a 1 s warm-up with
other deliveries first); the table shows the median round of each server, its ratios
against the ceiling, the durable limit and adnanh/webhook, the server's CPU time per
request (for the PostgreSQL rows: the hookbox processes' and every process of the
cluster's) and its peak RSS (hookbox's, the larger replica's), and the load average
(uptime) before each run.
"""
import os
import re

from harness.postgres import HookboxPostgres, PgCluster
from harness.report import emit, fmt_ms, load_notes, median_run, rounds_table
from harness.servers import Ceiling, DurableLimit, Hookbox, HookboxTraced, Webhook
from harness.wrk import measure, run_rounds


def run(args):
    out = os.path.join(args.out, "table")
    servers = [Ceiling(os.path.join(out, "ceiling"), args.ceiling, args.server_threads),
               DurableLimit(os.path.join(out, "durable-limit"),
                            os.path.join(os.path.dirname(args.ceiling), "durable_limit"),
                            args.server_threads)]
    for durability in ("full", "normal"):
        for workers in (0, 4):
            servers.append(Hookbox(os.path.join(out, "hookbox-%s-w%d" % (durability, workers)),
                                   args.hookbox, durability, workers, args.server_threads))
    servers.append(HookboxTraced(os.path.join(out, "hookbox-full-traced"), args.hookbox, "full",
                                 args.server_threads))
    cluster = PgCluster(args.pg_cluster, os.path.join(out, "postgres"))
    for replicas in (1, 2):
        servers.append(HookboxPostgres(os.path.join(out, "hookbox-pg-%d" % replicas),
                                       args.hookbox, cluster, replicas, args.server_threads))
    servers.append(Webhook(os.path.join(out, "webhook"), args.webhook, sync=False))
    servers.append(Webhook(os.path.join(out, "webhook-sync"), args.webhook, sync=True))
    if args.only:
        servers = [s for s in servers if re.search(args.only, s.name)]
    hookboxes = (Hookbox, HookboxPostgres)

    def one(s):
        if isinstance(s, hookboxes + (DurableLimit,)):
            s.fresh()
        r = measure(args, s, args.duration)
        if isinstance(s, hookboxes):
            r["rows"] = s.count_rows()
        return r

    def line(s, r):
        return "%-60s %9.0f req/s  p50 %6s ms  p99 %6s ms  non-2xx %d  load %s" % (
            s.name, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]), r["non2xx"],
            r["load_before"])

    with cluster.running(args, any(isinstance(s, HookboxPostgres) for s in servers)):
        runs = run_rounds(args, servers, one, line)

    best = {name: median_run(rs) for name, rs in runs.items()}
    ceiling = best.get(servers[0].name) if isinstance(servers[0], Ceiling) else None
    webhook = next((best[s.name] for s in servers if isinstance(s, Webhook) and not s.sync),
                   None)
    limit = next((best[s.name] for s in servers if isinstance(s, DurableLimit)), None)
    lines = [
        "| server | req/s | p50 ms | p99 ms | max ms | × ceiling | × durable limit | × webhook | "
        "CPU µs/req | peak RSS MB | load before |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s in servers:
        r = best[s.name]
        lines.append("| %s | %.0f | %s | %s | %s | %s | %s | %s | %.0f | %.0f | %s |" % (
            s.name, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]), fmt_ms(r["max_us"]),
            "%.2f" % (r["rps"] / ceiling["rps"]) if ceiling else "-",
            "%.2f" % (r["rps"] / limit["rps"]) if limit else "-",
            "%.1f" % (r["rps"] / webhook["rps"]) if webhook else "-",
            r["cpu_us_per_req"], r["hwm_kb"] / 1024, r["load_before"]))
    notes = []
    for s in servers:
        for r in runs[s.name]:
            notes += load_notes(s.name, r)
            if isinstance(s, hookboxes) and r["wrapped"]:
                notes.append("- %s: wrk ran past the %d pre-generated deliveries (%d restarts): "
                             "the rest were duplicates" % (s.name, r["loaded"], r["wrapped"]))
    text = "\n".join(lines) + "\n\n" + rounds_table(
        "req/s / p50 ms / p99 ms", servers, runs, args.rounds,
        lambda r: "%.0f / %s / %s" % (r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"])))
    if notes:
        text += "\n" + "\n".join(notes) + "\n"
    emit(args, "table", text, {"runs": runs})
