// The watch over running `exec` children: one thread and one epoll set for every child of
// the daemon, so an attempt that waits on a child holds no thread of its own. For each
// child it feeds the event body to the child's stdin, keeps the last kTailBytes of its
// combined output (a child that never reads, or writes without end, blocks nothing), notices
// its exit through a pidfd, and at the deadline SIGKILLs the child's whole process group and
// reaps it. Only then is the child's `done` called: when an attempt is reported over,
// nothing of it still runs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

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
  bool timed_out = false;    // killed (with its group) at the deadline
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
// Hands `child` to the watch. PrepareWatch() must have succeeded.
void WatchChild(WatchedChild child);

// The tail of output kept per child.
constexpr size_t kTailBytes = 2048;

}  // namespace hookbox
