// The `exec` handler: one child process per attempt, started by Spawn() (spawn.h: no shell,
// so nothing in an event or in argv is ever interpreted; a session and process group of its
// own; no descriptor of the daemon; a minimal environment, never the daemon's own, which
// holds webhook secrets; `/` or the handler's `workdir:` as its directory). The child is
// then the watch's (children.h): it feeds the body to the child's stdin, keeps the tail of
// its output, SIGKILLs it and its group at the deadline, and when it ends, by exit or
// deadline, kills everything it started before reporting, with no thread of the caller
// waiting meanwhile (Start); Run() is Start() waited on. A child that cannot be started
// because the daemon is out of descriptors or processes (EMFILE, ENFILE, EAGAIN) is the
// daemon's failure, not the handler's: the result says so (`infrastructure`) and the job is
// retried without spending its attempt budget.
#include "handlers/exec/exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <string_view>
#include <utility>

#include "config/config.h"
#include "config/yaml_reader.h"
#include "handlers/exec/children.h"
#include "handlers/exec/spawn.h"

namespace hookbox {
namespace {

using std::chrono::steady_clock;

constexpr Duration kDefaultTimeout = std::chrono::seconds(30);
// Children are waited on by the watch, not by threads: many at once cost little.
constexpr int kDefaultConcurrency = 16;
constexpr int kDefaultPermanentExit = 65;  // EX_DATAERR: the input itself is bad
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
// The only variables copied from the daemon's environment.
constexpr const char* kInheritedEnv[] = {"PATH", "LANG", "LC_ALL", "HOME"};

// What the reader read at load (a KindSettings, handlers/handler.h).
struct ExecSpec final : KindSettings {
  std::string program;            // absolute path of command[0]; "" when read without host_checks
  std::vector<std::string> argv;  // command as configured
  Duration timeout = kDefaultTimeout;
  std::vector<int> permanent_exit_codes{kDefaultPermanentExit};
  std::vector<std::string> env;  // "NAME=value": inherited, then the configured map
  int concurrency = kDefaultConcurrency;
  // Where the child starts: never the daemon's own directory, which is wherever it was
  // started from.
  std::string workdir = "/";
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

std::string WithOutput(const std::string& head, const std::string& output) {
  return output.empty() ? head : head + "; output: " + output;
}

// What a child's end means for the attempt: exit 0 ok, a listed exit code permanent,
// anything else (another code, a signal, the deadline) a failure to retry.
HandlerResult ResultOf(const ChildEnd& end, Duration timeout,
                       const std::vector<int>& permanent_exit_codes, pid_t pid) {
  const std::string& out = end.output;
  if (end.timed_out) {
    return {Outcome::kTimeout,
            WithOutput("timeout after " + FormatDuration(timeout) + " (process group " +
                           std::to_string(pid) + " killed)",
                       out),
            {}};
  }
  if (end.status_lost) {
    return {Outcome::kFailed, WithOutput("exit status lost (SIGCHLD is ignored)", out), {}};
  }
  const int status = end.wait_status;
  if (WIFSIGNALED(status)) {
    return {Outcome::kFailed, WithOutput("signal " + std::to_string(WTERMSIG(status)), out), {}};
  }
  int code = WEXITSTATUS(status);
  std::string head = "exit " + std::to_string(code);
  if (code == 0) return {Outcome::kOk, WithOutput(head, out), {}};
  bool permanent = std::find(permanent_exit_codes.begin(), permanent_exit_codes.end(), code) !=
                   permanent_exit_codes.end();
  return {permanent ? Outcome::kPermanent : Outcome::kFailed, WithOutput(head, out), {}};
}

class ExecHandler final : public Handler {
 public:
  explicit ExecHandler(ExecSpec spec) : spec_(std::move(spec)) {}

  HandlerResult Run(const HandlerEvent& event) override;
  bool Start(const HandlerEvent& event, Done done) override;
  std::chrono::milliseconds timeout() const override { return spec_.timeout; }
  int concurrency() const override { return spec_.concurrency; }

