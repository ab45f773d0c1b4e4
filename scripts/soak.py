#!/usr/bin/env python3
"""The soak test (`make soak`): does hookbox's memory, descriptor or thread count grow while
it runs? It starts the release daemon on 127.0.0.1 with a temporary SQLite inbox and a
cheap handler (exec /bin/true), then for --minutes sends mixed traffic at a bounded rate:
new signed GitHub deliveries, duplicates of them, stale events (a lower per-resource
sequence than one already accepted), bad signatures, and slow clients (a head trickled a
byte at a time, answered; a body that stalls past read_timeout, closed unanswered). Each
minute it samples the daemon's VmRSS, open descriptors and threads (/proc/PID) and counts
the answers. At the end it prints the table and its verdict, then checks that every event
answered "accepted" or "stale" is in the inbox and nothing else is.

Rule for "no unbounded growth": minute 1 is warm-up; of the later samples, the max of the
last third must not exceed the max of the first third by more than 10% + 4 MiB (RSS),
8 descriptors or 2 threads. It exits 1 if growth is found, the daemon died, any answer was
not the one expected for its kind, or the inbox disagrees with the answers.

Python 3 standard library only; loopback only.
"""
import argparse
import collections
import concurrent.futures
import hashlib
import hmac
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

SECRET = "soak-secret"
READ_TIMEOUT = 2  # seconds, the daemon's limits.read_timeout
CONFIG = """\
# Written by scripts/soak.py.
listen: 127.0.0.1:0
admin_listen: ""
database: "{db}"
limits: {{max_body: 64KiB, read_timeout: {read_timeout}s, threads: 4}}
workers: 2
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{{value: "{secret}"}}]
    resource: body:/res
    sequence: body:/seq
    routes:
      - events: ["*"]
        handlers: [{{exec: {{command: ["/bin/true"], timeout: 5s}}}}]
"""
# Share of each kind of request (the rest of the rate is new events).
MIX = [("duplicate", 0.15), ("stale", 0.10), ("bad_signature", 0.15),
       ("slow_head", 0.05), ("stalled_body", 0.05)]
# What each kind must be answered. A slow head the client itself took longer than
# read_timeout to send (a stalled machine) is rightly closed: "late, closed".
EXPECTED = {"new": {"200 accepted"}, "duplicate": {"200 duplicate"}, "stale": {"200 stale"},
            "bad_signature": {"401"}, "slow_head": {"200 accepted", "late, closed"},
            "stalled_body": {"closed"}}


def signed(delivery, body, secret=SECRET):
    sig = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-GitHub-Delivery": delivery, "X-GitHub-Event": "push",
            "X-Hub-Signature-256": sig, "Content-Type": "application/json"}


