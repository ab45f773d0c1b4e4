#!/usr/bin/env python3
"""Instructions per accepted delivery, counted by valgrind's callgrind: the CPU cost of one
accept (HTTP parse, verify, identify, the inbox's accept transaction, the answer) as a number
that does not depend on what else the machine is doing, so two builds can be compared on a
busy machine, and a change of a few percent shows.

Each build given runs `hookbox serve` (SQLite, `workers: 0`, one GitHub endpoint: the
accept-only row's config from bench/harness/servers.py) under callgrind twice: once sent
SMALL deliveries, once SMALL + MANY, one after another on one keep-alive connection. The
difference of the two runs' instruction totals divided by MANY is the cost of one accept,
with the start-up, the shutdown and the first requests' warm-up cancelled out. Every
delivery is a new event (~2 KB GitHub push, signed), so each is a real insert.

  python3 bench/accept_cost.py --hookbox build/hookbox [--hookbox other/hookbox ...]

Only the Python standard library and valgrind (Debian's `valgrind`).
"""
import argparse
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_deliveries import push_event  # noqa: E402
from harness.host import free_port, wait_port  # noqa: E402
from harness.servers import HOOKBOX_CONFIG, SECRET  # noqa: E402


def deliveries(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        body = json.dumps(push_event(rng, i), separators=(",", ":")).encode()
        sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        out.append((str(uuid.UUID(int=rng.getrandbits(128))), sig, body))
    return out


def run_once(binary, durability, sends, workdir):
    """Total instructions of one daemon lifetime that accepted `sends` deliveries."""
    port = free_port()
    db = os.path.join(workdir, "inbox.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    events = os.path.join(workdir, "events")
    os.makedirs(events, exist_ok=True)
    config = os.path.join(workdir, "config.yaml")
    with open(config, "w") as f:
        f.write(HOOKBOX_CONFIG.format(
            written_for=" (accept_cost.py)", port=port, db=db, durability=durability,
            threads=2, top_level="workers: 0\n", secret=SECRET,
            handler='{file: {dir: "%s"}}' % events))
    out = os.path.join(workdir, "callgrind.out")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                             binary, "serve", "--config", config],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc, timeout=120)  # valgrind starts slowly
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for delivery_id, sig, body in sends:
            conn.request("POST", "/hooks/github", body=body, headers={
                "Content-Type": "application/json", "X-GitHub-Event": "push",
                "X-GitHub-Delivery": delivery_id, "X-Hub-Signature-256": sig})
            answer = conn.getresponse()
            answer.read()
            if answer.status != 200:
                raise SystemExit("delivery answered %d" % answer.status)
        conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    with open(out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals): (\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit("no totals in " + out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hookbox", action="append", required=True, help="a hookbox binary")
    ap.add_argument("--small", type=int, default=50)
    ap.add_argument("--many", type=int, default=500)
    ap.add_argument("--durability", default="full")
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    sends = deliveries(args.small + args.many, seed=27)
    print("| build | instructions per accept |")
    print("| --- | ---: |")
    for binary in args.hookbox:
        with tempfile.TemporaryDirectory() as workdir:
            base = run_once(binary, args.durability, sends[:args.small], workdir)
            full = run_once(binary, args.durability, sends, workdir)
        print("| %s | %d |" % (binary, (full - base) // args.many), flush=True)


if __name__ == "__main__":
    main()
