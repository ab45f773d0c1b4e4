// The `exec` handler: one child process per attempt, started with fork + execve (no shell,
// so nothing in an event or in argv is ever interpreted) in a process group of its own.
// The calling worker thread feeds the body to the child's stdin and reads its combined
// stdout+stderr in one poll loop, so a child that never reads, or writes without end, cannot
// block it; only the last kTailBytes of output are kept. At the deadline the whole group is
// SIGKILLed and the child reaped before Run returns: when an attempt is recorded as over,
// nothing of it still runs. The child sees a minimal environment, never the daemon's own,
// which holds webhook secrets. A child that cannot be started because the daemon is out of
// descriptors or processes (EMFILE, ENFILE, EAGAIN from pipe2, fork or execve) is the
// daemon's failure, not the handler's: the result says so (`infrastructure`) and the job is
// retried without spending its attempt budget.
#include "handlers/exec/exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "config/config.h"

namespace hookbox {
namespace {

using std::chrono::steady_clock;

constexpr Duration kDefaultTimeout = std::chrono::seconds(30);
constexpr int kDefaultPermanentExit = 65;  // EX_DATAERR: the input itself is bad
constexpr size_t kTailBytes = 2048;
constexpr size_t kChunk = 64 * 1024;
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
// The only variables copied from the daemon's environment.
constexpr const char* kInheritedEnv[] = {"PATH", "LANG", "LC_ALL", "HOME"};
// Without pidfd_open (older kernels, seccomp) the loop looks for the child's exit this often.
constexpr int kExitPollMs = 10;

struct ExecSpec {
  std::string program;             // absolute path of command[0]
  std::vector<std::string> argv;   // command as configured
  Duration timeout = kDefaultTimeout;
  std::vector<int> permanent_exit_codes{kDefaultPermanentExit};
  std::vector<std::string> env;    // "NAME=value": inherited, then the configured map
};

// An owned file descriptor.
class Fd final {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  void Reset(int fd) {
    Close();
    fd_ = fd;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A close-on-exec pipe whose ends are never 0-2, so the child's dup2s cannot clobber them.
// 0, or the errno of what failed.
int MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno;
  int error = 0;
  for (int& fd : fds) {
    if (fd > 2) continue;
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (moved < 0) error = errno;
    ::close(fd);
    fd = moved;
  }
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  return error;
}

// Starting the child failed because the daemon ran out of descriptors (its own, EMFILE, or
// the system's, ENFILE) or processes (EAGAIN): nothing to do with the handler or the event.
bool OutOfResources(int error) { return error == EMFILE || error == ENFILE || error == EAGAIN; }

// A child that could not be started: a failure, marked as the daemon's (infrastructure)
// when it ran out of resources, so the job is retried without spending its attempt budget.
HandlerResult CannotStart(const std::string& what, int error) {
  HandlerResult r{Outcome::kFailed, what + ": " + std::strerror(error), {}};
  r.infrastructure = OutOfResources(error);
  return r;
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

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

// Blocks SIGPIPE in this thread while it writes to a child's stdin, so a child that exits
// without reading gives EPIPE instead of killing the daemon; a SIGPIPE raised meanwhile is
// taken off the thread before the old mask comes back.
class SigpipeBlock final {
 public:
  SigpipeBlock() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &sigpipe_, &old_mask_);
  }
  ~SigpipeBlock() {
    if (raised_ && !was_pending_) {
      timespec zero{};
      while (sigtimedwait(&sigpipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  void Raised() { raised_ = true; }

 private:
  sigset_t sigpipe_;
  sigset_t old_mask_;
  bool was_pending_ = false;
  bool raised_ = false;
};

// Reads what `fd` has now without blocking; closes it at end of file or on error.
void Drain(Fd& fd, OutputTail& out) {
  char buffer[kChunk];
  while (fd.is_open()) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n > 0) {
      out.Append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      return;
    } else {
      fd.Close();
    }
  }
}

pid_t WaitFor(pid_t pid, int* status, int options) {
  pid_t r;
  do {
    r = ::waitpid(pid, status, options);
  } while (r < 0 && errno == EINTR);
  return r;
}

std::string WithOutput(std::string head, const OutputTail& out) {
  std::string text = out.Text();
  return text.empty() ? head : head + "; output: " + text;
}

class ExecHandler final : public Handler {
 public:
  explicit ExecHandler(ExecSpec spec) : spec_(std::move(spec)) {}

  HandlerResult Run(const HandlerEvent& event) override;
  std::chrono::milliseconds timeout() const override { return spec_.timeout; }

 private:
  std::vector<std::string> Environment(const HandlerEvent& event) const;
  // The outcome of a child that ended by itself with wait status `status`.
  HandlerResult Finished(int status, const OutputTail& out) const;

  const ExecSpec spec_;
};

std::vector<std::string> ExecHandler::Environment(const HandlerEvent& event) const {
  std::vector<std::string> env = spec_.env;
  env.push_back("HOOKBOX_ENDPOINT=" + event.endpoint);
  env.push_back("HOOKBOX_EVENT_ID=" + event.event_id);
  env.push_back("HOOKBOX_EVENT_TYPE=" + event.event_type);
  env.push_back("HOOKBOX_RESOURCE=" + event.resource_id);
  env.push_back("HOOKBOX_SEQUENCE=" + event.sequence);
  env.push_back("HOOKBOX_ATTEMPT=" + std::to_string(event.attempt));
  env.push_back("HOOKBOX_IDEMPOTENCY_KEY=" + event.IdempotencyKey());
  return env;
}

HandlerResult ExecHandler::Finished(int status, const OutputTail& out) const {
  if (WIFSIGNALED(status)) {
    return {Outcome::kFailed, WithOutput("signal " + std::to_string(WTERMSIG(status)), out), {}};
  }
  int code = WEXITSTATUS(status);
  std::string head = "exit " + std::to_string(code);
  if (code == 0) return {Outcome::kOk, WithOutput(head, out), {}};
  bool permanent = std::find(spec_.permanent_exit_codes.begin(), spec_.permanent_exit_codes.end(),
                             code) != spec_.permanent_exit_codes.end();
  return {permanent ? Outcome::kPermanent : Outcome::kFailed, WithOutput(head, out), {}};
}

HandlerResult ExecHandler::Run(const HandlerEvent& event) {
  auto fail = [](std::string what) { return HandlerResult{Outcome::kFailed, std::move(what), {}}; };
  Fd stdin_read, stdin_write, out_read, out_write;
  if (int error = MakePipe(stdin_read, stdin_write); error != 0) {
    return CannotStart("cannot create pipes", error);
  }
  if (int error = MakePipe(out_read, out_write); error != 0) {
    return CannotStart("cannot create pipes", error);
  }

  std::vector<std::string> env = Environment(event);
  std::vector<char*> argv_ptrs, env_ptrs;
  for (const std::string& a : spec_.argv) argv_ptrs.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env) env_ptrs.push_back(const_cast<char*>(e.c_str()));
  argv_ptrs.push_back(nullptr);
  env_ptrs.push_back(nullptr);

  // fork + execve rather than posix_spawn, for one thing posix_spawn cannot do: make the
  // child die with the daemon (PR_SET_PDEATHSIG). After a kill -9 the restarted daemon runs
  // the job again at once; an orphaned first attempt still running would overlap it. Between
  // fork and execve the child calls only async-signal-safe functions.
  Fd err_read, err_write;  // execve's failure, reported by the child; closed by a success
  if (int error = MakePipe(err_read, err_write); error != 0) {
    return CannotStart("cannot create pipes", error);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return CannotStart("cannot fork", errno);
  if (pid == 0) {
    ::setpgid(0, 0);  // a new group, led by the child: a timeout kills all of it
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the daemon died before prctl took effect
    ::dup2(stdin_read.get(), 0);
    ::dup2(out_write.get(), 1);
    ::dup2(out_write.get(), 2);
    int err_fd = ::fcntl(err_write.get(), F_DUPFD_CLOEXEC, 3);
    if (err_fd < 0) err_fd = err_write.get();  // no descriptor left to move it to: keep it
    // Whatever the daemon has open (listening sockets, the database) stays out of the child.
    ::close_range(3, err_fd - 1, 0);
    ::close_range(err_fd + 1, ~0U, 0);
    // The daemon's blocked and ignored signals (SIGPIPE) are its own.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(spec_.program.c_str(), argv_ptrs.data(), env_ptrs.data());
    const int err = errno;
    (void)!::write(err_fd, &err, sizeof err);
    ::_exit(127);
  }
  stdin_read.Close();
  out_write.Close();
  err_write.Close();
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(err_read.get(), &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int ignored;
    ::waitpid(pid, &ignored, 0);
    return CannotStart("cannot start " + spec_.program, exec_errno);
  }

  SetNonBlocking(stdin_write.get());
  SetNonBlocking(out_read.get());
  Fd exited(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // readable once it exits
  SigpipeBlock sigpipe_block;
  OutputTail out;
  std::string_view unwritten = event.body;
  if (unwritten.empty()) stdin_write.Close();
  const auto deadline = steady_clock::now() + spec_.timeout;
  int status = 0;

  for (;;) {
    pollfd fds[3];
    nfds_t n = 0;
    int in_slot = -1, out_slot = -1;
    if (stdin_write.is_open()) {
      in_slot = static_cast<int>(n);
      fds[n++] = {stdin_write.get(), POLLOUT, 0};
    }
    if (out_read.is_open()) {
      out_slot = static_cast<int>(n);
      fds[n++] = {out_read.get(), POLLIN, 0};
    }
    if (exited.is_open()) fds[n++] = {exited.get(), POLLIN, 0};

    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady_clock::now());
    if (left.count() <= 0) break;
    int wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 60'000));
    if (!exited.is_open()) wait_ms = std::min(wait_ms, kExitPollMs);
    if (::poll(fds, n, wait_ms) < 0 && errno != EINTR) {
      return fail(std::string("poll failed: ") + std::strerror(errno));  // cannot happen
    }

    if (in_slot >= 0 && fds[in_slot].revents != 0) {
      ssize_t w = ::write(stdin_write.get(), unwritten.data(), std::min(unwritten.size(), kChunk));
      if (w > 0) unwritten.remove_prefix(static_cast<size_t>(w));
      if (w < 0 && errno == EPIPE) sigpipe_block.Raised();
      // The child closed its stdin (EPIPE) or has everything: either way it is told EOF.
      if (unwritten.empty() || (w < 0 && errno != EAGAIN && errno != EINTR)) stdin_write.Close();
    }
    if (out_slot >= 0 && fds[out_slot].revents != 0) Drain(out_read, out);

    pid_t r = WaitFor(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
      Drain(out_read, out);  // everything it wrote is in the pipe by now
      if (r < 0) return fail(WithOutput("exit status lost (SIGCHLD is ignored)", out));
      return Finished(status, out);
    }
  }

  // Timed out, the child not reaped yet, so its pid (= the group id) cannot have been reused.
  ::kill(-pid, SIGKILL);
  WaitFor(pid, &status, 0);
  Drain(out_read, out);
  return {Outcome::kTimeout,
          WithOutput("timeout after " + FormatDuration(spec_.timeout) + " (process group " +
                         std::to_string(pid) + " killed)",
                     out),
          {}};
}

// --- the factory ---------------------------------------------------------------------------

class SpecReader final {
 public:
  SpecReader(const std::string& where, std::vector<std::string>* errors)
      : where_(where), errors_(errors) {}

  void Read(const YAML::Node& config, ExecSpec& spec);

 private:
  void Error(const std::string& at, const std::string& what) {
    errors_->push_back(at + ": " + what);
  }
  void ReadCommand(const YAML::Node& node, const std::string& at, ExecSpec& spec);
  void ReadExitCodes(const YAML::Node& node, const std::string& at, ExecSpec& spec);
  void ReadEnv(const YAML::Node& node, const std::string& at,
               std::map<std::string, std::string>& env);
  // An absolute path, or a bare name found on `path`; nullopt after an error.
  std::optional<std::string> Resolve(const std::string& name, const std::string& at);

  const std::string& where_;
  std::vector<std::string>* errors_;
  std::string path_;  // the PATH the child gets, which also resolves bare names
};

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

bool IsEnvName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void SpecReader::Read(const YAML::Node& config, ExecSpec& spec) {
  std::map<std::string, std::string> env;
  for (const char* name : kInheritedEnv) {
    if (const char* value = std::getenv(name)) env[name] = value;
  }
  if (env["PATH"].empty()) env["PATH"] = kDefaultPath;
  path_ = env["PATH"];

  if (!config.IsMap()) return Error(where_, "expected a mapping");
  std::set<std::string> seen;
  const YAML::Node* command = nullptr;
  for (const auto& entry : config) {
    const std::string key = entry.first.Scalar();
    const std::string at = where_ + "." + key;
    if (!seen.insert(key).second) {
      Error(at, "appears twice");
    } else if (key == "command") {
      command = &entry.second;
      ReadCommand(entry.second, at, spec);
    } else if (key == "timeout") {
      auto timeout = entry.second.IsScalar() ? ParseDuration(entry.second.Scalar())
                                             : StatusOr<Duration>(Status::InvalidArgument(
                                                   "expected a duration such as 30s"));
      if (!timeout.ok()) Error(at, timeout.status().what());
      else if (timeout->count() <= 0) Error(at, "must be longer than 0");
      else spec.timeout = *timeout;
    } else if (key == "permanent_exit_codes") {
      ReadExitCodes(entry.second, at, spec);
    } else if (key == "env") {
      ReadEnv(entry.second, at, env);
    } else {
      Error(where_, "unknown key \"" + key + "\" (expected command, timeout, "
                    "permanent_exit_codes, env)");
    }
  }
  if (command == nullptr) Error(where_, "command is required");
  for (const auto& [name, value] : env) spec.env.push_back(name + "=" + value);
}

void SpecReader::ReadCommand(const YAML::Node& node, const std::string& at, ExecSpec& spec) {
  if (!node.IsSequence() || node.size() == 0) {
    return Error(at, "expected a non-empty list: the program, then its arguments");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item_at = at + "[" + std::to_string(i) + "]";
    if (!node[i].IsScalar()) {
      Error(item_at, "expected text");
    } else if (node[i].Scalar().find('\0') != std::string::npos) {
      Error(item_at, "contains a NUL byte");
    } else {
      spec.argv.push_back(node[i].Scalar());
    }
  }
  if (spec.argv.size() != node.size()) return;
  if (auto program = Resolve(spec.argv[0], at + "[0]")) spec.program = *program;
}

std::optional<std::string> SpecReader::Resolve(const std::string& name, const std::string& at) {
  if (name.find('/') != std::string::npos) {
    if (name[0] != '/') {
      Error(at, "\"" + name + "\" is a relative path: give an absolute path or a bare name "
                "found on PATH");
    } else if (!IsExecutableFile(name)) {
      Error(at, "\"" + name + "\" is not an executable file");
    } else {
      return name;
    }
    return std::nullopt;
  }
  if (name.empty()) {
    Error(at, "the program is empty");
    return std::nullopt;
  }
  std::string_view dirs = path_;
  while (!dirs.empty()) {
    size_t colon = dirs.find(':');
    std::string_view dir = dirs.substr(0, colon);
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    if (dir.empty() || dir[0] != '/') continue;  // never the working directory
    std::string candidate = std::string(dir) + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
  }
  Error(at, "\"" + name + "\" is not found on PATH (" + path_ + ")");
  return std::nullopt;
}

void SpecReader::ReadExitCodes(const YAML::Node& node, const std::string& at, ExecSpec& spec) {
  if (!node.IsSequence()) return Error(at, "expected a list of exit codes (1-255)");
  spec.permanent_exit_codes.clear();
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string& text = node[i].IsScalar() ? node[i].Scalar() : std::string();
    int code = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), code);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || code < 1 ||
        code > 255) {
      Error(at + "[" + std::to_string(i) + "]", "expected an exit code from 1 to 255");
    } else {
      spec.permanent_exit_codes.push_back(code);
    }
  }
}