 private:
  std::vector<std::string> Environment(const HandlerEvent& event) const;

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
  // 0 for the first run, n after the n-th `hookbox inbox replay` of the job.
  env.push_back("HOOKBOX_REPLAY_GENERATION=" + std::to_string(event.generation));
  // The name OpenTelemetry's environment carriers read (README, "Trace context").
  if (!event.traceparent.empty()) env.push_back("TRACEPARENT=" + event.traceparent);
  return env;
}

bool ExecHandler::Start(const HandlerEvent& event, Done done) {
  if (int error = PrepareWatch(); error != 0) {
    done(CannotStart("cannot watch children", error));
    return true;
  }
  Fd stdin_read, stdin_write, out_read, out_write;
  if (int error = MakePipe(stdin_read, stdin_write); error != 0) {
    done(CannotStart("cannot create pipes", error));
    return true;
  }
  if (int error = MakePipe(out_read, out_write); error != 0) {
    done(CannotStart("cannot create pipes", error));
    return true;
  }
  std::vector<std::string> env = Environment(event);
  std::vector<char*> argv_ptrs, env_ptrs;
  for (const std::string& a : spec_.argv) argv_ptrs.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env) env_ptrs.push_back(const_cast<char*>(e.c_str()));
  argv_ptrs.push_back(nullptr);
  env_ptrs.push_back(nullptr);

  WatchedChild w;
  w.stdin_write = std::move(stdin_write);
  w.input = event.body;
  w.output = std::move(out_read);
  w.deadline = std::chrono::steady_clock::now() + spec_.timeout;
  // The handler may be swapped out (SIGHUP) while the child runs: the callback keeps what
  // it needs by value. The pid is only known once started, so it comes with the end.
  auto shared_done = std::make_shared<Done>(std::move(done));
  w.done = [shared_done, timeout = spec_.timeout, permanent = spec_.permanent_exit_codes](
               const ChildEnd& end) { (*shared_done)(ResultOf(end, timeout, permanent, end.pid)); };
  const Spawned child = SpawnWatched({spec_.program.c_str(), argv_ptrs.data(), env_ptrs.data(),
                                      stdin_read.get(), out_write.get(), spec_.workdir.c_str()},
                                     std::move(w));
  if (child.pid <= 0) {
    (*shared_done)(
        CannotStart("cannot start " + spec_.program + " in " + spec_.workdir, child.error));
  }
  return true;
}

HandlerResult ExecHandler::Run(const HandlerEvent& event) {
  std::promise<HandlerResult> result;
  std::future<HandlerResult> ready = result.get_future();
  Start(event, [&result](HandlerResult r) { result.set_value(std::move(r)); });
  return ready.get();
}

// --- the reader and the factory --------------------------------------------------------------

// Reads the settings with the loader's reader and a table of keys (config/yaml_reader.h);
// what each value must be is checked here, and with host_checks the program and workdir as
// they are on this host.
class SpecReader final {
 public:
  SpecReader(YamlReader& reader, const std::string& where, const LoadOptions& options)
      : where_(where), reader_(reader), host_checks_(options.host_checks) {}

  void Read(const YAML::Node& config, ExecSpec& spec);

 private:
  void Error(const std::string& at, const std::string& what) { reader_.Error(at, what); }
  void ReadCommand(const YAML::Node& node, const std::string& at, ExecSpec& spec);
  void ReadExitCodes(const YAML::Node& node, const std::string& at, ExecSpec& spec);
  void ReadWorkdir(const YAML::Node& node, const std::string& at, ExecSpec& spec);
  void ReadEnv(const YAML::Node& node, const std::string& at,
               std::map<std::string, std::string>& env);
  // An absolute path, or a bare name found on `path`; nullopt after an error.
  std::optional<std::string> Resolve(const YAML::Node& item, const std::string& name,
                                     const std::string& at);

  const std::string& where_;
  YamlReader& reader_;
  const bool host_checks_;
  std::string path_;  // the PATH the child gets, which also resolves bare names
};

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

bool IsAbsolutePath(std::string_view path) { return !path.empty() && path[0] == '/'; }

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

