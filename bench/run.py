#!/usr/bin/env python3
"""The benchmark harness behind `make bench`, `make bench-replicas`, `make bench-handlers`
and `make bench-scale` (bench/bench.sh builds everything and calls it). Standard library only.

table: in ONE run, side by side, every server gets the same pre-generated signed deliveries
(bench/gen_deliveries.py) from wrk (bench/deliveries.lua) with the same connections:
  ceiling         a bare cpp-httplib server set up like hookbox's listener (bench/ceiling.cc)
  hookbox ...     `durability: full` and `normal`; accept-only (`workers: 0`: the route's
                  jobs are created and wait in the inbox) and with the `file` handler running
                  in 4 workers (each event written to a file, fsynced)
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
against the ceiling and against adnanh/webhook, the server's CPU time per request (for the
PostgreSQL rows: the hookbox processes' and every process of the cluster's) and its peak
RSS (hookbox's, the larger replica's), and the load average (uptime) before each run.

replicas: capacity added by a second hookbox replica on PostgreSQL, simulating separate hosts
on one machine: each replica runs in its own cgroup capped at half a core (CpuCap: cgroup v1's
cpu.cfs_quota_us = 50000 of cpu.cfs_period_us = 100000, or cgroup v2's cpu.max), the cluster
and wrk uncapped. The rows are the table's PostgreSQL rows (accept only, the same deliveries,
wrk threads and connections, split across the replicas the same way) with the caps:
  1 replica capped at 0.5 core, 2 replicas each capped at 0.5 core
and the ratio two / one (issue 12's target: >= 1.6). Each run also reports each replica's CPU
use over wrk's timed run (/proc/PID/stat, sampled every 50 ms), its cgroup's throttled
periods (cpu.stat), the cluster's and the whole machine's CPU use, and checks that every
thread of each replica is in its cgroup. The cgroups are removed after each run; where none
can be made, the section says "cgroups unavailable" and the rows are skipped.

handlers: hookbox `durability: full` (SQLite) with each handler kind on the route, every run
with its own fresh database, loaded by wrk as in the table; each run then waits until every
job its load created is done or dead (polling the jobs table, at most --drain-max s after
the load) and reports the accepted req/s during the load and the events handled end to end
per second: done jobs / (load seconds + seconds from the end of the load until the last
attempt finished, attempts.finished_at):
  accept only     the route's file handler with `workers: 0` (--accept-only-key): the jobs
                  wait; the accept rate the handler rows compare with
  exec            command ["/bin/true"]
  file            dir under the run's directory (fsync, rename, fsync per event)
  http            POST to a ceiling server (bench/ceiling.cc, started with the row: it
                  answers every POST 200)
  adnanh/webhook  its default (answers, then runs the command in the background): a /bin/sh
                  script appending the delivery id to a file, so its runs are counted (every
                  request runs it, redeliveries included) and the file's mtime is when the
                  last one ended
A handler's `concurrency: N` (--handler-concurrency) and `workers: N` (--handler-workers) are
written into the handler rows' configs only when given. Before its timed load, each run's
warm-up events are handled first (the wait is not timed).

scale: accept latency with 10 thousand and with 1 million old rows already in the inbox
(pre-filled with sqlite3 in one transaction, rows as hookbox writes them, each with one
done job and its attempt); hookbox's RSS at 1 M rows; then the purge of those 1 M rows
(Inbox::Purge through `hookbox purge`, when the binary has that verb) while wrk keeps
sending deliveries: the purge's time and the accept latency while it runs.

Results go to bench/out/*.json and, with --results FILE, into FILE between its
`<!-- BEGIN name -->` and `<!-- END name -->` markers.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import urllib.parse
import socket
import statistics
import subprocess
import sys
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
SECRET = "bench-github-secret"
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------- helpers

def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_seconds(pid, children=False):
    """utime + stime of pid (and of its waited-for children) in seconds."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / CLK_TCK


def memory_kb(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def wait_port(port, proc, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited at start (code %s)" % proc.returncode)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not listen on %d" % port)


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    debian = "?"
    try:
        with open("/etc/debian_version") as f:
            debian = f.read().strip()
    except OSError:
        pass
    fs = subprocess.run(["df", "-T", BENCH], capture_output=True, text=True).stdout.split("\n")
    fstype = fs[1].split()[1] if len(fs) > 1 and fs[1] else "?"
    return "%s, %d cores, %.0f GiB RAM, Debian %s, Linux %s, %s disk" % (
        model, os.cpu_count(), mem_kb / 1048576, debian, platform.release(), fstype)


def tool_versions(args):
    def first_line(argv):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=5)
            return (r.stdout + r.stderr).strip().split("\n")[0]
        except OSError:
            return "?"
    return "wrk %s; %s; cpp-httplib %s; SQLite %s%s" % (
        first_line(["dpkg-query", "-W", "-f=${Version}", "wrk"]),
        first_line([args.webhook, "-version"]),
        first_line(["dpkg-query", "-W", "-f=${Version}", "libcpp-httplib-dev"]),
        first_line(["sqlite3", "--version"]).split(" ")[0],
        "; PostgreSQL %s" % args.pg_version if getattr(args, "pg_version", None) else "")


# ------------------------------------------------------------------------------- servers

def raise_nofile():
    """Every server runs with its soft open-file limit raised to the hard one (as hookbox
    does for itself at start; its unit sets LimitNOFILE=65536), whatever the shell's soft
    limit: adnanh/webhook starts a process with pipes per request, without bound, and
    silently drops runs when it runs out of descriptors. Raising the hard limit itself
    needs CAP_SYS_RESOURCE, which a sandbox may not grant."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536 if hard == resource.RLIM_INFINITY else min(65536, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Server:
    """A server under test: started, measured, stopped."""
    name = "?"
    children_cpu = False  # count the CPU of its child processes too (webhook's /bin/true)

    def __init__(self, workdir):
        self.workdir = workdir
        self.proc = None
        self.port = None

    def argv(self):
        raise NotImplementedError

    def path(self):
        return "/hooks/github"

    def prepare(self):
        os.makedirs(self.workdir, exist_ok=True)

    def start(self):
        self.prepare()
        self.port = self.port or free_port()
        self.log = open(os.path.join(self.workdir, "server.log"), "wb")
        self.proc = subprocess.Popen(self.argv(), stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=self.workdir, preexec_fn=raise_nofile)
        try:
            self.started()
        except BaseException:
            self.stop()
            raise
        wait_port(self.port, self.proc)

    def started(self):
        """Called right after the process is started, before it listens (CpuCap.join)."""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()
        self.proc = None

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def replicas(self):
        """The listeners wrk loads: one wrk process each."""
        return [self]

    def cpu(self):
        """CPU seconds so far of what this server's CPU µs/req counts."""
        return cpu_seconds(self.proc.pid, self.children_cpu)

    def memory(self):
        return memory_kb(self.proc.pid)


class Ceiling(Server):
    name = "ceiling (bare cpp-httplib)"

    def __init__(self, workdir, binary, threads):
        super().__init__(workdir)
        self.binary, self.threads = binary, threads

    def argv(self):
        return [self.binary, str(self.port), str(self.threads)]


HOOKBOX_CONFIG = """\
# Written by bench/run.py.
listen: 127.0.0.1:{port}
admin_listen: ""
database: "{db}"
durability: {durability}
limits: {{max_body: 1MiB, read_timeout: 10s, threads: {threads}}}
workers: {workers}
endpoints:
  - name: github
    path: /hooks/github
    provider: github
    secrets: [{{value: "{secret}"}}]
    routes:
      - events: ["push"]
        handlers: [{{file: {{dir: "{dir}/events"}}}}]
"""


