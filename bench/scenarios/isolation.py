"""The isolation row of `make bench-handlers` (not a mode of its own: handlers.py runs it
once, alone, after its other rows; BENCH_ONLY=isolation runs only it): does one handler's
backlog delay another handler's events?

hookbox `durability: full` on SQLite (a fresh database), one GitHub endpoint (signed
deliveries, as the other rows) with two exec handlers, routed by event type:
  slow  ["/bin/sleep", "1"], `concurrency: 1`: one job a second
  fast  ["/bin/sh", "fast.sh"] (default concurrency): the script appends
        "$HOOKBOX_EVENT_ID $(date +%s.%N)" to a file in one write: when the command started
First BACKLOG "slow" events are POSTed (4 connections), then one connection POSTs RATE
"fast" events a second for SECONDS s (each at its scheduled time, one after the other)
while the slow handler's backlog is still queued. A fast event's *start latency* is from
its POST's answer (time.time() once the 200 is read) to the start its script wrote (the
same clock; sh's start and date's fork, ~1-2 ms, are in it). The window is from the first
fast POST's send to the last one's answer. After it the harness waits until every fast job
is done (at most --drain-max s), stops the daemon and reads the rest from the inbox:
the slow attempts started in the window, the slow jobs still queued at its end (if none,
the backlog ran out and the row measured nothing). --smoke: 20 slow jobs, 2 s of fast
events. Target (issue 41): p99 ≤ 50 ms.
"""
import http.client
import json
import os
import sqlite3
import threading
import time

from harness.host import loadavg, log
from harness.report import percentile
from harness.servers import SECRET, HookboxServe, remove_sqlite
from harness.signing import post_push, signature

BACKLOG, RATE, SECONDS = 1000, 50, 20
SMOKE_BACKLOG, SMOKE_SECONDS = 20, 2
TARGET_P99_MS = 50.0
NAME = "hookbox full, isolation (a fast handler beside a slow one's queued jobs)"

CONFIG = """\
# Written by bench/run.py (handlers, isolation).
listen: 127.0.0.1:{port}
admin_listen: ""
database: "{db}"
durability: full
limits: {{max_body: 1MiB, read_timeout: 10s, threads: {threads}}}
endpoints:
  - name: github
    path: /hooks/github
    provider: github
    secrets: [{{value: "{secret}"}}]
    routes:
      - events: ["slow"]
        handlers: [{{name: slow, exec: {{command: ["/bin/sleep", "1"], concurrency: 1}}}}]
      - events: ["fast"]
        handlers: [{{name: fast, exec: {{command: ["/bin/sh", "{script}"]}}}}]
"""

# One line per start, in one write (echo, a builtin of sh, writes its line at once).
FAST_SCRIPT = """\
#!/bin/sh
# Written by bench/run.py: the isolation row's fast handler; when it started, by event id.
echo "$HOOKBOX_EVENT_ID $(date +%s.%N)" >> "{ran}"
"""


def post(conn, kind, i):
    """POSTs the i-th signed delivery of type kind ("slow" or "fast"); its status."""
    delivery = "isolation-%s-%d" % (kind, i)
    body = json.dumps({"ref": "refs/heads/main", "kind": kind, "n": i}).encode()
    return post_push(conn, delivery, signature(SECRET, body), body, event=kind)


