// The watch over running `exec` children (see children.h): one thread, one epoll set. Only
// that thread touches a child once it is watched (and KillAll, once it has stopped that
// thread); Add() only starts and inserts it under the lock. Every waitpid of the process's
// children happens under that lock too (Spawn's reaping of a child that could not start
// included), so the sweep and the watch never race to reap; none of them waits for a child
// to die (WNOHANG), so the lock is never held across a child's life.
#include "handlers/exec/children.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace hookbox {

void Fd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

namespace {

using std::chrono::steady_clock;

constexpr size_t kChunk = 64 * 1024;
// Without pidfd_open (seccomp), exits are looked for this often.
constexpr int kExitPollMs = 10;
constexpr int kMaxWaitMs = 1000;

// The last kTailBytes of everything appended, in bounded memory.
class OutputTail final {
 public:
  void Append(const char* data, size_t n) {
    total_ += n;
    if (n >= kTailBytes) {
      tail_.assign(data + n - kTailBytes, kTailBytes);
      return;
    }
    tail_.append(data, n);
    if (tail_.size() > 2 * kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
  }
  // The tail, "..." first when earlier output was dropped (cut at a UTF-8 character start).
  std::string Text() const {
    std::string_view t = tail_;
    if (t.size() > kTailBytes) t.remove_prefix(t.size() - kTailBytes);
    bool cut = total_ > t.size();
    for (int i = 0; cut && i < 3 && !t.empty() && (t.front() & 0xC0) == 0x80; ++i) {
      t.remove_prefix(1);
    }
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
    if (t.empty()) return {};
    return (cut ? "..." : "") + std::string(t);
  }

 private:
  std::string tail_;
  size_t total_ = 0;
};

// A child of this process and its group.
struct ProcessIds {
  pid_t pid = 0;
  pid_t pgid = 0;
};

// The pids in a file of decimal numbers separated by spaces (a task's `children`);
// false when it cannot be opened.
bool ReadPids(const std::string& path, std::set<pid_t>* pids) {
  Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file.is_open()) return false;
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(file.get(), buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<size_t>(n));
  }
  const char* p = text.c_str();
  for (char* end = nullptr;; p = end) {
    const long pid = std::strtol(p, &end, 10);
    if (end == p) break;
    if (pid > 0) pids->insert(static_cast<pid_t>(pid));
  }
  return true;
}

