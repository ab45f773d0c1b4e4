// Secrets: resolved from env, file and inline value at load; missing or empty ones are errors
// that name the source; the secret itself never appears in any error or warning.

#include "config/secrets.h"

#include <stdlib.h>

#include <catch2/catch.hpp>

#include "config/config.h"
#include "load_helpers.h"

namespace hookbox {
namespace {

using testing::Dump;
using testing::HasLine;
using testing::Load;
using testing::TempFile;

std::string Endpoint(const std::string& provider, const std::string& secrets) {
  return "endpoints:\n  - {name: e, path: /e, provider: " + provider + ", secrets: " + secrets +
         "}\n";
}

// Sets an environment variable for the scope of one test.
class ScopedEnv final {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST_CASE("a secret from the environment", "[config][secrets]") {
  ScopedEnv env("HOOKBOX_TEST_SECRET_ENV", "env-secret-bytes");
  LoadResult r = Load(Endpoint("github", "[{env: HOOKBOX_TEST_SECRET_ENV}]"));
  INFO(Dump(r));
  REQUIRE(r.config);
  const auto& secrets = r.config->endpoints[0].secrets;
  REQUIRE(secrets.size() == 1);
  CHECK(secrets[0].source == "env:HOOKBOX_TEST_SECRET_ENV");
  CHECK(secrets[0].value == "env-secret-bytes");
}

TEST_CASE("a missing or empty environment variable is an error", "[config][secrets]") {
  unsetenv("HOOKBOX_TEST_SECRET_UNSET");
  LoadResult missing = Load(Endpoint("github", "[{env: HOOKBOX_TEST_SECRET_UNSET}]"));
  CHECK(missing.errors ==
        std::vector<std::string>{"test.yaml:2:53: endpoints[0].secrets[0]: environment variable "
                                 "HOOKBOX_TEST_SECRET_UNSET is not set (endpoint \"e\")"});
  CHECK_FALSE(missing.config);

  ScopedEnv env("HOOKBOX_TEST_SECRET_EMPTY", "");
  LoadResult empty = Load(Endpoint("github", "[{env: HOOKBOX_TEST_SECRET_EMPTY}]"));
  CHECK(HasLine(empty.errors,
                "endpoints[0].secrets[0]: environment variable "
                "HOOKBOX_TEST_SECRET_EMPTY is empty (an empty secret refuses to "
                "start)"));
}

TEST_CASE("without resolve_secrets, secrets are named but not read", "[config][secrets]") {
  unsetenv("HOOKBOX_TEST_SECRET_UNSET");
  LoadResult r = LoadConfigText(
      Endpoint("github", "[{env: HOOKBOX_TEST_SECRET_UNSET}, {file: /nonexistent/secret}]"),
      "test.yaml", {.resolve_secrets = false});
  INFO(Dump(r));
  REQUIRE(r.config);
  const auto& secrets = r.config->endpoints[0].secrets;
  REQUIRE(secrets.size() == 2);
  CHECK(secrets[0].source == "env:HOOKBOX_TEST_SECRET_UNSET");
  CHECK(secrets[0].value.empty());
  CHECK(secrets[1].source == "file:/nonexistent/secret");
  // The shape is still checked.
  LoadResult bad =
      LoadConfigText(Endpoint("github", "[{envv: X}]"), "test.yaml", {.resolve_secrets = false});
  CHECK_FALSE(bad.config);
}

TEST_CASE("a secret from a file loses one trailing newline", "[config][secrets]") {
  struct Case {
    const char* content;
    const char* want;
  } cases[] = {
      {"file-secret", "file-secret"},     {"file-secret\n", "file-secret"},
      {"file-secret\r\n", "file-secret"}, {"file-secret\n\n", "file-secret\n"},
      {" spaced \n", " spaced "},
  };
  for (const auto& c : cases) {
    TempFile file(c.content);
    LoadResult r = Load(Endpoint("github", "[{file: \"" + file.path() + "\"}]"));
    INFO(Dump(r));
    REQUIRE(r.config);
    const Secret& s = r.config->endpoints[0].secrets[0];
    CHECK(s.value == c.want);
    CHECK(s.source == "file:" + file.path());
  }
}

TEST_CASE("an unreadable or empty secret file is an error", "[config][secrets]") {
  LoadResult missing = Load(Endpoint("github", "[{file: /nonexistent/hookbox/secret}]"));
  CHECK(missing.errors ==
        std::vector<std::string>{"test.yaml:2:53: endpoints[0].secrets[0]: cannot read file "
                                 "/nonexistent/hookbox/secret: No such file or directory "
                                 "(endpoint \"e\")"});

  // A directory opens but cannot be read (works as root too, unlike chmod 000).
  LoadResult directory = Load(Endpoint("github", "[{file: /}]"));
  CHECK(HasLine(directory.errors, "endpoints[0].secrets[0]: cannot read file /: Is a directory"));

  TempFile newline_only("\n");
  LoadResult empty = Load(Endpoint("github", "[{file: \"" + newline_only.path() + "\"}]"));
  CHECK(HasLine(empty.errors, "endpoints[0].secrets[0]: file " + newline_only.path() +
                                  " is empty (an empty secret refuses to start)"));
}

TEST_CASE("several secrets are kept in order for rotation", "[config][secrets]") {
  ScopedEnv env("HOOKBOX_TEST_SECRET_ROTATE", "new-one");
  TempFile file("old-one\n");
  LoadResult r = Load(Endpoint(
      "slack", "[{env: HOOKBOX_TEST_SECRET_ROTATE}, {file: \"" + file.path() + "\"}, {value: v}]"));
  INFO(Dump(r));
  REQUIRE(r.config);
  const auto& s = r.config->endpoints[0].secrets;
  REQUIRE(s.size() == 3);
  CHECK(s[0].value == "new-one");
  CHECK(s[1].value == "old-one");
  CHECK(s[2].value == "v");
  CHECK(s[2].source == "value");
}

TEST_CASE("provider standard needs a base64 secret", "[config][secrets]") {
  for (const char* good : {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2VjcmV0",
                           "whsec_c2VjcmV0Cg==", "whsec_c2VjcmV0Cg"}) {
    INFO(good);
    LoadResult r = Load(Endpoint("standard", std::string("[{value: \"") + good + "\"}]"));
    INFO(Dump(r));
    CHECK(r.config);
  }
  for (const char* bad :
       {"whsec_", "whsec_not base64!", "whsec_abcde", "whsec_ab=c", "whsec_a==="}) {
    INFO(bad);
    LoadResult r = Load(Endpoint("standard", std::string("[{value: \"") + bad + "\"}]"));
    CHECK(HasLine(r.errors,
                  "endpoints[0].secrets[0]: the secret from value is not a Standard "
                  "Webhooks key"));
  }
  // Other providers take any bytes.
  CHECK(Load(Endpoint("github", "[{value: \"not base64!\"}]")).config);
}

TEST_CASE("public keys (standard whpk_, discord) are parsed at load; a bad one is refused",
          "[config][secrets]") {
  // RFC 8032's first test key, as hex (Discord's portal) and as whpk_ base64.
  const std::string hex = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
  const std::string whpk = "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
  LoadResult discord = Load(Endpoint("discord", "[{value: \"" + hex + "\"}]"));
  INFO(Dump(discord));
  REQUIRE(discord.config);
  CHECK(discord.config->endpoints[0].secrets[0].public_key);
  // A standard endpoint may mix a whsec_ secret and a whpk_ key (a producer moving to v1a).
  LoadResult mixed =
      Load(Endpoint("standard", "[{value: \"whsec_c2VjcmV0Cg==\"}, {value: \"" + whpk + "\"}]"));
  INFO(Dump(mixed));
  REQUIRE(mixed.config);
  CHECK_FALSE(mixed.config->endpoints[0].secrets[0].public_key);
  CHECK(mixed.config->endpoints[0].secrets[1].public_key);
  // Padding is optional, as for whsec_.
  CHECK(
      Load(Endpoint("standard", "[{value: \"" + whpk.substr(0, whpk.size() - 1) + "\"}]")).config);

  for (const std::string& bad :
       {hex.substr(2), hex + "00", "zz" + hex.substr(2), whpk.substr(5), std::string("a secret")}) {
    INFO(bad);
    LoadResult r = Load(Endpoint("discord", "[{value: \"" + bad + "\"}]"));
    CHECK_FALSE(r.config);
    CHECK(HasLine(r.errors,
                  "endpoints[0].secrets[0]: the secret from value is not a Discord application "
                  "public key (64 hex digits) (endpoint \"e\")"));
  }
  for (const std::string& bad : {std::string("whpk_"), std::string("whpk_@@@@"), "whpk_" + hex,
                                 whpk + "AAAA", whpk.substr(0, 40)}) {
    INFO(bad);
    LoadResult r = Load(Endpoint("standard", "[{value: \"" + bad + "\"}]"));
    CHECK_FALSE(r.config);
    CHECK(HasLine(r.errors,
                  "endpoints[0].secrets[0]: the secret from value is not a Standard Webhooks "
                  "public key (whpk_ followed by the base64 of 32 bytes) (endpoint \"e\")"));
  }
  // A key is never echoed.
  LoadResult r = Load(Endpoint("discord", "[{value: \"" + hex.substr(2) + "\"}]"));
  CHECK_FALSE(HasLine(r.errors, hex.substr(2)));
}

TEST_CASE("a whitespace-only secret is refused at load, naming its endpoint", "[config][secrets]") {
  // Loaded, such a secret would verify no delivery at all.
  ScopedEnv env("HOOKBOX_TEST_SECRET_BLANK", " \t ");
  TempFile file("  \n\n");  // one newline is stripped; what is left is still blank
  for (const char* provider : {"github", "stripe", "hmac", "standard"}) {
    INFO(provider);
    LoadResult value = Load(Endpoint(provider, "[{value: \"   \"}]"));
    CHECK_FALSE(value.config);
    CHECK(HasLine(value.errors,
                  "endpoints[0].secrets[0]: value is only whitespace (an empty "
                  "secret refuses to start) (endpoint \"e\")"));
    LoadResult from_env = Load(Endpoint(provider, "[{env: HOOKBOX_TEST_SECRET_BLANK}]"));
    CHECK_FALSE(from_env.config);
    CHECK(HasLine(from_env.errors,
                  "environment variable HOOKBOX_TEST_SECRET_BLANK is only whitespace"));
    LoadResult from_file = Load(Endpoint(provider, "[{file: \"" + file.path() + "\"}]"));
    CHECK_FALSE(from_file.config);
    CHECK(HasLine(from_file.errors, "file " + file.path() + " is only whitespace"));
  }
  // Whitespace inside or around a real secret is the secret's own business.
  CHECK(Load(Endpoint("github", "[{value: \" s e c r e t \"}]")).config);
}

TEST_CASE("a whsec_ secret that is not base64 is refused at load, naming its endpoint",
          "[config][secrets]") {
  // Padding is optional; anything verification could not decode is refused.
  for (const char* bad : {"whsec_QR", "whsec_QR==", "whsec_QUJ", "whsec_c2VjcmV0C", "whsec_ ",
                          "whsec_c2VjcmV0Cg= "}) {
    INFO(bad);
    LoadResult r = Load(Endpoint("standard", std::string("[{value: \"") + bad + "\"}]"));
    CHECK_FALSE(r.config);
    CHECK(HasLine(r.errors,
                  "endpoints[0].secrets[0]: the secret from value is not a Standard "
                  "Webhooks key (whsec_ followed by base64) (endpoint \"e\")"));
  }
  // A leading space hides the prefix: refused as a key without one.
  CHECK(HasLine(Load(Endpoint("standard", "[{value: \" whsec_c2VjcmV0Cg\"}]")).errors,
                "the secret from value has no prefix"));
  for (const char* good : {"whsec_QQ", "whsec_QQ==", "whsec_QUI", "whsec_QUI="}) {
    INFO(good);
    CHECK(Load(Endpoint("standard", std::string("[{value: \"") + good + "\"}]")).config);
  }
}

TEST_CASE("a standard key without its whsec_ or whpk_ prefix is refused, naming the prefixes",
          "[config][secrets]") {
  // A public key pasted without whpk_ must not load as an HMAC secret: anyone holding the
  // public key could then sign v1. Bare base64 is refused whatever its length: the 32 bytes
  // of a public key, a svix-style 24-byte secret, a short one.
  for (const char* bare :
       {"11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
        "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "c2VjcmV0Cg==", "WHSEC_c2VjcmV0Cg=="}) {
    INFO(bare);
    LoadResult r = Load(Endpoint("standard", std::string("[{value: \"") + bare + "\"}]"));
    CHECK_FALSE(r.config);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].starts_with("test.yaml:"));  // the line and column of the entry
    CHECK(r.errors[0].ends_with(
        ": endpoints[0].secrets[0]: the secret from value has no prefix: add "
        "whsec_ if it is the signing secret, or whpk_ if it is the public key "
        "(a Standard Webhooks key starts with one of them) (endpoint \"e\")"));
  }
  // From a file too, and the message never holds the value.
  TempFile file("11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n");
  LoadResult r = Load(Endpoint("standard", "[{file: \"" + file.path() + "\"}]"));
  INFO(Dump(r));
  CHECK(HasLine(r.errors, "the secret from file:" + file.path() + " has no prefix: add whsec_"));
  CHECK_FALSE(HasLine(r.errors, "11qYAY"));
  // With either prefix the same bytes load, each as its own kind.
  LoadResult both =
      Load(Endpoint("standard",
                    "[{value: \"whsec_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\"}, "
                    "{value: \"whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\"}]"));
  INFO(Dump(both));
  REQUIRE(both.config);
  CHECK_FALSE(both.config->endpoints[0].secrets[0].public_key);
  CHECK(both.config->endpoints[0].secrets[1].public_key);
}

TEST_CASE("the secret itself never appears in errors or warnings", "[config][secrets]") {
  const std::string kSecret = "Sup3r-S3cret!NeverPrintMe";  // not base64: standard rejects it
  ScopedEnv env("HOOKBOX_TEST_SECRET_LEAK", kSecret.c_str());
  TempFile file(kSecret + "\n");
  // Every secret is valid bytes but the endpoint is wrong in many other ways, and the secret
  // is also written where a secret source is not expected.
  std::string yaml =
      "retention: {processed: 1d}\n"
      "endpoints:\n"
      "  - name: e\n"
      "    path: /e\n"
      "    provider: standard\n"
      "    secrets:\n"
      "      - {env: HOOKBOX_TEST_SECRET_LEAK}\n"
      "      - {file: \"" +
      file.path() +
      "\"}\n"
      "      - {value: \"" +
      kSecret +
      "\"}\n"
      "      - \"" +
      kSecret +
      "\"\n"
      "      - {value: \"" +
      kSecret +
      "\", env: X}\n"
      "      - {value: [\"" +
      kSecret +
      "\"]}\n"
      "    tolerance: nope\n"
      "  - name: f\n"
      "    path: /f\n"
      "    verify: none\n"
      "    secrets: [{value: \"" +
      kSecret + "\"}]\n";
  LoadResult r = Load(yaml);
  INFO(Dump(r));
  CHECK(r.errors.size() >= 7);
  CHECK(HasLine(r.errors, "the secret from env:HOOKBOX_TEST_SECRET_LEAK has no prefix"));
  CHECK(HasLine(r.errors, "the secret from file:" + file.path()));
  CHECK_FALSE(r.warnings.empty());
  CHECK_FALSE(HasLine(r.errors, kSecret));
  CHECK_FALSE(HasLine(r.warnings, kSecret));
  CHECK_FALSE(HasLine(r.errors, "Sup3r"));
}

TEST_CASE("IsStandardWebhooksSecret", "[config][secrets]") {
  using config_internal::IsStandardWebhooksSecret;
  CHECK(IsStandardWebhooksSecret("whsec_AAAA"));
  CHECK(IsStandardWebhooksSecret("whsec_AA=="));
  CHECK(IsStandardWebhooksSecret("whsec_AAA="));
  CHECK_FALSE(IsStandardWebhooksSecret("AA=="));  // the prefix is required
  CHECK_FALSE(IsStandardWebhooksSecret("AAAA"));
  CHECK_FALSE(IsStandardWebhooksSecret("whsec_A"));
  CHECK_FALSE(IsStandardWebhooksSecret("whsec_AA="));
  CHECK_FALSE(IsStandardWebhooksSecret("whsec_AA-_"));  // base64url is not the standard alphabet
  CHECK_FALSE(IsStandardWebhooksSecret(""));
}

}  // namespace
}  // namespace hookbox
