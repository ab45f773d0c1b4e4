// `hookbox backup FILE` beside a daemon under load (README, "Upgrade and back up"): the copy
// passes SQLite's integrity_check and holds every event acknowledged before the backup
// began. The real daemon, the real CLI, the Debian sqlite3 CLI. Its exit codes and refusals
// are cli/backup_test.cc's.
#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "daemon.h"

using namespace hookbox::testing;
using nlohmann::json;

TEST_CASE("backup beside a daemon under load: a whole copy with every acknowledged event") {
  TempDir dir;
  Daemon d(dir, kRawEndpointConfig);
  std::mutex mu;
  std::set<std::string> acked;  // ids answered 200
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread load([&] {
    httplib::Client cli("127.0.0.1", d.port());
    for (int i = 0; !stop && i < 20000; ++i) {
      const std::string id = "evt_" + std::to_string(i);
      auto r =
          cli.Post("/hooks/raw", {{"X-Id", id}, {"X-Type", "t"}},
                   R"({"n":)" + std::to_string(i) + R"(,"pad":")" + std::string(500, 'x') + R"("})",
                   "application/json");
      if (r && r->status == 200) {
        std::lock_guard lock(mu);
        acked.insert(id);
      } else {
        ++failures;
      }
    }
  });
  REQUIRE(Eventually([&] {
    std::lock_guard lock(mu);
    return acked.size() >= 300;
  }));
  std::set<std::string> before;
  {
    std::lock_guard lock(mu);
    before = acked;
  }
  const std::string file = dir.path().string() + "/backup.db";
  CliResult r = d.Cli({"backup", file});
  // Deliveries went on during the copy.
  const size_t during = [&] {
    std::lock_guard lock(mu);
    return acked.size();
  }();
  stop = true;
  load.join();
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("backed up ", 0) == 0);
  CHECK(r.out.find("quick_check ok") != std::string::npos);
  CHECK(failures == 0);
  CHECK(during > before.size());
  CHECK_FALSE(std::filesystem::exists(file + ".partial"));
  struct stat st {};
  REQUIRE(stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);  // it holds every body

  CHECK(RunSqlite(file, "PRAGMA integrity_check") == "ok\n");
  // The copy read through hookbox itself, as the README's check does.
  std::string config = ReadFile(d.config_path());
  config.replace(config.find(d.db()), d.db().size(), file);
  const std::string copy_config = dir.path().string() + "/copy.yaml";
  WriteFile(copy_config, config);
  CliResult listed = RunHookbox({"inbox", "list", "--json", "--limit", "100000", "-c", copy_config},
                                dir.path().string());
  REQUIRE(listed.exit_code == 0);
  std::set<std::string> in_copy;
  for (const json& row : json::parse(listed.out)) in_copy.insert(row["event_id"]);
  for (const std::string& id : before) {
    INFO(id);
    CHECK(in_copy.count(id) == 1);
  }
}
