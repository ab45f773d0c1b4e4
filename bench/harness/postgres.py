"""hookbox on PostgreSQL: the throwaway cluster (tests/pg/cluster.sh, made durable again)
and the hookbox replicas that share one database of it, measured as one server."""
import contextlib
import os
import shutil
import subprocess
import time

from harness.host import cpu_seconds, log, memory_kb
from harness.servers import Hookbox


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

    @contextlib.contextmanager
    def running(self, args, needed=True):
        """The cluster started for the block when needed, its version in args.pg_version (for
        the report's header); stopped and removed after the block, however it ends."""
        try:
            if needed:
                self.start()
                args.pg_version = self.version
            yield self
        finally:
            self.stop()

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
