// End-to-end tests of the receive path: the real daemon on loopback, real HTTP, the real
// SQLite inbox, checked through the real CLI. Each test says which answer of docs/DESIGN.md
// ("Answers") it proves.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "daemon.h"
#include "verify/verify.h"

using hookbox::testing::Daemon;
using hookbox::testing::GithubSigned;
using hookbox::testing::HttplibHeaders;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

constexpr const char* kGithubSecret = "gh-secret-for-tests";
constexpr const char* kStripeSecret = "whsec_stripe_secret_for_tests";

const std::string kConfig = R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DB}
workers: 0          # these tests look at what the receive path stored; jobs stay pending
limits: {max_body: 64KiB, read_timeout: 5s, threads: 8}
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{value: "old-rotated-secret"}, {value: "gh-secret-for-tests"}]
    routes:
      - events: ["push"]
        handlers: [{file: {dir: "{DIR}/out"}}]
  - name: stripe
    path: /hooks/stripe
    provider: stripe
    secrets: [{value: "whsec_stripe_secret_for_tests"}]
    resource: body:/data/object/id
    sequence: body:/created
    strict_body: true
    routes:
      - events: ["invoice.*"]
        handlers: [{file: {dir: "{DIR}/out"}}]
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
  - name: slack
    path: /hooks/slack
    provider: slack
    secrets: [{value: "slack-signing-secret"}]
)";

hookbox::Endpoint Stripe() {
  hookbox::Endpoint e;
  e.name = "stripe";
  e.provider = hookbox::Provider::kStripe;
  return e;
}

httplib::Headers SignStripe(const std::string& body) {
  return HttplibHeaders(
      hookbox::Sign(Stripe(), {"value", kStripeSecret}, body, std::chrono::system_clock::now()));
}

std::string StripeEvent(const std::string& id, const std::string& object, int created,
                        const std::string& extra = "") {
  return json{{"id", id},
              {"type", "invoice.paid"},
              {"created", created},
              {"data", {{"object", {{"id", object}, {"note", extra}}}}}}
      .dump();
}

json Answer(const httplib::Result& r) { return json::parse(r->body, nullptr, false); }

}  // namespace

TEST_CASE("a signed GitHub delivery is accepted once, then answered as a duplicate") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string body = R"({"ref":"refs/heads/main","after":"abc"})";

  auto first = d.Post("/hooks/github", GithubSigned(kGithubSecret, body, "delivery-1"), body);
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(Answer(first) == json{{"status", "accepted"}, {"event_id", "delivery-1"}});

  auto again = d.Post("/hooks/github", GithubSigned(kGithubSecret, body, "delivery-1"), body);
  REQUIRE(again);
  CHECK(again->status == 200);
  CHECK(Answer(again)["status"] == "duplicate");

  json rows = d.Rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["endpoint"] == "gh");
  CHECK(rows[0]["event_id"] == "delivery-1");
  CHECK(rows[0]["id_source"] == "header:X-GitHub-Delivery");
  CHECK(rows[0]["event_type"] == "push");
  CHECK(rows[0]["status"] == "pending");  // a route matches; no worker runs in this test
  CHECK(rows[0]["duplicates"] == 1);
  CHECK(rows[0]["last_duplicate_at"].is_string());
  CHECK_FALSE(rows[0].contains("body"));

  auto show = d.Cli({"inbox", "show", "gh", "delivery-1", "--json"});
  REQUIRE(show.exit_code == 0);
  json detail = json::parse(show.out);
  CHECK(detail["body"] == body);
  REQUIRE(detail["jobs"].size() == 1);
  CHECK(detail["jobs"][0]["status"] == "pending");
}

