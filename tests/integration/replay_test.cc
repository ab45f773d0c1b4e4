// End-to-end tests of replays (a captured, validly signed delivery sent again with headers the
// signature does not cover changed or added, answered `duplicate` with nothing new stored) and
// a Standard Webhooks secret written without its base64 padding. The real daemon on loopback,
// real HTTP, the real SQLite inbox, checked through the real CLI (daemon.h).
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "daemon.h"
#include "verify/verify.h"

using hookbox::testing::Daemon;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

const std::string kStandardKey = "0123456789abcdef0123456789abcdef";

json Answer(const httplib::Result& r) { return r ? json::parse(r->body, nullptr, false) : json(); }

// The headers Svix sends: Standard Webhooks' signature under svix-* names.
httplib::Headers SvixSigned(const std::string& secret, const std::string& body,
                            const std::string& id) {
  hookbox::Endpoint standard;
  standard.name = "svix";
  standard.provider = hookbox::Provider::kStandard;
  hookbox::Headers signed_headers =
      hookbox::Sign(standard, {"value", secret}, body, std::chrono::system_clock::now(), id);
  httplib::Headers out;
  for (const auto& [name, value] : signed_headers) {
    REQUIRE(name.starts_with("webhook-"));
    out.emplace("svix-" + name.substr(8), value);
  }
  REQUIRE(out.count("svix-signature") == 1);
  return out;
}

}  // namespace

TEST_CASE("replay: a svix-signed delivery with an added webhook-id is a duplicate", "[replay]") {
  TempDir dir;
  const std::string secret = "whsec_" + hookbox::Base64Encode(kStandardKey);
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: svix
    path: /hooks/svix
    provider: standard
    secrets: [{value: ")" +
                    secret + R"("}]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: "{DIR}/out"}}]
)");
  const std::string body = R"({"type":"user.created","data":{"id":"u_1"}})";
  const httplib::Headers captured = SvixSigned(secret, body, "msg_captured");

  auto first = d.Post("/hooks/svix", captured, body);
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(Answer(first) == json{{"status", "accepted"}, {"event_id", "msg_captured"}});

  // The attacker cannot re-sign, but can add a webhook-id (no webhook-signature: the svix-*
  // headers are what verifies), a fresh one each time.
  for (int i = 0; i < 3; ++i) {
    httplib::Headers replay = captured;
    replay.emplace("webhook-id", "anything-" + std::to_string(i));
    auto r = d.Post("/hooks/svix", replay, body);
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(Answer(r) == json{{"status", "duplicate"}, {"event_id", "msg_captured"}});
  }

  json rows = d.Rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["event_id"] == "msg_captured");
  CHECK(rows[0]["id_source"] == "header:svix-id");
  CHECK(rows[0]["duplicates"] == 3);
}

TEST_CASE(
    "replay: a GitHub delivery with a fresh delivery id and a forged event type is a "
    "duplicate with dedupe [id, body], a new event without",
    "[replay]") {
  TempDir dir;
  const std::string secret = "gh-replay-secret";
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: gh-body
    path: /hooks/gh-body
    provider: github
    secrets: [{value: ")" +
                    secret + R"("}]
    dedupe: [id, body]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: "{DIR}/out"}}]
  - name: gh-id
    path: /hooks/gh-id
    provider: github
    secrets: [{value: ")" +
                    secret + R"("}]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: "{DIR}/out"}}]
)");
  const std::string body = R"({"action":"opened","pull_request":{"number":7}})";
  using hookbox::testing::GithubSigned;

  for (const std::string endpoint : {"gh-body", "gh-id"}) {
    const std::string path = "/hooks/" + endpoint;
    auto first = d.Post(path, GithubSigned(secret, body, "delivery-1", "pull_request"), body);
    REQUIRE(first);
    CHECK(Answer(first) == json{{"status", "accepted"}, {"event_id", "delivery-1"}});
  }

  // The signature covers the body only: the replay keeps it and invents the rest.
  const httplib::Headers replay = GithubSigned(secret, body, "delivery-2-fresh", "deployment");

  auto deduped = d.Post("/hooks/gh-body", replay, body);
  REQUIRE(deduped);
  CHECK(deduped->status == 200);
  CHECK(Answer(deduped) == json{{"status", "duplicate"}, {"event_id", "delivery-1"}});

  auto without = d.Post("/hooks/gh-id", replay, body);
  REQUIRE(without);
  CHECK(without->status == 200);
  CHECK(Answer(without) == json{{"status", "accepted"}, {"event_id", "delivery-2-fresh"}});

  json body_rows = json::parse(d.Cli({"inbox", "list", "--json", "--endpoint", "gh-body"}).out);
  REQUIRE(body_rows.size() == 1);
  CHECK(body_rows[0]["event_id"] == "delivery-1");
  CHECK(body_rows[0]["event_type"] == "pull_request");
  CHECK(body_rows[0]["duplicates"] == 1);
  auto show = d.Cli({"inbox", "show", "gh-body", "delivery-1", "--json"});
  REQUIRE(show.exit_code == 0);
  CHECK(json::parse(show.out)["jobs"].size() == 1);  // the replay made no job

  json id_rows = json::parse(d.Cli({"inbox", "list", "--json", "--endpoint", "gh-id"}).out);
  CHECK(id_rows.size() == 2);
}

TEST_CASE("secrets: an unpadded whsec_ secret verifies, and hookbox send signs with it",
          "[replay]") {
  // Such a secret must not pass check-config and then get every delivery a 401, nor leave
  // `hookbox send` posting unsigned. A 31-byte key: its base64 has two '=' to leave out.
  TempDir dir;
  const std::string padded = "whsec_" + hookbox::Base64Encode(kStandardKey.substr(1));
  REQUIRE(padded.ends_with("=="));
  const std::string unpadded = padded.substr(0, padded.size() - 2);
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: std
    path: /hooks/std
    provider: standard
    secrets: [{value: ")" +
                    unpadded + R"("}]
)");
  // Signed by a producer holding the padded spelling.
  const std::string body = R"({"type":"user.created"})";
  hookbox::Endpoint standard;
  standard.provider = hookbox::Provider::kStandard;
  auto r = d.Post(
      "/hooks/std",
      hookbox::testing::HttplibHeaders(hookbox::Sign(
          standard, {"value", padded}, body, std::chrono::system_clock::now(), "msg_padded")),
      body);
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(Answer(r)["status"] == "ignored");  // no routes

  // hookbox send with the endpoint's (unpadded) secret.
  hookbox::testing::WriteFile(dir / "event.json", R"({"type":"user.deleted"})");
  const std::string url = "http://127.0.0.1:" + std::to_string(d.port()) + "/hooks/std";
  auto sent = d.Cli({"send", "std", dir / "event.json", "--url", url});
  INFO(sent.out << sent.err);
  CHECK(sent.exit_code == 0);
  CHECK(d.Rows().size() == 2);
}
