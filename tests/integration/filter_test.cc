// `hookbox inbox list` with the filter (README "Finding events"), through the real binary
// beside the real daemon: events posted over HTTP, found by their body's fields, their type and
// their time; a filter that cannot be evaluated is exit 2 and names the bad part, before the
// inbox is even opened.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "daemon.h"

using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

const std::string kConfig = hookbox::testing::kRawEndpointConfig + R"(  - name: other
    path: /hooks/other
    verify: none
    event_id: header:X-Id
)";

void Post(const Daemon& d, const std::string& path, const std::string& id, const std::string& type,
          const std::string& body, const std::string& content_type) {
  auto r = d.Post(path, {{"X-Id", id}, {"X-Type", type}}, body, content_type);
  REQUIRE(r);
  REQUIRE(r->status == 200);
}

std::set<std::string> Ids(const CliResult& r) {
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::set<std::string> ids;
  for (const json& row : json::parse(r.out)) ids.insert(row["event_id"].get<std::string>());
  return ids;
}

}  // namespace

TEST_CASE("inbox list --where finds events by their body; a bad filter is exit 2", "[cli]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const char* json_type = "application/json";
  Post(
      d, "/hooks/raw", "ev-1", "invoice.paid",
      R"({"data":{"object":{"customer":"cus_123","amount":2000,"paid":true,"lines":[{"sku":"a"}]}}})",
      json_type);
  Post(d, "/hooks/raw", "ev-2", "invoice.created",
       R"({"data":{"object":{"customer":"cus_456","amount":2000,"paid":false}}})", json_type);
  Post(d, "/hooks/raw", "ev-3", "charge.paid", "not json, customer=cus_123", "text/plain");
  Post(d, "/hooks/raw", "sms-1", "sms", "From=%2B15551234&Body=hello+world",
       "application/x-www-form-urlencoded");
  Post(d, "/hooks/other", "ev-4", "", R"({"data":{"object":{"customer":"cus_123"}}})", json_type);

  using S = std::set<std::string>;
  auto list = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"inbox", "list", "--json"});
    return d.Cli(args);
  };
  CHECK(Ids(list({"--where", "/data/object/customer=cus_123"})) == S{"ev-1", "ev-4"});
  CHECK(Ids(list({"--endpoint", "raw", "--where", "/data/object/customer=cus_123"})) == S{"ev-1"});
  CHECK(Ids(list({"--where", "/data/object/amount=2000"})) == S{"ev-1", "ev-2"});
  CHECK(Ids(list({"--where", "/data/object/amount=2000", "--where", "/data/object/paid=false"})) ==
        S{"ev-2"});
  CHECK(Ids(list({"--where", "/data/object/lines/0/sku=a"})) == S{"ev-1"});
  CHECK(Ids(list({"--where", "form:Body=hello world"})) == S{"sms-1"});
  CHECK(Ids(list({"--where", "form:From=+15551234", "--type", "s?s"})) == S{"sms-1"});
  CHECK(Ids(list({"--type", "*.paid", "--since", "1h"})) == S{"ev-1", "ev-3"});
  CHECK(Ids(list({"--until", "1h"})).empty());
  // No handler is configured, so each row is ignored as it is stored.
  CHECK(Ids(list({"--status", "ignored", "--type", "invoice.*"})) == S{"ev-1", "ev-2"});
  CHECK(Ids(list({"--status", "pending"})).empty());

  // The table names what it found, too.
  CliResult table = d.Cli({"inbox", "list", "--where", "/data/object/customer=cus_456"});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("ev-2") != std::string::npos);
  CHECK(table.out.find("ev-1") == std::string::npos);

  // What cannot be evaluated: exit 2, the bad part named, nothing listed.
  struct Bad {
    std::vector<std::string> args;
    std::string named;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{"--where", "/data/object/customer"}, "--where /data/object/customer"},
           {{"--where", "data/customer=x"}, "starts with /"},
           {{"--where", "/a~2=x"}, "~ must be followed by 0"},
           {{"--status", "done"}, "unknown status"},
           {{"--since", "yesterday"}, "--since yesterday"},
           {{"--since", "1h", "--until", "2h"}, "the time range is empty"},
       }) {
    std::vector<std::string> args = {"inbox", "list"};
    args.insert(args.end(), bad.args.begin(), bad.args.end());
    CliResult r = d.Cli(args);
    INFO(bad.named);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(bad.named) != std::string::npos);
    CHECK(r.out.empty());
  }
}
