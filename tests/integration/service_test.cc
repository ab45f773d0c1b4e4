// End-to-end tests of hookbox as a service: the real daemon started the way systemd starts it
// (a fake NOTIFY_SOCKET and WATCHDOG_USEC in its environment, a listening socket passed as
// fd 3), stopped with SIGTERM in the middle of traffic, reloaded with SIGHUP under load,
// purged with the CLI, and scraped on /metrics with a strict Prometheus text parser.
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "daemon.h"
#include "tests/ops/fake_notify_socket.h"
#include "tests/ops/prometheus_text.h"
#include "verify/verify.h"

using hookbox::testing::Daemon;
using hookbox::testing::DaemonOptions;
using hookbox::testing::Eventually;
using hookbox::testing::FakeNotifySocket;
using hookbox::testing::GithubSigned;
using hookbox::testing::ParsePrometheusText;
using hookbox::testing::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* kOpenConfig = R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DB}
workers: 0
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    resource: body:/r
    sequence: body:/s
)";

// A github endpoint with the given secrets and a file handler; the placeholders {DB} and
// {DIR} are the Daemon's.
std::string GithubConfig(const std::vector<std::string>& secrets, int workers = 0) {
  std::string list;
  for (const std::string& s : secrets)
    list += (list.empty() ? "" : ", ") + ("{value: \"" + s + "\"}");
  return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndatabase: {DB}\nworkers: " +
         std::to_string(workers) +
         "\nendpoints:\n"
         "  - name: gh\n"
         "    path: /hooks/github\n"
         "    provider: github\n"
         "    secrets: [" +
         list +
         "]\n"
         "    routes:\n"
         "      - events: [\"push\"]\n"
         "        handlers: [{file: {dir: \"{DIR}/out\"}}]\n";
}

// Headers github would send for `body`, signed with `secret`.
// A listening TCP socket on 127.0.0.1 (port 0: any free one), as systemd's .socket unit
// would make it; returns the fd and its port.
std::pair<int, int> ListeningSocket(int port = 0) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(fd, 128) == 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return {fd, ntohs(addr.sin_port)};
}

// Deliveries posted without pause by `threads` keep-alive clients until Stop(): each
// thread's i-th delivery has id "<prefix>-<thread>-<i>"; `request` makes its headers and
// body. Records which ids got 200 and how many requests did not.
class Traffic {
 public:
  using Request = std::function<std::pair<httplib::Headers, std::string>(const std::string& id)>;

  Traffic(int port, const std::string& path, const std::string& prefix, int threads,
          const Request& request) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([=, this] {
        httplib::Client client("127.0.0.1", port);
        client.set_keep_alive(true);
        client.set_read_timeout(30s);
        for (int i = 0; !stop_; ++i) {
          std::string id = prefix + "-" + std::to_string(t) + "-" + std::to_string(i);
          auto [headers, body] = request(id);
          auto r = client.Post(path.c_str(), headers, body, "application/json");
          std::lock_guard lock(mu_);
          if (r && r->status == 200)
            ok_.push_back(id);
          else
            ++failed_;
        }
      });
    }
  }
  ~Traffic() { Stop(); }

  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  size_t ok_count() const {
    std::lock_guard lock(mu_);
    return ok_.size();
  }
  // After Stop().
  const std::vector<std::string>& ok() const { return ok_; }
  int failed() const { return failed_; }

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;  // guards ok_, failed_
  std::vector<std::string> ok_;
  int failed_ = 0;
  std::vector<std::thread> threads_;
};

// The next notification other than a watchdog ping.
std::string NextState(FakeNotifySocket& systemd) {
  for (;;) {
    std::string m = systemd.Receive();
    if (m != "WATCHDOG=1") return m;
  }
}

}  // namespace

