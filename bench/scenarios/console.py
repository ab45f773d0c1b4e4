"""`make bench-console` (bench/bench.sh console): the console's pages with 1 M rows in the
inbox (the scale scenario's pre-filled database), each page timed from Python's http.client,
beside /healthz on the same listener (the bare round trip: the ceiling)."""
import http.client
import os
import subprocess
import time
import urllib.parse

from harness.host import free_port, loadavg
from harness.prefill import copy_db, prefilled
from harness.report import emit, percentile, short_count
from harness.servers import SECRET, Hookbox


class ConsoleHookbox(Hookbox):
    """hookbox with the admin listener (the console) on, and a second endpoint with no rows."""

    def config_text(self):
        self.admin_port = getattr(self, "admin_port", None) or free_port()
        text = super().config_text().replace(
            'admin_listen: ""', "admin_listen: 127.0.0.1:%d" % self.admin_port)
        return text + ("  - name: other\n    path: /hooks/other\n    provider: github\n"
                       "    secrets: [{value: \"%s\"}]\n" % SECRET)


def time_gets(port, path, n):
    """n GETs of path on one keep-alive connection; the latencies in ms and the last answer."""
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
    return {"n": n, "p50_ms": percentile(times, 0.5), "p99_ms": percentile(times, 0.99),
            "max_ms": times[-1],
            "status": last[0], "bytes": last[1]}


def run(args):
    """The console's pages with 1 M rows in the inbox (--smoke: 10 k; the scale mode's
    pre-filled database, 1 in 10,000 of its rows made dead), each page GET 200 times in a row
    (--smoke: 5) on one keep-alive connection, beside /healthz on the same listener (the bare
    round trip: the ceiling)."""
    out = os.path.join(args.out, "console")
    hb = ConsoleHookbox(out, args.hookbox, "full", 0, args.server_threads)
    os.makedirs(out, exist_ok=True)
    count = args.rows[1]
    copy_db(prefilled(args, count), hb.db)
    subprocess.run(["sqlite3", hb.db,
                    "UPDATE inbox SET status = 'dead' WHERE id % 10000 = 0;"
                    " UPDATE jobs SET status = 'dead', last_error = 'exit 1'"
                    " WHERE id % 10000 = 0;"],
                   check=True)
    mid = subprocess.run(["sqlite3", "-separator", " ", hb.db,
                          "SELECT received_at, id, event_id FROM inbox WHERE id = %d"
                          % (count // 2)],
                         capture_output=True, text=True, check=True).stdout.split()
    hb.prepare()
    hb.start()  # migrates first (the console's index is built over the 1 M rows here)
    try:
        enc = urllib.parse.quote
        pages = [
            ("/healthz (ceiling: the bare round trip)", "/healthz"),
            ("inbox, first page", "/"),
            ("inbox, page at row {:,} (keyset)".format(count // 2),
             "/?before_at=%s&before_id=%s" % (enc(mid[0]), mid[1])),
            ("inbox, status dead (%d rows)" % (count // 10000), "/?status=dead"),
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
            results[name] = time_gets(hb.admin_port, path, args.gets)
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
    text = ("%s rows in the inbox (SQLite, `durability: full`, `workers: 0`); load averages "
            "(1, 5, 15 min) %s before the timed GETs. Each page %d times in a row from Python's "
            "http.client on one keep-alive connection (client time included).\n\n" % (
                short_count(count), load, args.gets)
            + "\n".join(rows) + "\n")
    emit(args, "console", text, {"results": results})