class Hookbox(Server):
    def __init__(self, workdir, binary, durability, workers, threads, db=None):
        super().__init__(workdir)
        self.binary, self.durability, self.workers, self.threads = (
            binary, durability, workers, threads)
        self.db = db or os.path.join(workdir, "inbox.db")
        what = "accept only, workers: 0" if workers == 0 else "file handler, workers: %d" % workers
        self.name = "hookbox %s (%s)" % (durability, what)

    def config_path(self):
        return os.path.join(self.workdir, "config.yaml")

    def prepare(self):
        super().prepare()
        self.port = self.port or free_port()
        with open(self.config_path(), "w") as f:
            f.write(HOOKBOX_CONFIG.format(port=self.port, db=self.db, durability=self.durability,
                                          threads=self.threads, workers=self.workers,
                                          secret=SECRET, dir=self.workdir))

    def argv(self):
        return [self.binary, "serve", "-c", self.config_path()]

    def fresh(self):
        """Removes the database and handler output of an earlier run."""
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.db + suffix):
                os.remove(self.db + suffix)
        shutil.rmtree(os.path.join(self.workdir, "events"), ignore_errors=True)

    def count_rows(self):
        r = subprocess.run(["sqlite3", self.db, "SELECT count(*) FROM inbox"],
                           capture_output=True, text=True)
        return int(r.stdout.strip() or 0)


class PgCluster:
    """The throwaway PostgreSQL cluster of the PostgreSQL rows, made by the tests' own
    tests/pg/cluster.sh (initdb into a new temporary directory, the server on a unix socket
    there only, trust auth; as root it belongs to Debian's postgres user and runs through
    runuser). cluster.sh turns fsync and full_page_writes off for the tests; they are set back
    on here (ALTER SYSTEM, reload, checked), so with synchronous_commit at its default (on)
    a commit is on disk, as `durability: full` promises. The cluster lives under the bench's
    output directory (the disk the SQLite rows use) unless that path is too long for a unix
    socket; stop() stops it and removes its directory."""

    def __init__(self, script, workdir):
        self.script, self.workdir = script, workdir
        self.state = os.path.join(workdir, "cluster.state")
        self.dir = self.bin = None
        self.version = "?"

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        env = dict(os.environ)
        # The socket path (dir/hookbox-pg.XXXXXX/.s.PGSQL.5432) must stay under 107 bytes.
        if len(self.workdir) <= 70:
            env["TMPDIR"] = self.workdir
        log("starting a PostgreSQL cluster (%s start)" % self.script)
        r = subprocess.run([self.script, "start", self.state], env=env, capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise RuntimeError("%s start failed:\n%s%s" % (self.script, r.stdout, r.stderr))
        with open(self.state) as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                if key == "PG_DIR":
                    self.dir = value.strip("'")
                elif key == "PG_BIN":
                    self.bin = value.strip("'")
        for setting in ("fsync", "full_page_writes", "synchronous_commit"):
            self.psql("postgres", "ALTER SYSTEM SET %s = on" % setting)
        self.psql("postgres", "SELECT pg_reload_conf()")
        want = "on|on|on"
        for _ in range(100):
            got = self.psql("postgres", "SELECT current_setting('fsync') || '|' || "
                            "current_setting('full_page_writes') || '|' || "
                            "current_setting('synchronous_commit')")
            if got == want:
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("PostgreSQL settings fsync|full_page_writes|synchronous_commit "
                               "are %s, not %s" % (got, want))
        self.version = self.psql("postgres", "SHOW server_version").split(" ")[0]
        os.sync()  # initdb ran with --no-sync: its write-back must not slow the first run
        log("PostgreSQL %s on %s (fsync, full_page_writes, synchronous_commit on)" % (
            self.version, self.dir))

    def stop(self):
        if os.path.exists(self.state):
            subprocess.run([self.script, "stop", self.state], check=False)
            log("stopped and removed the PostgreSQL cluster %s" % self.dir)

    def url(self, db):
        return "postgresql:///%s?host=%s&user=postgres" % (db, self.dir)

    def psql(self, db, sql):
        """Runs one statement (its own transaction), returns its output, unaligned."""
        r = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-q", "-A", "-t",
                            "-v", "ON_ERROR_STOP=1", "-h", self.dir, "-U", "postgres",
                            "-d", db, "-c", sql], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("psql %r failed: %s" % (sql, r.stderr.strip()))
        return r.stdout.strip()

    def postmaster_pid(self):
        with open(os.path.join(self.dir, "data", "postmaster.pid")) as f:
            return int(f.readline())

    def cpu(self):
        """CPU seconds of the whole cluster so far: the postmaster with its reaped children
        and every live child (backends, checkpointer, WAL writer, ...) with theirs."""
        pm = self.postmaster_pid()
        total = cpu_seconds(pm, children=True)
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pm:
                total += cpu_seconds(int(entry), children=True)
        return total


