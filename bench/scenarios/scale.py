"""`make bench-scale` (bench/bench.sh scale): the inbox at 10 k and 1 M rows (--smoke: 1 k
and 10 k).

Accept latency with 10 thousand and with 1 million old rows already in the inbox
(pre-filled with sqlite3 in one transaction, rows as hookbox writes them, each with one
done job and its attempt); hookbox's RSS at 1 M rows; then the purge of those 1 M rows
(Inbox::Purge through `hookbox purge`, when the binary has that verb) while wrk keeps
sending deliveries: the purge's time and the accept latency while it runs.
"""
import datetime
import json
import os
import subprocess
import time

from harness.host import loadavg, log, memory_kb
from harness.prefill import copy_db, prefilled
from harness.report import emit, fmt_ms, median_run, percentile, short_count
from harness.servers import Hookbox
from harness.wrk import measure, run_wrk


def utc_stamp(t):
    """time.time() as hookbox's log writes times: 2026-11-29T16:05:34.123Z."""
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def server_latencies(log_path, start, end):
    """The accept latencies hookbox logged (latency_ms of each delivery line) between the
    time.time() instants start and end, and the count of each outcome."""
    lo, hi = utc_stamp(start), utc_stamp(end)
    latencies, outcomes = [], {}
    with open(log_path, errors="replace") as f:
        for line in f:
            if '"msg":"delivery"' not in line:
                continue
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if lo <= j.get("time", "") <= hi:
                latencies.append(j.get("latency_ms", 0.0))
                outcomes[j.get("outcome", "?")] = outcomes.get(j.get("outcome", "?"), 0) + 1
    latencies.sort()
    n = len(latencies)
    return {"n": n, "p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99),
            "p999_ms": percentile(latencies, 0.999),
            "max_ms": latencies[-1] if n else 0.0,
            "over_50ms": sum(1 for x in latencies if x > 50),
            "over_100ms": sum(1 for x in latencies if x > 100), "outcomes": outcomes}


def has_purge_verb(args):
    return subprocess.run([args.hookbox, "purge", "--help"], capture_output=True).returncode == 0


def run(args):
    out = os.path.join(args.out, "scale")
    results = {}
    rows_text = []
    small, large = args.rows
    for rows in args.rows:
        src = prefilled(args, rows)
        hb = Hookbox(os.path.join(out, "rows-%d" % rows), args.hookbox, "full", 0,
                     args.server_threads)
        os.makedirs(hb.workdir, exist_ok=True)
        runs = []
        for rnd in range(args.rounds):
            copy_db(src, hb.db)
            r = measure(args, hb, args.duration)
            runs.append(r)
            log("%d rows, round %d: %.0f req/s  p50 %s ms  p99 %s ms  max %s ms  RSS %d MB  load %s"
                % (rows, rnd + 1, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]),
                   fmt_ms(r["max_us"]), r["hwm_kb"] // 1024, r["load_before"]))
        results[rows] = {"runs": runs, "median": median_run(runs)}

    r10k, r1m = results[small]["median"], results[large]["median"]
    rows_text.append("| inbox rows before the run | req/s | p50 ms | p99 ms | max ms | "
                     "non-2xx | peak RSS MB | load before |")
    rows_text.append("|---:|---:|---:|---:|---:|---:|---:|---|")
    for rows, r in ((small, r10k), (large, r1m)):
        rows_text.append("| %s | %.0f | %s | %s | %s | %d | %.0f | %s |" % (
            "{:,}".format(rows), r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]),
            fmt_ms(r["max_us"]), r["non2xx"], r["hwm_kb"] / 1024, r["load_before"]))
    rows_text.append("")
    rows_text.append("Every round (req/s / p50 ms / p99 ms): " + "; ".join(
        "%s rows: %s" % ("{:,}".format(rows), ", ".join(
            "%.0f / %s / %s" % (r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]))
            for r in results[rows]["runs"])) for rows in args.rows) + ".")
    rows_text.append("")
    rows_text.append("%s vs %s: p50 × %.2f, p99 × %.2f, req/s × %.2f." % (
        short_count(large), short_count(small), r1m["p50_us"] / r10k["p50_us"],
        r1m["p99_us"] / r10k["p99_us"], r1m["rps"] / r10k["rps"]))

    # The purge of the 1 M old rows while deliveries keep coming.
    purge = {}
    if has_purge_verb(args):
        purge = purge_under_load(args, out)
        rows_text += purge["text"]
    else:
        rows_text += ["", "Purge: not measured: this hookbox has no `hookbox purge` verb yet "
                      "(Inbox::Purge has no other way in from outside the daemon)."]
    purge.pop("text", None)
    emit(args, "scale", "\n".join(rows_text) + "\n",
         {"results": {str(k): v for k, v in results.items()}, "purge": purge})


