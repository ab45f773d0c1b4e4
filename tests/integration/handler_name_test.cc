// One handler name everywhere (README, "Command line"): every `--handler` of the real CLI
// (inbox list, inbox retry --dead, inbox replay) and the target of `handler pause|resume`
// take ENDPOINT/HANDLER as `handler list` prints it, or the bare HANDLER when one endpoint
// alone has it; a name on several endpoints is refused with the forms to choose from, and a
// name that matches no handler, configured or in the inbox, is exit 1 with the closest names,
// never an empty table. A renamed handler's jobs are still found by its old name.
#include <catch2/catch.hpp>
#include <string>

#include "daemon.h"

using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

// Endpoints `gh` and `shop`, both with a handler named `orders`; `gh` also has one without a
// name (its name derived from its command) and, before the rename, `legacy`. Every handler
// fails permanently, so each job is dead after one attempt.
std::string Config(bool with_legacy) {
  std::string legacy = with_legacy ? R"(
          - name: legacy
            exec: {command: [/bin/sh, -c, 'exit 65', legacy]})"
                                   : "";
  return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
endpoints:
  - name: gh
    path: /hooks/gh
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - name: orders
            exec: {command: [/bin/sh, -c, 'exit 65', gh-orders]}
          - exec: {command: [/bin/sh, -c, 'exit 65', derived]})" +
         legacy + R"(
  - name: shop
    path: /hooks/shop
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - name: orders
            exec: {command: [/bin/sh, -c, 'exit 65', shop-orders]}
)";
}

size_t RowsOf(const Daemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"inbox", "list", "--json"});
  CliResult r = d.Cli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out).size();
}

int64_t DeadJobs(const Daemon& d) {
  CliResult r = d.Cli({"handler", "list", "--json"});
  REQUIRE(r.exit_code == 0);
  int64_t dead = 0;
  for (const json& h : json::parse(r.out)) dead += h["dead"].get<int64_t>();
  return dead;
}

}  // namespace

