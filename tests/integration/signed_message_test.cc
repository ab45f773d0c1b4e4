// Replays in another spelling, through the real daemon with real signatures: Twilio signs its
// URL and the form's *decoded, sorted* fields; Square signs public_url, the query and the body
// run together. So a captured delivery can be re-sent reordered, re-encoded, with an empty
// field, or with bytes moved across Square's `?`, and still verify. Each such variant must be a
// `duplicate` under the provider's defaults (the body-hash identity hashes the signed message,
// not the raw bytes), and the handler runs once.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "base/crypto.h"
#include "daemon.h"
#include "verify/verify.h"

using hookbox::testing::AnswerLine;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::TempDir;

namespace {

const std::string kTwilioToken = "twilio-auth-token-for-tests";
const std::string kSquareKey = "square-signature-key-for-tests";
const std::string kTwilioUrl = "https://example.com/hooks/twilio";
const std::string kSquareUrl = "https://example.com/hooks/square";

Daemon Start(const TempDir& dir, const std::string& dedupe) {
  return Daemon(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
endpoints:
  - name: twilio
    path: /hooks/twilio
    provider: twilio
    public_url: ")" + kTwilioUrl +
                         R"("
    secrets: [{value: )" +
                         kTwilioToken + R"(}]
)" + dedupe + R"(
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/sh, -c, 'echo run >> {DIR}/twilio-runs']}
  - name: square
    path: /hooks/square
    provider: square
    public_url: ")" + kSquareUrl +
                         R"("
    secrets: [{value: )" +
                         kSquareKey + R"(}]
)" + dedupe + R"(
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/sh, -c, 'echo run >> {DIR}/square-runs']}
)");
}

// Twilio's signature of a form body posted to public_url (hookbox send's signer).
httplib::Headers TwilioSigned(const std::string& body) {
  hookbox::Endpoint twilio;
  twilio.provider = hookbox::Provider::kTwilio;
  twilio.public_url = kTwilioUrl;
  return hookbox::testing::HttplibHeaders(
      hookbox::Sign(twilio, {"value", kTwilioToken}, body, std::chrono::system_clock::now()));
}

// Square's signature of public_url?query followed by the body.
httplib::Headers SquareSigned(const std::string& query, const std::string& body) {
  const std::string url = query.empty() ? kSquareUrl : kSquareUrl + "?" + query;
  return {{"x-square-hmacsha256-signature",
           hookbox::Base64Encode(
               hookbox::Hmac(hookbox::HashAlgorithm::kSha256, kSquareKey, url + body))}};
}

int Lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// The handler's runs once the inbox has nothing left to do.
int RunsWhenIdle(const Daemon& d, const std::string& runs) {
  REQUIRE(Eventually([&] {
    for (const auto& row : d.Rows()) {
      if (row["status"] != "processed") return false;
    }
    return true;
  }));
  return Lines(runs);
}

void TwilioVariantsAreDuplicates(const std::string& dedupe) {
  TempDir dir;
  Daemon d = Start(dir, dedupe);
  const std::string original = "MessageSid=SM1&MessageStatus=delivered&AccountSid=AC1";
  const httplib::Headers signature = TwilioSigned(original);
  const auto form = "application/x-www-form-urlencoded";
  CHECK(AnswerLine(d.Post("/hooks/twilio", signature, original, form)) == "200 accepted");
  for (const std::string variant : {
           "MessageStatus=delivered&MessageSid=SM1&AccountSid=AC1",       // reordered
           "MessageSid=%53M1&MessageStatus=delivered&AccountSid=AC1",     // re-encoded
           "MessageSid=SM1&&MessageStatus=delivered&AccountSid=AC1",      // an empty field
           "MessageSid=SM1&MessageStatus=deliver%65d&AccountSid=AC%31&",  // both, and a '&'
           "AccountSid=AC1&MessageSid=SM1&MessageStatus=delivered&MessageSid=SM1",  // repeated
       }) {
    INFO(variant);
    auto r = d.Post("/hooks/twilio", signature, variant, form);
    CHECK(AnswerLine(r) == "200 duplicate");  // the same signed message, another spelling
  }
  // A different message is a new event.
  const std::string other = "MessageSid=SM2&MessageStatus=delivered&AccountSid=AC1";
  CHECK(AnswerLine(d.Post("/hooks/twilio", TwilioSigned(other), other, form)) == "200 accepted");
  CHECK(RunsWhenIdle(d, dir.path().string() + "/twilio-runs") == 2);
  CHECK(d.Rows().size() == 2);
}

// A POST with the target's bytes exactly as given (httplib would percent-encode a '{').
std::string RawPost(const Daemon& d, const std::string& target, const httplib::Headers& headers,
                    const std::string& body) {
  std::string request = "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\nConnection: close\r\n\r\n" + body;
  return d.Raw(request);
}

