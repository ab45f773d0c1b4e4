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
      [--durable-limit build-bench/tools/durable_limit] [--top-level 'allow_from: [127.0.0.1]']
      [--keep DIR]

--keep copies each run's callgrind output into DIR (`<n>-small.out`, `<n>-full.out`, n the
build's place in the list), for `callgrind_annotate --inclusive=yes DIR/1-full.out`: where
the instructions went, with the start-up in it (the small run's figures are that part).

--top-level adds its YAML to the top level of each hookbox's config (a feature's cost: an
allow list every delivery is checked against, say).

With --durable-limit, the durable limit (bench/durable_limit.cc: the HMAC check, an append
and a group fdatasync) is counted the same way, as the floor hookbox's cost is read against.

Only the Python standard library and valgrind (Debian's `valgrind`).
"""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import tempfile
import uuid

from gen_deliveries import push_event
from harness.servers import SECRET, DurableLimit, Hookbox
from harness.signing import post_push, signature


class CallgrindHookbox(Hookbox):
    """The accept-only row's hookbox (`workers: 0`, 2 threads) under callgrind."""
    written_for = " (accept_cost.py)"
    start_timeout = stop_timeout = 120  # valgrind starts slowly
    extra_top_level = ""  # --top-level

    def __init__(self, workdir, binary, durability):
        super().__init__(workdir, binary, durability, 0, 2)
        self.out = os.path.join(self.workdir, "callgrind.out")

    def top_level(self):
        return super().top_level() + self.extra_top_level

    def argv(self):
        return ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + self.out] + super().argv()


class CallgrindDurableLimit(DurableLimit):
    """The durable limit under callgrind."""
    start_timeout = stop_timeout = 120

    def __init__(self, workdir, binary, durability):
        super().__init__(os.path.join(workdir, "durable-limit"), binary, 2)
        self.out = os.path.join(self.workdir, "callgrind.out")

    def argv(self):
        return ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + self.out] + super().argv()


def deliveries(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        body = json.dumps(push_event(rng, i), separators=(",", ":")).encode()
        out.append((str(uuid.UUID(int=rng.getrandbits(128))), signature(SECRET, body), body))
    return out


def run_once(server, binary, durability, sends, workdir, keep=None):
    """Total instructions of one server lifetime (`server`: CallgrindHookbox or
    CallgrindDurableLimit) that accepted `sends` deliveries; the output copied to `keep`."""
    hb = server(workdir, binary, durability)
    hb.fresh()
    hb.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", hb.port, timeout=60)
        for delivery_id, sig, body in sends:
            status = post_push(conn, delivery_id, sig, body)
            if status != 200:
                raise SystemExit("delivery answered %d" % status)
        conn.close()
    finally:
        hb.stop()
    if keep:
        shutil.copyfile(hb.out, keep)
    with open(hb.out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals): (\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit("no totals in " + hb.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hookbox", action="append", required=True, help="a hookbox binary")
    ap.add_argument("--durable-limit", help="bench/durable_limit.cc's binary")
    ap.add_argument("--small", type=int, default=50)
    ap.add_argument("--many", type=int, default=500)
    ap.add_argument("--durability", default="full")
    ap.add_argument("--top-level", default="", help="YAML added to each hookbox's top level")
    ap.add_argument("--keep", help="a folder for the callgrind outputs")
    args = ap.parse_args()
    if args.top_level:
        CallgrindHookbox.extra_top_level = args.top_level.rstrip("\n") + "\n"
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    sends = deliveries(args.small + args.many, seed=27)
    print("| build | instructions per accept |")
    print("| --- | ---: |")
    rows = [(CallgrindHookbox, binary) for binary in args.hookbox]
    if args.durable_limit:
        rows.append((CallgrindDurableLimit, args.durable_limit))
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    for n, (server, binary) in enumerate(rows, 1):
        def kept(run):
            return os.path.join(args.keep, "%d-%s.out" % (n, run)) if args.keep else None
        with tempfile.TemporaryDirectory() as workdir:
            base = run_once(server, binary, args.durability, sends[:args.small], workdir,
                            kept("small"))
            full = run_once(server, binary, args.durability, sends, workdir, kept("full"))
        label = binary + (" with `%s`" % args.top_level if args.top_level and
                          server is CallgrindHookbox else "")
        print("| %s | %d |" % (label, (full - base) // args.many), flush=True)


if __name__ == "__main__":
    main()
