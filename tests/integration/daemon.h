// Test harness for integration tests: a temporary directory, the real `hookbox` binary
// started as a child process on a free port (listen: 127.0.0.1:0; the port is read from its
// "listening" log line), HTTP to it, raw bytes to it, and the CLI run against its database.
// Nothing is mocked: real files, real sockets, real processes.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace hookbox::testing {

namespace fs = std::filesystem;

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

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

// A running `hookbox serve`. The config text may use {DB} for the database path and {DIR}
// for the test's temporary directory.
class Daemon {
 public:
  Daemon(const TempDir& dir, std::string config_yaml, std::string db = "")
      : dir_(dir.path().string()) {
    db_ = db.empty() ? dir_ + "/inbox.db" : db;
    for (auto [key, value] : {std::pair<std::string, std::string>{"{DB}", db_}, {"{DIR}", dir_}}) {
      for (auto at = config_yaml.find(key); at != std::string::npos; at = config_yaml.find(key)) {
        config_yaml.replace(at, key.size(), value);
      }
    }
    config_ = dir_ + "/config.yaml";
    WriteFile(config_, config_yaml);
    Start();
  }
  ~Daemon() { Kill(SIGKILL); }

  void Start() {
    log_ = dir_ + "/hookbox-" + std::to_string(++starts_) + ".log";
    std::vector<std::string> argv_s = {HOOKBOX_BIN, "serve", "-c", config_};
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
      throw std::runtime_error("cannot spawn hookbox serve");
    }
    posix_spawn_file_actions_destroy(&fa);
    // Wait (bounded) for the "listening" line, which carries the bound ports.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      std::istringstream lines(ReadFile(log_));
      for (std::string line; std::getline(lines, line);) {
        auto j = nlohmann::json::parse(line, nullptr, false);
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
  std::string Raw(const std::string& bytes, std::chrono::milliseconds timeout =
                                               std::chrono::milliseconds(3000)) const {
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
    args.push_back("-c");
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
  std::string dir_, config_, db_, log_;
  pid_t pid_ = -1;
  int port_ = 0, admin_port_ = 0, starts_ = 0;
};

}  // namespace hookbox::testing
