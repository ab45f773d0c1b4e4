"""`make bench-handlers` (bench/bench.sh handlers): each handler kind end to end.

hookbox `durability: full` (SQLite) with each handler kind on the route, every run
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
warm-up events are handled first (the wait is not timed). The ratios: exec end to end ÷
webhook's (target ≥ 3, with what bounds it: exec's end to end against the accept-only rate,
and the CPU per event of each), file end to end ÷ the accept-only req/s (target ≥ 0.6).
Then, alone, the isolation row (bench/scenarios/isolation.py): a fast exec handler's start
latency while a slow one (concurrency 1) has a backlog; target p99 ≤ 50 ms.
"""
import datetime
import os
import re
import subprocess
import threading
import time

from harness.host import loadavg
from harness.report import emit, rounds_table
from harness.servers import SECRET, Ceiling, Hookbox, Server, Webhook
from harness.wrk import run_load, run_rounds, run_wrk
from scenarios import isolation


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
    written_for = " (handlers)"

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

    def top_level(self):
        """Only the keys the harness was told to write (`workers:` for the accept-only row
        or --handler-workers)."""
        return self.extra

    def handler_yaml(self):
        more = "" if self.concurrency is None else ", concurrency: %d" % self.concurrency
        if self.kind in ("accept", "file"):
            return '{file: {dir: "%s/events"%s}}' % (
                self.workdir, more if self.kind == "file" else "")
        if self.kind == "exec":
            return '{exec: {command: ["/bin/true"]%s}}' % more
        return '{http: {url: "%s/sink"%s}}' % (self.sink.url(), more)

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
        cpu0, own0 = server.cpu(), server.own_cpu()
        r = run_wrk(args, server, args.data, duration)
        load_end = (r["start_unix"] + r["duration_s"]) if r.get("start_unix") else time.time()
        r.update(server.drain(mark, load_end, args.drain_max, r["requests"]))
        cpu1, own1 = server.cpu(), server.own_cpu()
        mem = server.memory()
    finally:
        server.stop()
    r["warmup_settled"] = settled
    if r.get("events") is None:  # webhook: every request it answered ran the command
        r["events"] = r["requests"]
    if r.get("drained"):
        r["e2e"] = r["handled"] / (r["duration_s"] + r["drain_s"])
    per = 1e6 / max(r["handled"] or r["events"], 1)
    r["cpu_us_per_event"] = (cpu1 - cpu0) * per
    r["own_cpu_us_per_event"] = (own1 - own0) * per
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


def run(args):
    out = os.path.join(args.out, "handlers")
    servers = handler_servers(args, out)
    text, runs = handlers_table(args, servers) if servers else ("", {})
    iso = None
    if not args.only or re.search(args.only, isolation.NAME):
        iso = isolation.Isolation(args).run()
        text += ("\n" if text else "") + isolation.report(iso)
    emit(args, "handlers", text, {"runs": runs, "isolation": iso})


def handlers_table(args, servers):
    """The rows' rounds, table, ratios and notes: (Markdown, the runs by server name)."""

    def one(s):
        s.fresh()
        return measure_e2e(args, s, args.duration)

    def line(s, r):
        return "%-62s %7.0f req/s  %6d handled  drain %s  e2e %s/s  load %s" % (
            s.name, r["rps"], r["handled"],
            "%.1f s" % r["drain_s"] if r.get("drained") else (
                "-" if "drained" not in r else "NOT DRAINED"),
            "%.0f" % r["e2e"] if "e2e" in r else "-", r["load_before"])

    runs = run_rounds(args, servers, one, line)
    start_cost = spawn_cpu_us(args) if any(getattr(s, "kind", "") == "exec" for s in servers) \
        else None

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
        met = "met" if value >= target else "missed by %.0f%%" % (100 * (1 - value / target))
        return "%.2f (target ≥ %.1f: %s)" % (value, target, met)

    def per_round(*spec):
        vals = [ratio(*spec, rnd=i) for i in range(args.rounds)]
        return ", ".join("-" if v is None else "%.2f" % v for v in vals)

    text = "\n".join(lines) + "\n\n"
    text += "- hookbox `exec` end to end / adnanh/webhook end to end: %s; every round: %s.%s\n" % (
        verdict(ratio("exec", "webhook", "e2e", "e2e"), 3.0),
        per_round("exec", "webhook", "e2e", "e2e"), exec_bound(best, by_kind, start_cost))
    text += ("- hookbox `file` end to end / hookbox accept only req/s: %s; every round: %s.\n" % (
        verdict(ratio("file", "accept", "e2e", "rps"), 0.6),
        per_round("file", "accept", "e2e", "rps")))

    def round_cell(r):
        if "drain_s" not in r:
            drain = "-"
        elif r["drained"]:
            drain = "%.1f" % r["drain_s"]
        else:
            drain = "not drained after %.0f" % r["drain_s"]
        return "%.0f / %s / %s" % (r["rps"], "%.0f" % r["e2e"] if "e2e" in r else "-", drain)

    text += "\n" + rounds_table("accepted req/s / handled end to end /s / drain s", servers,
                                runs, args.rounds, round_cell)
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
    return text, runs


def spawn_cpu_us(args):
    """CPU µs (parent + child) of one start of /bin/true by hookbox's own Spawn in a 20 MB
    process, one at a time (bench/spawn.cc, built beside the ceiling server): the floor of
    an exec event's CPU on this machine, measured in the same run. None when it cannot run."""
    tool = os.path.join(os.path.dirname(args.ceiling), "spawn")
    try:
        out = subprocess.run([tool, "1000", "3", "20"], capture_output=True, text=True,
                             timeout=120, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for row in out.splitlines():
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) == 5 and cells[1].startswith("hookbox Spawn"):
            return float(cells[4])
    return None


def exec_bound(best, by_kind, start_cost):
    """What bounds the exec row's end to end, from the same run: its share of the
    accept-only rate, its CPU per event (its own and its children's) against webhook's, what
    that CPU would allow on this machine's cores, and what starting /bin/true alone costs."""
    if "exec" not in by_kind or "e2e" not in best[by_kind["exec"]]:
        return ""
    r = best[by_kind["exec"]]
    parts = []
    if "accept" in by_kind:
        a = best[by_kind["accept"]]["rps"]
        parts.append("exec end to end is %.2f × hookbox's accept-only rate (%.0f req/s)" % (
            r["e2e"] / a, a) if a else "no accept-only rate")
    cpu = "hookbox spends %.0f CPU µs per event (its own %.0f, its children %.0f" % (
        r["cpu_us_per_event"], r["own_cpu_us_per_event"],
        r["cpu_us_per_event"] - r["own_cpu_us_per_event"])
    if "webhook" in by_kind:
        cpu += "; adnanh/webhook %.0f with its children" % (
            best[by_kind["webhook"]]["cpu_us_per_event"])
    parts.append(cpu + "): its CPU alone would allow %.0f events/s on %d cores" % (
        os.cpu_count() * 1e6 / max(r["cpu_us_per_event"], 1), os.cpu_count()))
    if start_cost:
        parts.append("one start of /bin/true, one at a time, costs %.0f CPU µs here "
                     "(bench/spawn.cc, hookbox's Spawn, 20 MB): starts alone would allow "
                     "%.0f/s" % (start_cost, os.cpu_count() * 1e6 / start_cost))
    return " What bounds it: %s." % "; ".join(parts)