class Isolation:
    def __init__(self, args):
        self.args = args
        self.workdir = os.path.join(args.out, "handlers", "hookbox-isolation")
        self.db = os.path.join(self.workdir, "inbox.db")
        self.ran = os.path.join(self.workdir, "fast-ran.txt")
        self.script = os.path.join(self.workdir, "fast.sh")
        self.backlog = SMOKE_BACKLOG if args.smoke else BACKLOG
        self.seconds = SMOKE_SECONDS if args.smoke else SECONDS
        self.server = HookboxServe(self.workdir, args.hookbox, CONFIG, db=self.db,
                                   threads=args.server_threads, secret=SECRET,
                                   script=self.script)

    def query(self, sql, *params):
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=5)
        try:
            return con.execute(sql, params).fetchone()[0]
        finally:
            con.close()

    def queued(self, handler):
        return self.query("SELECT count(*) FROM jobs WHERE handler = ? AND status IN "
                          "('pending', 'processing')", handler)

    def fill_backlog(self):
        """BACKLOG slow events over 4 connections; the answers that were not 200."""
        bad = [0]

        def client(part):
            conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
            for i in range(part, self.backlog, 4):
                if post(conn, "slow", i) != 200:
                    bad[0] += 1
            conn.close()
        threads = [threading.Thread(target=client, args=(p,)) for p in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return bad[0]

    def fast_load(self):
        """RATE fast events a second for SECONDS s on one connection: (id, sent, answered,
        status) each."""
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        sent = []
        start = time.time() + 0.05
        for i in range(RATE * self.seconds):
            wait = start + i / RATE - time.time()
            if wait > 0:
                time.sleep(wait)
            t0 = time.time()
            status = post(conn, "fast", i)
            sent.append(("isolation-fast-%d" % i, t0, time.time(), status))
        conn.close()
        return sent

    def starts(self):
        """The fast script's lines: event id -> when its command started."""
        out = {}
        try:
            with open(self.ran) as f:
                for line in f:
                    event, _, at = line.strip().partition(" ")
                    out.setdefault(event, float(at))
        except OSError:
            pass
        return out

    def run(self):
        if os.path.exists(self.ran):
            os.remove(self.ran)
        remove_sqlite(self.db)
        os.makedirs(self.workdir, exist_ok=True)
        with open(self.script, "w") as f:
            f.write(FAST_SCRIPT.format(ran=self.ran))
        r = {"backlog": self.backlog, "rate": RATE, "seconds": self.seconds,
             "load_before": loadavg()}
        self.server.start()
        try:
            log("isolation: %d slow events, then %d fast events/s for %d s" % (
                self.backlog, RATE, self.seconds))
            r["backlog_non200"] = self.fill_backlog()
            r["slow_queued_start"] = self.queued("slow")
            sent = self.fast_load()
            r["slow_queued_end"] = self.queued("slow")
            deadline = time.time() + self.args.drain_max
            while self.queued("fast") and time.time() < deadline:
                time.sleep(0.05)
            r["fast_left"] = self.queued("fast")
            r["drain_max"] = self.args.drain_max
        finally:
            self.server.stop()
        w0, w1 = sent[0][1], sent[-1][2]
        r["window_s"] = w1 - w0
        r["slow_started_in_window"] = self.query(
            "SELECT count(*) FROM attempts a JOIN jobs j ON j.id = a.job WHERE "
            "j.handler = 'slow' AND a.started_at BETWEEN strftime('%Y-%m-%dT%H:%M:%fZ', ?, "
            "'unixepoch') AND strftime('%Y-%m-%dT%H:%M:%fZ', ?, 'unixepoch')", w0, w1)
        began = self.starts()
        r["fast_sent"] = len(sent)
        r["fast_non200"] = sum(1 for s in sent if s[3] != 200)
        answered = sorted((began[e] - a) * 1000 for e, _, a, _ in sent if e in began)
        from_send = sorted((began[e] - t) * 1000 for e, t, _, _ in sent if e in began)
        r["fast_started"] = len(answered)
        for name, values in (("", answered), ("from_send_", from_send)):
            r[name + "p50_ms"] = percentile(values, 0.5)
            r[name + "p99_ms"] = percentile(values, 0.99)
            r[name + "max_ms"] = values[-1] if values else 0.0
        r["min_ms"] = answered[0] if answered else 0.0
        log("isolation: %d of %d fast events started, start latency p50 %.1f ms, p99 %.1f ms, "
            "max %.1f ms; %d slow jobs started in the window, %d queued at its end" % (
                r["fast_started"], r["fast_sent"], r["p50_ms"], r["p99_ms"], r["max_ms"],
                r["slow_started_in_window"], r["slow_queued_end"]))
        return r


def report(r):
    """The row's table, its verdict line and its notes (Markdown)."""
    text = ("Isolation (one run, alone): `slow` exec `/bin/sleep 1` with `concurrency: 1` and "
            "%d jobs queued (%d still queued when the fast events began), beside `fast` exec "
            "(a sh script; default concurrency) receiving %d events/s for %d s. Start latency: "
            "from a fast POST's 200 to its command's start.\n\n" % (
                r["backlog"], r["slow_queued_start"], r["rate"], r["seconds"]))
    text += ("| fast events sent | started | start latency p50 ms | p99 ms | max ms | "
             "slow jobs started in the window | slow jobs queued at its end | load before |\n"
             "|---:|---:|---:|---:|---:|---:|---:|---|\n")
    # Percentiles of the events that started only would understate: none when some did not.
    whole = r["fast_started"] == r["fast_sent"]
    lat = ["%.1f" % r[k] if whole else "-" for k in ("p50_ms", "p99_ms", "max_ms")]
    text += "| %d | %d | %s | %s | %s | %d | %d | %s |\n\n" % (
        r["fast_sent"], r["fast_started"], lat[0], lat[1], lat[2],
        r["slow_started_in_window"], r["slow_queued_end"], r["load_before"])
    if not whole:
        verdict = "missed: %d of %d fast events had not started %.0f s after the window" % (
            r["fast_sent"] - r["fast_started"], r["fast_sent"], r["drain_max"])
    elif r["slow_queued_end"] == 0:
        verdict = "not measured: the slow backlog ran out within the window"
    else:
        verdict = "met" if r["p99_ms"] <= TARGET_P99_MS else "missed"
    text += "- isolation: fast handler start latency p99 %s ms (target ≤ %.0f ms: %s).\n" % (
        lat[1], TARGET_P99_MS, verdict)
    notes = []
    if r["backlog_non200"] or r["fast_non200"]:
        notes.append("- isolation: %d slow and %d fast POSTs answered other than 200" % (
            r["backlog_non200"], r["fast_non200"]))
    if r["window_s"] > r["seconds"] * 1.1:
        notes.append("- isolation: the fast events took %.1f s instead of %d (their POSTs "
                     "were slower than 1/%d s)" % (r["window_s"], r["seconds"], r["rate"]))
    if notes:
        text += "\n".join(notes) + "\n"
    return text