// This process's children that are not the watch's running ones can only be orphans the
// kernel reparented here, and it hands those to the main thread (the first live thread of
// the group, which lives as long as the process): the only threads with children of their
// own are those that started watched children, and a thread that exits hands its children
// to the main thread too. So one list is read, the main thread's `children`
// (/proc/self/task/<pid>/children), which shows even a child whose own /proc entry is hidden
// (with hidepid=invisible, ProtectProc=invisible in the unit, a non-dumpable one such as
// ssh-agent is). It used to be every thread's list: about 20 reads per sweep, a sweep per
// round of the watch, measured as most of the watch thread's system calls in
// `make bench-handlers` (perf trace: 31,671 openat for 1,808 children). Kernels without
// CONFIG_PROC_CHILDREN have no such list: then the ppid field of every /proc/<pid>/stat
// (after the command name, which may hold spaces and parentheses, so after the last ')'),
// which names the process, whichever thread is the parent. Neither is a snapshot: a child
// reparented here while it is read may be missed, which the sweep's looking again covers
// (children.h). Nothing else goes missing: only the watch starts and reaps children, under
// its lock.
std::vector<ProcessIds> ChildrenOfThisProcess() {
  const pid_t self = ::getpid();
  std::set<pid_t> pids;
  const bool listed = ReadPids("/proc/self/task/" + std::to_string(self) + "/children", &pids);
  DIR* proc = listed ? nullptr : ::opendir("/proc");
  if (proc != nullptr) {
    while (const dirent* entry = ::readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      Fd stat(
          ::open(("/proc/" + std::string(entry->d_name) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
      if (!stat.is_open()) continue;
      char buffer[512];
      const ssize_t n = ::read(stat.get(), buffer, sizeof buffer - 1);
      if (n <= 0) continue;
      std::string_view text(buffer, static_cast<size_t>(n));
      const size_t paren = text.rfind(')');
      if (paren == std::string_view::npos) continue;
      const std::string rest(text.substr(paren + 1));  // " S ppid pgrp session ..."
      char state = 0;
      long ppid = 0;
      if (std::sscanf(rest.c_str(), " %c %ld", &state, &ppid) != 2) continue;
      if (ppid == self) pids.insert(static_cast<pid_t>(pid));
    }
    ::closedir(proc);
  }
  std::vector<ProcessIds> children;
  for (pid_t pid : pids) {
    // The kernel's word that it is our child (ECHILD otherwise), whatever /proc said: only
    // then may the sweep kill it. It stays ours, its id unused by another, until we reap
    // it. getpgid needs no /proc entry.
    siginfo_t info{};
    if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) continue;
    const pid_t pgid = ::getpgid(pid);
    if (pgid > 0) children.push_back({pid, pgid});
  }
  return children;
}

// SIGKILLs process group `pgid`, unless it is this process's own (children.h).
void KillGroup(pid_t pgid) {
  if (pgid > 0 && pgid != ::getpgrp()) ::kill(-pgid, SIGKILL);
}

struct Child {
  WatchedChild w;
  Fd exited;  // the pidfd: readable once the child has exited
  size_t written = 0;
  OutputTail out;
  bool timed_out = false;  // SIGKILLed at its deadline, not reaped yet
  // Set once reaped: how it ended, reported (with `done`) once no leftover is left.
  std::optional<ChildEnd> end;
};

// What an epoll event is about: the child's id times four, plus the slot.
enum Slot : uint64_t { kStdin = 0, kOutput = 1, kExited = 2 };

using Ended = std::vector<std::pair<WatchedChild, ChildEnd>>;

class Watch final {
 public:
  // The watch and its thread; nullptr with *error set when its descriptors cannot be had.
  static Watch* Create(int* error) {
    auto watch = std::unique_ptr<Watch>(new Watch());
    watch->epoll_.Reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!watch->epoll_.is_open()) return *error = errno, nullptr;
    watch->wake_.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!watch->wake_.is_open()) return *error = errno, nullptr;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 0;  // ids start at 1
    if (::epoll_ctl(watch->epoll_.get(), EPOLL_CTL_ADD, watch->wake_.get(), &ev) != 0) {
      return *error = errno, nullptr;
    }
    Watch* w = watch.release();
    std::thread([w] { w->Loop(); }).detach();
    return w;
  }

  Spawned Add(const SpawnRequest& request, WatchedChild w) {
    auto child = std::make_unique<Child>();
    child->w = std::move(w);
    Spawned spawned;
    {
      std::lock_guard lock(mu_);
      if (stopped_) {
        spawned.error = ESHUTDOWN;
        return spawned;
      }
      // Under the lock: a sweep cannot see the child before it is in children_.
      spawned = Spawn(request);
      if (spawned.pid <= 0) return spawned;
      child->w.pid = spawned.pid;
      child->exited.Reset(static_cast<int>(::syscall(SYS_pidfd_open, child->w.pid, 0)));
      for (Fd* fd : {&child->w.stdin_write, &child->w.output}) {
        if (fd->is_open()) ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
      }
      if (child->w.input.empty()) child->w.stdin_write.Close();
      const uint64_t id = next_id_++;
      Register(id, kStdin, child->w.stdin_write, EPOLLOUT);
      Register(id, kOutput, child->w.output, EPOLLIN);
      Register(id, kExited, child->exited, EPOLLIN);
      children_.emplace(id, std::move(child));
    }
    const uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);  // its deadline may be the nearest now
    return spawned;
  }

  // Rounds of kill, reap and sweep, the lock let go between them, until nothing is left or
  // kKillAllBound has passed. The watch's thread stops at its next round (stopped_).
  void KillAll() {
    const auto give_up = steady_clock::now() + kKillAllBound;
    std::unique_lock lock(mu_);
    stopped_ = true;
    for (;;) {
      bool running = false;
      for (auto& [id, c] : children_) {
        if (c->end) continue;
        KillChild(*c);
        running |= !Reap(*c);
      }
      if ((SweepLeftovers() && !running) || steady_clock::now() >= give_up) break;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(kExitPollMs));
      lock.lock();
    }
    children_.clear();
  }

 private:
  Watch() = default;

  void Register(uint64_t id, Slot slot, const Fd& fd, uint32_t events) {
    if (!fd.is_open()) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id * 4 + slot;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev);
  }

  void Unregister(Fd& fd) {
    if (!fd.is_open()) return;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd.get(), nullptr);
    fd.Close();
  }

  // Reads what the child's output has now; closes it at end of file or on error.
  void Drain(Child& c) {
    char buffer[kChunk];
    while (c.w.output.is_open()) {
      ssize_t n = ::read(c.w.output.get(), buffer, sizeof buffer);
      if (n > 0) {
        c.out.Append(buffer, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && errno == EAGAIN) {
        return;
      } else {
        Unregister(c.w.output);
      }
    }
  }

  void Feed(Child& c) {
    std::string_view rest = std::string_view(c.w.input).substr(c.written);
    ssize_t n = ::write(c.w.stdin_write.get(), rest.data(), std::min(rest.size(), kChunk));
    if (n > 0) c.written += static_cast<size_t>(n);
    // The child closed its stdin (EPIPE) or has everything: either way it is told EOF.
    if (c.written == c.w.input.size() || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      Unregister(c.w.stdin_write);
    }
  }

  // Not reaped yet, so its pid (= its group's id) cannot have been reused. The child itself
  // too: a group kill reaches only those still in the group.
  static void KillChild(const Child& c) {
    KillGroup(c.w.pid);
    ::kill(c.w.pid, SIGKILL);
  }

  // Reaps the child if it has exited, after SIGKILLing what is left of its group, and sets
  // c.end; false while it runs. Never waits.
  bool Reap(Child& c) {
    if (c.end) return true;
    siginfo_t info{};
    int r;
    do {
      // WNOWAIT: a zombie keeps its id (and its group's) from reuse until its group is killed.
      r = ::waitid(P_PID, c.w.pid, &info, WEXITED | WNOHANG | WNOWAIT);
    } while (r < 0 && errno == EINTR);
    if (r == 0 && info.si_pid == 0) return false;
    ChildEnd end;
    end.pid = c.w.pid;
    end.timed_out = c.timed_out;
    end.status_lost = r < 0;  // ECHILD: the kernel reaped it (SIGCHLD ignored)
    if (!end.status_lost) {
      KillGroup(c.w.pid);
      while (::waitpid(c.w.pid, &end.wait_status, WNOHANG) < 0 && errno == EINTR) {
      }
    }
    Unregister(c.exited);
    c.end = std::move(end);
    return true;
  }

  // SIGKILLs every child of this process that is not a watched one still unreaped (with its
  // group, when it leads one), and reaps those that have died: true when there was none
  // (children.h says why these are exactly the leftovers of ended attempts). Never waits: a
  // leftover that has not died yet, or what it leaves, is found by the next call. Only in a
  // subreaper (true otherwise). Called under mu_.
  bool SweepLeftovers() {
    int subreaper = 0;
    if (::prctl(PR_GET_CHILD_SUBREAPER, &subreaper) != 0 || subreaper == 0) return true;
    std::set<pid_t> watched;
    for (const auto& [id, c] : children_) {
      if (!c->end) watched.insert(c->w.pid);
    }
    bool none = true;
    // A child of ours stays ours, and its id (and, while it leads it, its group's) stays
    // unused, until we reap it: these kills cannot reach a stranger.
    for (const ProcessIds& p : ChildrenOfThisProcess()) {
      if (watched.count(p.pid) != 0) continue;
      none = false;
      if (p.pgid == p.pid) KillGroup(p.pid);
      ::kill(p.pid, SIGKILL);
      int status;
      while (::waitpid(p.pid, &status, WNOHANG) < 0 && errno == EINTR) {
      }
    }
    return none;
  }

  // The reaped child's end, with the tail of its output, for its `done`.
  void Release(Child& c, Ended* ended) {
    Drain(c);  // its writers are all dead: everything written is in the pipe
    ChildEnd end = std::move(*c.end);
    end.output = c.out.Text();
    Unregister(c.w.stdin_write);
    Unregister(c.w.output);
    ended->emplace_back(std::move(c.w), std::move(end));
  }

  void Loop() {
    // A child that exits without reading gives EPIPE here instead of killing the daemon.
    sigset_t sigpipe;
    sigemptyset(&sigpipe);
    sigaddset(&sigpipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigpipe, nullptr);
    epoll_event events[64];
    Ended ended;
    int wait_ms = kMaxWaitMs;
    for (;;) {
      int n = ::epoll_wait(epoll_.get(), events, 64, wait_ms);
      std::unique_lock lock(mu_);
      if (stopped_) return;  // KillAll has the children
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64 / 4;
        if (id == 0) {
          uint64_t count;
          (void)!::read(wake_.get(), &count, sizeof count);
          continue;
        }
        auto it = children_.find(id);
        if (it == children_.end()) continue;  // released by an earlier round
        Child& c = *it->second;
        switch (static_cast<Slot>(events[i].data.u64 % 4)) {
          case kStdin:
            Feed(c);
            break;
          case kOutput:
            Drain(c);
            break;
          case kExited:
            Reap(c);
            break;
        }
      }
      wait_ms = Round(&ended);
      lock.unlock();
      for (auto& [w, end] : ended) w.done(std::move(end));
      ended.clear();
    }
  }

  // Kills the children past their deadline, reaps those without a pidfd, and once a sweep
  // finds no leftover releases the reaped ones; returns how long the next wait may be.
  int Round(Ended* ended) {
    const auto now = steady_clock::now();
    const auto soon = now + std::chrono::milliseconds(kExitPollMs);
    auto next = now + std::chrono::milliseconds(kMaxWaitMs);
    bool any_reaped = false;
    for (auto& [id, child] : children_) {
      Child& c = *child;
      if (!c.exited.is_open() && !Reap(c)) next = std::min(next, soon);
      if (!c.end && !c.timed_out && c.w.deadline <= now) {
        KillChild(c);
        c.timed_out = true;  // its pidfd (or the poll) tells when it has died
      }
      if (!c.end && !c.timed_out) next = std::min(next, c.w.deadline);
      any_reaped |= c.end.has_value();
    }
    if (any_reaped && !SweepLeftovers()) {
      next = std::min(next, soon);  // leftovers dying: the reaped wait for them
    } else if (any_reaped) {
      for (auto it = children_.begin(); it != children_.end();) {
        if (!it->second->end) {
          ++it;
          continue;
        }
        Release(*it->second, ended);
        it = children_.erase(it);
      }
    }
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(std::clamp<int64_t>(ms, 1, kMaxWaitMs));
  }

  Fd epoll_;
  Fd wake_;
  std::mutex mu_;  // guards everything below, and every waitpid of the process's children
  // Running children, and reaped ones until their tree is swept (Child::end).
  std::map<uint64_t, std::unique_ptr<Child>> children_;
  uint64_t next_id_ = 1;
  bool stopped_ = false;  // KillAll ran: nothing more is started or reported
};

// The process's watch: made on first use, never destroyed (its thread runs to the end). A
// process forked from this one (tests do) has no copy of the thread: it makes its own.
std::mutex watch_mu;
Watch* the_watch = nullptr;
pid_t watch_pid = 0;

Watch* TheWatch(int* error) {
  std::lock_guard lock(watch_mu);
  if (the_watch == nullptr || watch_pid != ::getpid()) {
    Watch* made = Watch::Create(error);
    if (made == nullptr) return nullptr;
    the_watch = made;
    watch_pid = ::getpid();
  }
  return the_watch;
}

}  // namespace

int PrepareWatch() {
  int error = 0;
  return TheWatch(&error) == nullptr ? error : 0;
}

Spawned SpawnWatched(const SpawnRequest& request, WatchedChild child) {
  int error = 0;
  return TheWatch(&error)->Add(request, std::move(child));
}

void KillWatchedChildren() {
  std::lock_guard lock(watch_mu);
  if (the_watch != nullptr && watch_pid == ::getpid()) the_watch->KillAll();
}

}  // namespace hookbox
