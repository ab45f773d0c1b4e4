// Routes by content through real HTTP (README, "Routes by content"): signed Stripe
// deliveries routed by `/data/object/livemode` and a second condition to two real loopback
// services, a urlencoded body routed by `form:`, an event no route takes stored `ignored`,
// `inbox show` naming the routes an event takes, a SIGHUP that changes a route's `where:`
// routing only what comes after, and `check-config` refusing a bad condition at its line and
// column while the running daemon keeps its routes.
#include <catch2/catch.hpp>
#include <map>
#include <mutex>

#include "daemon.h"
#include "verify/sign.h"

namespace {

using hookbox::testing::AnswerLine;
using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::HttplibHeaders;
using hookbox::testing::LoopbackServer;
using hookbox::testing::RunHookbox;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

constexpr const char* kSecret = "whsec_routes_where";

// Every request a handler made: the path it reached and the event id it carried.
class Services {
 public:
  int port() const { return server_.port(); }
  std::multimap<std::string, std::string> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return seen_.size();
  }

 private:
  std::mutex mu_;
  std::multimap<std::string, std::string> seen_;
  LoopbackServer server_{[this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    seen_.emplace(req.path, req.get_header_value("X-Hookbox-Event-Id"));
    res.status = 200;
  }};
};

// `live_where` is the live route's condition list; the sandbox route needs two conditions.
std::string Config(int port, const std::string& live_where) {
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 4
endpoints:
  - name: stripe
    path: /hooks/stripe
    provider: stripe
    secrets: [{value: )" +
         std::string(kSecret) + R"(}]
    routes:
      - events: ["invoice.*"]
        where: )" +
         live_where + R"(
        handlers: [{name: billing, http: {url: ")" +
         base + R"(/billing"}}]
      - events: ["invoice.*"]
        where: ["/data/object/livemode=false", "/data/object/currency=eur"]
        handlers: [{name: sandbox, http: {url: ")" +
         base + R"(/sandbox"}}]
  - name: sms
    path: /hooks/sms
    verify: none
    event_id: header:X-Id
    event_type: header:X-Type
    routes:
      - events: ["*"]
        where: ["form:Body=STOP"]
        handlers: [{name: unsubscribe, http: {url: ")" +
         base + R"(/unsubscribe"}}]
)";
}

std::string Invoice(const std::string& id, bool live, const std::string& currency) {
  return json{
      {"id", id},
      {"type", "invoice.paid"},
      {"created", 1767225600},
      {"livemode", live},
      {"data", {{"object", {{"object", "invoice"}, {"livemode", live}, {"currency", currency}}}}}}
      .dump();
}

std::string Deliver(const Daemon& d, const std::string& body) {
  hookbox::Endpoint stripe;
  stripe.name = "stripe";
  stripe.provider = hookbox::Provider::kStripe;
  return AnswerLine(d.Post("/hooks/stripe",
                           HttplibHeaders(hookbox::Sign(stripe, {"value", kSecret}, body,
                                                        std::chrono::system_clock::now())),
                           body));
}

std::string Sms(const Daemon& d, const std::string& id, const std::string& body) {
  return AnswerLine(d.Post("/hooks/sms", {{"X-Id", id}, {"X-Type", "sms.received"}}, body,
                           "application/x-www-form-urlencoded"));
}

