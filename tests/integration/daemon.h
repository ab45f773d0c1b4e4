// Test harness for integration tests: a temporary directory, the real `hookbox` binary
// started as a child process on a free port (listen: 127.0.0.1:0; the port is read from its
// "listening" log line), HTTP to it, raw bytes to it, and the CLI run against its database.
// Nothing is mocked: real files, real sockets, real processes. DaemonOptions start it the
// way systemd would: extra environment (NOTIFY_SOCKET, WATCHDOG_USEC, ...) and a listening
// socket passed as fd 3 with LISTEN_FDS=1 and LISTEN_PID naming the child.
#pragma once

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "verify/verify.h"

extern char** environ;

namespace hookbox::testing {

namespace fs = std::filesystem;

// A downstream on a free loopback port: every POST goes to `on_post`, served on a thread of
// its own from construction until destruction. An http handler's target in a test.
class LoopbackServer {
 public:
  explicit LoopbackServer(httplib::Server::Handler on_post) {
    server_.Post(".*", std::move(on_post));
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~LoopbackServer() {
    server_.stop();
    thread_.join();
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;
  int port() const { return port_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "hookbox-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Polls `done` every 20 ms for up to `limit`; true when it became true. (A bound on a
// broken test, never a timing assertion.)
template <typename F>
bool Eventually(F done, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The lines of a file (e.g. one per handler run, as tests' recorder commands append them).
inline std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// An answer as "<code> <status or error>", e.g. "200 duplicate", "409 this event is ...";
// "no answer" when the request failed.
inline std::string AnswerLine(const httplib::Result& r) {
  if (!r) return "no answer";
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  const bool has = j.is_object() && j.contains("status") && j["status"].is_string();
  return std::to_string(r->status) + " " +
         (has             ? j["status"].get<std::string>()
          : j.is_object() ? j.value("error", "")
                          : std::string());
}

// hookbox's headers as httplib's, without Content-Type (the POST call sets it).
inline httplib::Headers HttplibHeaders(const Headers& headers) {
  httplib::Headers out;
  for (const auto& [k, v] : headers) {
    if (k != "Content-Type") out.emplace(k, v);
  }
  return out;
}

// The headers GitHub would send with `body`, signed with `secret` (hookbox::Sign, the
// producer's side of verify/github.cc), for delivery id `delivery` and event type `event`.
inline httplib::Headers GithubSigned(const std::string& secret, const std::string& body,
                                     const std::string& delivery,
                                     const std::string& event = "push") {
  Endpoint github;
  github.name = "github";
  github.provider = Provider::kGithub;
  return HttplibHeaders(
      Sign(github, {"value", secret}, body, std::chrono::system_clock::now(), delivery, event));
}

// A daemon with one endpoint `raw` at /hooks/raw that takes anything (`verify: none`, what
// a producer, or whoever holds its secret, may put in a delivery), its id and type from
// the X-Id and X-Type headers, no handler and no worker. More endpoints may be appended.
inline const std::string kRawEndpointConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: raw
    path: /hooks/raw
    verify: none
    event_id: header:X-Id
    event_type: header:X-Type
)";

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs argv to completion with stdout and stderr sent to files (without a shell).
inline CliResult RunToCompletion(std::vector<std::string> argv_s, const std::string& out_path,
                                 const std::string& err_path) {
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("cannot spawn " + argv_s[0]);
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ReadFile(out_path),
          ReadFile(err_path)};
}

// Runs `hookbox ARGS...` to completion.
inline CliResult RunHookbox(const std::vector<std::string>& args, const std::string& workdir) {
  std::vector<std::string> argv = {HOOKBOX_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunToCompletion(argv, workdir + "/.cli-out", workdir + "/.cli-err");
}

// `sqlite3 DB SQL` (the Debian CLI): what an operator would see in the file.
inline std::string RunSqlite(const std::string& db, const std::string& sql) {
  return RunToCompletion({"/usr/bin/sqlite3", db, sql}, db + ".sql-out", db + ".sql-err").out;
}

// A log line as JSON (discarded if it is not), after the journal's priority prefix (`<6>`)
// when the daemon ran with its stderr as JOURNAL_STREAM (ops/log.h).
inline nlohmann::json ParseLogLine(std::string_view line) {
  if (line.size() > 3 && line[0] == '<' && line[2] == '>') line.remove_prefix(3);
  return nlohmann::json::parse(line, nullptr, false);
}

// How `serve` is started beyond its config.
struct DaemonOptions {
  std::vector<std::string> env;  // "NAME=value", added to this process's environment
  int listen_fd = -1;            // >= 0: passed as fd 3, as systemd's socket activation does
  // argv run before hookbox's own (e.g. setpriv, to run it as another user)
  std::vector<std::string> wrapper = {};
};

// A running `hookbox serve`. The config text may use {DB} for the database path and {DIR}
// for the test's temporary directory.
class Daemon {
 public:
  Daemon(const TempDir& dir, std::string config_yaml, const std::string& db = "")
      : Daemon(dir, std::move(config_yaml), DaemonOptions{}, db) {}
  Daemon(const TempDir& dir, std::string config_yaml, DaemonOptions options,
         const std::string& db = "")
      : dir_(dir.path().string()), options_(std::move(options)) {
    db_ = db.empty() ? dir_ + "/inbox.db" : db;
    config_ = dir_ + "/config.yaml";
    WriteConfig(std::move(config_yaml));
    Start();
  }

  // Writes the config file (placeholders filled in), e.g. before a SIGHUP.
  void WriteConfig(std::string config_yaml) const {
    for (auto [key, value] : {std::pair<std::string, std::string>{"{DB}", db_}, {"{DIR}", dir_}}) {
      for (auto at = config_yaml.find(key); at != std::string::npos; at = config_yaml.find(key)) {
        config_yaml.replace(at, key.size(), value);
      }
    }
    WriteFile(config_, config_yaml);
  }
  ~Daemon() { Kill(SIGKILL); }

  void Start() {
    // <dir>/hookbox-1.log first; opened with O_TRUNC, so a file made beforehand keeps its
    // inode (a test may point JOURNAL_STREAM at it).
    log_ = dir_ + "/hookbox-" + std::to_string(++starts_) + ".log";
    std::vector<std::string> argv_s = options_.wrapper;
    for (const char* a : {HOOKBOX_BIN, "serve", "-c"}) argv_s.emplace_back(a);
    argv_s.push_back(config_);
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The options first: getenv() takes the first of two same-named entries.
    std::vector<std::string> env_s = options_.env;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    if (options_.listen_fd >= 0) {
      env_s.emplace_back("LISTEN_FDS=1");
      // Filled in by the child with its own pid, which no one knows before fork().
      env_s.push_back("LISTEN_PID=" + std::string(20, '\0'));
    }
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (options_.listen_fd >= 0) {
      SpawnActivated(argv.data(), envp.data(), env_s.back().data() + 11);
    } else {
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0) {
        throw std::runtime_error("cannot spawn hookbox serve");
      }
      posix_spawn_file_actions_destroy(&fa);
    }
    // Wait (bounded) for the "listening" line, which carries the bound ports.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      std::istringstream lines(ReadFile(log_));
      for (std::string line; std::getline(lines, line);) {
        auto j = ParseLogLine(line);
        if (j.is_object() && j.value("msg", "") == "listening") {
          std::string listen = j["listen"];
          port_ = std::stoi(listen.substr(listen.rfind(':') + 1));
          if (j.contains("admin")) {
            std::string admin = j["admin"];
            admin_port_ = std::stoi(admin.substr(admin.rfind(':') + 1));
          }
          return;
        }
      }
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("hookbox serve exited at start:\n" + ReadFile(log_));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("hookbox serve did not start:\n" + ReadFile(log_));
  }

  // Sends sig without waiting (SIGHUP: reload).
  void Signal(int sig) const {
    if (pid_ > 0) kill(pid_, sig);
  }

  // The log lines so far whose "msg" is `msg`, parsed, in order.
  std::vector<nlohmann::json> LogLines(const std::string& msg) const {
    std::vector<nlohmann::json> out;
    std::istringstream lines(ReadFile(log_));
    for (std::string line; std::getline(lines, line);) {
      auto j = ParseLogLine(line);
      if (j.is_object() && j.value("msg", "") == msg) out.push_back(std::move(j));
    }
    return out;
  }

  // How many log lines so far have this "msg".
  int LogCount(const std::string& msg) const { return static_cast<int>(LogLines(msg).size()); }

  // Waits (bounded) until `count` log lines have this "msg"; false if they never come.
  bool WaitForLog(const std::string& msg, int count = 1,
                  std::chrono::seconds bound = std::chrono::seconds(20)) const {
    auto deadline = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < deadline) {
      if (LogCount(msg) >= count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Sends sig and waits for exit; returns the exit code (128+signal if killed).
  int Kill(int sig) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  httplib::Result Post(const std::string& path, const httplib::Headers& headers,
                       const std::string& body,
                       const std::string& content_type = "application/json") const {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_read_timeout(std::chrono::seconds(30));
    return cli.Post(path.c_str(), headers, body, content_type.c_str());
  }

  // Sends raw bytes on a new connection and returns everything read until the server closes
  // or `timeout` passes.
  std::string Raw(const std::string& bytes,
                  std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) const {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd);
      throw std::runtime_error("connect failed");
    }
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return out;
  }

  CliResult Cli(std::vector<std::string> args) const {
    args.emplace_back("-c");
    args.push_back(config_);
    return RunHookbox(args, dir_);
  }

  // The inbox as `hookbox inbox list --json` shows it.
  nlohmann::json Rows() const {
    CliResult r = Cli({"inbox", "list", "--json", "--limit", "100000"});
    if (r.exit_code != 0) throw std::runtime_error("inbox list failed: " + r.err);
    return nlohmann::json::parse(r.out);
  }

  int port() const { return port_; }
  int admin_port() const { return admin_port_; }
  const std::string& config_path() const { return config_; }
  const std::string& db() const { return db_; }
  std::string Log() const { return ReadFile(log_); }

 private:
  // fork + execve, because LISTEN_PID must name the child: the child writes its pid into
  // `pid_digits` (20 bytes reserved in its environment), puts the socket on fd 3 and its
  // stderr in the log, then execs. Only async-signal-safe calls after fork().
  void SpawnActivated(char** argv, char** envp, char* pid_digits) {
    const int log_fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) throw std::runtime_error("cannot open " + log_);
    const int listen_fd = options_.listen_fd;
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      char digits[20];
      int n = 0;
      for (pid_t p = getpid(); p > 0; p /= 10) digits[n++] = static_cast<char>('0' + p % 10);
      for (int i = 0; i < n; ++i) pid_digits[i] = digits[n - 1 - i];
      pid_digits[n] = '\0';
      dup2(log_fd, 2);
      if (listen_fd == 3)
        fcntl(3, F_SETFD, 0);  // keep it across exec
      else
        dup2(listen_fd, 3);  // dup2 clears close-on-exec
      execve(argv[0], argv, envp);
      _exit(127);
    }
    ::close(log_fd);
  }

  std::string dir_, config_, db_, log_;
  DaemonOptions options_;
  pid_t pid_ = -1;
  int port_ = 0, admin_port_ = 0, starts_ = 0;
};

}  // namespace hookbox::testing