TEST_CASE("systemd is told READY, pinged by the watchdog, told RELOADING and STOPPING") {
  TempDir dir;
  FakeNotifySocket systemd;
  Daemon d(dir, kOpenConfig,
           DaemonOptions{{"NOTIFY_SOCKET=" + systemd.path(), "WATCHDOG_USEC=200000"}});
  // READY=1 comes once the listeners are up, before any ping.
  std::string ready = systemd.Receive();
  CHECK(ready.rfind("READY=1\nSTATUS=listening on 127.0.0.1:", 0) == 0);
  // Pings at half the watchdog interval (two in a row, so it is a rhythm, not a one-off).
  CHECK(systemd.Receive() == "WATCHDOG=1");
  CHECK(systemd.Receive() == "WATCHDOG=1");
  // SIGHUP: RELOADING=1 (with the monotonic time systemd wants), then READY=1 again.
  d.Signal(SIGHUP);
  CHECK(NextState(systemd).rfind("RELOADING=1\nMONOTONIC_USEC=", 0) == 0);
  CHECK(NextState(systemd).rfind("READY=1\n", 0) == 0);
  CHECK(d.WaitForLog("reloaded"));
  // SIGTERM: STOPPING=1, and nothing after it (the watchdog stopped first); exit 0.
  CHECK(d.Kill(SIGTERM) == 0);
  std::string last;
  for (std::string m = systemd.ReceiveQueued(); !m.empty(); m = systemd.ReceiveQueued()) last = m;
  CHECK(last == "STOPPING=1");
}

TEST_CASE("socket activation: webhooks are served on the socket systemd passed") {
  TempDir dir;
  auto [fd, port] = ListeningSocket();
  // `listen` names a port the test holds: binding it would fail, so a 200 proves the
  // daemon served on the passed socket instead.
  auto [held_fd, held_port] = ListeningSocket();
  std::string config = kOpenConfig;
  config.replace(config.find("127.0.0.1:0"), 11, "127.0.0.1:" + std::to_string(held_port));
  Daemon d(dir, config, DaemonOptions{{}, fd});
  close(fd);  // the daemon has its own copy on fd 3, as with systemd
  CHECK(d.port() == port);
  CHECK(d.Log().find("\"socket_activated\":true") != std::string::npos);
  auto r = d.Post("/hooks/open", {}, R"({"id":"via-systemd-socket"})");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == R"({"status":"ignored","event_id":"via-systemd-socket"})");  // no routes
  json rows = d.Rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["event_id"] == "via-systemd-socket");
  CHECK(d.Kill(SIGTERM) == 0);
  close(held_fd);
}

TEST_CASE("SIGTERM during a burst on keep-alive connections: every 200 is stored, exit 0") {
  TempDir dir;
  Daemon d(dir, kOpenConfig);
  Traffic burst(d.port(), "/hooks/open", "burst", 4, [](const std::string& id) {
    return std::pair{httplib::Headers{}, json{{"id", id}}.dump()};
  });
  REQUIRE(Eventually([&] { return burst.ok_count() >= 200; }));  // well under way
  CHECK(d.Kill(SIGTERM) == 0);
  burst.Stop();
  std::set<std::string> stored;
  for (const json& row : d.Rows()) stored.insert(row["event_id"].get<std::string>());
  std::vector<std::string> lost;
  for (const std::string& id : burst.ok()) {
    if (!stored.count(id)) lost.push_back(id);
  }
  CHECK(lost.empty());
  CHECK(burst.ok().size() >= 200);
}

TEST_CASE("SIGTERM with an attempt running past shutdown_grace: exit 0, the job stays leased") {
  TempDir dir;
  std::string config = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 1
shutdown_grace: 300ms
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: ["/bin/sh", "-c", "echo $$ > {DIR}/started; exec sleep 60"], timeout: 120s}
)";
  Daemon d(dir, config);
  auto r = d.Post("/hooks/open", {}, R"({"id":"slow","type":"t"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const std::string started = dir / "started";
  REQUIRE(Eventually([&] { return !hookbox::testing::ReadFile(started).empty(); }));
  CHECK(d.Kill(SIGTERM) == 0);
  CHECK(d.Log().find("stopped with attempts still running") != std::string::npos);
  // Nothing was recorded for the unfinished attempt: its job waits for its lease to end.
  json rows = d.Rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["status"] == "processing");
}

