"""`make bench-replicas` (bench/bench.sh replicas): the capacity a second replica adds.

Capacity added by a second hookbox replica on PostgreSQL, simulating separate hosts
on one machine: each replica runs in its own cgroup capped at half a core (CpuCap: cgroup v1's
cpu.cfs_quota_us = 50000 of cpu.cfs_period_us = 100000, or cgroup v2's cpu.max), the cluster
and wrk uncapped. The rows are the table's PostgreSQL rows (accept only, the same deliveries,
wrk threads and connections, split across the replicas the same way) with the caps:
  1 replica capped at 0.5 core, 2 replicas each capped at 0.5 core
and the ratio two / one (target: >= 1.6). Each run also reports each replica's CPU
use over wrk's timed run (/proc/PID/stat, sampled every 50 ms), its cgroup's throttled
periods (cpu.stat), the cluster's and the whole machine's CPU use, and checks that every
thread of each replica is in its cgroup. The cgroups are removed after each run; where none
can be made, the section says "cgroups unavailable" and the rows are skipped.
"""
import os
import re
import threading
import time

from harness.cgroups import CAP_PERIOD_US, CAP_QUOTA_US, CapUnavailable, CpuCap
from harness.host import cpu_seconds, loadavg, log, machine_busy, source_state
from harness.postgres import HookboxPostgres, PgCluster
from harness.report import emit, fmt_ms, load_notes, median_run, rounds_table
from harness.servers import Hookbox
from harness.wrk import run_load, run_rounds


class CappedHookbox(Hookbox):
    """A hookbox replica (`durability: full`, accept only) in its own CpuCap: the cgroup is
    made before the process starts, the process moved into it right after it is started
    (before it listens and before wrk loads it; the threads hookbox starts later are created
    in it), and the cgroup removed once the process has exited."""

    def __init__(self, workdir, binary, threads, db, cap):
        super().__init__(workdir, binary, "full", 0, threads, db=db)
        self.cap = cap

    def start(self):
        self.cap.create()
        try:
            super().start()
        except BaseException:
            self.cap.remove()
            raise

    def started(self):
        self.cap.join(self.proc.pid)

    def stop(self):
        try:
            super().stop()
        finally:
            self.cap.remove()


class CappedHookboxPostgres(HookboxPostgres):
    """HookboxPostgres whose replicas each run in their own CpuCap (hookbox-bench-replica-N),
    as if each had a host of half a core; the PostgreSQL cluster and wrk are not capped."""

    def __init__(self, workdir, binary, cluster, replicas, threads, quota_us=CAP_QUOTA_US):
        super().__init__(workdir, binary, cluster, replicas, threads)
        self.members = [CappedHookbox(m.workdir, binary, threads, m.db,
                                      CpuCap("replica-%d" % (i + 1), quota_us))
                        for i, m in enumerate(self.members)]
        cores = quota_us / CAP_PERIOD_US
        self.name = ("hookbox full, PostgreSQL, 1 replica capped at %g core "
                     "(accept only, workers: 0)" % cores if replicas == 1 else
                     "hookbox full, PostgreSQL, %d replicas each capped at %g core "
                     "(accept only, workers: 0)" % (replicas, cores))


class CpuSampler:
    """Every 50 ms, from a thread, the cumulative CPU seconds of each pid (/proc/PID/stat:
    utime + stime of all its threads) and of the whole machine, so that they can be read at
    wrk's timed run's start and end (interpolated between the two samples around each)."""

    def __init__(self, pids, interval=0.05):
        self.pids, self.interval = pids, interval
        self.samples = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def sample(self):
        self.samples.append((time.time(), [cpu_seconds(p) for p in self.pids] +
                             [machine_busy()]))

    def run(self):
        while not self.done.wait(self.interval):
            self.sample()

    def __enter__(self):
        self.sample()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.sample()

    def at(self, t):
        """Each series at time t: [pid 1, ..., machine]."""
        s = self.samples
        if t <= s[0][0]:
            return s[0][1]
        for (ta, va), (tb, vb) in zip(s, s[1:]):
            if ta <= t <= tb:
                f = (t - ta) / (tb - ta) if tb > ta else 0.0
                return [a + (b - a) * f for a, b in zip(va, vb)]
        return s[-1][1]