class HookboxPostgres:
    """hookbox `durability: full`, accept only, on PostgreSQL: `replicas` hookbox processes
    on one database of the cluster, each on its own port. Measured like one server: wrk
    loads every replica at once (run_load), the CPU is the replicas' and the cluster's, the
    peak RSS the larger replica's."""
    DATABASE = "hookbox_bench"

    def __init__(self, workdir, binary, cluster, replicas, threads):
        self.workdir, self.cluster = workdir, cluster
        self.members = [Hookbox(os.path.join(workdir, "replica-%d" % (i + 1)), binary, "full",
                                0, threads, db="-") for i in range(replicas)]
        self.name = "hookbox full, PostgreSQL (%d replica%s, accept only, workers: 0)" % (
            replicas, "" if replicas == 1 else "s")

    def fresh(self):
        """A new, empty database (hookbox's serve creates the schema); then a checkpoint,
        so the one the database's creation calls for does not land in the run."""
        self.cluster.psql("postgres",
                          "DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.DATABASE)
        self.cluster.psql("postgres", "CREATE DATABASE %s" % self.DATABASE)
        self.cluster.psql("postgres", "CHECKPOINT")
        for m in self.members:
            m.db = self.cluster.url(self.DATABASE)
            shutil.rmtree(os.path.join(m.workdir, "events"), ignore_errors=True)

    def start(self):
        try:
            for m in self.members:  # one after the other: each serve migrates at start
                m.start()
        except BaseException:
            self.stop()
            raise

    def stop(self):
        for m in self.members:
            m.stop()

    def replicas(self):
        return self.members

    def cpu(self):
        return sum(cpu_seconds(m.proc.pid) for m in self.members) + self.cluster.cpu()

    def memory(self):
        mems = [memory_kb(m.proc.pid) for m in self.members]
        return {key: max(mem.get(key, 0) for mem in mems) for key in ("VmRSS", "VmHWM")}

    def count_rows(self):
        return int(self.cluster.psql(self.DATABASE, "SELECT count(*) FROM inbox") or 0)


CGROUP_V1_CPU = "/sys/fs/cgroup/cpu"  # cgroup v1's cpu controller (cpu.cfs_quota_us)
CGROUP_V2 = "/sys/fs/cgroup"          # cgroup v2's unified hierarchy, when mounted there
CAP_PERIOD_US = 100000
CAP_QUOTA_US = 50000                  # half a core per replica (--cap-cores)


class CapUnavailable(Exception):
    """No cgroup could be made to cap a process's CPU (the replicas rows are skipped)."""


def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


def read_file(path):
    with open(path) as f:
        return f.read()


class CpuCap:
    """A cgroup that caps the CPU of the processes put into it, to run a hookbox replica as
    if on its own host with CAP_QUOTA_US / CAP_PERIOD_US of a core. cgroup v1 (its cpu
    controller mounted at /sys/fs/cgroup/cpu): the folder /sys/fs/cgroup/cpu/hookbox-bench-NAME
    with cpu.cfs_period_us and cpu.cfs_quota_us. cgroup v2 (/sys/fs/cgroup/cgroup.controllers
    and no v1 cpu folder): the folder /sys/fs/cgroup/hookbox-bench-NAME with cpu.max, after
    +cpu in the parent's cgroup.subtree_control. Needs root (or delegation). create() makes
    it, join(pid) moves a process (with every thread it has; those it starts later are
    created in it), threads(pid) checks where its threads are, remove() deletes the folder
    once it is empty."""

    def __init__(self, name, quota_us=CAP_QUOTA_US, period_us=CAP_PERIOD_US):
        self.name = "hookbox-bench-" + name
        self.quota_us, self.period_us = quota_us, period_us
        self.version = self.path = None

    @staticmethod
    def hierarchy():
        """("v1" | "v2", the folder new cgroups go into), or CapUnavailable."""
        if os.path.exists(os.path.join(CGROUP_V1_CPU, "cpu.cfs_quota_us")):
            return "v1", CGROUP_V1_CPU
        if os.path.exists(os.path.join(CGROUP_V2, "cgroup.controllers")):
            return "v2", CGROUP_V2
        raise CapUnavailable("neither cgroup v1's cpu controller (%s) nor cgroup v2 (%s/"
                             "cgroup.controllers) is mounted" % (CGROUP_V1_CPU, CGROUP_V2))

    def describe(self):
        if self.version == "v1":
            return "cgroup v1, %s: cpu.cfs_period_us = %d, cpu.cfs_quota_us = %d" % (
                self.path, self.period_us, self.quota_us)
        return "cgroup v2, %s: cpu.max = \"%d %d\"" % (self.path, self.quota_us, self.period_us)

    def create(self):
        version, parent = self.hierarchy()
        path = os.path.join(parent, self.name)
        try:
            if os.path.isdir(path):  # left by an interrupted run; fails if still in use
                os.rmdir(path)
            os.mkdir(path)
        except OSError as e:
            raise CapUnavailable("cannot create %s: %s" % (path, e.strerror or e))
        self.version, self.path = version, path
        try:
            if version == "v1":
                write_file(os.path.join(path, "cpu.cfs_period_us"), str(self.period_us))
                write_file(os.path.join(path, "cpu.cfs_quota_us"), str(self.quota_us))
                got = (int(read_file(os.path.join(path, "cpu.cfs_period_us"))),
                       int(read_file(os.path.join(path, "cpu.cfs_quota_us"))))
            else:
                control = os.path.join(parent, "cgroup.subtree_control")
                if "cpu" not in read_file(control).split():
                    write_file(control, "+cpu")
                write_file(os.path.join(path, "cpu.max"), "%d %d" % (self.quota_us,
                                                                     self.period_us))
                quota, period = read_file(os.path.join(path, "cpu.max")).split()
                got = (int(period), int(quota))
            if got != (self.period_us, self.quota_us):
                raise CapUnavailable("%s reads back period %d, quota %d" % ((path,) + got))
        except OSError as e:
            self.remove()
            raise CapUnavailable("cannot set the cap of %s: %s" % (path, e.strerror or e))
        except BaseException:
            self.remove()
            raise

    def join(self, pid):
        """Moves process pid, all its threads, into the cgroup."""
        write_file(os.path.join(self.path, "cgroup.procs"), str(pid))

    def threads(self, pid):
        """(threads of pid, how many of them are in this cgroup): each thread's
        /proc/PID/task/TID/cgroup names it, and the cgroup's own thread list (v1: tasks,
        v2: cgroup.threads) holds it."""
        listed = set(read_file(os.path.join(
            self.path, "tasks" if self.version == "v1" else "cgroup.threads")).split())
        tids = os.listdir("/proc/%d/task" % pid)
        inside = 0
        for tid in tids:
            try:
                lines = read_file("/proc/%d/task/%s/cgroup" % (pid, tid)).split("\n")
            except OSError:  # the thread ended meanwhile
                continue
            for line in lines:
                parts = line.split(":", 2)
                if len(parts) != 3:
                    continue
                mine = ("cpu" in parts[1].split(",") if self.version == "v1"
                        else parts[0] == "0" and parts[1] == "")
                if mine and parts[2].rstrip("/").endswith("/" + self.name) and tid in listed:
                    inside += 1
                    break
        return len(tids), inside

    def stat(self):
        """The cgroup's throttling counters: periods with runnable tasks, periods in which it
        was throttled, seconds throttled (v1 and v2 name them differently)."""
        fields = {}
        try:
            for line in read_file(os.path.join(self.path, "cpu.stat")).split("\n"):
                key, _, value = line.partition(" ")
                if value.strip().isdigit():
                    fields[key] = int(value)
        except OSError:
            pass
        throttled_s = (fields.get("throttled_time", 0) / 1e9 if self.version == "v1"
                       else fields.get("throttled_usec", 0) / 1e6)
        return {"periods": fields.get("nr_periods", 0),
                "throttled": fields.get("nr_throttled", 0), "throttled_s": throttled_s}

    def remove(self):
        """Deletes the cgroup folder (its processes must have exited; retried briefly while
        the kernel still counts a reaped one)."""
        if not self.path:
            return
        for _ in range(40):
            try:
                os.rmdir(self.path)
                break
            except FileNotFoundError:
                break
            except OSError as e:
                err = e
                time.sleep(0.05)
        else:
            log("could not remove the cgroup %s: %s" % (self.path, err))
        self.path = None


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


WEBHOOK_HOOKS = """\
[{{"id": "github", "execute-command": "/bin/true", "command-working-directory": "/tmp",
   "include-command-output-in-response": {sync},
   "trigger-rule": {{"match": {{"type": "payload-hmac-sha256", "secret": "{secret}",
     "parameter": {{"source": "header", "name": "X-Hub-Signature-256"}}}}}}}}]
"""


class Webhook(Server):
    children_cpu = True

    def __init__(self, workdir, binary, sync):
        super().__init__(workdir)
        self.binary, self.sync = binary, sync
        self.name = "adnanh/webhook (%s)" % (
            "waits for /bin/true" if sync else "default: /bin/true in background")

    def prepare(self):
        super().prepare()
        with open(os.path.join(self.workdir, "hooks.json"), "w") as f:
            f.write(WEBHOOK_HOOKS.format(secret=SECRET, sync="true" if self.sync else "false"))

    def argv(self):
        return [self.binary, "-hooks", os.path.join(self.workdir, "hooks.json"),
                "-ip", "127.0.0.1", "-port", str(self.port)]

    def stop(self):
        # Background /bin/true runs still in flight must not spill into the next run.
        time.sleep(0.5)
        super().stop()


# ------------------------------------------------------------------------------- wrk

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


# ------------------------------------------------------------------------------- table

def fmt_ms(us):
    return "%.2f" % (us / 1000.0)


def median_run(runs):
    """The run with the median req/s (the whole run, so its latencies belong with it)."""
    ordered = sorted(runs, key=lambda r: r["rps"])
    return ordered[len(ordered) // 2]


def table(args):
    out = os.path.join(args.out, "table")
    servers = [Ceiling(os.path.join(out, "ceiling"), args.ceiling, args.server_threads)]
    for durability in ("full", "normal"):
        for workers in (0, 4):
            servers.append(Hookbox(os.path.join(out, "hookbox-%s-w%d" % (durability, workers)),
                                   args.hookbox, durability, workers, args.server_threads))
    cluster = PgCluster(args.pg_cluster, os.path.join(out, "postgres"))
    for replicas in (1, 2):
        servers.append(HookboxPostgres(os.path.join(out, "hookbox-pg-%d" % replicas),
                                       args.hookbox, cluster, replicas, args.server_threads))
    servers.append(Webhook(os.path.join(out, "webhook"), args.webhook, sync=False))
    servers.append(Webhook(os.path.join(out, "webhook-sync"), args.webhook, sync=True))
    if args.only:
        servers = [s for s in servers if re.search(args.only, s.name)]
    hookboxes = (Hookbox, HookboxPostgres)

    runs = {s.name: [] for s in servers}
    try:
        if any(isinstance(s, HookboxPostgres) for s in servers):
            cluster.start()
            args.pg_version = cluster.version
        for rnd in range(1, args.rounds + 1):
            for s in servers:
                if isinstance(s, hookboxes):
                    s.fresh()
                r = measure(args, s, args.duration)
                if isinstance(s, hookboxes):
                    r["rows"] = s.count_rows()
                runs[s.name].append(r)
                log("round %d  %-60s %9.0f req/s  p50 %6s ms  p99 %6s ms  non-2xx %d  load %s"
                    % (rnd, s.name, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]),
                       r["non2xx"], r["load_before"]))
    finally:
        cluster.stop()

    best = {name: median_run(rs) for name, rs in runs.items()}
    ceiling = best.get(servers[0].name) if isinstance(servers[0], Ceiling) else None
    webhook = next((best[s.name] for s in servers if isinstance(s, Webhook) and not s.sync),
                   None)
    lines = [
        "| server | req/s | p50 ms | p99 ms | max ms | × ceiling | × webhook | CPU µs/req | "
        "peak RSS MB | load before |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s in servers:
        r = best[s.name]
        lines.append("| %s | %.0f | %s | %s | %s | %s | %s | %.0f | %.0f | %s |" % (
            s.name, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]), fmt_ms(r["max_us"]),
            "%.2f" % (r["rps"] / ceiling["rps"]) if ceiling else "-",
            "%.1f" % (r["rps"] / webhook["rps"]) if webhook else "-",
            r["cpu_us_per_req"], r["hwm_kb"] / 1024, r["load_before"]))
    notes = []
    for s in servers:
        for r in runs[s.name]:
            if (r["non2xx"] or r["connect_errors"] or r["read_errors"] or r["write_errors"]
                    or r["timeouts"]):
                notes.append("- %s: %d non-2xx, %d connect / %d read / %d write errors, "
                             "%d timeouts in one round" % (
                                 s.name, r["non2xx"], r["connect_errors"], r["read_errors"],
                                 r["write_errors"], r["timeouts"]))
            if r.get("start_skew_s", 0) > 0.02 * r["duration_s"]:
                notes.append("- %s: its wrk processes started their timed runs %.2f s apart "
                             "(of %.0f s)" % (s.name, r["start_skew_s"], r["duration_s"]))
            if isinstance(s, hookboxes) and r["wrapped"]:
                notes.append("- %s: wrk ran past the %d pre-generated deliveries (%d restarts): "
                             "the rest were duplicates" % (s.name, r["loaded"], r["wrapped"]))
    all_rounds = ["| %s | %s |" % (s.name, " | ".join(
        "%.0f / %s / %s" % (r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]))
        for r in runs[s.name])) for s in servers]
    text = "\n".join(lines)
    text += "\n\nEvery round (req/s / p50 ms / p99 ms):\n\n| server | %s |\n|---|%s\n%s\n" % (
        " | ".join("round %d" % i for i in range(1, args.rounds + 1)),
        "---:|" * args.rounds, "\n".join(all_rounds))
    if notes:
        text += "\n" + "\n".join(notes) + "\n"
    emit(args, "table", text, {"runs": runs})