TEST_CASE("SIGHUP adds a secret without a restart, and requests during the reload succeed") {
  TempDir dir;
  Daemon d(dir, GithubConfig({"secret-a"}));
  const std::string body = R"({"ref":"refs/heads/main"})";
  auto with_b = [&](const std::string& id) {
    return d.Post("/hooks/github", GithubSigned("secret-b", body, id), body);
  };
  auto before = with_b("b-before");
  REQUIRE(before);
  CHECK(before->status == 401);

  // Deliveries signed with the old secret keep flowing while the config changes under them.
  Traffic old_secret(d.port(), "/hooks/github", "a", 3, [&](const std::string& id) {
    return std::pair{GithubSigned("secret-a", body, id), body};
  });
  REQUIRE(Eventually([&] { return old_secret.ok_count() >= 50; }));
  d.WriteConfig(GithubConfig({"secret-a", "secret-b"}));
  d.Signal(SIGHUP);
  REQUIRE(d.WaitForLog("reloaded"));
  const size_t ok_at_reload = old_secret.ok_count();
  auto after = with_b("b-after");
  REQUIRE(after);
  CHECK(after->status == 200);

  // A broken config is refused and the running one (with both secrets) stays.
  d.WriteConfig("listen: [this is not a config\n");
  d.Signal(SIGHUP);
  REQUIRE(d.WaitForLog("reload refused: the config has errors; the old one stays"));
  auto still = with_b("b-still");
  REQUIRE(still);
  CHECK(still->status == 200);

  REQUIRE(Eventually([&] { return old_secret.ok_count() >= ok_at_reload + 50; }));
  old_secret.Stop();
  CHECK(old_secret.failed() == 0);
  CHECK(d.Kill(SIGTERM) == 0);
}

TEST_CASE("hookbox purge: --dry-run deletes nothing and reports what purge then deletes") {
  TempDir dir;
  Daemon d(dir, kOpenConfig);
  auto post = [&](const json& body) {
    auto r = d.Post("/hooks/open", {}, body.dump());
    REQUIRE(r);
    REQUIRE(r->status == 200);
  };
  for (int i = 0; i < 5; ++i) post({{"id", "old-" + std::to_string(i)}});
  post({{"id", "new-1"}});
  post({{"id", "old-seq-2"}, {"r", "res"}, {"s", 2}});
  post({{"id", "old-seq-1"}, {"r", "res"}, {"s", 1}});  // stale
  // Age the "old" rows and the sequence gate past retention (7d, 90d), as time would.
  hookbox::testing::RunSqlite(d.db(),
                              "UPDATE inbox SET received_at = '2020-01-01T00:00:00.000Z'"
                              " WHERE event_id LIKE 'old-%'; UPDATE sequences SET updated_at ="
                              " '2020-01-01T00:00:00.000Z';");
  REQUIRE(d.Rows().size() == 8);

  auto dry = d.Cli({"purge", "--dry-run", "--json"});
  REQUIRE(dry.exit_code == 0);
  json would = json::parse(dry.out);
  CHECK(would["dry_run"] == true);
  CHECK(would["ignored"] == 6);
  CHECK(would["stale"] == 1);
  CHECK(would["processed"] == 0);
  CHECK(would["dead"] == 0);
  CHECK(would["sequences"] == 1);
  CHECK(d.Rows().size() == 8);  // nothing went
  auto text = d.Cli({"purge", "--dry-run"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("would purge") != std::string::npos);
  CHECK(d.Rows().size() == 8);

  auto done = d.Cli({"purge", "--json"});
  REQUIRE(done.exit_code == 0);
  json went = json::parse(done.out);
  CHECK(went["dry_run"] == false);
  for (const char* kind : {"processed", "stale", "ignored", "dead", "sequences"}) {
    INFO(kind);
    CHECK(went[kind] == would[kind]);
  }
  json rows = d.Rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["event_id"] == "new-1");
  CHECK(d.Cli({"purge", "--json"}).out.find("\"ignored\": 0") != std::string::npos);
}

