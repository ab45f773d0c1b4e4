// The official vectors (tests/data/signatures.json, produced by each provider's own SDK or
// docs) must verify, and any one-byte change to body, signature or timestamp must not.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

struct Vector {
  Endpoint endpoint;
  std::optional<int64_t> timestamp;
  std::string body;
  Headers headers;
  std::string source;
};

// The provider of a vector's "provider" name: the table's row of that name.
Provider ProviderNamed(const std::string& name) {
  for (const ProviderSpec& row : Providers()) {
    if (row.name == name) return row.provider;
  }
  FAIL("signatures.json names no provider of the table: " << name);
  return Provider::kNone;
}

std::vector<Vector> LoadVectors() {
  std::ifstream in(std::string(HOOKBOX_TEST_DATA) + "/signatures.json");
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<Vector> vectors;
  for (const auto& v : doc.at("vectors")) {
    Vector vector;
    vector.endpoint = testing::MakeEndpoint(ProviderNamed(v.at("provider").get<std::string>()),
                                            {v.at("secret").get<std::string>()});
    if (v.contains("timestamp")) vector.timestamp = v.at("timestamp").get<int64_t>();
    vector.body = v.at("body").get<std::string>();
    for (const auto& [name, value] : v.at("headers").items()) {
      vector.headers.emplace(name, value.get<std::string>());
    }
    vector.source = v.at("source").get<std::string>();
    vectors.push_back(std::move(vector));
  }
  return vectors;
}

// Where in a vector's headers its MAC and its timestamp are written.
struct Place {
  std::string header;
  size_t offset = 0;
};

Place MacPlace(const Headers& headers) {
  for (const auto& [name, value] : headers) {
    for (const char* signature :
         {"Stripe-Signature", "X-Hub-Signature-256", "X-Hub-Signature", "X-Slack-Signature"}) {
      if (CaseInsensitiveLess{}(name, signature) || CaseInsensitiveLess{}(signature, name)) {
        continue;
      }
      return {name, value.rfind('=') + 1};  // the last element's hex digits
    }
    if (name == "webhook-signature" || name == "svix-signature") return {name, value.find(',') + 1};
    if (name == "X-Shopify-Hmac-Sha256") return {name, 0};
  }
  FAIL("no signature header in vector");
  return {};
}

Place TimestampPlace(const Headers& headers, int64_t timestamp) {
  std::string digits = std::to_string(timestamp);
  for (const auto& [name, value] : headers) {
    if (name == "Stripe-Signature") return {name, value.find("t=" + digits) + 2};
    if (value == digits) return {name, 0};
  }
  FAIL("no timestamp header in vector");
  return {};
}

Headers EditChar(Headers headers, const Place& place, char (*edit)(char)) {
  auto it = headers.find(place.header);
  REQUIRE(it != headers.end());
  REQUIRE(place.offset < it->second.size());
  it->second[place.offset] = edit(it->second[place.offset]);
  return headers;
}

TEST_CASE("every official vector verifies", "[vectors]") {
  std::vector<Vector> vectors = LoadVectors();
  REQUIRE(vectors.size() >= 9);
  for (const Vector& v : vectors) {
    INFO(v.source);
    if (v.timestamp) {
      CHECK(Outcome(Verify(v.endpoint, v.headers, v.body, At(*v.timestamp))) == "ok");
      CHECK(Outcome(Verify(v.endpoint, v.headers, v.body, At(*v.timestamp + 300))) == "ok");
      CHECK(Outcome(Verify(v.endpoint, v.headers, v.body, At(*v.timestamp + 301))) ==
            reason::kTimestamp);
    } else {
      CHECK(Outcome(Verify(v.endpoint, v.headers, v.body, At(0))) == "ok");
      CHECK(Outcome(Verify(v.endpoint, v.headers, v.body, At(4'000'000'000))) == "ok");
    }
  }
}

TEST_CASE("a one-byte change to an official vector fails for the right reason", "[vectors]") {
  for (const Vector& v : LoadVectors()) {
    INFO(v.source);
    TimePoint now = At(v.timestamp.value_or(1'700'000'000));
    auto outcome = [&](const Headers& headers, const std::string& body) {
      return Outcome(Verify(v.endpoint, headers, body, now));
    };

    for (size_t i : {size_t{0}, v.body.size() / 2, v.body.size() - 1}) {
      std::string body = v.body;
      body[i] ^= 0x01;
      CHECK(outcome(v.headers, body) == reason::kMismatch);
    }
    CHECK(outcome(v.headers, v.body + " ") == reason::kMismatch);
    CHECK(outcome(v.headers, v.body.substr(0, v.body.size() - 1)) == reason::kMismatch);

    Place mac = MacPlace(v.headers);
    // Another valid digit (hex and base64 alike, whatever the case): a different MAC.
    CHECK(outcome(EditChar(v.headers, mac, [](char c) { return c == 'B' || c == 'b' ? 'C' : 'B'; }),
                  v.body) == reason::kMismatch);
    CHECK(outcome(EditChar(v.headers, mac, [](char c) { return c == '0' ? '1' : '0'; }), v.body) ==
          reason::kMismatch);
    // Not a digit of the encoding at all.
    CHECK(outcome(EditChar(v.headers, mac, [](char) { return '!'; }), v.body) ==
          reason::kMalformed);

    if (!v.timestamp) continue;
    Place ts = TimestampPlace(v.headers, *v.timestamp);
    // First digit: years away. Changing 1 -> 2 (or anything else) leaves the tolerance.
    CHECK(outcome(EditChar(v.headers, ts, [](char c) { return c == '9' ? '8' : char(c + 1); }),
                  v.body) == reason::kTimestamp);
    // Last digit: a second away, inside the tolerance, but not what was signed.
    Place last = ts;
    last.offset += std::to_string(*v.timestamp).size() - 1;
    CHECK(outcome(EditChar(v.headers, last, [](char c) { return c == '9' ? '8' : char(c + 1); }),
                  v.body) == reason::kMismatch);
    CHECK(outcome(EditChar(v.headers, last, [](char) { return 'x'; }), v.body) ==
          reason::kMalformed);
  }
}

}  // namespace
}  // namespace hookbox