# ------------------------------------------------------------------------------- replicas

def machine_busy():
    """CPU seconds the whole machine has been busy so far (/proc/stat's cpu line: all but
    idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / CLK_TCK


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


def source_state():
    """The commit the hookbox binary was built from, and the files that differed from it in
    the working tree (bench.sh builds the tree as it is, just before; bench/, the Makefile,
    tests/, docs and Markdown files left out: they are not in the binary)."""
    root = os.path.dirname(BENCH)
    head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "?"
    changed = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", ".",
                              ":!bench", ":!Makefile", ":!tests", ":!docs", ":!*.md"],
                             capture_output=True, text=True).stdout.split("\n")
    changed = [line[3:] for line in changed if line.strip()]
    return "commit %s%s" % (head, ", with uncommitted changes to %s" % ", ".join(changed)
                            if changed else " (clean)")


def replicas(args):
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

    built = source_state()
    runs = {s.name: [] for s in servers}
    try:
        cluster.start()
        args.pg_version = cluster.version
        for rnd in range(1, args.rounds + 1):
            for s in servers:
                s.fresh()
                r = measure_capped(args, s, args.duration)
                r["rows"] = s.count_rows()
                runs[s.name].append(r)
                log("round %d  %-74s %7.0f req/s  p50 %6s ms  p99 %6s ms  replicas %s cores  "
                    "PostgreSQL %.2f  machine %.2f  threads in cgroup %s  load %s" % (
                        rnd, s.name, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]),
                        "+".join("%.2f" % c for c in r["replica_cores"]), r["pg_cores"],
                        r["machine_cores"], ",".join("%d/%d" % (i, n) for n, i in
                                                     r["threads_after"]),
                        r["load_before"]))
    finally:
        cluster.stop()

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
    text += "\nEvery round (req/s / p50 ms / p99 ms / cores per replica):\n\n| server | %s |\n" \
            "|---|%s\n" % (" | ".join("round %d" % i for i in range(1, args.rounds + 1)),
                           "---:|" * args.rounds)
    for s in servers:
        text += "| %s | %s |\n" % (s.name, " | ".join(
            "%.0f / %s / %s / %s" % (r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]),
                                     " + ".join("%.2f" % c for c in r["replica_cores"]))
            for r in runs[s.name]))
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
            if (r["non2xx"] or r["connect_errors"] or r["read_errors"] or r["write_errors"]
                    or r["timeouts"]):
                notes.append("- %s: %d non-2xx, %d connect / %d read / %d write errors, "
                             "%d timeouts in one round" % (
                                 s.name, r["non2xx"], r["connect_errors"], r["read_errors"],
                                 r["write_errors"], r["timeouts"]))
            if r.get("start_skew_s", 0) > 0.02 * r["duration_s"]:
                notes.append("- %s: its wrk processes started their timed runs %.2f s apart "
                             "(of %.0f s)" % (s.name, r["start_skew_s"], r["duration_s"]))
            if r["wrapped"]:
                notes.append("- %s: wrk ran past the %d pre-generated deliveries (%d restarts)"
                             % (s.name, r["loaded"], r["wrapped"]))
    if notes:
        text += "\n" + "\n".join(notes) + "\n"
    emit(args, "replicas", text, {"runs": runs, "ratio": ratio})


# ------------------------------------------------------------------------------- handlers

# hookbox `durability: full` on SQLite with one handler kind on the route; {extra} holds the
# top-level keys the harness was told to write (`workers:` for the accept-only row or
# --handler-workers), {handler} the handler's flow mapping.
HANDLER_CONFIG = """\
# Written by bench/run.py (handlers).
listen: 127.0.0.1:{port}
admin_listen: ""
database: "{db}"
durability: full
limits: {{max_body: 1MiB, read_timeout: 10s, threads: {threads}}}
{extra}endpoints:
  - name: github
    path: /hooks/github
    provider: github
    secrets: [{{value: "{secret}"}}]
    routes:
      - events: ["push"]
        handlers: [{handler}]