def purge_under_load(args, out):
    """hookbox (1 M old rows; --smoke: 10 k) under wrk: first a window without purge, then
    one from 2 s before `hookbox purge` starts until it ends."""
    hb = Hookbox(os.path.join(out, "purge"), args.hookbox, "full", 0, args.server_threads)
    os.makedirs(hb.workdir, exist_ok=True)
    rows = args.rows[1]
    copy_db(prefilled(args, rows), hb.db)
    hb.prepare()
    hb.start()
    state = {}
    try:
        run_wrk(args, hb, args.warmup_data, 1)
        mem_before = memory_kb(hb.proc.pid)
        load_baseline = loadavg()
        t_base = time.time()
        baseline = run_wrk(args, hb, args.data, args.duration)
        baseline["server"] = server_latencies(hb.log.name, t_base, time.time())
        purge_log = open(os.path.join(hb.workdir, "purge.out"), "w+")

        def purge_done():
            if "proc" not in state:
                if time.time() - state.setdefault("wrk_started", time.time()) >= 2:
                    state["t0"] = time.time()
                    state["proc"] = subprocess.Popen(
                        [args.hookbox, "purge", "-c", hb.config_path()], stdout=purge_log,
                        stderr=subprocess.STDOUT)
                return False
            if state["proc"].poll() is None:
                return False
            state.setdefault("t1", time.time())
            return True

        load_during = loadavg()
        during = run_wrk(args, hb, args.scale_data, args.purge_max, stop_when=purge_done)
        if "proc" in state and state["proc"].poll() is None:
            state["proc"].wait()
        state.setdefault("t1", time.time())
        mem_after = memory_kb(hb.proc.pid)
        if "t0" in state:
            during["server"] = server_latencies(hb.log.name, state["t0"], state["t1"])
    finally:
        hb.stop()
    purge_log.seek(0)
    purge_text = " ".join(purge_log.read().split())
    seconds = state["t1"] - state.get("t0", state["t1"])
    left = subprocess.run(["sqlite3", hb.db, "SELECT count(*) FROM inbox WHERE status = "
                           "'processed'"], capture_output=True, text=True).stdout.strip()
    text = ["", "Purge of the {:,} old rows with `hookbox purge` (Inbox::Purge, batches of "
            "500 rows per transaction, from a second process) while wrk keeps sending "
            "deliveries on {} connections:".format(rows, args.connections), "",
            "| | req/s | p50 ms | p99 ms | max ms | non-2xx | load before |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for what, r, load in (("same load, no purge (wrk)", baseline, load_baseline),
                          ("from 2 s before the purge to its end (wrk)", during, load_during)):
        text.append("| %s | %.0f | %s | %s | %s | %d | %s |" % (
            what, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]), fmt_ms(r["max_us"]),
            r["non2xx"], load))
    text += ["", "Accept latency as hookbox logged it (latency_ms of each delivery line, from "
             "the start of hookbox's pipeline, once the request was whole and parsed, to its "
             "answer; the wait for a request thread and the network are wrk's figures only):", "",
             "| | deliveries | p50 ms | p99 ms | p99.9 ms | max ms | over 50 ms | over 100 ms "
             "| outcomes |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for what, r in (("same load, no purge", baseline), ("while the purge ran", during)):
        sv = r.get("server")
        if sv:
            text.append("| %s | %d | %.1f | %.1f | %.1f | %.1f | %d | %d | %s |" % (
                what, sv["n"], sv["p50_ms"], sv["p99_ms"], sv["p999_ms"], sv["max_ms"],
                sv["over_50ms"], sv["over_100ms"],
                ", ".join("%s %d" % kv for kv in sorted(sv["outcomes"].items()))))
    text += ["", "Purge: %.1f s (`%s`); processed rows left: %s. hookbox RSS at %s rows: "
             "%.0f MB before the purge (peak so far %.0f MB), %.0f MB after (peak %.0f MB)." % (
                 seconds, purge_text, left, short_count(rows), mem_before.get("VmRSS", 0) / 1024,
                 mem_before.get("VmHWM", 0) / 1024, mem_after.get("VmRSS", 0) / 1024,
                 mem_after.get("VmHWM", 0) / 1024)]
    if during.get("wrapped"):
        text.append("")
        text.append("The purge outlasted wrk's %d pre-generated deliveries: wrk started over "
                    "%d times, so most deliveries in that window were duplicates (still one "
                    "write transaction each, through the same writer)." % (
                        during["loaded"], during["wrapped"]))
    return {"text": text, "baseline": baseline, "during": during, "seconds": seconds,
            "output": purge_text, "mem_before": mem_before, "mem_after": mem_after}