// A raw answer as AnswerLine gives it: "<status> <status or error of the JSON body>".
std::string RawAnswerLine(const std::string& answer) {
  if (!answer.starts_with("HTTP/1.1 ") || answer.size() < 12) return "no answer";
  const size_t body = answer.find("\r\n\r\n");
  auto j = nlohmann::json::parse(body == std::string::npos ? "" : answer.substr(body + 4), nullptr,
                                 false);
  const bool has = j.is_object() && j.contains("status") && j["status"].is_string();
  return answer.substr(9, 3) + " " +
         (has             ? j["status"].get<std::string>()
          : j.is_object() ? j.value("error", "")
                          : std::string());
}

// The stored body of square's event `id`.
std::string StoredBody(const Daemon& d, const std::string& id) {
  auto r = d.Cli({"inbox", "show", "square", id, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["body"];
}

// The body's first byte moved into the query, the query's last byte moved into the body, the
// whole query moved into the body, part of the body's JSON moved into the query: each the
// same signed string as ("/hooks/square?token=abc", body).
std::vector<std::pair<std::string, std::string>> SquareMoves(const std::string& body) {
  return {{"/hooks/square?token=abc{", body.substr(1)},
          {"/hooks/square?token=ab", "c" + body},
          {"/hooks/square", "?token=abc" + body},
          {"/hooks/square?token=abc{\"event_id\":", body.substr(12)}};
}

// Square's body is read where Square split its message, whatever the split of the request:
// a move is the same event, answered `200 duplicate`, neither a new event nor 400
// `square delivery without a body /event_id`: a duplicate is what a replay of a stored event
// is, and the original's handler must not run again.
void SquareMovesAreDuplicates(const std::string& dedupe) {
  TempDir dir;
  Daemon d = Start(dir, dedupe);
  const std::string body = R"({"event_id":"sq-1","type":"payment.created"})";
  const httplib::Headers signature = SquareSigned("token=abc", body);
  CHECK(RawAnswerLine(RawPost(d, "/hooks/square?token=abc", signature, body)) == "200 accepted");
  for (const auto& [target, moved] : SquareMoves(body)) {
    INFO(target << " " << moved);
    CHECK(RawAnswerLine(RawPost(d, target, signature, moved)) == "200 duplicate");
  }
  CHECK(RawAnswerLine(RawPost(d, "/hooks/square?token=abc", signature, body)) == "200 duplicate");
  CHECK(RunsWhenIdle(d, dir.path().string() + "/square-runs") == 1);
  CHECK(d.Rows().size() == 1);
  CHECK(StoredBody(d, "sq-1") == body);
  // A move that starts the request's body at a nested object with an event_id of its own:
  // the id is read where Square's body starts, so it is no other event.
  const std::string nested = R"({"event_id":"sq-3","type":"t","data":{"event_id":"sq-4"}})";
  const httplib::Headers nested_signature = SquareSigned("token=abc", nested);
  CHECK(RawAnswerLine(RawPost(d, "/hooks/square?token=abc", nested_signature, nested)) ==
        "200 accepted");
  const size_t inner = nested.find('{', 1);
  CHECK(RawAnswerLine(RawPost(d, "/hooks/square?token=abc" + nested.substr(0, inner),
                              nested_signature, nested.substr(inner))) == "200 duplicate");
  CHECK(d.Rows().size() == 2);
  // A moved signature over another URL or body still verifies nothing.
  CHECK(RawPost(d, "/hooks/square?token=abd{", signature, body.substr(1))
            .starts_with("HTTP/1.1 401 "));
}

// A move that arrives first (the original lost, or a replayer ahead of Square's retry) is
// stored with the body Square signed, not the bytes it came with: its handler sees Square's
// JSON, and Square's own delivery after it is the duplicate.
void SquareMoveFirstStoresSquaresBody(const std::string& dedupe) {
  TempDir dir;
  Daemon d = Start(dir, dedupe);
  const std::string body = R"({"event_id":"sq-2","type":"payment.updated"})";
  const httplib::Headers signature = SquareSigned("token=abc", body);
  CHECK(RawAnswerLine(RawPost(d, "/hooks/square?token=abc{", signature, body.substr(1))) ==
        "200 accepted");
  CHECK(StoredBody(d, "sq-2") == body);
  CHECK(d.Rows()[0]["event_type"] == "payment.updated");
  CHECK(RawAnswerLine(RawPost(d, "/hooks/square?token=abc", signature, body)) == "200 duplicate");
  CHECK(RunsWhenIdle(d, dir.path().string() + "/square-runs") == 1);
}

// A signed message with no /event_id where Square's body starts: no event Square sent, 400
// as before (under the default id), never stored under the message's hash.
void SquareWithoutEventIdIsRefused() {
  TempDir dir;
  Daemon d = Start(dir, "");
  for (const std::string& body :
       {std::string(R"({"type":"payment.created"})"), std::string("not json"), std::string("")}) {
    INFO(body);
    const std::string answer =
        RawPost(d, "/hooks/square?token=abc", SquareSigned("token=abc", body), body);
    CHECK(answer.starts_with("HTTP/1.1 400 "));
    CHECK(answer.find("square delivery without a body /event_id") != std::string::npos);
  }
  CHECK(d.Rows().empty());
}

// A signed Twilio form posted with I-Twilio-Idempotency-Token `token` (none when empty),
// which Twilio does not sign; the answer line.
std::string PostWithToken(Daemon& d, const std::string& form, const std::string& token) {
  httplib::Headers headers = TwilioSigned(form);
  if (!token.empty()) headers.emplace("I-Twilio-Idempotency-Token", token);
  return AnswerLine(d.Post("/hooks/twilio", headers, form, "application/x-www-form-urlencoded"));
}

}  // namespace

TEST_CASE("twilio: a signed form replayed in another spelling is a duplicate (defaults)",
          "[replay]") {
  TwilioVariantsAreDuplicates("");
}

TEST_CASE("twilio: a signed form replayed in another spelling is a duplicate (dedupe id, body)",
          "[replay]") {
  TwilioVariantsAreDuplicates("    dedupe: [id, body]");
}

TEST_CASE("square: bytes moved across the ? of a signed delivery are a duplicate", "[replay]") {
  SquareMovesAreDuplicates("");
  SquareMovesAreDuplicates("    dedupe: [id, body]");
}

TEST_CASE("square: a move that arrives first is stored with the body Square signed", "[replay]") {
  SquareMoveFirstStoresSquaresBody("");
  SquareMoveFirstStoresSquaresBody("    dedupe: [id, body]");
}

TEST_CASE("square: a signed message without /event_id is refused", "[replay]") {
  SquareWithoutEventIdIsRefused();
}

TEST_CASE("twilio: a replay with a fresh I-Twilio-Idempotency-Token is a duplicate (defaults)",
          "[replay]") {
  // Twilio does not sign the token: as the default id, a captured request resent with a new
  // token would be a new event, and its handler would run again. So the default id is the
  // signed message's hash: Twilio's own retries (the same signed request) and a replay under
  // any token are one event.
  TempDir dir;
  Daemon d = Start(dir, "");
  const std::string form = "MessageSid=SM7&MessageStatus=delivered&AccountSid=AC1";
  auto with_token = [&](const std::string& token) { return PostWithToken(d, form, token); };
  CHECK(with_token("idem-1") == "200 accepted");
  CHECK(with_token("idem-1") == "200 duplicate");  // Twilio's retry
  CHECK(with_token("idem-2") == "200 duplicate");  // a replay under a new token
  CHECK(with_token("") == "200 duplicate");
  CHECK(RunsWhenIdle(d, dir.path().string() + "/twilio-runs") == 1);
  const auto rows = d.Rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["event_id"].get<std::string>().starts_with("sha256:"));
}

