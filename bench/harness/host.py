"""The machine the benchmark runs on and its processes, read from /proc: CPU seconds, memory,
load, the description of the machine and of the tools for the report's header, the commit
the binary was built from, free ports and the wait for a server to listen."""
import os
import platform
import resource
import socket
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the bench/ folder
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_seconds(pid, children=False):
    """utime + stime of pid (and of its waited-for children) in seconds."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / CLK_TCK


def memory_kb(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def wait_port(port, proc, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited at start (code %s)" % proc.returncode)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not listen on %d" % port)


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    debian = "?"
    try:
        with open("/etc/debian_version") as f:
            debian = f.read().strip()
    except OSError:
        pass
    fs = subprocess.run(["df", "-T", BENCH], capture_output=True, text=True).stdout.split("\n")
    fstype = fs[1].split()[1] if len(fs) > 1 and fs[1] else "?"
    return "%s, %d cores, %.0f GiB RAM, Debian %s, Linux %s, %s disk" % (
        model, os.cpu_count(), mem_kb / 1048576, debian, platform.release(), fstype)


def tool_versions(args):
    def first_line(argv):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=5)
            return (r.stdout + r.stderr).strip().split("\n")[0]
        except OSError:
            return "?"
    return "wrk %s; %s; cpp-httplib %s; SQLite %s%s" % (
        first_line(["dpkg-query", "-W", "-f=${Version}", "wrk"]),
        first_line([args.webhook, "-version"]),
        first_line(["dpkg-query", "-W", "-f=${Version}", "libcpp-httplib-dev"]),
        first_line(["sqlite3", "--version"]).split(" ")[0],
        "; PostgreSQL %s" % args.pg_version if getattr(args, "pg_version", None) else "")


def raise_nofile():
    """Every server runs with its soft open-file limit raised to the hard one (as hookbox
    does for itself at start; its unit sets LimitNOFILE=65536), whatever the shell's soft
    limit: adnanh/webhook starts a process with pipes per request, without bound, and
    silently drops runs when it runs out of descriptors. Raising the hard limit itself
    needs CAP_SYS_RESOURCE, which a sandbox may not grant."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536 if hard == resource.RLIM_INFINITY else min(65536, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


def read_file(path):
    with open(path) as f:
        return f.read()


def machine_busy():
    """CPU seconds the whole machine has been busy so far (/proc/stat's cpu line: all but
    idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / CLK_TCK


def source_state():
    """The commit the hookbox binary was built from, and the files that differed from it in
    the working tree (bench.sh builds the tree as it is, just before; bench/, the Makefile,
    tests/, docs and Markdown files left out: they are not in the binary)."""
    root = os.path.dirname(BENCH)
    head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "?"
    changed = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", ".",
                              ":!bench", ":!Makefile", ":!tests", ":!docs", ":!*.md"],
                             capture_output=True, text=True).stdout.split("\n")
    changed = [line[3:] for line in changed if line.strip()]
    return "commit %s%s" % (head, ", with uncommitted changes to %s" % ", ".join(changed)
                            if changed else " (clean)")
