"""The load: wrk with bench/deliveries.lua against one server or every replica of one at
once (their figures merged as one wrk would compute them), and measure(), the run of one
server (start, warm-up, timed load, stop) with its CPU and memory."""
import json
import math
import os
import signal
import subprocess
import time

from harness.host import BENCH, loadavg, log


def start_wrk(server, data, duration, threads, connections, part=0, parts=1, barrier=None):
    """wrk with bench/deliveries.lua against server, started; with parts > 1, this process
    sends share `part` of data, starts its timed run with the others (files barrier.N) and
    reports its whole latency distribution too."""
    argv = ["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % duration,
            "--timeout", "10s", "-s", os.path.join(BENCH, "deliveries.lua"), server.url(),
            "--", data, server.path(), str(threads)]
    if parts > 1:
        argv += [str(part), str(parts), barrier]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wrk_go_file(pid):
    """The file deliveries.lua creates in wrk process pid once every thread has loaded its
    deliveries: its timed run starts then (done() removes it)."""
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", "wrk-deliveries-go.%d" % pid)


def wrk_result(proc):
    """The BENCHJSON dict of a started wrk, once it ends (with "hist" when it printed one)."""
    out, _ = proc.communicate()
    r = None
    for line in out.split("\n"):
        if line.startswith("BENCHJSON "):
            r = json.loads(line[len("BENCHJSON "):])
        elif line.startswith("BENCHHIST ") and r is not None:
            r["hist"] = json.loads(line[len("BENCHHIST "):])
    if r is None:
        raise RuntimeError("wrk failed:\n" + out)
    return r


def run_wrk(args, server, data, duration, stop_when=None):
    """Runs wrk with bench/deliveries.lua against server; returns the BENCHJSON dict.
    With stop_when (a callable polled every 50 ms from when wrk's timed run starts), wrk is
    interrupted (SIGINT: it stops and reports what it measured so far) as soon as
    stop_when() is true."""
    proc = start_wrk(server, data, duration, args.wrk_threads, args.connections)
    if stop_when:
        while proc.poll() is None and not os.path.exists(wrk_go_file(proc.pid)):
            time.sleep(0.01)
        while proc.poll() is None and not stop_when():
            time.sleep(0.05)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    return wrk_result(proc)


def wrk_percentile(hist, total, p):
    """wrk's stats_percentile over a distribution [[µs, count], ...] sorted by µs."""
    rank = math.floor(p / 100.0 * total + 0.5 + 0.5)  # C's round(p/100 * count + 0.5)
    seen = 0
    for value, count in hist:
        seen += count
        if seen >= rank:
            return value
    return 0


def merge_wrk(results):
    """One result from those of wrk processes run at once against the replicas: requests,
    req/s, errors and restarts added up; percentiles and mean from the merged latency
    distribution (as one wrk would compute them); max the larger."""
    merged_hist = {}
    for r in results:
        for value, count in r.pop("hist"):
            merged_hist[value] = merged_hist.get(value, 0) + count
    hist = sorted(merged_hist.items())
    total = sum(count for _, count in hist)
    m = {key: sum(r[key] for r in results) for key in (
        "requests", "rps", "non2xx", "connect_errors", "read_errors", "write_errors",
        "timeouts", "wrapped", "loaded")}
    m["duration_s"] = max(r["duration_s"] for r in results)
    # How far apart the processes' timed runs started (deliveries.lua lines them up).
    m["start_skew_s"] = (max(r["start_unix"] for r in results) -
                         min(r["start_unix"] for r in results))
    m["max_us"] = max(r["max_us"] for r in results)
    for p in (50, 90, 99):
        m["p%d_us" % p] = wrk_percentile(hist, total, p)
    m["mean_us"] = sum(v * c for v, c in hist) / max(total, 1)
    m["wrk"] = results
    return m


def run_load(args, server, data, duration):
    """wrk against every replica of server at once: one wrk process each, with an equal share
    of the threads (at least 1), of the connections (args.connections in all) and of the
    deliveries (disjoint shares, together the whole file); their figures merged."""
    replicas = server.replicas()
    n = len(replicas)
    if n == 1:
        return run_wrk(args, replicas[0], data, duration)
    threads = max(1, args.wrk_threads // n)
    barrier = os.path.join(args.out, "wrk-barrier")
    barrier_files = ["%s.%d" % (barrier, i) for i in range(n)]
    procs = []
    try:
        for path in barrier_files:  # left by an interrupted run
            if os.path.exists(path):
                os.remove(path)
        for i, rep in enumerate(replicas):
            connections = args.connections // n + (1 if i < args.connections % n else 0)
            procs.append(start_wrk(rep, data, duration, threads, max(connections, threads),
                                   part=i, parts=n, barrier=barrier))
        return merge_wrk([wrk_result(p) for p in procs])
    finally:
        for path in barrier_files:
            if os.path.exists(path):
                os.remove(path)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
                if os.path.exists(wrk_go_file(p.pid)):  # a killed wrk leaves it behind
                    os.remove(wrk_go_file(p.pid))


def measure(args, server, duration):
    """Starts server, warms it up, runs wrk, stops it; the run's figures."""
    load = loadavg()
    server.start()
    try:
        run_load(args, server, args.warmup_data, 1)
        cpu0 = server.cpu()
        r = run_load(args, server, args.data, duration)
        cpu1 = server.cpu()
        mem = server.memory()
    finally:
        server.stop()
    r["cpu_us_per_req"] = (cpu1 - cpu0) * 1e6 / max(r["requests"], 1)
    r["rss_kb"] = mem.get("VmRSS", 0)
    r["hwm_kb"] = mem.get("VmHWM", 0)
    r["load_before"] = load
    r["load_after"] = loadavg()
    return r


def run_rounds(args, servers, one, line):
    """args.rounds rounds, each running one(server) for every server in turn: each server's
    figures, round by round, by its name. line(server, r) is what the log says of a run,
    after "round N  "."""
    runs = {s.name: [] for s in servers}
    for rnd in range(1, args.rounds + 1):
        for s in servers:
            r = one(s)
            runs[s.name].append(r)
            log("round %d  %s" % (rnd, line(s, r)))
    return runs