TEST_CASE(
    "twilio: event_id header:I-Twilio-Idempotency-Token is the operator's choice, and "
    "its cost",
    "[replay]") {
  // Opted into, the token is the id: Twilio's retries are duplicates, but the header is
  // unsigned, so a replay under a new token is a new event (README says so).
  TempDir dir;
  Daemon d = Start(dir, "    event_id: header:I-Twilio-Idempotency-Token");
  const std::string form = "MessageSid=SM8&MessageStatus=delivered&AccountSid=AC1";
  auto with_token = [&](const std::string& token) { return PostWithToken(d, form, token); };
  CHECK(with_token("idem-1") == "200 accepted");
  CHECK(with_token("idem-1") == "200 duplicate");
  CHECK(with_token("idem-2") == "200 accepted");
  CHECK(RunsWhenIdle(d, dir.path().string() + "/twilio-runs") == 2);
}

TEST_CASE("twilio: a form body over 1,000 fields is refused before its signature is checked",
          "[replay]") {
  TempDir dir;
  Daemon d = Start(dir, "");
  const auto form = "application/x-www-form-urlencoded";
  std::string at_limit = "MessageSid=SM9";
  for (int i = 1; i < 1000; ++i) at_limit += "&F" + std::to_string(i) + "=v";
  // 1,000 fields, signed: an event.
  CHECK(AnswerLine(d.Post("/hooks/twilio", TwilioSigned(at_limit), at_limit, form)) ==
        "200 accepted");
  // 1,001, signed or not: 413 with the reason, before any MAC is computed.
  const std::string over = at_limit + "&F1000=v";
  for (const httplib::Headers& headers :
       {TwilioSigned(over), httplib::Headers{{"X-Twilio-Signature", "AAAA"}}, httplib::Headers{}}) {
    auto r = d.Post("/hooks/twilio", headers, over, form);
    REQUIRE(r);
    CHECK(r->status == 413);
    CHECK(r->body.find("form body has more than 1000 fields") != std::string::npos);
  }
  // Half a MiB of one-byte fields, unsigned (a MiB of fields costs ~50 ms of CPU): 413 too.
  std::string flood;
  for (int i = 0; i < 256 * 1024; ++i) flood += "a&";
  auto r = d.Post("/hooks/twilio", {{"X-Twilio-Signature", "AAAA"}}, flood, form);
  REQUIRE(r);
  CHECK(r->status == 413);
}
