// Tests of `hookbox send` against the real daemon or a real server on loopback: what it refuses
// to send and where, what it says it sends, how it prints the answer, and --type / --id naming
// the event where the endpoint reads them from a header.
// (Its signing for each provider is tried in handlers_test.cc and replay_test.cc.)
#include <catch2/catch.hpp>
#include <thread>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

const char* kConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: gl
    path: /hooks/gl
    provider: gitlab
    secrets: [{value: gitlab-send-token}]
  - name: gh
    path: /hooks/gh
    provider: github
    secrets: [{value: gh-send-test}]
    routes:
      - events: [push]
        handlers:
          - file: {dir: "{DIR}/files"}
  - name: stripe
    path: /hooks/stripe
    provider: stripe
    secrets: [{value: whsec_send_test}]
  - name: open
    path: /hooks/open
    verify: none
  - name: twilio
    path: /hooks/twilio
    provider: twilio
    public_url: "https://example.com/hooks/twilio"
    secrets: [{value: twilio-token}]
  - name: twilio-token
    path: /hooks/twilio-token
    provider: twilio
    public_url: "https://example.com/hooks/twilio-token"
    secrets: [{value: twilio-token}]
    event_id: header:I-Twilio-Idempotency-Token
)";

json Show(const Daemon& d, const std::string& endpoint, const std::string& id) {
  auto r = d.Cli({"inbox", "show", endpoint, id, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("send refuses a token or signature over plain http:// to a host that is not loopback") {
  TempDir dir;
  Daemon d(dir, kConfig);
  hookbox::testing::WriteFile(dir / "event.json", R"({"object_kind":"push"})");
  // 0.0.0.0 is not a loopback address, yet Linux delivers a connection to it on this host:
  // it stands in for a remote address, so that what would have been sent can be seen.
  const std::string away = "http://0.0.0.0:" + std::to_string(d.port());
  auto refused = d.Cli({"send", "gl", dir / "event.json", "--url", away + "/hooks/gl"});
  INFO(refused.out << refused.err);
  CHECK(refused.exit_code == 1);
  CHECK(Has(refused.err,
            "refusing to send endpoint gl's GitLab token in clear text to 0.0.0.0, which is not "
            "a loopback address"));
  CHECK(Has(refused.err, "--insecure"));
  auto signature = d.Cli({"send", "gh", dir / "event.json", "--url", away + "/hooks/gh"});
  CHECK(signature.exit_code == 1);
  CHECK(Has(signature.err, "refusing to send endpoint gh's signature in clear text"));
  CHECK(d.Rows().empty());  // nothing reached the daemon

  // --insecure sends it, and says what it sends.
  auto insecure =
      d.Cli({"send", "gl", dir / "event.json", "--url", away + "/hooks/gl", "--insecure"});
  INFO(insecure.out << insecure.err);
  CHECK(insecure.exit_code == 0);
  CHECK(Has(insecure.err, "sending " + dir / "event.json" + " (22 bytes) to " + away +
                              "/hooks/gl as endpoint gl (gitlab) would receive it"));
  CHECK(Has(insecure.err, "X-Gitlab-Token is the endpoint's token itself (from value)"));
  CHECK_FALSE(Has(insecure.err, "gitlab-send-token"));
  CHECK(d.Rows().size() == 1);

  // Loopback needs no flag (nor does the config's own listener, the default); it still says.
  auto local = d.Cli({"send", "gh", dir / "event.json", "--url",
                      "http://127.0.0.1:" + std::to_string(d.port()) + "/hooks/gh"});
  INFO(local.out << local.err);
  CHECK(local.exit_code == 0);
  CHECK(Has(local.err,
            "signed with the secret from value: whoever sees this request can "
            "replay it"));
  CHECK(Has(local.err, "X-Hub-Signature-256"));
  // A hostname is not resolved to decide: only `localhost` is taken as loopback.
  auto named = d.Cli({"send", "gh", dir / "event.json", "--url", "http://example.com/hooks/gh"});
  CHECK(named.exit_code == 1);
  CHECK(Has(named.err, "refusing"));
}

TEST_CASE("send prints the answer with terminal controls escaped") {
  TempDir dir;
  httplib::Server server;
  server.Post(".*", [](const httplib::Request&, httplib::Response& res) {
    res.status = 502;
    res.set_content(
        "\x1b]0;owned\x07\x1b[2J\xc2\x9b"
        "31m\nline two",
        "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::yield();
  Daemon d(dir, kConfig);
  hookbox::testing::WriteFile(dir / "event.json", R"({"id":"evt_1","type":"x"})");
  auto sent = d.Cli({"send", "stripe", dir / "event.json", "--url",
                     "http://127.0.0.1:" + std::to_string(port) + "/"});
  server.stop();
  serving.join();
  INFO(sent.out);
  CHECK(sent.exit_code == 1);
  CHECK(sent.out == "502 \\x1b]0;owned\\x07\\x1b[2J\\u009b31m\nline two\n");
  CHECK(sent.out.find('\x1b') == std::string::npos);
}

TEST_CASE("send --type and --id name a GitHub event, so its routes can be tried") {
  TempDir dir;
  Daemon d(dir, kConfig);
  hookbox::testing::WriteFile(dir / "event.json", R"({"ref":"refs/heads/main"})");
  const std::string url = "http://127.0.0.1:" + std::to_string(d.port()) + "/hooks/gh";
  // Without --type the delivery is hookbox.test, which no route takes.
  auto plain = d.Cli({"send", "gh", dir / "event.json", "--url", url});
  CHECK(plain.exit_code == 0);
  CHECK(plain.out.rfind("200 {\"status\":\"ignored\"", 0) == 0);

  auto push = d.Cli(
      {"send", "gh", dir / "event.json", "--url", url, "--type", "push", "--id", "delivery-7"});
  INFO(push.out << push.err);
  CHECK(push.exit_code == 0);
  CHECK(push.out.rfind("200 {\"status\":\"accepted\",\"event_id\":\"delivery-7\"", 0) == 0);
  json row = Show(d, "gh", "delivery-7");
  CHECK(row["event_type"] == "push");
  CHECK(row["id_source"] == "header:X-GitHub-Delivery");
}

TEST_CASE("send --type and --id where the endpoint reads them from the body, or nowhere") {
  TempDir dir;
  Daemon d(dir, kConfig);
  hookbox::testing::WriteFile(dir / "event.json", R"({"id":"evt_1","type":"a"})");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"stripe", "--type", "b"},
            "--type: endpoint stripe reads its event type from the body (body:/type), and "
            "hookbox send posts FILE unchanged, as signed: write it into FILE"},
           {{"stripe", "--id", "evt_2"},
            "--id: endpoint stripe reads its event id from the body "
            "(body:/id)"},
           {{"open", "--id", "x"}, "--id: endpoint open has no event id source"},
           {{"open", "--type", "x"}, "--type: endpoint open has no event type source"},
           {{"twilio", "--type", "x"}, "--type: endpoint twilio's event type is always"},
           // Twilio's default id is the signed message's hash (its token is unsigned).
           {{"twilio", "--id", "x"}, "--id: endpoint twilio has no event id source"},
           {{"gh", "--type", "push\r\nX-Injected: 1"},
            "--type: a control character cannot be "
            "sent"},
       }) {
    std::vector<std::string> args = {"send", c.args[0], dir / "event.json"};
    args.insert(args.end(), c.args.begin() + 1, c.args.end());
    auto r = d.Cli(args);
    INFO(c.args[0] << " " << c.args[1] << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(Has(r.err, c.says));
  }
  CHECK(d.Rows().empty());
  // A twilio endpoint that reads its id from the token header: --id sets it.
  hookbox::testing::WriteFile(dir / "form.txt", "A=1&B=2");
  auto twilio = d.Cli({"send", "twilio-token", dir / "form.txt", "--id", "idem-1", "--url",
                       "http://127.0.0.1:" + std::to_string(d.port()) + "/hooks/twilio-token"});
  INFO(twilio.out << twilio.err);
  CHECK(twilio.exit_code == 0);
  CHECK(Show(d, "twilio-token", "idem-1")["id_source"] == "header:I-Twilio-Idempotency-Token");
}