TEST_CASE("Slack's url_verification challenge is answered when signed, and never stored") {
  TempDir dir;
  Daemon d(dir, kConfig);
  hookbox::Endpoint slack;
  slack.name = "slack";
  slack.provider = hookbox::Provider::kSlack;
  const std::string body =
      R"({"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",)"
      R"("type":"url_verification"})";
  auto signed_headers = HttplibHeaders(hookbox::Sign(slack, {"value", "slack-signing-secret"}, body,
                                                     std::chrono::system_clock::now()));
  auto r = d.Post("/hooks/slack", signed_headers, body);
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(Answer(r) == json{{"challenge", "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}});
  // Unsigned, it is a forgery like any other: 401, no echo.
  auto forged = d.Post("/hooks/slack", {}, body);
  REQUIRE(forged);
  CHECK(forged->status == 401);
  CHECK(forged->body.find("3eZbrw") == std::string::npos);
  CHECK(d.Rows().empty());
}

TEST_CASE("an event type no route matches is stored as ignored, still deduped") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string body = R"({"zen":"Keep it logically awesome."})";
  auto r = d.Post("/hooks/github", GithubSigned(kGithubSecret, body, "ping-1", "ping"), body);
  REQUIRE(r);
  CHECK(Answer(r)["status"] == "ignored");
  auto again = d.Post("/hooks/github", GithubSigned(kGithubSecret, body, "ping-1", "ping"), body);
  CHECK(Answer(again)["status"] == "duplicate");
  json rows = d.Rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["status"] == "ignored");
}

TEST_CASE("the same event on many connections at once makes one row and one 'accepted'") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string body = R"({"ref":"refs/heads/main","race":true})";
  const httplib::Headers headers = GithubSigned(kGithubSecret, body, "racing-delivery");
  constexpr int kSenders = 48;
  std::atomic<int> accepted{0}, duplicate{0}, other{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> senders;
  for (int i = 0; i < kSenders; ++i) {
    senders.emplace_back([&] {
      while (!go) std::this_thread::yield();
      auto r = d.Post("/hooks/github", headers, body);
      std::string status = r && r->status == 200 ? Answer(r)["status"].get<std::string>() : "";
      if (status == "accepted")
        ++accepted;
      else if (status == "duplicate")
        ++duplicate;
      else
        ++other;
    });
  }
  go = true;
  for (auto& t : senders) t.join();
  CHECK(accepted == 1);
  CHECK(duplicate == kSenders - 1);
  CHECK(other == 0);
  json rows = d.Rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["duplicates"] == kSenders - 1);
}

TEST_CASE("every secret of an endpoint is tried (rotation)") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string body = R"({"rotated":true})";
  auto r = d.Post("/hooks/github", GithubSigned("old-rotated-secret", body, "rot-1"), body);
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(Answer(r)["status"] == "accepted");
}

TEST_CASE("signature problems get 401 and leave the inbox unchanged") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string body = R"({"ref":"refs/heads/main"})";
  httplib::Headers good = GithubSigned(kGithubSecret, body, "sig-1");
  auto with_signature = [&](const std::string& value) {
    httplib::Headers h = good;
    h.erase("X-Hub-Signature-256");
    if (!value.empty()) h.emplace("X-Hub-Signature-256", value);
    return h;
  };
  struct Case {
    const char* name;
    httplib::Headers headers;
    std::string body;
    const char* reason;
  };
  std::vector<Case> cases = {
      {"missing", with_signature(""), body, "missing signature"},
      {"not hex", with_signature("sha256=zz"), body, "malformed signature"},
      {"no prefix", with_signature(std::string(64, 'a')), body, "malformed signature"},
      {"wrong mac", with_signature("sha256=" + std::string(64, 'a')), body, "signature mismatch"},
      {"body changed by one byte", good, R"({"ref":"refs/heads/maiN"})", "signature mismatch"},
      {"body truncated", good, body.substr(0, body.size() - 1), "signature mismatch"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto r = d.Post("/hooks/github", c.headers, c.body);
    REQUIRE(r);
    CHECK(r->status == 401);
    CHECK(Answer(r) == json{{"error", c.reason}});
    // The expected MAC is never echoed.
    CHECK(r->body.find(good.find("X-Hub-Signature-256")->second.substr(7)) == std::string::npos);
  }
  // Stripe: a timestamp outside the 300 s tolerance.
  const std::string event = StripeEvent("evt_old", "in_1", 1);
  auto old = hookbox::Sign(Stripe(), {"value", kStripeSecret}, event,
                           std::chrono::system_clock::now() - std::chrono::seconds(301));
  auto r = d.Post("/hooks/stripe", HttplibHeaders(old), event);
  REQUIRE(r);
  CHECK(r->status == 401);
  CHECK(Answer(r)["error"] == "timestamp outside tolerance");

  CHECK(d.Rows().empty());
  // Secrets never reach the log.
  CHECK(d.Log().find(kGithubSecret) == std::string::npos);
  CHECK(d.Log().find("whsec_stripe") == std::string::npos);
}