TEST_CASE("/metrics parses as Prometheus text and counts what was sent") {
  TempDir dir;
  Daemon d(dir, GithubConfig({"secret-a"}, /*workers=*/1));
  const std::string body = R"({"ref":"refs/heads/main"})";
  auto post = [&](const httplib::Headers& headers, const std::string& path = "/hooks/github") {
    auto r = d.Post(path, headers, body);
    REQUIRE(r);
    return r->status;
  };
  for (const char* id : {"m-1", "m-2", "m-3"})
    CHECK(post(GithubSigned("secret-a", body, id)) == 200);
  CHECK(post(GithubSigned("secret-a", body, "m-1")) == 200);                       // duplicate
  CHECK(post(GithubSigned("wrong-secret", body, "m-4")) == 401);                   // mismatch
  CHECK(post(GithubSigned("wrong-secret", body, "m-5")) == 401);                   // mismatch
  CHECK(post({{"X-GitHub-Delivery", "m-6"}, {"X-GitHub-Event", "push"}}) == 401);  // missing
  CHECK(post({}, "/hooks/nowhere") == 404);

  httplib::Client admin("127.0.0.1", d.admin_port());
  hookbox::testing::Exposition m;
  std::string content_type;
  // The worker runs the three jobs; scrape until it has.
  REQUIRE(Eventually([&] {
    auto r = admin.Get("/metrics");
    if (!r || r->status != 200) return false;
    content_type = r->get_header_value("Content-Type");
    m = ParsePrometheusText(r->body);
    // The attempt counters are bumped just after the finish commits: wait for both.
    return m.Get("hookbox_jobs_done") == 3 &&
           m.Sum("hookbox_attempts_total", {{"endpoint", "gh"}, {"outcome", "ok"}}) == 3;
  }));
  INFO([&] {
    std::string e;
    for (auto& s : m.errors) e += s + "\n";
    return e;
  }());
  CHECK(m.errors.empty());
  CHECK(content_type == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(m.Get(R"(hookbox_deliveries_total{endpoint="gh",outcome="accepted"})") == 3);
  CHECK(m.Get(R"(hookbox_deliveries_total{endpoint="gh",outcome="duplicate"})") == 1);
  CHECK(m.Get(R"(hookbox_deliveries_total{endpoint="gh",outcome="unauthenticated"})") == 3);
  CHECK(m.Get(R"(hookbox_deliveries_total{endpoint="",outcome="not_found"})") == 1);
  CHECK(m.Sum("hookbox_deliveries_total") == 8);
  CHECK(m.Get(R"(hookbox_signature_failures_total{endpoint="gh",reason="mismatch"})") == 2);
  CHECK(m.Get(R"(hookbox_signature_failures_total{endpoint="gh",reason="missing"})") == 1);
  CHECK(m.Get(R"(hookbox_accept_latency_seconds_count{endpoint="gh"})") == 4);
  CHECK(m.Sum("hookbox_attempts_total", {{"endpoint", "gh"}, {"outcome", "ok"}}) == 3);
  CHECK(m.Sum("hookbox_handler_latency_seconds_count", {{"outcome", "ok"}}) == 3);
  CHECK(m.Sum("hookbox_jobs", {{"status", "pending"}}) == 0);
  CHECK(m.Sum("hookbox_jobs", {{"status", "dead"}}) == 0);
  CHECK(m.Get("hookbox_queue_oldest_age_seconds") == 0);
  CHECK(m.types.at("hookbox_purged_rows_total") == "counter");
  CHECK(m.types.at("hookbox_accept_latency_seconds") == "histogram");
  auto ready = admin.Get("/readyz");
  REQUIRE(ready);
  CHECK(ready->status == 200);
  CHECK(d.Kill(SIGTERM) == 0);
}
