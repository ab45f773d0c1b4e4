// End-to-end tests of `serve` under a small open-file limit: the real daemon started through
// util-linux `prlimit --nofile=SOFT:HARD`, the way a unit's LimitNOFILE= or a shell's
// `ulimit -n` would start it. hookbox raises its soft limit to the hard one, lowers
// limits.max_connections to what fits beside the descriptors its database, handlers and
// handlers need (with a warning naming both numbers), and refuses to start when not even 16
// connections fit. Under 128 descriptors a flood of 150 idle connections is shed, and once it
// is gone deliveries are accepted and an exec handler runs. Loopback only; each case takes a
// few seconds at most. (The harness's Daemon starts the binary itself, so this file spawns
// `prlimit hookbox serve` on its own, with the harness's helpers.)
#include <poll.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "tests/integration/daemon.h"

using hookbox::testing::AnswerLine;
using hookbox::testing::CliResult;
using hookbox::testing::Eventually;
using hookbox::testing::ReadFile;
using hookbox::testing::ReadLines;
using hookbox::testing::RunToCompletion;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// util-linux's prlimit, or "" when this machine has none.
std::string Prlimit() {
  for (const char* path : {"/usr/bin/prlimit", "/bin/prlimit", "/usr/local/bin/prlimit"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

// One endpoint without signatures whose events run an exec handler that appends their id to
// {DIR}/runs. 1 handler slot and 2 webhook threads: a reserve of 64 + 8 * 3 = 88 descriptors.
std::string Config(const TempDir& dir, int max_connections) {
  std::string yaml = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DIR}/inbox.db
workers: 1
limits: {read_timeout: 5s, threads: 2, max_connections: )" +
                     std::to_string(max_connections) + R"(}
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    event_type: body:/type
    retry: {max_attempts: 5, base: 1s, max: 2s}
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/sh, -c, 'echo "$HOOKBOX_EVENT_ID" >> {DIR}/runs'], timeout: 10s,
                  concurrency: 1}
)";
  const std::string dir_text = dir.path().string();
  for (auto at = yaml.find("{DIR}"); at != std::string::npos; at = yaml.find("{DIR}")) {
    yaml.replace(at, 5, dir_text);
  }
  return yaml;
}

// `prlimit --nofile=SOFT:HARD hookbox serve -c CONFIG`, its stderr (the log) in a file.
class LimitedDaemon {
 public:
  LimitedDaemon(const TempDir& dir, const std::string& nofile, const std::string& config_yaml)
      : dir_(dir.path().string()), config_(dir / "config.yaml"), log_(dir / "hookbox.log") {
    WriteFile(config_, config_yaml);
    std::vector<std::string> argv_s = {Prlimit(), "--nofile=" + nofile, HOOKBOX_BIN, "serve", "-c",
                                       config_};
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int spawned = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (spawned != 0) throw std::runtime_error("cannot spawn prlimit");
    // prlimit execs hookbox in the same process: pid_ is the daemon's. Wait for "listening".
    bool up = Eventually([&] {
      if (LogLine("listening").is_object()) return true;
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("hookbox serve exited at start:\n" + Log());
      }
      return false;
    });
    if (!up) throw std::runtime_error("hookbox serve did not start:\n" + Log());
    std::string listen = LogLine("listening")["listen"];
    port_ = std::stoi(listen.substr(listen.rfind(':') + 1));
  }
  ~LimitedDaemon() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  std::string Log() const { return ReadFile(log_); }
  // The first log line with this "msg"; null when there is none.
  json LogLine(const std::string& msg) const {
    std::istringstream lines(Log());
    for (std::string line; std::getline(lines, line);) {
      json j = json::parse(line, nullptr, false);
      if (j.is_object() && j.value("msg", "") == msg) return j;
    }
    return nullptr;
  }
  bool Running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  // The daemon's soft open-file limit, from /proc.
  std::string SoftLimit() const {
    std::istringstream lines(ReadFile("/proc/" + std::to_string(pid_) + "/limits"));
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("Max open files", 0) == 0) {
        std::istringstream fields(line.substr(14));
        std::string soft;
        fields >> soft;
        return soft;
      }
    }
    return "";
  }
  httplib::Result Post(const std::string& id) const {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_connection_timeout(2s);
    cli.set_read_timeout(10s);
    return cli.Post("/hooks/open", R"({"id":")" + id + R"(","type":"thing.done"})",
                    "application/json");
  }
  // `hookbox inbox show open ID --json`'s row status ("" when it cannot say).
  std::string Status(const std::string& id) const {
    CliResult r =
        hookbox::testing::RunHookbox({"inbox", "show", "open", id, "--json", "-c", config_}, dir_);
    if (r.exit_code != 0) return "";
    return json::parse(r.out, nullptr, false).value("status", "");
  }
  int port() const { return port_; }

 private:
  std::string dir_, config_, log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True when the server has closed `fd` (end of file or a reset is waiting to be read).