"""

# adnanh/webhook's command in the handlers rows: one line per run (the delivery id webhook
# passes as $1), so the harness can count the runs and see when the last one ended.
COUNT_SCRIPT = """\
#!/bin/sh
# Written by bench/run.py: adnanh/webhook runs this once per request it accepts; one line
# (the X-GitHub-Delivery id) per run, appended in one write.
echo "$1" >> "{runs}"
"""

WEBHOOK_COUNT_HOOKS = """\
[{{"id": "github", "execute-command": "{script}", "command-working-directory": "{dir}",
   "pass-arguments-to-command": [{{"source": "header", "name": "X-GitHub-Delivery"}}],
   "trigger-rule": {{"match": {{"type": "payload-hmac-sha256", "secret": "{secret}",
     "parameter": {{"source": "header", "name": "X-Hub-Signature-256"}}}}}}}}]
"""


def rfc3339_unix(text):
    """hookbox's stored times (2026-11-29T16:05:34.123Z) as Unix seconds."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


class HookboxHandler(Hookbox):
    """hookbox full (SQLite) with one handler kind: "accept" (jobs created and left waiting:
    the accept-only rate of the same run), "exec", "file" or "http" (POSTs to a ceiling
    server started with it as the sink: it answers every POST 200). The handler's
    concurrency key and the `workers:` key are written only when the harness is given them.
    The end-to-end figures come from the inbox (jobs and attempts, read with Python's sqlite3
    on the database file)."""
    children_cpu = True  # exec's children

    def __init__(self, workdir, args, kind):
        super().__init__(workdir, args.hookbox, "full", 0, args.server_threads)
        self.kind = kind
        self.extra = ""
        self.sink = None
        self.concurrency = None
        if kind == "accept":
            self.extra = args.accept_only_key.strip() + "\n"
            self.name = "hookbox full (accept only, %s)" % args.accept_only_key.strip()
            return
        if args.handler_workers is not None:
            self.extra = "workers: %d\n" % args.handler_workers
        if kind == "http":
            self.sink = Ceiling(os.path.join(workdir, "sink"), args.ceiling, args.server_threads)
        how = []
        if args.handler_concurrency is not None:
            how.append("concurrency: %d" % args.handler_concurrency)
        if args.handler_workers is not None:
            how.append("workers: %d" % args.handler_workers)
        what = {"exec": "exec /bin/true", "file": "file (fsync, rename, fsync)",
                "http": "http POST to a local 200 server"}[kind]
        self.name = "hookbox full, %s (%s)" % (what, ", ".join(how) or "default dispatch")
        self.concurrency = args.handler_concurrency

    def handler_yaml(self):
        more = "" if self.concurrency is None else ", concurrency: %d" % self.concurrency
        if self.kind in ("accept", "file"):
            return '{file: {dir: "%s/events"%s}}' % (
                self.workdir, more if self.kind == "file" else "")
        if self.kind == "exec":
            return '{exec: {command: ["/bin/true"]%s}}' % more
        return '{http: {url: "%s/sink"%s}}' % (self.sink.url(), more)

    def prepare(self):
        Server.prepare(self)
        self.port = self.port or free_port()
        with open(self.config_path(), "w") as f:
            f.write(HANDLER_CONFIG.format(port=self.port, db=self.db, threads=self.threads,
                                          extra=self.extra, secret=SECRET,
                                          handler=self.handler_yaml()))

    def start(self):
        if self.sink:
            self.sink.start()
        try:
            super().start()
        except BaseException:
            self.stop()
            raise

    def stop(self):
        super().stop()
        if self.sink:
            self.sink.stop()

    def query(self, sql, *params):
        import sqlite3  # standard library; only this mode reads the database from Python
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=5)
        try:
            return con.execute(sql, params).fetchone()
        finally:
            con.close()

    def mark(self):
        """The last job before the timed load: the run's jobs are those after it."""
        return self.query("SELECT coalesce(max(id), 0) FROM jobs")[0]

    def unfinished(self, mark):
        return self.query("SELECT count(*) FROM jobs WHERE id > ? AND status IN "
                          "('pending', 'processing')", mark)[0]

    def settle(self, timeout, requests):
        """Waits (at most timeout s) until the warm-up's jobs are done: true if they are."""
        if self.kind == "accept":
            return True
        deadline = time.time() + timeout
        while self.unfinished(0) and time.time() < deadline:
            time.sleep(0.05)
        return self.unfinished(0) == 0

    def drain(self, mark, load_end, timeout, requests):
        """Waits until every job after mark is done or dead, at most timeout s after
        load_end; the run's end-to-end figures."""
        if self.kind != "accept":
            while self.unfinished(mark) and time.time() < load_end + timeout:
                time.sleep(0.05)
        events, done, dead, left = self.query(
            "SELECT count(*), coalesce(sum(status = 'done'), 0), coalesce(sum(status = 'dead'), "
            "0), coalesce(sum(status IN ('pending', 'processing')), 0) FROM jobs WHERE id > ?",
            mark)
        e = {"events": events, "handled": done, "dead": dead, "left": left}
        if self.kind == "accept":
            return e
        last = self.query("SELECT max(finished_at) FROM attempts WHERE job > ?", mark)[0]
        e["drained"] = left == 0
        if e["drained"]:
            e["drain_s"] = max(0.0, rfc3339_unix(last) - load_end) if last else 0.0
        else:
            e["drain_s"] = time.time() - load_end
        return e


class WebhookCounting(Webhook):
    """adnanh/webhook (its default: answers at once, runs the command in the background) whose
    command appends the delivery id to a file: the lines are its runs (duplicates included:
    it runs the command for every request), the file's mtime when the last one ended."""

    def __init__(self, workdir, binary):
        super().__init__(workdir, binary, sync=False)
        self.name = "adnanh/webhook (background command appending one line per run)"
        self.runs = os.path.join(workdir, "runs.txt")
        self.script = os.path.join(workdir, "count.sh")

    def start(self):
        super().start()
        self.peak_fds, self.fd_limit = 0, "?"
        with open("/proc/%d/limits" % self.proc.pid) as f:
            for line in f:
                if line.startswith("Max open files"):
                    self.fd_limit = line.split()[3]
        self.watching = True
        self.watcher = threading.Thread(target=self.watch_fds, daemon=True)
        self.watcher.start()

    def watch_fds(self):
        """Its peak count of open descriptors, sampled every 50 ms: the commands it has
        queued hold theirs (output pipes) until they run, and one it cannot start for want
        of a descriptor never runs (logged only with -verbose)."""
        while self.watching:
            try:
                self.peak_fds = max(self.peak_fds, len(os.listdir("/proc/%d/fd" % self.proc.pid)))
            except (OSError, AttributeError):
                pass
            time.sleep(0.05)

    def stop(self):
        if getattr(self, "watching", False):
            self.watching = False
            self.watcher.join()
        super().stop()

    def prepare(self):
        Server.prepare(self)
        with open(self.script, "w") as f:
            f.write(COUNT_SCRIPT.format(runs=self.runs))
        os.chmod(self.script, 0o755)
        with open(os.path.join(self.workdir, "hooks.json"), "w") as f:
            f.write(WEBHOOK_COUNT_HOOKS.format(script=self.script, dir=self.workdir,
                                               secret=SECRET))

    def fresh(self):
        if os.path.exists(self.runs):
            os.remove(self.runs)

    def size(self):
        try:
            return os.path.getsize(self.runs)
        except OSError:
            return 0

    def lines(self):
        try:
            with open(self.runs) as f:
                return f.read().split("\n")[:-1]
        except OSError:
            return []

    def wait_still(self, deadline, expected=None):
        """Polls the file until every command that was started has ended, or until deadline:
        until it holds `expected` lines (webhook runs its command once per request it
        answers) and has not grown for 0.5 s, or, short of that, has not grown for 5 s (the
        warm-up, whose requests wrk does not report, and commands that never ran)."""
        size, since = self.size(), time.time()
        while time.time() < deadline:
            time.sleep(0.05)
            now = self.size()
            if now != size:
                size, since = now, time.time()
                continue
            quiet = time.time() - since
            if quiet >= 5 or (expected is not None and quiet >= 0.5 and
                              len(self.lines()) >= expected):
                return True
        return False

    def settle(self, timeout, requests):
        """Waits until the warm-up's runs are done (the file starts empty: fresh())."""
        return self.wait_still(time.time() + timeout, requests)

    def mark(self):
        return len(self.lines())

    def drain(self, mark, load_end, timeout, requests):
        drained = self.wait_still(load_end + timeout, mark + requests)
        runs = self.lines()[mark:]
        e = {"events": None, "handled": len(runs), "distinct": len(set(runs)), "dead": 0,
             "left": 0, "drained": drained, "peak_fds": self.peak_fds,
             "fd_limit": self.fd_limit}
        if drained:
            e["drain_s"] = max(0.0, os.stat(self.runs).st_mtime - load_end) if runs else 0.0
        else:
            e["drain_s"] = time.time() - load_end
        return e