def timed_window(r):
    """(start, end) in Unix seconds of wrk's timed run (of the earliest start and the latest
    end of the wrk processes of a merged run)."""
    runs = r.get("wrk") or [r]
    return (min(w["start_unix"] for w in runs),
            max(w["start_unix"] + w["duration_s"] for w in runs))


def measure_capped(args, server, duration):
    """measure() for CappedHookboxPostgres, plus each replica's CPU use (cores, over wrk's
    timed run), its cgroup's throttling, the cluster's and the machine's CPU use, and the
    check that every thread of each replica is in its cgroup (after the load, when all
    the threads hookbox starts exist)."""
    load = loadavg()
    server.start()
    try:
        members = server.replicas()
        pids = [m.proc.pid for m in members]
        at_start = [m.cap.threads(m.proc.pid) for m in members]
        run_load(args, server, args.warmup_data, 1)
        caps0 = [m.cap.stat() for m in members]
        pg0 = server.cluster.cpu()
        cpu0 = server.cpu()
        with CpuSampler(pids) as sampler:
            r = run_load(args, server, args.data, duration)
        pg1 = server.cluster.cpu()
        cpu1 = server.cpu()
        caps1 = [m.cap.stat() for m in members]
        after = [m.cap.threads(m.proc.pid) for m in members]
        mem = server.memory()
    finally:
        server.stop()
    t0, t1 = timed_window(r)
    v0, v1 = sampler.at(t0), sampler.at(t1)
    secs = t1 - t0
    r["replica_cores"] = [(b - a) / secs for a, b in zip(v0[:-1], v1[:-1])]
    r["machine_cores"] = (v1[-1] - v0[-1]) / secs
    # The cluster is read before and after the whole load (its scan of /proc is too slow
    # to sample): wrk's loading of the deliveries before its clock starts is in the window,
    # while the cluster waits, so this is its CPU over the timed run (idle time excluded).
    r["pg_cores"] = (pg1 - pg0) / r["duration_s"]
    r["throttle"] = [{"periods": b["periods"] - a["periods"],
                      "throttled": b["throttled"] - a["throttled"],
                      "throttled_s": b["throttled_s"] - a["throttled_s"]}
                     for a, b in zip(caps0, caps1)]
    r["threads_at_start"] = at_start
    r["threads_after"] = after
    r["cgroups"] = [m.cap.describe() for m in members]
    r["cpu_us_per_req"] = (cpu1 - cpu0) * 1e6 / max(r["requests"], 1)
    r["hwm_kb"] = mem.get("VmHWM", 0)
    r["load_before"] = load
    r["load_after"] = loadavg()
    return r


