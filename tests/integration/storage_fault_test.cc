// Storage faults against the real daemon: fsync and fdatasync fail with EIO for one file,
// through an LD_PRELOAD library of the tests' own (tests/fault/fsync_fault.c) switched on and
// off while the daemon runs: first on the WAL, where every commit's sync fails, then on the
// database file, where only the background checkpoint's does. Real HTTP on loopback, a real
// SQLite file. Throughout:
//   - no delivery is answered 200 unless its commit's sync succeeded;
//   - the daemon is honest about it: a run of failures makes /readyz answer 503 naming
//     storage (ops/storage_health.h), and the first success makes it ready again;
//   - each failure is an `error` line with SQLite's message and a count in
//     hookbox_storage_errors_total{op}; hookbox_wal_bytes shows the WAL;
//   - after a restart without the library, every event answered 200 is in the inbox;
//   - the storage_unavailable alert reaches its target, though nothing can be stored.
#include <link.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>

#include "daemon.h"
#include "ops/storage_health.h"

using hookbox::testing::AnswerLine;
using hookbox::testing::Daemon;
using hookbox::testing::DaemonOptions;
using hookbox::testing::Eventually;
using hookbox::testing::GithubSigned;
using hookbox::testing::ReadFile;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

namespace {

constexpr const char* kSecret = "storage-fault-secret";

constexpr const char* kConfig = R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DB}
workers: 0
limits: {max_body: 1MiB}
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{value: "storage-fault-secret"}]
    routes:
      - events: ["push"]
        handlers: [{file: {dir: "{DIR}/out"}}]
)";

// A sanitizer's runtime must come first in LD_PRELOAD (ASan refuses to start otherwise), and
// its fsync interceptor then reaches the fault library as the next definition. This test
// binary is built as the daemon is, so the runtime it has loaded is the daemon's.
int AddSanitizerRuntime(dl_phdr_info* info, size_t, void* out) {
  const std::string name = info->dlpi_name ? info->dlpi_name : "";
  const std::string base = std::filesystem::path(name).filename().string();
  if (base.rfind("libasan.so", 0) == 0 || base.rfind("libtsan.so", 0) == 0) {
    auto* preload = static_cast<std::string*>(out);
    *preload += name + ":";
  }
  return 0;
}

std::string Preload() {
  std::string preload;
  dl_iterate_phdr(&AddSanitizerRuntime, &preload);
  return preload + HOOKBOX_FSYNC_FAULT_LIB;
}

// One signed push with its own id; the answer's code.
int Deliver(const Daemon& d, const std::string& id, size_t pad = 100) {
  const std::string body =
      json{{"ref", "refs/heads/main"}, {"id", id}, {"pad", std::string(pad, 'x')}}.dump();
  auto r = d.Post("/hooks/github", GithubSigned(kSecret, body, id), body);
  INFO(id << ": " << AnswerLine(r));
  REQUIRE(r);
  return r->status;
}

httplib::Result Admin(const Daemon& d, const char* path) {
  httplib::Client c("127.0.0.1", d.admin_port());
  return c.Get(path);
}

int Ready(const Daemon& d) {
  auto r = Admin(d, "/readyz");
  return r ? r->status : 0;
}