def measure_e2e(args, server, duration):
    """Starts server, warms it up and waits until the warm-up's events are handled, runs wrk,
    waits until the timed run's events are handled (at most --drain-max s after the load),
    stops it; the run's figures."""
    load = loadavg()
    server.start()
    try:
        warmup = run_load(args, server, args.warmup_data, 1)
        settled = server.settle(args.drain_max, warmup["requests"])
        mark = server.mark()
        cpu0 = server.cpu()
        r = run_wrk(args, server, args.data, duration)
        load_end = (r["start_unix"] + r["duration_s"]) if r.get("start_unix") else time.time()
        r.update(server.drain(mark, load_end, args.drain_max, r["requests"]))
        cpu1 = server.cpu()
        mem = server.memory()
    finally:
        server.stop()
    r["warmup_settled"] = settled
    if r.get("events") is None:  # webhook: every request it answered ran the command
        r["events"] = r["requests"]
    if r.get("drained"):
        r["e2e"] = r["handled"] / (r["duration_s"] + r["drain_s"])
    r["cpu_us_per_event"] = (cpu1 - cpu0) * 1e6 / max(r["handled"] or r["events"], 1)
    r["hwm_kb"] = mem.get("VmHWM", 0)
    r["load_before"] = load
    return r


def handler_servers(args, out):
    servers = [HookboxHandler(os.path.join(out, "hookbox-%s" % kind), args, kind)
               for kind in ("accept", "exec", "file", "http")]
    servers.append(WebhookCounting(os.path.join(out, "webhook"), args.webhook))
    if args.only:
        servers = [s for s in servers if re.search(args.only, s.name)]
    return servers