def run(args):
    """One hookbox replica capped at half a core against two, each capped at half a core, on
    one uncapped PostgreSQL cluster, loaded by uncapped wrk as the table's PostgreSQL rows."""
    out = os.path.join(args.out, "replicas")
    cluster = PgCluster(args.pg_cluster, os.path.join(out, "postgres"))
    quota_us = int(round(args.cap_cores * CAP_PERIOD_US))
    servers = [CappedHookboxPostgres(os.path.join(out, "hookbox-pg-capped-%d" % n),
                                     args.hookbox, cluster, n, args.server_threads, quota_us)
               for n in (1, 2)]
    if args.only:
        servers = [s for s in servers if re.search(args.only, s.name)]
    probe = CpuCap("probe", quota_us)
    try:
        probe.create()
        cap_text = probe.describe().replace(probe.name, "hookbox-bench-replica-N")
    except CapUnavailable as e:
        log("cgroups unavailable (%s): the capped replicas rows are skipped" % e)
        emit(args, "replicas", "cgroups unavailable: %s. The capped replicas rows were "
             "skipped.\n" % e, {"unavailable": str(e)})
        return
    finally:
        probe.remove()

    def one(s):
        s.fresh()
        r = measure_capped(args, s, args.duration)
        r["rows"] = s.count_rows()
        return r

    def line(s, r):
        return ("%-74s %7.0f req/s  p50 %6s ms  p99 %6s ms  replicas %s cores  "
                "PostgreSQL %.2f  machine %.2f  threads in cgroup %s  load %s" % (
                    s.name, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]),
                    "+".join("%.2f" % c for c in r["replica_cores"]), r["pg_cores"],
                    r["machine_cores"],
                    ",".join("%d/%d" % (i, n) for n, i in r["threads_after"]),
                    r["load_before"]))

    built = source_state()
    with cluster.running(args):
        runs = run_rounds(args, servers, one, line)

    best = {name: median_run(rs) for name, rs in runs.items()}
    lines = ["| server | req/s | p50 ms | p99 ms | max ms | CPU per replica, cores | "
             "throttled periods per replica | PostgreSQL cores | machine busy cores | "
             "CPU µs/req | load before |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in servers:
        r = best[s.name]
        lines.append("| %s | %.0f | %s | %s | %s | %s | %s | %.2f | %.2f | %.0f | %s |" % (
            s.name, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]), fmt_ms(r["max_us"]),
            " + ".join("%.2f" % c for c in r["replica_cores"]),
            ", ".join("%d of %d" % (t["throttled"], t["periods"]) for t in r["throttle"]),
            r["pg_cores"], r["machine_cores"], r["cpu_us_per_req"], r["load_before"]))
    text = "hookbox built from %s.\n\n" % built + "\n".join(lines) + "\n"
    text += "\n" + rounds_table(
        "req/s / p50 ms / p99 ms / cores per replica", servers, runs, args.rounds,
        lambda r: "%.0f / %s / %s / %s" % (r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]),
                                           " + ".join("%.2f" % c for c in r["replica_cores"])))
    ratio = {}
    if len(servers) == 2:
        one, two = (runs[s.name] for s in servers)
        ratio = {"median": best[servers[1].name]["rps"] / best[servers[0].name]["rps"],
                 "rounds": [b["rps"] / a["rps"] for a, b in zip(one, two)]}
        verdict = ("met" if ratio["median"] >= 1.6 else
                   "missed by %.0f %%" % ((1 - ratio["median"] / 1.6) * 100))
        text += ("\nTwo capped replicas ÷ one capped replica (median rounds): %.0f ÷ %.0f = "
                 "**%.2f ×** (target ≥ 1.6: %s); per round: %s.\n" % (
                     best[servers[1].name]["rps"], best[servers[0].name]["rps"],
                     ratio["median"], verdict,
                     ", ".join("%.2f" % x for x in ratio["rounds"])))
    checks = [(n, i) for s in servers for r in runs[s.name]
              for n, i in r["threads_at_start"] + r["threads_after"]]
    all_in = all(n == i for n, i in checks)
    after = [n for s in servers for r in runs[s.name] for n, _ in r["threads_after"]]
    counts = (min(after), max(after))
    text += ("\nCaps: %s (read back after writing). %s\n" % (
        cap_text, "Every thread of every replica was in its cgroup, checked right after "
        "start and after each load (%s threads per replica after the load)." % (
            "%d to %d" % counts if counts[0] != counts[1] else "%d" % counts[0])
        if all_in else "NOT every thread was in its cgroup: %s." % checks))
    notes = []
    for s in servers:
        for r in runs[s.name]:
            notes += load_notes(s.name, r)
            if r["wrapped"]:
                notes.append("- %s: wrk ran past the %d pre-generated deliveries (%d restarts)"
                             % (s.name, r["loaded"], r["wrapped"]))
    if notes:
        text += "\n" + "\n".join(notes) + "\n"
    emit(args, "replicas", text, {"runs": runs, "ratio": ratio})
