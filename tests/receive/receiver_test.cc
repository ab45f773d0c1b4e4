// The receiver's hand-written JSON (stored headers) against what nlohmann's DOM wrote before
// it: the same bytes for ordinary headers and for every awkward one (quotes, backslashes,
// control characters, non-ASCII, invalid UTF-8, names repeated in one or in two spellings).
#include "receive/receiver.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>

using hookbox::Headers;
using nlohmann::json;

namespace {

// The former implementation: a JSON object built header by header, then dumped.
std::string ThroughJsonDom(const Headers& headers) {
  static const Headers kCredentials = {{"Authorization", ""},
                                       {"Proxy-Authorization", ""},
                                       {"Cookie", ""},
                                       {"X-Gitlab-Token", ""},
                                       {"X-Api-Key", ""}};
  json j = json::object();
  for (const auto& [name, value] : headers) {
    if (kCredentials.count(name)) continue;
    auto it = j.find(name);
    if (it == j.end())
      j[name] = value;
    else
      *it = it->get<std::string>() + ", " + value;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

TEST_CASE("stored headers: the same JSON as a JSON object would give") {
  const Headers github = {
      {"Content-Type", "application/json"},
      {"User-Agent", "GitHub-Hookshot/044aadd"},
      {"X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
      {"X-GitHub-Event", "push"},
      {"X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d"},
      {"accept", "*/*"},
      {"Authorization", "Bearer secret"}};
  CHECK(hookbox::StoredHeadersJson(github) == ThroughJsonDom(github));
  CHECK(hookbox::StoredHeadersJson({}) == "{}");

  const Headers awkward = {{"X-Quote", "say \"hi\" \\ bye"},
                           {"X-Ctl", std::string("a\0b\x1f\t", 5)},
                           {"X-Utf8", "caf\xc3\xa9 \xe2\x82\xac"},
                           {"X-Bad", "\xff\xfe ok \xc3"},
                           {"X-Multi", "1"},
                           {"x-multi", "2"},
                           {"X-Multi", "3"},
                           {"X-\xe9", "latin-1 name"},
                           {"X-Del", "\x7f"}};
  CHECK(hookbox::StoredHeadersJson(awkward) == ThroughJsonDom(awkward));
}

TEST_CASE("stored headers: random names and bytes give the same JSON as a JSON object") {
  std::mt19937 rng(20261129);
  const std::vector<std::string> names = {"X-A",    "x-a",          "X-a", "X-B", "Cookie",
                                          "cookie", "Content-Type", "a",   "Z",   "X-\xc3\xa9"};
  for (int round = 0; round < 2000; ++round) {
    Headers h;
    const int n = static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      std::string value;
      const int len = static_cast<int>(rng() % 12);
      for (int k = 0; k < len; ++k) {
        // Mostly printable ASCII, sometimes anything.
        value += static_cast<char>(rng() % 4 ? 0x20 + rng() % 0x5f : rng() % 256);
      }
      h.emplace(names[rng() % names.size()], value);
    }
    INFO("round " << round);
    REQUIRE(hookbox::StoredHeadersJson(h) == ThroughJsonDom(h));
  }
}
