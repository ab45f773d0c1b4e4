"""CPU caps by cgroup (v1 or v2), to run a process as if on a host of its own with a share
of a core: the replicas scenario's caps (bench/scenarios/replicas.py)."""
import os
import time

from harness.host import log, read_file, write_file

CGROUP_V1_CPU = "/sys/fs/cgroup/cpu"  # cgroup v1's cpu controller (cpu.cfs_quota_us)
CGROUP_V2 = "/sys/fs/cgroup"          # cgroup v2's unified hierarchy, when mounted there
CAP_PERIOD_US = 100000
CAP_QUOTA_US = 50000                  # half a core per replica (--cap-cores)


class CapUnavailable(Exception):
    """No cgroup could be made to cap a process's CPU (the replicas rows are skipped)."""


class CpuCap:
    """A cgroup that caps the CPU of the processes put into it, to run a hookbox replica as
    if on its own host with CAP_QUOTA_US / CAP_PERIOD_US of a core. cgroup v1 (its cpu
    controller mounted at /sys/fs/cgroup/cpu): the folder /sys/fs/cgroup/cpu/hookbox-bench-NAME
    with cpu.cfs_period_us and cpu.cfs_quota_us. cgroup v2 (/sys/fs/cgroup/cgroup.controllers
    and no v1 cpu folder): the folder /sys/fs/cgroup/hookbox-bench-NAME with cpu.max, after
    +cpu in the parent's cgroup.subtree_control. Needs root (or delegation). create() makes
    it, join(pid) moves a process (with every thread it has; those it starts later are
    created in it), threads(pid) checks where its threads are, remove() deletes the folder
    once it is empty."""

    def __init__(self, name, quota_us=CAP_QUOTA_US, period_us=CAP_PERIOD_US):
        self.name = "hookbox-bench-" + name
        self.quota_us, self.period_us = quota_us, period_us
        self.version = self.path = None

    @staticmethod
    def hierarchy():
        """("v1" | "v2", the folder new cgroups go into), or CapUnavailable."""
        if os.path.exists(os.path.join(CGROUP_V1_CPU, "cpu.cfs_quota_us")):
            return "v1", CGROUP_V1_CPU
        if os.path.exists(os.path.join(CGROUP_V2, "cgroup.controllers")):
            return "v2", CGROUP_V2
        raise CapUnavailable("neither cgroup v1's cpu controller (%s) nor cgroup v2 (%s/"
                             "cgroup.controllers) is mounted" % (CGROUP_V1_CPU, CGROUP_V2))

    def describe(self):
        if self.version == "v1":
            return "cgroup v1, %s: cpu.cfs_period_us = %d, cpu.cfs_quota_us = %d" % (
                self.path, self.period_us, self.quota_us)
        return "cgroup v2, %s: cpu.max = \"%d %d\"" % (self.path, self.quota_us, self.period_us)

    def create(self):
        version, parent = self.hierarchy()
        path = os.path.join(parent, self.name)
        try:
            if os.path.isdir(path):  # left by an interrupted run; fails if still in use
                os.rmdir(path)
            os.mkdir(path)
        except OSError as e:
            raise CapUnavailable("cannot create %s: %s" % (path, e.strerror or e))
        self.version, self.path = version, path
        try:
            if version == "v1":
                write_file(os.path.join(path, "cpu.cfs_period_us"), str(self.period_us))
                write_file(os.path.join(path, "cpu.cfs_quota_us"), str(self.quota_us))
                got = (int(read_file(os.path.join(path, "cpu.cfs_period_us"))),
                       int(read_file(os.path.join(path, "cpu.cfs_quota_us"))))
            else:
                control = os.path.join(parent, "cgroup.subtree_control")
                if "cpu" not in read_file(control).split():
                    write_file(control, "+cpu")
                write_file(os.path.join(path, "cpu.max"), "%d %d" % (self.quota_us,
                                                                     self.period_us))
                quota, period = read_file(os.path.join(path, "cpu.max")).split()
                got = (int(period), int(quota))
            if got != (self.period_us, self.quota_us):
                raise CapUnavailable("%s reads back period %d, quota %d" % ((path,) + got))
        except OSError as e:
            self.remove()
            raise CapUnavailable("cannot set the cap of %s: %s" % (path, e.strerror or e))
        except BaseException:
            self.remove()
            raise

    def join(self, pid):
        """Moves process pid, all its threads, into the cgroup."""
        write_file(os.path.join(self.path, "cgroup.procs"), str(pid))

    def threads(self, pid):
        """(threads of pid, how many of them are in this cgroup): each thread's
        /proc/PID/task/TID/cgroup names it, and the cgroup's own thread list (v1: tasks,
        v2: cgroup.threads) holds it."""
        listed = set(read_file(os.path.join(
            self.path, "tasks" if self.version == "v1" else "cgroup.threads")).split())
        tids = os.listdir("/proc/%d/task" % pid)
        inside = 0
        for tid in tids:
            try:
                lines = read_file("/proc/%d/task/%s/cgroup" % (pid, tid)).split("\n")
            except OSError:  # the thread ended meanwhile
                continue
            for line in lines:
                parts = line.split(":", 2)
                if len(parts) != 3:
                    continue
                mine = ("cpu" in parts[1].split(",") if self.version == "v1"
                        else parts[0] == "0" and parts[1] == "")
                if mine and parts[2].rstrip("/").endswith("/" + self.name) and tid in listed:
                    inside += 1
                    break
        return len(tids), inside

    def stat(self):
        """The cgroup's throttling counters: periods with runnable tasks, periods in which it
        was throttled, seconds throttled (v1 and v2 name them differently)."""
        fields = {}
        try:
            for line in read_file(os.path.join(self.path, "cpu.stat")).split("\n"):
                key, _, value = line.partition(" ")
                if value.strip().isdigit():
                    fields[key] = int(value)
        except OSError:
            pass
        throttled_s = (fields.get("throttled_time", 0) / 1e9 if self.version == "v1"
                       else fields.get("throttled_usec", 0) / 1e6)
        return {"periods": fields.get("nr_periods", 0),
                "throttled": fields.get("nr_throttled", 0), "throttled_s": throttled_s}

    def remove(self):
        """Deletes the cgroup folder (its processes must have exited; retried briefly while
        the kernel still counts a reaped one)."""
        if not self.path:
            return
        for _ in range(40):
            try:
                os.rmdir(self.path)
                break
            except FileNotFoundError:
                break
            except OSError as e:
                err = e
                time.sleep(0.05)
        else:
            log("could not remove the cgroup %s: %s" % (self.path, err))
        self.path = None