bool ClosedByServer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  char buf[512];
  return recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0;
}

}  // namespace

TEST_CASE(
    "fdlimit: under 128 descriptors max_connections is lowered, a flood is shed, "
    "handlers still run",
    "[fdlimit]") {
  if (Prlimit().empty()) {
    WARN("no prlimit (util-linux) on this machine: not checked");
    return;
  }
  TempDir dir;
  LimitedDaemon d(dir, "128:128", Config(dir, 1000));
  // 128 - (64 + 8 * (1 worker + 2 threads)) = 40, in a warning that names both numbers.
  json lowered = d.LogLine("limits.max_connections lowered to fit the open-file limit");
  INFO(d.Log());
  REQUIRE(lowered.is_object());
  CHECK(lowered["level"] == "warn");
  CHECK(lowered["configured"] == 1000);
  CHECK(lowered["max_connections"] == 40);
  CHECK(lowered["open_file_limit"] == 128);
  CHECK(lowered["reserved"] == 88);
  CHECK(d.LogLine("raised the open-file limit").is_null());  // soft was already the hard
  CHECK(d.SoftLimit() == "128");

  // Before the flood: accepted, and the exec handler runs.
  CHECK(AnswerLine(d.Post("before")) == "200 accepted");
  CHECK(Eventually([&] { return d.Status("before") == "processed"; }, 10s));

  // 150 idle connections: at most 40 are kept, the rest closed at once.
  std::vector<int> flood;
  for (int i = 0; i < 150; ++i) {
    int fd = Connect(d.port());
    if (fd >= 0) flood.push_back(fd);
  }
  size_t shed = 0;
  Eventually(
      [&] {
        shed = 0;
        for (int fd : flood) shed += ClosedByServer(fd) ? 1 : 0;
        return shed >= 150 - 40;
      },
      3s);
  CHECK(shed >= 150 - 40 - 10);  // a few may still sit in the listen backlog
  CHECK(d.Running());
  for (int fd : flood) close(fd);

  // After it: deliveries are accepted again, and their exec handler job completes.
  std::string answer;
  CHECK(Eventually(
      [&] {
        answer = AnswerLine(d.Post("after"));
        return answer.rfind("200", 0) == 0;
      },
      10s));
  CHECK(answer == "200 accepted");
  CHECK(Eventually([&] { return d.Status("after") == "processed"; }, 10s));
  CHECK(ReadLines(dir / "runs") == std::vector<std::string>{"before", "after"});
  // The daemon never ran out of descriptors itself.
  CHECK(d.Log().find("Too many open files") == std::string::npos);
  CHECK(d.Running());
}

TEST_CASE("fdlimit: the soft limit is raised to the hard one, and then max_connections fits",
          "[fdlimit]") {
  if (Prlimit().empty()) {
    WARN("no prlimit (util-linux) on this machine: not checked");
    return;
  }
  TempDir dir;
  LimitedDaemon d(dir, "128:4096", Config(dir, 1000));
  json raised = d.LogLine("raised the open-file limit");
  INFO(d.Log());
  REQUIRE(raised.is_object());
  CHECK(raised["level"] == "info");
  CHECK(raised["from"] == 128);
  CHECK(raised["to"] == 4096);
  CHECK(d.SoftLimit() == "4096");
  CHECK(d.LogLine("limits.max_connections lowered to fit the open-file limit").is_null());
  CHECK(AnswerLine(d.Post("one")) == "200 accepted");
}

TEST_CASE("fdlimit: a limit that leaves room for fewer than 16 connections refuses to start",
          "[fdlimit]") {
  if (Prlimit().empty()) {
    WARN("no prlimit (util-linux) on this machine: not checked");
    return;
  }
  TempDir dir;
  const std::string config = dir / "config.yaml";
  WriteFile(config, Config(dir, 1000));
  // 100 - 88 = 12 connections would fit: not enough.
  CliResult r = RunToCompletion({Prlimit(), "--nofile=100:100", HOOKBOX_BIN, "serve", "-c", config},
                                dir / "out", dir / "err");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("hookbox: the open-file limit (100) leaves room for 12 connections") !=
        std::string::npos);
  CHECK(r.err.find("at least 16") != std::string::npos);
  CHECK(r.err.find("\"listening\"") == std::string::npos);
}
