// `hookbox backup FILE` (src/cli/backup.cc): its exit code and output on a copy that works,
// and each way it refuses (no FILE, the file exists, PostgreSQL, a database it cannot open, a
// directory it cannot write), each leaving nothing behind. A copy beside the daemon under
// load is integration/backup_test.cc's.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Has;
using hookbox::testing::kCannotOpen;
using hookbox::testing::ReadFile;
using hookbox::testing::Workspace;
using hookbox::testing::WriteFile;

TEST_CASE("backup: a checked copy that the verbs open as the inbox, exit 0") {
  Workspace w;
  w.SeedDeadRows({"evt-1", "evt-2"});
  const std::string copy = (w.dir().path() / "copy.db").string();
  CliResult r = w.Run({"backup", copy});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "backed up 2 inbox rows to " + copy));
  CHECK(Has(r.out, "quick_check ok"));
  CHECK_FALSE(std::filesystem::exists(copy + ".partial"));
  // The copy is an inbox: the same verbs read the same rows from it.
  std::string config = ReadFile(w.config());
  config.replace(config.find(w.db()), w.db().size(), copy);
  const std::string copy_config = (w.dir().path() / "copy.yaml").string();
  WriteFile(copy_config, config);
  CliResult listed = w.RunWith(copy_config, {"inbox", "list"});
  CHECK(listed.exit_code == 0);
  CHECK(Has(listed.out, "evt-1"));
  CHECK(Has(listed.out, "evt-2"));
}

TEST_CASE("backup: refusals are exit 1 (usage) or 2 (the database), and write nothing") {
  Workspace w;
  w.Migrate();
  const std::string base = w.dir().path().string();

  SECTION("no FILE: usage") { CHECK(w.Run({"backup"}).exit_code == 1); }
  SECTION("the file exists: never overwritten") {
    WriteFile(base + "/taken.db", "keep me");
    CliResult r = w.Run({"backup", base + "/taken.db"});
    CHECK(r.exit_code == 1);
    CHECK(Has(r.err, "exists; a backup never overwrites"));
    CHECK(ReadFile(base + "/taken.db") == "keep me");
  }
  SECTION("PostgreSQL: pointed to pg_dump, no connection tried") {
    const std::string pg = base + "/pg.yaml";
    std::string config = ReadFile(w.config());
    config.replace(config.find(w.db()), w.db().size(), "postgresql://hookbox@127.0.0.1:1/hookbox");
    WriteFile(pg, config);
    CliResult r = w.RunWith(pg, {"backup", base + "/pg.db"});
    CHECK(r.exit_code == 1);
    CHECK(Has(r.err, "for PostgreSQL use pg_dump"));
    CHECK_FALSE(std::filesystem::exists(base + "/pg.db"));
  }
  SECTION("a database that cannot be opened: exit 2, no file") {
    CliResult r = w.RunBadDb({"backup", base + "/b.db"});
    CHECK(r.exit_code == 2);
    CHECK(Has(r.err, kCannotOpen));
    CHECK_FALSE(std::filesystem::exists(base + "/b.db"));
  }
  SECTION("a directory that does not exist: exit 2, nothing left") {
    CliResult r = w.Run({"backup", base + "/no/such/dir/b.db"});
    CHECK(r.exit_code == 2);
    CHECK(Has(r.err, "cannot create"));
    CHECK_FALSE(std::filesystem::exists(base + "/no"));
  }
}