TEST_CASE("--handler takes ENDPOINT/HANDLER or a bare unambiguous name; unknown is exit 1",
          "[cli]") {
  TempDir dir;
  Daemon d(dir, Config(true));
  for (const char* id : {"g1", "g2"})
    REQUIRE(d.Post("/hooks/gh", {}, R"({"id":")" + std::string(id) + R"("})")->status == 200);
  REQUIRE(d.Post("/hooks/shop", {}, R"({"id":"s1"})")->status == 200);
  REQUIRE(Eventually([&] { return DeadJobs(d) == 7; }));
  // The operator renames `legacy` away; its jobs stay in the inbox under the old name.
  d.WriteConfig(Config(false));

  std::string derived;
  CliResult handlers = d.Cli({"handler", "list", "--json"});
  REQUIRE(handlers.exit_code == 0);
  for (const json& h : json::parse(handlers.out)) {
    if (h["handler"].get<std::string>().starts_with("exec.sh.")) derived = h["handler"];
  }
  REQUIRE(!derived.empty());

  SECTION("inbox list") {
    CHECK(RowsOf(d, {"--handler", "gh/" + derived}) == 2);  // as handler list prints it
    CHECK(RowsOf(d, {"--handler", derived}) == 2);
    CHECK(RowsOf(d, {"--handler", "shop/orders"}) == 1);
    CHECK(RowsOf(d, {"--endpoint", "shop", "--handler", "orders"}) == 1);
    // The inbox still knows the renamed handler, with or without its endpoint.
    CHECK(RowsOf(d, {"--handler", "legacy"}) == 2);
    CHECK(RowsOf(d, {"--handler", "gh/legacy", "--status", "dead"}) == 2);

    CliResult ambiguous = d.Cli({"inbox", "list", "--handler", "orders"});
    CHECK(ambiguous.exit_code == 1);
    CHECK(ambiguous.out.empty());
    CHECK(ambiguous.err.find("gh/orders") != std::string::npos);
    CHECK(ambiguous.err.find("shop/orders") != std::string::npos);

    CliResult typo = d.Cli({"inbox", "list", "--handler", "ordrs"});
    CHECK(typo.exit_code == 1);
    CHECK(typo.out.empty());
    CHECK(typo.err.find("no handler ordrs") != std::string::npos);
    CHECK(typo.err.find("the closest: gh/orders, shop/orders") != std::string::npos);
    CliResult none = d.Cli({"inbox", "list", "--handler", "nosuch"});
    CHECK(none.exit_code == 1);
    CHECK(none.err.find("the closest:") != std::string::npos);
    CliResult wrong_endpoint = d.Cli({"inbox", "list", "--handler", "shop/" + derived});
    CHECK(wrong_endpoint.exit_code == 1);
    CHECK(wrong_endpoint.err.find("gh/" + derived) != std::string::npos);
    CliResult disagree = d.Cli({"inbox", "list", "--endpoint", "gh", "--handler", "shop/orders"});
    CHECK(disagree.exit_code == 1);
    CHECK(disagree.err.find("--endpoint is gh") != std::string::npos);
    // Neither form: a name with two slashes, or with an empty side, is refused as such.
    for (const char* malformed : {"gh/orders/x", "/orders", "gh/"}) {
      CliResult r = d.Cli({"inbox", "list", "--handler", malformed});
      CHECK(r.exit_code == 1);
      CHECK(r.err.find("is neither ENDPOINT/HANDLER nor HANDLER") != std::string::npos);
    }
  }

  SECTION("inbox retry --dead and inbox replay") {
    CliResult plan =
        d.Cli({"inbox", "retry", "--dead", "--handler", "gh/" + derived, "--dry-run", "--json"});
    INFO(plan.err);
    REQUIRE(plan.exit_code == 0);
    CHECK(json::parse(plan.out)["plan"]["jobs_by_handler"] == json{{"gh/" + derived, 2}});
    CliResult bare =
        d.Cli({"inbox", "retry", "--dead", "--handler", "legacy", "--dry-run", "--json"});
    REQUIRE(bare.exit_code == 0);
    CHECK(json::parse(bare.out)["plan"]["jobs_by_handler"] == json{{"gh/legacy", 2}});
    CliResult ambiguous = d.Cli({"inbox", "retry", "--dead", "--handler", "orders", "--dry-run"});
    CHECK(ambiguous.exit_code == 1);
    CHECK(ambiguous.err.find("name one of gh/orders, shop/orders") != std::string::npos);

    CliResult replay = d.Cli({"inbox", "replay", "--handler", "shop/orders", "--dry-run"});
    INFO(replay.err);
    CHECK(replay.exit_code == 0);
    CHECK(replay.out.find("plan: replay handler orders") != std::string::npos);
    // Known to the inbox, but replay runs only a configured handler.
    CliResult gone = d.Cli({"inbox", "replay", "--handler", "gh/legacy", "--dry-run"});
    CHECK(gone.exit_code == 1);
    CHECK(gone.err.find("no handler gh/legacy in the config") != std::string::npos);
  }

  SECTION("handler pause and resume") {
    CliResult pause = d.Cli({"handler", "pause", derived});
    INFO(pause.err);
    CHECK(pause.exit_code == 0);
    CHECK(pause.out.find("paused gh/" + derived) != std::string::npos);
    CliResult resume = d.Cli({"handler", "resume", derived});
    CHECK(resume.exit_code == 0);
    CHECK(resume.out.find("resumed gh/" + derived) != std::string::npos);
    CliResult ambiguous = d.Cli({"handler", "pause", "orders"});
    CHECK(ambiguous.exit_code == 1);
    CHECK(ambiguous.err.find("gh/orders") != std::string::npos);
    CliResult typo = d.Cli({"handler", "pause", "gh/ordrs"});
    CHECK(typo.exit_code == 1);
    CHECK(typo.err.find("the closest: gh/orders") != std::string::npos);
  }
}
