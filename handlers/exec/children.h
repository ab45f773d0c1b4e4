// The watch over running `exec` children: one thread and one epoll set for every child of
// the daemon, so an attempt that waits on a child holds no thread of its own. For each
// child it feeds the event body to the child's stdin, keeps the last kTailBytes of its
// combined output (a child that never reads, or writes without end, blocks nothing), notices
// its exit through a pidfd, and at the deadline SIGKILLs it. Either way it then ends the
// attempt's whole tree before the child's `done` is called: when an attempt is reported
// over, nothing it started still runs.
//
// Ending the tree. Each attempt runs in a session of its own, led by the child (spawn.h):
// a session leader cannot change its group, and no process of the session can join a group
// outside it, so nothing the attempt starts can hide in the daemon's group. At the deadline
// the child itself and its group are SIGKILLed (never a group that is the daemon's own);
// once it has exited, and before it is reaped (so that its id, which is the group's, cannot
// have been reused), its group is SIGKILLed again. That leaves what left the group (another
// group of the session, a session of its own). Spawn makes every child a child subreaper
// (spawn.h), so while a child runs, everything it started and lost track of is reparented
// to it, and when it dies, all of it is reparented to its parent's nearest subreaper: this
// process, when it is one (PR_SET_CHILD_SUBREAPER, which `serve` sets: src/ops/process.h).
// Then every process whose parent is this one and that is not a running child of the watch
// is a leftover of an attempt that has ended; the sweep SIGKILLs each (and its group, when
// it leads one), reaps those that have died, and looks again on the next round, since what
// a leftover started comes back here when it dies. The `done` of an ended child is called
// once a sweep finds no leftover at all. Without the subreaper setting (a test process,
// say), leftovers go to init and the sweep does not run: it would take children of this
// process that the watch did not start for leftovers. The one rule for the rest of the
// process: once it is a subreaper, it starts children only through SpawnWatched.
//
// Waiting. No lock is held across a child's life or a blocking wait: exits are noticed
// through pidfds (or, without pidfd_open, by polling), every waitid/waitpid is WNOHANG, and
// a killed child that has not died yet is simply looked at again, so the watch keeps
// serving every other child (output, exits, new spawns) while one is being killed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "handlers/exec/spawn.h"

namespace hookbox {

// An owned file descriptor.
class Fd final {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(other.Release()) {}
  Fd& operator=(Fd&& other) noexcept {
    Reset(other.Release());
    return *this;
  }
  ~Fd() { Close(); }
  int get() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd);
  void Close() { Reset(-1); }

 private:
  int fd_ = -1;
};

// How a watched child ended.
struct ChildEnd {
  pid_t pid = -1;            // the child's (and its group's) id
  bool timed_out = false;    // killed (itself and its group) at the deadline
  bool status_lost = false;  // reaped by someone else (SIGCHLD ignored): no exit status
  int wait_status = 0;       // waitpid's status, when neither of the above
  std::string output;  // the tail of stdout+stderr: "..." first when cut, trailing space trimmed
};

// A child just started, handed to the watch, which owns it from then on.
struct WatchedChild {
  pid_t pid = -1;
  Fd stdin_write;     // the parent's end of the child's stdin; closed once `input` is written
  std::string input;  // the event body
  Fd output;          // the parent's end of the child's stdout+stderr
  std::chrono::steady_clock::time_point deadline;
  std::function<void(ChildEnd)> done;  // called once, on the watch's thread
};

// Makes sure the watch runs (it is started on first use and lives until the process ends):
// 0, or the errno of what failed (EMFILE: no descriptor for its epoll set). Call it before
// starting a child, so that a started child always has a watch.
int PrepareWatch();
// Starts `request` with Spawn() and hands the child to the watch as `child` (its pid filled
// in), in one step under the watch's lock, so that a sweep never takes a child just started
// for a leftover. Returns what Spawn returned; on failure `child` is dropped and its `done`
// never called. PrepareWatch() must have succeeded.
Spawned SpawnWatched(const SpawnRequest& request, WatchedChild child);
// For a process about to exit with attempts still running (serve, after shutdown_grace):
// SIGKILLs every watched child with its group, reaps them, and sweeps what they left (as
// above), for a bounded time (kKillAllBound): a child that does not die of SIGKILL (stuck
// in the kernel) does not hold up the exit. Their `done` is never called, and the watch
// starts nothing more.
void KillWatchedChildren();

// The tail of output kept per child.
constexpr size_t kTailBytes = 2048;
// How long KillWatchedChildren waits at most for the killed to die and be swept.
constexpr std::chrono::seconds kKillAllBound{2};

}  // namespace hookbox