// A sample's value in /metrics ("name{labels}" exactly as rendered); -1 when absent.
double Sample(const Daemon& d, const std::string& series) {
  auto r = Admin(d, "/metrics");
  if (!r) return -1;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// The daemon's "storage error" lines for `op`.
std::vector<json> StorageErrors(const Daemon& d, const std::string& op) {
  std::vector<json> out;
  std::istringstream lines(d.Log());
  for (std::string line; std::getline(lines, line);) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("msg", "") == "storage error" && j.value("op", "") == op) {
      out.push_back(j);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("storage faults: a failed fsync is never a 200, and the daemon says so") {
  TempDir dir;
  const std::string control = dir / "fsync-fault";
  const std::string hits = control + ".hits";
  DaemonOptions options;
  options.env = {"LD_PRELOAD=" + Preload(), "HOOKBOX_FSYNC_FAULT_CONTROL=" + control};
  Daemon d(dir, kConfig, options);
  // As the descriptors' /proc links spell them (the fault library compares with those).
  const std::string db = std::filesystem::canonical(d.db()).string();
  const std::string wal = db + "-wal";
  std::set<std::string> acknowledged;
  int next = 0;
  auto deliver = [&](size_t pad = 100) {
    const std::string id = "e" + std::to_string(next++);
    const int code = Deliver(d, id, pad);
    if (code == 200) acknowledged.insert(id);
    return code;
  };

  // Healthy: stored and ready.
  for (int i = 0; i < 3; ++i) CHECK(deliver() == 200);
  CHECK(Ready(d) == 200);
  CHECK(Sample(d, R"(hookbox_storage_errors_total{op="accept"})") == 0);
  CHECK(Sample(d, "hookbox_wal_bytes") > 0);

  // The WAL's sync fails: every commit fails, so every delivery is 503, and after
  // kStorageFailuresUnready of them /readyz is 503 too, naming storage.
  WriteFile(control, wal);
  for (int i = 0; i < hookbox::kStorageFailuresUnready + 2; ++i) {
    const int code = deliver();
    CHECK(code == 503);
    if (i + 1 >= hookbox::kStorageFailuresUnready) {
      auto r = Admin(d, "/readyz");
      REQUIRE(r);
      CHECK(r->status == 503);
      CHECK(r->body.find("storage failing: accept") != std::string::npos);
    }
  }
  CHECK(ReadFile(hits).find(wal) != std::string::npos);  // the fault was met, not only armed
  {
    auto lines = StorageErrors(d, "accept");
    REQUIRE(lines.size() >= static_cast<size_t>(hookbox::kStorageFailuresUnready));
    CHECK(lines.front().value("level", "") == "error");
    CHECK(lines.front().value("error", "").find("disk I/O error") != std::string::npos);
  }
  CHECK(Sample(d, R"(hookbox_storage_errors_total{op="accept"})") >=
        hookbox::kStorageFailuresUnready);

  // The disk is back: the next delivery is stored, and the daemon is ready at once.
  std::filesystem::remove(control);
  CHECK(deliver() == 200);
  CHECK(Ready(d) == 200);

  // The database file's sync fails: commits still succeed (the WAL is synced, so a 200 is
  // durable), but no checkpoint can finish, so the WAL cannot be emptied and grows. The
  // checkpointer says so at each try (every second while failing), and after
  // kStorageFailuresUnready of them /readyz is 503, naming the checkpoint.
  WriteFile(control, db);
  const double wal_before = Sample(d, "hookbox_wal_bytes");
  // About 125 pages of WAL each; the checkpointer wakes every 1,000. A PASSIVE checkpoint
  // beside a write may find nothing it can copy yet (and then syncs nothing), so deliveries
  // go on until one has met the fault (bounded).
  for (int i = 0; i < 80 && StorageErrors(d, "checkpoint").empty(); ++i) {
    CHECK(deliver(500 * 1024) == 200);
  }
  CHECK(Sample(d, "hookbox_wal_bytes") > wal_before);
  CHECK(Eventually([&] { return Ready(d) == 503; }, std::chrono::seconds(15)));
  {
    auto r = Admin(d, "/readyz");
    REQUIRE(r);
    CHECK(r->body.find("storage failing: checkpoint") != std::string::npos);
  }
  CHECK(ReadFile(hits).find(db + "\n") != std::string::npos);
  {
    auto lines = StorageErrors(d, "checkpoint");
    REQUIRE(lines.size() >= static_cast<size_t>(hookbox::kStorageFailuresUnready));
    CHECK(lines.front().value("level", "") == "error");
    CHECK(lines.front().value("error", "").find("disk I/O error") != std::string::npos);
  }
  CHECK(Sample(d, R"(hookbox_storage_errors_total{op="checkpoint"})") >=
        hookbox::kStorageFailuresUnready);
  // While the checkpoint fails, deliveries are still stored and acknowledged.
  CHECK(deliver() == 200);

  // The disk is back: the next try of the checkpoint succeeds and the daemon is ready again.
  std::filesystem::remove(control);
  CHECK(Eventually([&] { return Ready(d) == 200; }, std::chrono::seconds(10)));
  CHECK(deliver() == 200);

  // Restarted without the library, by kill -9: every event answered 200 is in the inbox.
  d.Kill(SIGKILL);
  Daemon again(dir, kConfig);
  std::set<std::string> stored;
  for (const json& row : again.Rows()) stored.insert(row.value("event_id", ""));
  for (const std::string& id : acknowledged) {
    INFO(id);
    CHECK(stored.count(id) == 1);
  }
  CHECK(acknowledged.size() == static_cast<size_t>(next - hookbox::kStorageFailuresUnready - 2));
}

TEST_CASE("storage faults: the storage_unavailable alert is sent from memory, once") {
  TempDir dir;
  const std::string control = dir / "fsync-fault";
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> posts;  // webhook-signature, body
  hookbox::testing::LoopbackServer pager([&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    posts.emplace_back(req.get_header_value("webhook-signature"), req.body);
    res.status = 200;
  });
  auto sent = [&] {
    std::lock_guard lock(mu);
    return posts;
  };
  const std::string config = std::string(kConfig) + R"(alerts:
  - name: ops
    on: [storage_unavailable, job_dead]
    repeat: 1h
    http: {url: "http://127.0.0.1:)" +
                             std::to_string(pager.port()) +
                             R"(/alerts", secret: {value: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}
)";
  DaemonOptions options;
  options.env = {"LD_PRELOAD=" + Preload(), "HOOKBOX_FSYNC_FAULT_CONTROL=" + control};
  Daemon d(dir, config, options);
  const std::string wal = std::filesystem::canonical(d.db()).string() + "-wal";
  CHECK(Deliver(d, "ok-1") == 200);
  CHECK(sent().empty());

  // Every commit fails: after kStorageFailuresUnready failures the alert goes out, signed,
  // though nothing can be stored.
  WriteFile(control, wal);
  for (int i = 0; i < hookbox::kStorageFailuresUnready; ++i) {
    CHECK(Deliver(d, "down-" + std::to_string(i)) == 503);
  }
  REQUIRE(Eventually([&] { return !sent().empty(); }, std::chrono::seconds(10)));
  {
    const auto [signature, body] = sent().front();
    CHECK(signature.rfind("v1,", 0) == 0);
    const json alert = json::parse(body);
    CHECK(alert.value("alert", "") == "storage_unavailable");
    CHECK(alert.value("name", "") == "ops");
    CHECK(alert.value("detail", "").find("storage failing: accept") != std::string::npos);
    CHECK_FALSE(alert.value("instance", "").empty());
  }
  // Still failing: no second alert within `repeat`.
  CHECK(Deliver(d, "down-more") == 503);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK(sent().size() == 1);

  // The disk is back: the alert was counted as the target's attempt and never stored.
  std::filesystem::remove(control);
  CHECK(Deliver(d, "ok-2") == 200);
  CHECK(Sample(d,
               R"(hookbox_attempts_total{endpoint="hookbox.alerts",handler="ops",outcome="ok"})") ==
        1);
  for (const json& row : d.Rows()) CHECK(row.value("endpoint", "") != "hookbox.alerts");
}