  const bool is_map = reader_.ReadMapping(
      config, where_,
      {
          {"command", [&](auto& n, auto& at) { ReadCommand(n, at, spec); }},
          {"timeout", [&](auto& n, auto& at) { Set(spec.timeout, reader_.Timeout(n, at, "30s")); }},
          {"permanent_exit_codes", [&](auto& n, auto& at) { ReadExitCodes(n, at, spec); }},
          {"env", [&](auto& n, auto& at) { ReadEnv(n, at, env); }},
          ConcurrencyField(reader_, &spec.concurrency),
          {"workdir", [&](auto& n, auto& at) { ReadWorkdir(n, at, spec); }},
      });
  if (!is_map) return;
  reader_.Require(config, where_, {"command"});
  for (const auto& [name, value] : env) spec.env.push_back(name + "=" + value);
}

void SpecReader::ReadCommand(const YAML::Node& node, const std::string& at, ExecSpec& spec) {
  const bool is_list = reader_.ReadList(node, at, /*non_empty=*/true,
                                        "a non-empty list: the program, then its arguments",
                                        [&](auto& item, auto& item_at, size_t) {
                                          auto text = reader_.Scalar(item, item_at, "text");
                                          if (!text) return;
                                          if (text->find('\0') != std::string::npos) {
                                            reader_.ErrorAt(item, item_at, "contains a NUL byte");
                                          } else {
                                            spec.argv.push_back(*text);
                                          }
                                        });
  if (!is_list || spec.argv.size() != node.size()) return;
  if (!host_checks_) return;
  if (auto program = Resolve(node[0], spec.argv[0], Item(at, 0))) spec.program = *program;
}

std::optional<std::string> SpecReader::Resolve(const YAML::Node& item, const std::string& name,
                                               const std::string& at) {
  auto error = [&](const std::string& what) { reader_.ErrorAt(item, at, what); };
  if (name.find('/') != std::string::npos) {
    if (name[0] != '/') {
      error("\"" + name +
            "\" is a relative path: give an absolute path or a bare name found on PATH");
    } else if (!IsExecutableFile(name)) {
      error("\"" + name + "\" is not an executable file");
    } else {
      return name;
    }
    return std::nullopt;
  }
  if (name.empty()) {
    error("the program is empty");
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
  error("\"" + name + "\" is not found on PATH (" + path_ + ")");
  return std::nullopt;
}

void SpecReader::ReadExitCodes(const YAML::Node& node, const std::string& at, ExecSpec& spec) {
  spec.permanent_exit_codes.clear();
  reader_.ReadList(
      node, at, /*non_empty=*/false, "a list of exit codes (1-255)",
      [&](auto& item, auto& item_at, size_t) {
        if (auto code = reader_.Int(item, item_at, 1, 255, "an exit code from 1 to 255")) {
          spec.permanent_exit_codes.push_back(*code);
        }
      });
}

void SpecReader::ReadWorkdir(const YAML::Node& node, const std::string& at, ExecSpec& spec) {
  auto text = reader_.Scalar(node, at, "an absolute path", IsAbsolutePath);
  if (!text) return;
  const std::string& dir = *text;
  struct stat st;
  if (dir.find('\0') != std::string::npos) {
    Error(at, "contains a NUL byte");
  } else if (host_checks_ && ::stat(dir.c_str(), &st) != 0) {
    Error(at, "\"" + dir + "\": " + std::strerror(errno));
  } else if (host_checks_ && !S_ISDIR(st.st_mode)) {
    Error(at, "\"" + dir + "\" is not a directory");
  } else {
    spec.workdir = dir;
  }
}

void SpecReader::ReadEnv(const YAML::Node& node, const std::string& at,
                         std::map<std::string, std::string>& env) {
  reader_.ReadEntries(
      node, at, "a mapping of NAME: value", [&](auto& key, auto& value, auto& name_at) {
        const std::string name = key.Scalar();
        auto error = [&](const std::string& what) { reader_.ErrorAt(key, name_at, what); };
        if (!IsEnvName(name)) {
          error("not a variable name (letters, digits, \"_\")");
        } else if (name.starts_with("HOOKBOX_")) {
          error("HOOKBOX_* variables are set by hookbox");
        } else if (name == "TRACEPARENT") {
          error("TRACEPARENT is set by hookbox: the attempt's W3C trace context");
        } else if (auto text = reader_.Scalar(value, name_at, "text")) {
          if (text->find('\0') != std::string::npos) {
            error("contains a NUL byte");
          } else {
            env[name] = *text;
          }
        }
      });
}

}  // namespace

std::shared_ptr<const KindSettings> ReadExecSettings(YamlReader& reader, const YamlTree& settings,
                                                     const std::string& where,
                                                     const LoadOptions& options) {
  const size_t before = reader.error_count();
  auto spec = std::make_shared<ExecSpec>();
  SpecReader(reader, where, options).Read(settings.node, *spec);
  if (reader.error_count() != before) return nullptr;
  return spec;
}

std::unique_ptr<Handler> MakeExecHandler(const KindSettings& settings, const std::string& where,
                                         std::vector<std::string>* errors) {
  const auto* spec = KindSpec<ExecSpec>(settings, where, "an exec handler's", errors);
  if (spec == nullptr) return nullptr;
  return std::make_unique<ExecHandler>(*spec);
}

}  // namespace hookbox
