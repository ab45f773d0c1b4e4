#!/usr/bin/env python3
"""Rate-limit accuracy: one `hookbox serve` (SQLite) whose exec handler has
`rate: 100/s` and a backlog far larger than a minute's worth; every attempt appends its
time to a file, and the attempts of each whole second are counted after the first (the
burst of one second's worth). Reports the mean rate, the worst second and the error
against the limit (target: within 5% over a minute). Measure alone (2 cores shared).

  bench/rate.py [--hookbox build-bench/hookbox] [--seconds 60] [--rate 100]
  bench/rate.py --seconds 5      # a smoke run
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

from harness.servers import HookboxServe

CONFIG = """\
listen: 127.0.0.1:{port}
admin_listen: ""
database: {work}/inbox.db
endpoints:
  - name: b
    path: /b
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - name: limited
            exec: {{command: [/bin/sh, "{script}"], concurrency: 32, rate: {rate}/s}}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hookbox", default="build/hookbox")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--rate", type=int, default=100)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="hookbox-rate-")
    ran = os.path.join(work, "ran")
    script = os.path.join(work, "h.sh")
    with open(script, "w") as f:
        f.write('date +%%s.%%N >> "%s"\n' % ran)
    hb = HookboxServe(work, args.hookbox, CONFIG, work=work, script=script, rate=args.rate)
    hb.write_config()
    # Paused first, so the whole backlog is stored before the clock starts.
    subprocess.run(hb.command("migrate"), check=True, stdout=subprocess.DEVNULL)
    subprocess.run(hb.command("handler", "pause", "b/limited"), check=True,
                   stdout=subprocess.DEVNULL)
    hb.start()
    try:
        backlog = args.rate * (args.seconds + 3)
        for i in range(backlog):
            req = urllib.request.Request(hb.url() + "/b",
                                         data=json.dumps({"id": "e%d" % i}).encode(),
                                         headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=10).read()
        subprocess.run(hb.command("handler", "resume", "b/limited"), check=True,
                       stdout=subprocess.DEVNULL)
        time.sleep(args.seconds + 2)
    finally:
        hb.stop()
    with open(ran) as f:
        times = sorted(float(line) for line in f if line.strip())
    start = times[0] + 1  # after the burst
    per_second = [0] * args.seconds
    for t in times:
        k = int(t - start)
        if 0 <= k < args.seconds and t >= start:
            per_second[k] += 1
    mean = sum(per_second) / len(per_second)
    worst = max(per_second, key=lambda n: abs(n - args.rate))
    print("rate limit %d/s over %d s: mean %.1f/s (error %+.2f%%), worst second %d (%+.1f%%)"
          % (args.rate, args.seconds, mean, 100 * (mean - args.rate) / args.rate, worst,
             100 * (worst - args.rate) / args.rate))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