def handlers(args):
    out = os.path.join(args.out, "handlers")
    servers = handler_servers(args, out)
    runs = {s.name: [] for s in servers}
    for rnd in range(1, args.rounds + 1):
        for s in servers:
            s.fresh()
            r = measure_e2e(args, s, args.duration)
            runs[s.name].append(r)
            log("round %d  %-62s %7.0f req/s  %6d handled  drain %s  e2e %s/s  load %s" % (
                rnd, s.name, r["rps"], r["handled"],
                "%.1f s" % r["drain_s"] if r.get("drained") else (
                    "-" if "drained" not in r else "NOT DRAINED"),
                "%.0f" % r["e2e"] if "e2e" in r else "-", r["load_before"]))

    def key(r):  # accept-only rows by req/s, the others by end to end (undrained last)
        return r.get("e2e", -1.0) if "drained" in r else r["rps"]
    best = {name: sorted(rs, key=key)[len(rs) // 2] for name, rs in runs.items()}
    by_kind = {getattr(s, "kind", "webhook"): s.name for s in servers}

    lines = ["| server | accepted req/s | non-2xx | events | handled | drain s | "
             "handled end to end /s | CPU µs/event | peak RSS MB | load before |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in servers:
        r = best[s.name]
        if "drained" not in r:
            drain, e2e, handled = "-", "- (jobs wait)", "-"
        elif r["drained"]:
            drain, e2e, handled = "%.1f" % r["drain_s"], "%.0f" % r["e2e"], "%d" % r["handled"]
        else:
            drain = "did not drain (%d left after %.0f s)" % (r["left"], r["drain_s"])
            e2e, handled = "-", "%d" % r["handled"]
        if "distinct" in r:
            handled += " runs (%d distinct deliveries)" % r["distinct"]
        elif r.get("dead"):
            handled += " (+%d dead)" % r["dead"]
        lines.append("| %s | %.0f | %d | %s | %s | %s | %s | %.0f | %.0f | %s |" % (
            s.name, r["rps"], r["non2xx"],
            "%d requests" % r["events"] if "distinct" in r else "%d" % r["events"],
            handled, drain, e2e, r["cpu_us_per_event"], r["hwm_kb"] / 1024, r["load_before"]))

    def ratio(num_kind, den_kind, num_key, den_key, rnd=None):
        if num_kind not in by_kind or den_kind not in by_kind:
            return None
        if rnd is None:
            a, b = best[by_kind[num_kind]], best[by_kind[den_kind]]
        else:
            a, b = runs[by_kind[num_kind]][rnd], runs[by_kind[den_kind]][rnd]
        if num_key not in a or den_key not in b or not b[den_key]:
            return None
        return a[num_key] / b[den_key]

    def verdict(value, target):
        if value is None:
            return "not measured (a row missing or not drained)"
        return "%.2f (target ≥ %.1f: %s)" % (value, target, "met" if value >= target else
                                               "missed by %.0f%%" % (100 * (1 - value / target)))

    def per_round(*spec):
        vals = [ratio(*spec, rnd=i) for i in range(args.rounds)]
        return ", ".join("-" if v is None else "%.2f" % v for v in vals)

    text = "\n".join(lines) + "\n\n"
    text += "- hookbox `exec` end to end / adnanh/webhook end to end: %s; every round: %s.\n" % (
        verdict(ratio("exec", "webhook", "e2e", "e2e"), 1.5),
        per_round("exec", "webhook", "e2e", "e2e"))
    text += ("- hookbox `file` end to end / hookbox accept only req/s: %s; every round: %s.\n" % (
        verdict(ratio("file", "accept", "e2e", "rps"), 0.6),
        per_round("file", "accept", "e2e", "rps")))
    all_rounds = ["| %s | %s |" % (s.name, " | ".join(
        "%.0f / %s / %s" % (r["rps"], "%.0f" % r["e2e"] if "e2e" in r else "-",
                            "-" if "drain_s" not in r else
                            "%.1f" % r["drain_s"] if r["drained"] else
                            "not drained after %.0f" % r["drain_s"])
        for r in runs[s.name])) for s in servers]
    text += ("\nEvery round (accepted req/s / handled end to end /s / drain s):\n\n"
             "| server | %s |\n|---|%s\n%s\n" % (
                 " | ".join("round %d" % i for i in range(1, args.rounds + 1)),
                 "---:|" * args.rounds, "\n".join(all_rounds)))
    notes = []
    for s in servers:
        for i, r in enumerate(runs[s.name]):
            if r["non2xx"] or r["connect_errors"] or r["read_errors"] or r["timeouts"]:
                notes.append("- %s, round %d: %d non-2xx, %d connect / %d read errors, "
                             "%d timeouts" % (s.name, i + 1, r["non2xx"], r["connect_errors"],
                                              r["read_errors"], r["timeouts"]))
            if not r["warmup_settled"]:
                notes.append("- %s, round %d: the warm-up's events were not all handled within "
                             "%d s when the timed load started" % (s.name, i + 1, args.drain_max))
            if r.get("dead"):
                notes.append("- %s, round %d: %d jobs dead" % (s.name, i + 1, r["dead"]))
            if "distinct" in r and r["handled"] < r["requests"]:
                notes.append("- %s, round %d: %d runs of the command for %d requests answered "
                             "(its peak of open descriptors: %d, its limit %s)" % (
                                 s.name, i + 1, r["handled"], r["requests"], r["peak_fds"],
                                 r["fd_limit"]))
            if r["wrapped"]:
                notes.append("- %s, round %d: wrk ran past the %d pre-generated deliveries"
                             % (s.name, i + 1, r["loaded"]))
    if notes:
        text += "\n" + "\n".join(notes) + "\n"
    emit(args, "handlers", text, {"runs": runs})


# ------------------------------------------------------------------------------- scale

# Rows as hookbox stores a processed GitHub push: ~2.3 KB body, its headers, one done job
# and its ok attempt; received 30 days ago (older than retention.processed: 7d), spread over
# a day; random event ids (so the UNIQUE index is as scattered as real delivery ids make it).
PREFILL_SQL = """\
PRAGMA journal_mode=WAL;
PRAGMA synchronous=OFF;
PRAGMA cache_size=-1000000;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
INSERT INTO inbox (id, endpoint, event_id, id_source, event_type, body_sha256, headers, body,
                   status, received_at, processed_at)
SELECT i, 'github', lower(hex(randomblob(16))), 'header:X-GitHub-Delivery', 'push',
       lower(hex(randomblob(32))),
       '{{"Accept":"*/*","Content-Length":"2345","Content-Type":"application/json",'
         || '"Host":"127.0.0.1:8080","User-Agent":"GitHub-Hookshot/bench",'
         || '"X-GitHub-Delivery":"' || i || '","X-GitHub-Event":"push",'
         || '"X-GitHub-Hook-ID":"292430182","X-Hub-Signature-256":"sha256='
         || lower(hex(randomblob(32))) || '"}}',
       CAST('{{"ref":"refs/heads/main","n":' || i || ',"pad":"' || lower(hex(randomblob(1150)))
            || '"}}' AS BLOB),
       'processed',
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-30 days', '+' || (i * 86400 / {rows}) || ' seconds'),
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-30 days', '+' || (i * 86400 / {rows} + 1) || ' seconds')
FROM n;
INSERT INTO jobs (id, inbox_id, handler, status, attempts, next_attempt_at)
SELECT id, id, 'file', 'done', 1, received_at FROM inbox;
INSERT INTO attempts (id, job, number, started_at, finished_at, outcome)
SELECT id, id, 1, received_at, processed_at, 'ok' FROM inbox;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
"""


def prefilled(args, rows):
    """A database with `rows` old processed rows, made once and kept in bench/out."""
    path = os.path.join(args.out, "prefill-%d.db" % rows)
    if os.path.exists(path):
        return path
    log("pre-filling %d rows into %s" % (rows, path))
    work = os.path.join(args.out, "prefill-%d" % rows)
    shutil.rmtree(work, ignore_errors=True)
    hb = Hookbox(work, args.hookbox, "full", 0, args.server_threads, db=path + ".tmp")
    hb.prepare()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + ".tmp" + suffix):
            os.remove(path + ".tmp" + suffix)
    subprocess.run([args.hookbox, "migrate", "-c", hb.config_path()], check=True,
                   stdout=subprocess.DEVNULL)
    t0 = time.time()
    subprocess.run(["sqlite3", path + ".tmp"], input=PREFILL_SQL.format(rows=rows), text=True,
                   check=True, stdout=subprocess.DEVNULL)
    log("pre-filled %d rows in %.1f s (%.0f MB)" % (
        rows, time.time() - t0, os.path.getsize(path + ".tmp") / 1e6))
    os.rename(path + ".tmp", path)
    return path


def copy_db(src, dst):
    """A fresh copy of a pre-filled database, in the page cache (read once, as on a server
    that has been running) and on disk (synced: the copy's write-back would otherwise slow
    down every fsync of the run that follows)."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(dst + suffix):
            os.remove(dst + suffix)
    shutil.copyfile(src, dst)
    subprocess.run(["cat", dst], stdout=subprocess.DEVNULL)
    os.sync()


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
    pick = lambda q: latencies[min(n - 1, int(n * q))] if n else 0.0
    return {"n": n, "p50_ms": pick(0.5), "p99_ms": pick(0.99), "p999_ms": pick(0.999),
            "max_ms": latencies[-1] if n else 0.0,
            "over_50ms": sum(1 for x in latencies if x > 50),
            "over_100ms": sum(1 for x in latencies if x > 100), "outcomes": outcomes}


def has_purge_verb(args):
    return subprocess.run([args.hookbox, "purge", "--help"], capture_output=True).returncode == 0


def scale(args):
    out = os.path.join(args.out, "scale")
    results = {}
    rows_text = []
    for rows in (10_000, 1_000_000):
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

    r10k, r1m = results[10_000]["median"], results[1_000_000]["median"]
    rows_text.append("| inbox rows before the run | req/s | p50 ms | p99 ms | max ms | "
                     "non-2xx | peak RSS MB | load before |")
    rows_text.append("|---:|---:|---:|---:|---:|---:|---:|---|")
    for rows, r in ((10_000, r10k), (1_000_000, r1m)):
        rows_text.append("| %s | %.0f | %s | %s | %s | %d | %.0f | %s |" % (
            "{:,}".format(rows), r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]),
            fmt_ms(r["max_us"]), r["non2xx"], r["hwm_kb"] / 1024, r["load_before"]))
    rows_text.append("")
    rows_text.append("Every round (req/s / p50 ms / p99 ms): " + "; ".join(
        "%s rows: %s" % ("{:,}".format(rows), ", ".join(
            "%.0f / %s / %s" % (r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]))
            for r in results[rows]["runs"])) for rows in (10_000, 1_000_000)) + ".")
    rows_text.append("")
    rows_text.append("1 M vs 10 k: p50 × %.2f, p99 × %.2f, req/s × %.2f." % (
        r1m["p50_us"] / r10k["p50_us"], r1m["p99_us"] / r10k["p99_us"], r1m["rps"] / r10k["rps"]))

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
    """hookbox (1 M old rows) under wrk: first a window without purge, then one from 2 s
    before `hookbox purge` starts until it ends."""
    hb = Hookbox(os.path.join(out, "purge"), args.hookbox, "full", 0, args.server_threads)
    os.makedirs(hb.workdir, exist_ok=True)
    copy_db(prefilled(args, 1_000_000), hb.db)
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
    text = ["", "Purge of the 1,000,000 old rows with `hookbox purge` (Inbox::Purge, batches of "
            "500 rows per transaction, from a second process) while wrk keeps sending "
            "deliveries on %d connections:" % args.connections, "",
            "| | req/s | p50 ms | p99 ms | max ms | non-2xx | load before |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for what, r, load in (("same load, no purge (wrk)", baseline, load_baseline),
                          ("from 2 s before the purge to its end (wrk)", during, load_during)):
        text.append("| %s | %.0f | %s | %s | %s | %d | %s |" % (
            what, r["rps"], fmt_ms(r["p50_us"]), fmt_ms(r["p99_us"]), fmt_ms(r["max_us"]),
            r["non2xx"], load))
    text += ["", "Accept latency as hookbox logged it (latency_ms of each delivery line, from "
             "the start of hookbox's pipeline, once the request was whole and parsed, to its answer; "
             "the wait for a request thread and the network are wrk's figures only):", "",
             "| | deliveries | p50 ms | p99 ms | p99.9 ms | max ms | over 50 ms | over 100 ms "
             "| outcomes |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for what, r in (("same load, no purge", baseline), ("while the purge ran", during)):
        sv = r.get("server")
        if sv:
            text.append("| %s | %d | %.1f | %.1f | %.1f | %.1f | %d | %d | %s |" % (
                what, sv["n"], sv["p50_ms"], sv["p99_ms"], sv["p999_ms"], sv["max_ms"],
                sv["over_50ms"], sv["over_100ms"],
                ", ".join("%s %d" % kv for kv in sorted(sv["outcomes"].items()))))
    text += ["", "Purge: %.1f s (`%s`); processed rows left: %s. hookbox RSS at 1 M rows: %.0f MB "
             "before the purge (peak so far %.0f MB), %.0f MB after (peak %.0f MB)." % (
                 seconds, purge_text, left, mem_before.get("VmRSS", 0) / 1024,
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


# ------------------------------------------------------------------------------- console

class ConsoleHookbox(Hookbox):
    """hookbox with the admin listener (the console) on, and a second endpoint with no rows."""

    def prepare(self):
        super().prepare()
        self.admin_port = getattr(self, "admin_port", None) or free_port()
        with open(self.config_path()) as f:
            text = f.read()
        text = text.replace('admin_listen: ""', "admin_listen: 127.0.0.1:%d" % self.admin_port)
        text += ("  - name: other\n    path: /hooks/other\n    provider: github\n"
                 "    secrets: [{value: \"%s\"}]\n" % SECRET)
        with open(self.config_path(), "w") as f:
            f.write(text)


def time_gets(port, path, n):
    """n GETs of path on one keep-alive connection; the latencies in ms and the last answer."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times, last = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        times.append((time.perf_counter() - t0) * 1000)
        last = (r.status, len(body))
    conn.close()
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(len(times) * q))]
    return {"n": n, "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": times[-1],
            "status": last[0], "bytes": last[1]}