def post(port, headers, body):
    """One request on its own connection: "200 accepted", "401", ... or "error <what>"."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/hooks/github", body, headers)
        r = conn.getresponse()
        data = r.read()
        if r.status == 200:
            return "200 " + json.loads(data).get("status", "")
        return str(r.status)
    except (OSError, http.client.HTTPException, ValueError) as e:
        return "error " + type(e).__name__
    finally:
        conn.close()


def raw_head(headers, body):
    head = "POST /hooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    head += "".join("%s: %s\r\n" % kv for kv in headers.items())
    return (head + "Content-Length: %d\r\n\r\n" % len(body)).encode()


def slow_head(port, headers, body):
    """The head a byte at a time (meant to take a fraction of read_timeout), then the body."""
    started = time.monotonic()
    answer = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for b in raw_head(headers, body):
                s.sendall(bytes([b]))
                time.sleep(0.001)
            s.sendall(body)
            while chunk := s.recv(4096):
                answer += chunk
    except ConnectionError:
        if answer:
            raise
    if not answer:
        return "late, closed" if time.monotonic() - started > READ_TIMEOUT else "error no answer"
    status_line, _, rest = answer.partition(b"\r\n")
    parts = status_line.split()
    if len(parts) < 2:
        return "error no answer"
    if parts[1] != b"200":
        return parts[1].decode()
    return "200 " + json.loads(rest.partition(b"\r\n\r\n")[2]).get("status", "")


def stalled_body(port, headers, body):
    """Half the body, then nothing: the daemon must close the connection unanswered."""
    with socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT + 5) as s:
        s.sendall(raw_head(headers, body) + body[: len(body) // 2])
        try:
            data = s.recv(4096)
        except socket.timeout:
            return "not closed"
        return "closed" if not data else "answered"


def proc_sample(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.split()
    return {"rss_kib": int(fields["VmRSS"][0]), "fds": len(os.listdir("/proc/%d/fd" % pid)),
            "threads": int(fields["Threads"][0])}


def grows(samples, key, ratio, slack):
    later = samples[1:] if len(samples) > 1 else samples  # minute 1 is warm-up
    k = max(1, len(later) // 3)
    first, last = max(s[key] for s in later[:k]), max(s[key] for s in later[-k:])
    return last > first * (1 + ratio) + slack, first, last


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="build/hookbox")
    ap.add_argument("--minutes", type=int, default=30)
    ap.add_argument("--rate", type=float, default=10.0, help="requests per second")
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    work = tempfile.mkdtemp(prefix="hookbox-soak-")
    db, log_path = os.path.join(work, "inbox.db"), os.path.join(work, "hookbox.log")
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(CONFIG.format(db=db, secret=SECRET, read_timeout=READ_TIMEOUT))
    os.chmod(config, 0o600)
    log = open(log_path, "w")
    daemon = subprocess.Popen([args.binary, "serve", "-c", config], stdout=log, stderr=log)
    port = None
    for _ in range(200):
        with open(log_path) as f:
            for line in f:
                if '"listening"' in line:
                    port = int(json.loads(line)["listen"].rsplit(":", 1)[1])
        if port or daemon.poll() is not None:
            break
        time.sleep(0.1)
    if not port:
        sys.exit("soak: hookbox did not start; log: " + log_path)
    print("soak: hookbox pid %d on 127.0.0.1:%d, %d min at %.0f requests/s, work dir %s"
          % (daemon.pid, port, args.minutes, args.rate, work), flush=True)

    lock = threading.Lock()
    counts = collections.Counter()      # kind this minute, and "unexpected"
    totals = collections.Counter()      # (kind, answer) overall
    unexpected = []                      # (kind, answer), the first few
    expect_rows = set()                  # event ids answered accepted or stale
    sent_new = []                        # (delivery, body) accepted, for duplicates
    last_seq = {}                        # resource -> highest sequence accepted
    serial = 0

    def record(kind, answer, delivery=None):
        with lock:
            counts[kind] += 1
            totals[(kind, answer)] += 1
            if answer not in EXPECTED[kind]:
                counts["unexpected"] += 1
                if len(unexpected) < 20:
                    unexpected.append((kind, answer, delivery))
            elif answer in ("200 accepted", "200 stale"):
                expect_rows.add(delivery)

    def event(resource, seq):
        nonlocal serial
        serial += 1
        delivery = "soak-%d" % serial
        body = json.dumps({"res": resource, "seq": seq, "n": serial,
                           "pad": "x" * rng.randrange(100, 2000)}).encode()
        return delivery, body

    slow_pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
    slow_busy = threading.BoundedSemaphore(8)   # at most 8 slow clients at once

    def run_slow(kind, fn, delivery, headers, body):
        try:
            record(kind, fn(port, headers, body), delivery)
        except Exception as e:  # an error is an answer to count, never the end of the soak
            record(kind, "error " + type(e).__name__, delivery)
        finally:
            slow_busy.release()

    samples = []
    start = time.monotonic()
    next_send, next_sample, minute = start, start + 60, 0
    died = False
    while minute < args.minutes:
        now = time.monotonic()
        if now >= next_sample:
            minute += 1
            if daemon.poll() is not None:
                died = True
                break
            s = proc_sample(daemon.pid)
            with lock:
                s["answers"] = dict(counts)
                counts.clear()
            s["minute"] = minute
            samples.append(s)
            a = s["answers"]
            print("minute %2d: rss %6d KiB, fds %3d, threads %3d, answers %d, unexpected %d" % (
                minute, s["rss_kib"], s["fds"], s["threads"],
                sum(a.values()) - a.get("unexpected", 0), a.get("unexpected", 0)), flush=True)
            next_sample += 60
        if now < next_send:
            time.sleep(min(next_send, next_sample) - now)
            continue
        next_send += 1.0 / args.rate
        r, kind = rng.random(), "new"
        for k, share in MIX:
            if r < share:
                kind = k
                break
            r -= share
        resource = "r%d" % rng.randrange(50)
        if kind == "duplicate" and sent_new:
            delivery, body = rng.choice(sent_new[-5000:])
            record(kind, post(port, signed(delivery, body), body), delivery)
        elif kind == "stale" and last_seq.get(resource, 0) >= 2:
            delivery, body = event(resource, rng.randrange(1, last_seq[resource]))
            record(kind, post(port, signed(delivery, body), body), delivery)
        elif kind == "bad_signature":
            delivery, body = event(resource, last_seq.get(resource, 0) + 1)
            record(kind, post(port, signed(delivery, body, "wrong-secret"), body), delivery)
        elif kind in ("slow_head", "stalled_body"):
            if not slow_busy.acquire(blocking=False):
                continue
            # Each slow client has a resource of its own: its sequence never races the rest.
            delivery, body = event("slow-%d" % serial, 1)
            fn = slow_head if kind == "slow_head" else stalled_body
            slow_pool.submit(run_slow, kind, fn, delivery, signed(delivery, body), body)
        else:
            seq = last_seq.get(resource, 0) + 1
            delivery, body = event(resource, seq)
            answer = post(port, signed(delivery, body), body)
            record("new", answer, delivery)
            if answer == "200 accepted":
                last_seq[resource] = seq
                sent_new.append((delivery, body))
    slow_pool.shutdown(wait=True)
    died = died or daemon.poll() is not None

    # The table and the verdict.
    kinds = list(EXPECTED)
    print("\nminute  rss_KiB  fds  threads  " + "  ".join(kinds + ["unexpected"]))
    for s in samples:
        print("%6d  %7d  %3d  %7d  " % (s["minute"], s["rss_kib"], s["fds"], s["threads"]) +
              "  ".join("%*d" % (len(k), s["answers"].get(k, 0)) for k in kinds + ["unexpected"]))
    print("\nanswers by kind (expected first):")
    for kind in kinds:
        got = {a: n for (k, a), n in totals.items() if k == kind}
        print("  %-13s expected %-28s got %s" % (kind, " or ".join(sorted(EXPECTED[kind])), got))
    failures = []
    if died:
        failures.append("the daemon died (exit %s); log: %s" % (daemon.poll(), log_path))
    if unexpected:
        failures.append("unexpected answers (kind, answer, delivery), first few: %s" % unexpected)
    if samples:
        for key, ratio, slack in (("rss_kib", 0.10, 4096), ("fds", 0, 8), ("threads", 0, 2)):
            bad, first, last = grows(samples, key, ratio, slack)
            print("%-8s first third max %d, last third max %d: %s" % (
                key, first, last, "GROWS" if bad else "bounded"))
            if bad:
                failures.append("%s grows: %d -> %d" % (key, first, last))
    else:
        failures.append("no sample taken")

    # Stop the daemon, then compare the inbox with the answers.
    if not died:
        daemon.send_signal(signal.SIGTERM)
        try:
            rc = daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            rc = "timeout"
        if rc != 0:
            failures.append("hookbox serve exited %s after SIGTERM" % rc)
    log.close()
    with sqlite3.connect("file:%s?mode=ro" % db, uri=True) as con:
        stored = {r[0] for r in con.execute("SELECT event_id FROM inbox")}
        status = dict(con.execute("SELECT status, count(*) FROM inbox GROUP BY status"))
    print("inbox: %d rows, by status %s; %d answered accepted or stale"
          % (len(stored), status, len(expect_rows)))
    if expect_rows - stored:
        failures.append("%d events answered 200 are not in the inbox, e.g. %s"
                        % (len(expect_rows - stored), sorted(expect_rows - stored)[:5]))
    if stored - expect_rows:
        failures.append("%d rows were never answered accepted or stale, e.g. %s"
                        % (len(stored - expect_rows), sorted(stored - expect_rows)[:5]))
    if status.get("dead"):
        failures.append("%d events are dead" % status["dead"])

    if failures:
        print("\nsoak: FAIL (work dir kept: %s)" % work)
        for f in failures:
            print("  - " + f)
        sys.exit(1)
    shutil.rmtree(work)
    print("\nsoak: PASS: no unbounded growth over %d minutes, every answer as expected" % minute)


if __name__ == "__main__":
    main()
