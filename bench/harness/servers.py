"""The servers under test: the Server base (started, measured, stopped), the ceiling
(bench/ceiling.cc), the durable limit (bench/durable_limit.cc), hookbox (HookboxServe: any
config, for the standalone benchmarks; Hookbox: the scenarios' one-handler config on
SQLite), and adnanh/webhook, each with its config written into its own working
directory."""
import os
import shutil
import signal
import subprocess
import sys
import time

from harness.host import cpu_seconds, free_port, memory_kb, raise_nofile, wait_port, write_file

SECRET = "bench-github-secret"


class Server:
    """A server under test: started, measured, stopped."""
    name = "?"
    children_cpu = False  # count the CPU of its child processes too (webhook's /bin/true)
    start_timeout = 20  # s for it to listen once started
    stop_timeout = 60  # s for it to exit after SIGTERM, then SIGKILL

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
        wait_port(self.port, self.proc, timeout=self.start_timeout)

    def started(self):
        """Called right after the process is started, before it listens (CpuCap.join)."""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.stop_timeout)
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

    def own_cpu(self):
        """CPU seconds so far of the server process alone, its children not counted."""
        return cpu_seconds(self.proc.pid)

    def memory(self):
        return memory_kb(self.proc.pid)


class Ceiling(Server):
    name = "ceiling (bare cpp-httplib)"

    def __init__(self, workdir, binary, threads):
        super().__init__(workdir)
        self.binary, self.threads = binary, threads

    def argv(self):
        return [self.binary, str(self.port), str(self.threads)]


def remove_sqlite(path):
    """Removes a SQLite database: its file and the WAL mode's -wal and -shm beside it."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


class DurableLimit(Server):
    """bench/durable_limit.cc: the HMAC check, an append of id and body to one file, a group
    fdatasync before the 200; the least a receiver keeping hookbox's promise must do."""
    name = "durable limit (HMAC, append, group fdatasync)"

    def __init__(self, workdir, binary, threads):
        super().__init__(workdir)
        self.binary, self.threads = binary, threads
        self.file = os.path.join(self.workdir, "deliveries.log")

    def fresh(self):
        """Removes the file of an earlier run."""
        if os.path.exists(self.file):
            os.remove(self.file)

    def argv(self):
        return [self.binary, str(self.port), self.file, SECRET, str(self.threads)]


# hookbox on SQLite with one handler on the route; {top_level} holds the top-level keys
# besides these (`workers:`), {handler} the handler's flow mapping.
HOOKBOX_CONFIG = """\
# Written by bench/run.py{written_for}.
listen: 127.0.0.1:{port}
admin_listen: ""
database: "{db}"
durability: {durability}
limits: {{max_body: 1MiB, read_timeout: 10s, threads: {threads}}}
{top_level}endpoints:
  - name: github
    path: /hooks/github
    provider: github
    secrets: [{{value: "{secret}"}}]
    routes:
      - events: ["push"]
        handlers: [{handler}]
"""


class HookboxServe(Server):
    """hookbox with its config written into its working directory: config_text() (here the
    caller's template, formatted with the listener's free {port} and the given fields), the
    command line of any verb with that config (command(): migrate, handler pause, inbox
    retry...) and `hookbox serve` started, measured and stopped as any Server. The
    standalone benchmarks (bench/rate.py, bench/search.py, bench/bulk.py) give their own
    template; Hookbox below is the scenarios' config."""
    name = "hookbox"

    def __init__(self, workdir, binary, template=None, **fields):
        super().__init__(os.path.abspath(workdir))
        self.binary = os.path.abspath(binary)
        self.template, self.fields = template, fields

    def config_path(self):
        return os.path.join(self.workdir, "config.yaml")

    def config_text(self):
        return self.template.format(port=self.port, **self.fields)

    def write_config(self):
        """Picks the listener's port (once) and writes the config; its path. start() writes
        it too: this is for the verbs run before serve."""
        os.makedirs(self.workdir, exist_ok=True)
        self.port = self.port or free_port()
        write_file(self.config_path(), self.config_text())
        return self.config_path()

    def prepare(self):
        super().prepare()
        self.write_config()

    def command(self, *verb):
        """`hookbox VERB... -c CONFIG`, to run."""
        return [self.binary, *verb, "-c", self.config_path()]

    def argv(self):
        return self.command("serve")


class Hookbox(HookboxServe):
    """hookbox on SQLite (or on the PostgreSQL URL given as db) with HOOKBOX_CONFIG: the
    scenarios' config, one route with one handler."""

    def __init__(self, workdir, binary, durability, workers, threads, db=None):
        super().__init__(workdir, binary)
        self.durability, self.workers, self.threads = durability, workers, threads
        self.db = db or os.path.join(self.workdir, "inbox.db")
        what = "accept only, workers: 0" if workers == 0 else "file handler, workers: %d" % workers
        self.name = "hookbox %s (%s)" % (durability, what)

    written_for = ""  # after "Written by bench/run.py" in the config's first line

    def top_level(self):
        return "workers: %d\n" % self.workers

    def handler_yaml(self):
        return '{file: {dir: "%s/events"}}' % self.workdir

    def config_text(self):
        return HOOKBOX_CONFIG.format(written_for=self.written_for, port=self.port, db=self.db,
                                     durability=self.durability, threads=self.threads,
                                     top_level=self.top_level(), secret=SECRET,
                                     handler=self.handler_yaml())

    def fresh(self):
        """Removes the database and handler output of an earlier run."""
        remove_sqlite(self.db)
        shutil.rmtree(os.path.join(self.workdir, "events"), ignore_errors=True)

    def count_rows(self):
        r = subprocess.run(["sqlite3", self.db, "SELECT count(*) FROM inbox"],
                           capture_output=True, text=True)
        return int(r.stdout.strip() or 0)


class HookboxTraced(Hookbox):
    """The accept-only Hookbox row with `tracing.otlp` on: every delivery's receive and
    accept spans exported to a local stand-in collector (collector.py), started and stopped
    with it. The collector's CPU is not counted in the row's."""

    def __init__(self, workdir, binary, durability, threads):
        super().__init__(workdir, binary, durability, 0, threads)
        self.name = "hookbox %s (accept only, workers: 0, tracing.otlp on)" % durability
        self.collector = None
        self.collector_port = None

    def top_level(self):
        return super().top_level() + 'tracing: {otlp: "http://127.0.0.1:%d"}\n' % (
            self.collector_port)

    def start(self):
        self.collector_port = self.collector_port or free_port()
        os.makedirs(self.workdir, exist_ok=True)
        self.collector = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(__file__), "collector.py"),
             str(self.collector_port), os.path.join(self.workdir, "spans.count")])
        wait_port(self.collector_port, self.collector, timeout=self.start_timeout)
        super().start()

    def stop(self):
        super().stop()
        if self.collector and self.collector.poll() is None:
            self.collector.send_signal(signal.SIGTERM)
            self.collector.wait(timeout=self.stop_timeout)
        self.collector = None


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