def console(args):
    """The console's pages with 1 M rows in the inbox (the scale mode's pre-filled database,
    1 in 10,000 of its rows made dead), each page GET 200 times in a row on one keep-alive
    connection, beside /healthz on the same listener (the bare round trip: the ceiling)."""
    out = os.path.join(args.out, "console")
    hb = ConsoleHookbox(out, args.hookbox, "full", 0, args.server_threads)
    os.makedirs(out, exist_ok=True)
    copy_db(prefilled(args, 1_000_000), hb.db)
    subprocess.run(["sqlite3", hb.db,
                    "UPDATE inbox SET status = 'dead' WHERE id % 10000 = 0;"
                    " UPDATE jobs SET status = 'dead', last_error = 'exit 1' WHERE id % 10000 = 0;"],
                   check=True)
    mid = subprocess.run(["sqlite3", "-separator", " ", hb.db,
                          "SELECT received_at, id, event_id FROM inbox WHERE id = 500000"],
                         capture_output=True, text=True, check=True).stdout.split()
    hb.prepare()
    hb.start()  # migrates first (the console's index is built over the 1 M rows here)
    try:
        enc = urllib.parse.quote
        pages = [
            ("/healthz (ceiling: the bare round trip)", "/healthz"),
            ("inbox, first page", "/"),
            ("inbox, page at row 500,000 (keyset)", "/?before_at=%s&before_id=%s" % (
                enc(mid[0]), mid[1])),
            ("inbox, status dead (100 rows)", "/?status=dead"),
            ("inbox, endpoint github (all rows)", "/?endpoint=github"),
            ("inbox, endpoint other (no rows)", "/?endpoint=other"),
            ("inbox, search by event id", "/?id=%s" % mid[2]),
            ("event page", "/event?endpoint=github&id=%s" % mid[2]),
            ("dead letters", "/dead"),
        ]
        time_gets(hb.admin_port, "/", 20)  # warm-up
        load = loadavg()
        results = {}
        for name, path in pages:
            results[name] = time_gets(hb.admin_port, path, 200)
    finally:
        hb.stop()
    ceiling = results[pages[0][0]]["p50_ms"]
    rows = ["| page | answer | p50 ms | p99 ms | max ms | p50 / ceiling | under 50 ms |",
            "|---|---|---:|---:|---:|---:|---|"]
    for name, _ in pages:
        r = results[name]
        rows.append("| %s | %d, %d bytes | %.2f | %.2f | %.2f | %.1fx | %s |" % (
            name, r["status"], r["bytes"], r["p50_ms"], r["p99_ms"], r["max_ms"],
            r["p50_ms"] / ceiling, "yes" if r["max_ms"] < 50 else "**no**"))
    text = ("1 M rows in the inbox (SQLite, `durability: full`, `workers: 0`); load averages "
            "(1, 5, 15 min) %s before the timed GETs. Each page 200 times in a row from Python's "
            "http.client on one keep-alive connection (client time included).\n\n" % load
            + "\n".join(rows) + "\n")
    emit(args, "console", text, {"results": results})


# ------------------------------------------------------------------------------- output

def emit(args, name, text, raw):
    now = datetime.datetime.now(datetime.timezone.utc).astimezone()
    header = ("Run %s on %s.\n\nCommand: `%s` (%d s per run, %d rounds, wrk %d threads / %d "
              "connections, server threads %d). Tools: %s.\n\n" % (
                  now.strftime("%Y-%m-%d %H:%M %Z"), machine(), args.command, args.duration,
                  args.rounds, args.wrk_threads, args.connections, args.server_threads,
                  tool_versions(args)))
    print("\n" + header + text)
    stamp = now.strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(args.out, "%s-%s.json" % (name, stamp)), "w") as f:
        json.dump({"header": header, "text": text, "raw": raw}, f, indent=1)
    if args.results:
        doc = ""
        if os.path.exists(args.results):
            with open(args.results) as f:
                doc = f.read()
        begin, end = "<!-- BEGIN %s -->" % name, "<!-- END %s -->" % name
        if begin in doc and end in doc:
            pre, rest = doc.split(begin, 1)
            _, post = rest.split(end, 1)
            doc = pre + begin + "\n" + header + text + end + post
        else:
            doc += "\n%s\n%s%s%s\n" % (begin, header, text, end)
        with open(args.results, "w") as f:
            f.write(doc)
        log("wrote the %s into %s" % (name, args.results))


def main():
    ap = argparse.ArgumentParser(description="hookbox benchmark harness (see bench/bench.sh)")
    ap.add_argument("mode", choices=["table", "replicas", "handlers", "scale", "console"])
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
    args = ap.parse_args()
    args.scale_data = args.scale_data or args.data
    for key in ("hookbox", "ceiling", "webhook", "data", "warmup_data", "scale_data",
                "out", "results", "pg_cluster"):
        if getattr(args, key):
            setattr(args, key, os.path.abspath(getattr(args, key)))
    os.makedirs(args.out, exist_ok=True)
    # SIGTERM as Ctrl-C: unwinds through the finally blocks that stop the servers and remove
    # the PostgreSQL cluster.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    {"table": table, "replicas": replicas, "handlers": handlers, "scale": scale,
     "console": console}[args.mode](args)


if __name__ == "__main__":
    main()
