"""Inboxes pre-filled with old rows (the scale and console scenarios): made once with
sqlite3 in one transaction, kept in --out, and copied fresh for each run."""
import os
import shutil
import subprocess
import time

from harness.host import log
from harness.servers import Hookbox, remove_sqlite

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
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-30 days',
                '+' || (i * 86400 / {rows} + 1) || ' seconds')
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
    remove_sqlite(path + ".tmp")
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
    remove_sqlite(dst)
    shutil.copyfile(src, dst)
    subprocess.run(["cat", dst], stdout=subprocess.DEVNULL)
    os.sync()