TEST_CASE("routing answers: 404 unknown path, 405 wrong method") {
  TempDir dir;
  Daemon d(dir, kConfig);
  auto r = d.Post("/hooks/nope", {}, "{}");
  REQUIRE(r);
  CHECK(r->status == 404);
  CHECK(Answer(r).contains("error"));

  httplib::Client cli("127.0.0.1", d.port());
  auto get = cli.Get("/hooks/github");
  REQUIRE(get);
  CHECK(get->status == 405);
  CHECK(get->get_header_value("Allow") == "POST");
  CHECK(d.Rows().empty());
}

TEST_CASE("the parser refuses before reading the body") {
  TempDir dir;
  Daemon d(dir, kConfig);
  auto status_of = [](const std::string& response) {
    return response.size() > 12 ? std::stoi(response.substr(9, 3)) : 0;
  };
  const std::string head = "POST /hooks/open HTTP/1.1\r\nHost: x\r\n";

  SECTION("Content-Length over max_body: 413") {
    CHECK(status_of(d.Raw(head + "Content-Length: 70000\r\n\r\n")) == 413);
  }
  SECTION("chunked body over max_body: 413 as the chunks arrive") {
    CHECK(status_of(d.Raw(head + "Transfer-Encoding: chunked\r\n\r\n11170\r\n")) == 413);
  }
  SECTION("no Content-Length: 411") { CHECK(status_of(d.Raw(head + "\r\n")) == 411); }
  SECTION("two Content-Length headers: 400") {
    CHECK(status_of(d.Raw(head + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x")) == 400);
  }
  SECTION("Transfer-Encoding with Content-Length (smuggling): 400") {
    CHECK(status_of(d.Raw(head + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}")) ==
          400);
  }
  SECTION("Content-Length not a number: 400") {
    CHECK(status_of(d.Raw(head + "Content-Length: 2x\r\n\r\n{}")) == 400);
  }
  SECTION("too many headers: 431") {
    std::string many;
    for (int i = 0; i < 150; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
    CHECK(status_of(d.Raw(head + many + "Content-Length: 2\r\n\r\n{}")) == 431);
  }
  SECTION("a body larger than max_body with a lying small Content-Length is cut at it") {
    std::string r = d.Raw(head + "Content-Length: 2\r\n\r\n{}" + std::string(100000, 'x'));
    CHECK(status_of(r) == 200);
    // What row 39 claims: the stored body is the 2 bytes, not one byte more.
    json rows = d.Rows();
    REQUIRE(rows.size() == 1);
    auto shown = d.Cli({"inbox", "show", "open", rows[0]["event_id"].get<std::string>(), "--json"});
    REQUIRE(shown.exit_code == 0);
    CHECK(json::parse(shown.out)["body"] == "{}");
    CHECK(json::parse(shown.out)["body"].get<std::string>().size() == 2);
  }
  json rows = d.Rows();
  CHECK(rows.size() <= 1);
}

TEST_CASE("ids: slashes and dots are kept; control characters and 10 KB ids get 400") {
  TempDir dir;
  Daemon d(dir, kConfig);
  auto post_open = [&](const json& body) { return d.Post("/hooks/open", {}, body.dump()); };

  for (std::string id : {"a/b/c", "../../etc/passwd", "..", "with space", "ünïcode"}) {
    INFO(id);
    auto r = post_open({{"id", id}});
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(Answer(r) == json{{"status", "ignored"}, {"event_id", id}});
  }
  CHECK(d.Rows().size() == 5);

  for (std::string id : {std::string("line\nbreak"), std::string("nul\0id", 6),
                         std::string("tab\tid"), std::string(10 * 1024, 'x')}) {
    auto r = post_open({{"id", id}});
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(Answer(r).contains("error"));
  }
  CHECK(d.Rows().size() == 5);
  // The CLI finds an id with slashes.
  CHECK(d.Cli({"inbox", "show", "open", "../../etc/passwd"}).exit_code == 0);
}

TEST_CASE("no id in the body: the id is sha256 of the raw body; non-JSON bodies are stored") {
  TempDir dir;
  Daemon d(dir, kConfig);
  for (const std::string& body : {std::string(R"({"no_id":1})"), std::string("not json at all"),
                                  std::string(R"({"id":""})"), std::string()}) {
    INFO(body);
    auto r = d.Post("/hooks/open", {}, body, "text/plain");
    REQUIRE(r);
    CHECK(r->status == 200);
    std::string id = Answer(r)["event_id"];
    CHECK(id.rfind("sha256:", 0) == 0);
    CHECK(id.size() == 7 + 64);
  }
  json rows = d.Rows();
  REQUIRE(rows.size() == 4);
  for (const json& row : rows) CHECK(row["id_source"] == "sha256");
}

TEST_CASE("sequence gate: lower is stale (kept, no jobs), equal is not stale") {
  TempDir dir;
  Daemon d(dir, kConfig);
  auto post = [&](const std::string& id, int created) {
    std::string body = StripeEvent(id, "in_42", created);
    auto r = d.Post("/hooks/stripe", SignStripe(body), body);
    REQUIRE(r);
    REQUIRE(r->status == 200);
    return Answer(r)["status"].get<std::string>();
  };
  CHECK(post("evt_5", 500) == "accepted");
  CHECK(post("evt_3", 300) == "stale");
  CHECK(post("evt_5b", 500) == "accepted");  // a tie is not stale
  CHECK(post("evt_3", 300) == "duplicate");  // a duplicate of a stale event is a duplicate
  CHECK(post("evt_9", 900) == "accepted");
  // Another resource has its own sequence.
  std::string other = StripeEvent("evt_other", "in_7", 100);
  CHECK(Answer(d.Post("/hooks/stripe", SignStripe(other), other))["status"] == "accepted");

  auto show = d.Cli({"inbox", "show", "stripe", "evt_3", "--json"});
  json stale = json::parse(show.out);
  CHECK(stale["status"] == "stale");
  CHECK(stale["jobs"].empty());
  CHECK(stale["resource_id"] == "in_42");
  CHECK(stale["sequence"] == "300");
}

TEST_CASE("RFC 3339 sequences compare as instants") {
  TempDir dir;
  std::string config = kConfig;
  config.replace(config.find("sequence: body:/created"), 23, "sequence: body:/updated_at");
  Daemon d(dir, config);
  auto post = [&](const std::string& id, const std::string& at) {
    json body = json::parse(StripeEvent(id, "in_1", 0));
    body["updated_at"] = at;
    auto r = d.Post("/hooks/stripe", SignStripe(body.dump()), body.dump());
    return Answer(r)["status"].get<std::string>();
  };
  CHECK(post("e1", "2026-01-01T10:00:00+02:00") == "accepted");
  CHECK(post("e2", "2026-01-01T07:59:59Z") == "stale");  // 08:00:00Z is the same instant
  CHECK(post("e3", "2026-01-01T08:00:00.000Z") == "accepted");
}

TEST_CASE("same id, other body: duplicate by default, 422 with strict_body") {
  TempDir dir;
  Daemon d(dir, kConfig);
  // gh: not strict. The changed body is counted as a duplicate and logged as body_changed.
  std::string a = R"({"v":1})", b = R"({"v":2})";
  CHECK(Answer(d.Post("/hooks/github", GithubSigned(kGithubSecret, a, "same-id"), a))["status"] ==
        "accepted");
  auto r = d.Post("/hooks/github", GithubSigned(kGithubSecret, b, "same-id"), b);
  CHECK(Answer(r)["status"] == "duplicate");
  CHECK(d.Log().find("\"body_changed\":true") != std::string::npos);

  // stripe: strict_body.
  std::string s1 = StripeEvent("evt_strict", "in_1", 10, "first");
  std::string s2 = StripeEvent("evt_strict", "in_1", 10, "second");
  CHECK(Answer(d.Post("/hooks/stripe", SignStripe(s1), s1))["status"] == "accepted");
  auto conflict = d.Post("/hooks/stripe", SignStripe(s2), s2);
  REQUIRE(conflict);
  CHECK(conflict->status == 422);
  CHECK(Answer(conflict).contains("error"));
  json show = json::parse(d.Cli({"inbox", "show", "stripe", "evt_strict", "--json"}).out);
  CHECK(show["body"] == s1);
  CHECK(show["duplicates"] == 0);
}

TEST_CASE("inbox clear: the next delivery of the event is accepted as new") {
  TempDir dir;
  Daemon d(dir, kConfig);
  std::string body = R"({"clear":"me"})";
  CHECK(Answer(d.Post("/hooks/github", GithubSigned(kGithubSecret, body, "to-clear"),
                      body))["status"] == "accepted");
  auto cleared = d.Cli({"inbox", "clear", "gh", "to-clear"});
  CHECK(cleared.exit_code == 0);
  CHECK(d.Rows().empty());
  CHECK(Answer(d.Post("/hooks/github", GithubSigned(kGithubSecret, body, "to-clear"),
                      body))["status"] == "accepted");
  CHECK(d.Rows().size() == 1);
  // Clearing what is not there is a lookup error.
  CHECK(d.Cli({"inbox", "clear", "gh", "never-seen"}).exit_code == 1);
  CHECK(d.Cli({"inbox", "clear", "no-such-endpoint", "to-clear"}).exit_code == 1);
}

TEST_CASE("health endpoints on the admin listener, never on the public one") {
  TempDir dir;
  Daemon d(dir, kConfig);
  httplib::Client admin("127.0.0.1", d.admin_port());
  auto healthz = admin.Get("/healthz");
  REQUIRE(healthz);
  CHECK(healthz->status == 200);
  auto readyz = admin.Get("/readyz");
  REQUIRE(readyz);
  CHECK(readyz->status == 200);
  httplib::Client pub("127.0.0.1", d.port());
  auto on_public = pub.Get("/healthz");
  REQUIRE(on_public);
  CHECK(on_public->status == 404);
}

TEST_CASE("SIGTERM: in-flight answers finish, exit 0, every 200 is in the inbox") {
  TempDir dir;
  Daemon d(dir, kConfig);
  std::atomic<int> ok{0};
  std::vector<std::thread> senders;
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        json body = {{"id", "t" + std::to_string(t) + "-" + std::to_string(i)}};
        auto r = d.Post("/hooks/open", {}, body.dump());
        if (r && r->status == 200) ++ok;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(d.Kill(SIGTERM) == 0);
  for (auto& t : senders) t.join();
  CHECK(static_cast<int>(d.Rows().size()) >= ok.load());
}
