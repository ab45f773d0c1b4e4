// Hard failures of the machine, met for real: a full disk under the database (a size-limited
// tmpfs mounted for the test, as root) and clients that send what no producer would. Each
// gets its documented answer, leaves nothing half-written, and the daemon recovers without
// a restart.
#include <catch2/catch.hpp>

#include <sys/mount.h>

#include <filesystem>
#include <set>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::ReadFile;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

namespace {

// A tmpfs of `size` bytes at `path` for the life of the object. Needs root (CI runs as root).
class SmallDisk {
 public:
  SmallDisk(const std::string& path, const std::string& size) : path_(path) {
    std::filesystem::create_directories(path);
    mounted_ = ::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  std::string path_;
  bool mounted_ = false;
};

}  // namespace

TEST_CASE("disk full: 503 with nothing half-written, and recovery once space is freed") {
  TempDir dir;
  SmallDisk disk(dir / "small", "3M");
  INFO("mounting a tmpfs needs root");
  REQUIRE(disk.mounted());
  // Leave the database little room; the filler is what the operator frees later.
  WriteFile(dir / "small/filler", std::string(1200 * 1024, 'f'));
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DIR}/small/inbox.db
workers: 0
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
)");
  std::set<std::string> accepted;
  std::string refused;
  const std::string pad(30 * 1024, 'p');
  for (int i = 0; i < 400 && refused.empty(); ++i) {
    const std::string id = "big-" + std::to_string(i);
    auto r = d.Post("/hooks/open", {}, json{{"id", id}, {"pad", pad}}.dump());
    REQUIRE(r);
    if (r->status == 200) {
      accepted.insert(id);
    } else {
      CHECK(r->status == 503);
      CHECK(json::parse(r->body).contains("error"));
      refused = id;
    }
  }
  REQUIRE_FALSE(refused.empty());  // the disk did fill up
  CHECK(accepted.size() > 5);
  // Still full: more 503s, no crash, health still answers.
  for (int i = 0; i < 5; ++i) {
    auto r = d.Post("/hooks/open", {}, json{{"id", "more-" + std::to_string(i)}, {"pad", pad}}.dump());
    REQUIRE(r);
    CHECK(r->status == 503);
  }
  httplib::Client admin("127.0.0.1", d.admin_port());
  auto health = admin.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);

  // The operator frees space; the producer's retry is accepted, no restart needed.
  std::filesystem::remove(dir / "small/filler");
  auto retried = d.Post("/hooks/open", {}, json{{"id", refused}, {"pad", pad}}.dump());
  REQUIRE(retried);
  CHECK(retried->status == 200);
  CHECK(json::parse(retried->body)["status"] == "ignored");  // stored (no routes here)
  accepted.insert(refused);

  // Exactly the events answered 200 are stored; nothing of the refused ones.
  json rows = d.Rows();
  std::set<std::string> stored;
  for (const json& r : rows) stored.insert(r["event_id"].get<std::string>());
  CHECK(stored == accepted);
  CHECK(hookbox::testing::RunSqlite(d.db(), "PRAGMA integrity_check") == "ok\n");
  CHECK(d.Kill(SIGTERM) == 0);
}

TEST_CASE("event ids with control characters cannot forge log lines") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: gh
    path: /hooks/gh
    verify: none
)");
  // A header can't carry a newline, but a path can carry anything percent-encoded; an
  // unknown path is logged too.
  httplib::Client cli("127.0.0.1", d.port());
  auto r = cli.Post("/hooks/x%0A%7B%22level%22%3A%22forged%22%7D", "{}", "application/json");
  REQUIRE(r);
  CHECK(r->status == 404);
  for (const std::string& line : [&] {
         std::vector<std::string> lines;
         std::istringstream in(d.Log());
         for (std::string l; std::getline(in, l);) lines.push_back(l);
         return lines;
       }()) {
    INFO(line);
    auto j = json::parse(line, nullptr, false);
    CHECK(j.is_object());  // every line is one whole JSON object
    CHECK(j.value("level", "") != "forged");
  }
}