void SpecReader::ReadEnv(const YAML::Node& node, const std::string& at,
                         std::map<std::string, std::string>& env) {
  if (!node.IsMap()) return Error(at, "expected a mapping of NAME: value");
  for (const auto& entry : node) {
    const std::string name = entry.first.Scalar();
    const std::string name_at = at + "." + name;
    if (!IsEnvName(name)) {
      Error(name_at, "not a variable name (letters, digits, \"_\")");
    } else if (name.starts_with("HOOKBOX_")) {
      Error(name_at, "HOOKBOX_* variables are set by hookbox");
    } else if (!entry.second.IsScalar()) {
      Error(name_at, "expected text");
    } else if (entry.second.Scalar().find('\0') != std::string::npos) {
      Error(name_at, "contains a NUL byte");
    } else {
      env[name] = entry.second.Scalar();
    }
  }
}

}  // namespace

std::unique_ptr<Handler> MakeExecHandler(const YAML::Node& config, const std::string& where,
                                         std::vector<std::string>* errors) {
  const size_t before = errors->size();
  ExecSpec spec;
  try {
    SpecReader(where, errors).Read(config, spec);
  } catch (const YAML::Exception& e) {
    errors->push_back(where + ": " + e.what());
  }
  if (errors->size() != before) return nullptr;
  return std::make_unique<ExecHandler>(std::move(spec));
}

}  // namespace hookbox
