// What the command line's tests share: a workspace (a temporary directory with a config
// whose database is there, and one whose database cannot be opened), `hookbox ARGS -c FILE`
// run to completion as a child process, and an inbox with rows in it, put there by the real
// daemon. The child processes, the daemon and the temporary directory are those of the
// integration tests' harness (tests/integration/daemon.h), reused here.
//
// Each case asserts the exact exit code (cli/cli.h: 0 ok, 1 usage, config or lookup, 2 the
// database, 3 busy) and something specific the verb printed.
#pragma once

#include <signal.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/daemon.h"

namespace hookbox::testing {

// One endpoint `raw` that takes anything (its id and type from the X-Id and X-Type
// headers) and one exec handler named `fails`, which fails permanently (exit 65): a
// delivery's row is dead after its one attempt, with nothing left running.
inline const std::string kCliConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 1
endpoints:
  - name: raw
    path: /hooks/raw
    verify: none
    event_id: header:X-Id
    event_type: header:X-Type
    routes:
      - events: ["*"]
        handlers:
          - name: fails
            exec: {command: [/bin/sh, -c, 'exit 65'], timeout: 5s}
)";

inline bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A temporary directory with config.yaml (kCliConfig, the database in the directory, not
// created yet) and bad-db.yaml (the same, its database in a directory that does not exist,
// which SQLite cannot open, let alone create).
class Workspace {
 public:
  Workspace() {
    WriteFile(config_, Filled(kCliConfig, db_));
    WriteFile(bad_db_config_, Filled(kCliConfig, dir_ / "no-such-dir/inbox.db"));
  }

  // `hookbox ARGS -c config.yaml`.
  CliResult Run(std::vector<std::string> args) const { return RunWith(config_, std::move(args)); }
  // `hookbox ARGS -c CONFIG`.
  CliResult RunWith(const std::string& config, std::vector<std::string> args) const {
    args.emplace_back("-c");
    args.push_back(config);
    return RunHookbox(args, dir_.path().string());
  }
  // `hookbox ARGS -c bad-db.yaml`.
  CliResult RunBadDb(std::vector<std::string> args) const {
    return RunWith(bad_db_config_, std::move(args));
  }
  // `hookbox ARGS` as given (no -c): for an option left without its value at the end of the
  // line (an option that takes a value takes the next word, even `-c`).
  CliResult RunBare(const std::vector<std::string>& args) const {
    return RunHookbox(args, dir_.path().string());
  }
  // `hookbox migrate`: the database created, as an operator's verbs expect it.
  void Migrate() const {
    CliResult r = Run({"migrate"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }

  // The real daemon on config.yaml takes one delivery for each id, and its handler fails
  // each one; returns once every row is dead and the daemon has stopped (SIGTERM, exit 0),
  // so the verbs that follow see the rows as they are, with no attempt running.
  void SeedDeadRows(const std::vector<std::string>& ids) const {
    Daemon d(dir_, kCliConfig);
    for (const std::string& id : ids) {
      auto r = d.Post("/hooks/raw", {{"X-Id", id}, {"X-Type", "thing.happened"}}, "{}");
      REQUIRE(r);
      REQUIRE(r->status == 200);
    }
    REQUIRE(Eventually([&] {
      nlohmann::json rows = d.Rows();
      if (rows.size() != ids.size()) return false;
      for (const auto& row : rows) {
        if (row["status"] != "dead") return false;
      }
      return true;
    }));
    REQUIRE(d.Kill(SIGTERM) == 0);
  }

  // Another config file in the directory, {DB} being the same database; returns its path.
  std::string WriteConfig(const std::string& name, const std::string& yaml) const {
    std::string path = dir_ / name;
    WriteFile(path, Filled(yaml, db_));
    return path;
  }

  const TempDir& dir() const { return dir_; }
  const std::string& config() const { return config_; }
  const std::string& db() const { return db_; }

 private:
  static std::string Filled(std::string text, const std::string& db) {
    text.replace(text.find("{DB}"), 4, db);
    return text;
  }

  TempDir dir_;
  std::string db_ = dir_ / "inbox.db";
  std::string config_ = dir_ / "config.yaml";
  std::string bad_db_config_ = dir_ / "bad-db.yaml";
};

// The message of a database that cannot be opened, as every verb that opens it prints it.
inline const std::string kCannotOpen = "hookbox: cannot open database: ";

}  // namespace hookbox::testing