json Show(const Daemon& d, const std::string& endpoint, const std::string& id) {
  CliResult r = d.Cli({"inbox", "show", endpoint, id, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("routes by content: where: picks the handlers; no match is ignored") {
  TempDir dir;
  Services services;
  Daemon d(dir, Config(services.port(), R"(["/data/object/livemode=true"])"));

  CHECK(Deliver(d, Invoice("evt_live", true, "usd")) == "200 accepted");
  CHECK(Deliver(d, Invoice("evt_test_eur", false, "eur")) == "200 accepted");
  CHECK(Deliver(d, Invoice("evt_test_usd", false, "usd")) == "200 ignored");  // one of two
  CHECK(Sms(d, "sms-1", "From=%2B15551234&Body=STOP") == "200 accepted");
  CHECK(Sms(d, "sms-2", "From=%2B15551234&Body=STOP+please") == "200 ignored");
  CHECK(Sms(d, "sms-3", "not a form") == "200 ignored");

  REQUIRE(Eventually([&] { return services.count() == 3; }));
  using Seen = std::multimap<std::string, std::string>;
  CHECK(services.seen() ==
        Seen{{"/billing", "evt_live"}, {"/sandbox", "evt_test_eur"}, {"/unsubscribe", "sms-1"}});

  // inbox show: the routes the event takes, beside the jobs the accept made.
  json live = Show(d, "stripe", "evt_live");
  REQUIRE(live["routes"].size() == 1);
  CHECK(live["routes"][0]["route"] == 0);
  CHECK(live["routes"][0]["where"] == json::array({"/data/object/livemode=true"}));
  CHECK(live["routes"][0]["handlers"] == json::array({"billing"}));
  REQUIRE(live["jobs"].size() == 1);
  CHECK(live["jobs"][0]["handler"] == "billing");
  json ignored = Show(d, "stripe", "evt_test_usd");
  CHECK(ignored["status"] == "ignored");
  CHECK(ignored["routes"].empty());
  CHECK(ignored["jobs"].empty());
  CliResult text = d.Cli({"inbox", "show", "stripe", "evt_test_eur"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("routes[1]") != std::string::npos);
  CHECK(text.out.find("/data/object/currency=eur") != std::string::npos);
  CHECK(text.out.find("-> [\"sandbox\"]") != std::string::npos);
  CliResult none = d.Cli({"inbox", "show", "sms", "sms-3"});
  CHECK(none.out.find("routes             none") != std::string::npos);

  // The same conditions find the same rows in the inbox.
  CliResult listed = d.Cli({"inbox", "list", "--json", "--where", "/data/object/livemode=true"});
  REQUIRE(listed.exit_code == 0);
  json rows = json::parse(listed.out);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["event_id"] == "evt_live");

  // A reload that widens the live route routes what comes after, and nothing stored before.
  d.WriteConfig(Config(services.port(), R"(["/data/object/currency=usd"])"));
  d.Signal(SIGHUP);
  REQUIRE(d.WaitForLog("reloaded", 1));
  CHECK(Deliver(d, Invoice("evt_test_usd_2", false, "usd")) == "200 accepted");
  REQUIRE(Eventually([&] { return services.count() == 4; }));
  CHECK(services.seen().count("/billing") == 2);
  CHECK(Show(d, "stripe", "evt_test_usd")["status"] == "ignored");  // stored before: as it was
  // inbox show reads the routes as loaded now: the ignored event would take route 0 today,
  // and the live one takes it by its new condition; the jobs stay what the accept made.
  json before = Show(d, "stripe", "evt_test_usd");
  REQUIRE(before["routes"].size() == 1);
  CHECK(before["routes"][0]["where"] == json::array({"/data/object/currency=usd"}));
  CHECK(before["jobs"].empty());
  CHECK(Show(d, "stripe", "evt_live")["routes"][0]["where"] ==
        json::array({"/data/object/currency=usd"}));
}

TEST_CASE("routes by content: check-config refuses a bad condition at its line; reload keeps") {
  TempDir dir;
  Services services;
  Daemon d(dir, Config(services.port(), R"(["/data/object/livemode=true"])"));
  const std::string bad = (dir.path() / "bad.yaml").string();
  std::string text = Config(services.port(), R"(["data/object/livemode=true"])");
  for (auto at = text.find("{DB}"); at != std::string::npos; at = text.find("{DB}")) {
    text.replace(at, 4, (dir.path() / "inbox.db").string());
  }
  WriteFile(bad, text);
  CliResult r = RunHookbox({"check-config", "-c", bad}, dir.path().string());
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.out.find("bad.yaml:13:17: error: ") != std::string::npos);
  CHECK(r.out.find("endpoints[0].routes[0].where[0]: bad JSON pointer: a JSON pointer starts "
                   "with /") != std::string::npos);

  // The same file given to the running daemon: refused, the old routes kept.
  d.WriteConfig(Config(services.port(), R"(["data/object/livemode=true"])"));
  d.Signal(SIGHUP);
  REQUIRE(d.WaitForLog("reload refused: the config has errors; the old one stays", 1));
  CHECK(d.Log().find("where[0]: bad JSON pointer") != std::string::npos);
  CHECK(Deliver(d, Invoice("evt_after", true, "usd")) == "200 accepted");
  REQUIRE(Eventually([&] { return services.count() == 1; }));
  CHECK(services.seen() == std::multimap<std::string, std::string>{{"/billing", "evt_after"}});
}
