// The inline-secret exposure check (src/config/exposure.h): a config file readable by its
// group or others that holds `value:` secrets is reported, with its mode, owner and the fix;
// a 0600 file, or secrets from env:/file:, are not.

#include "config/exposure.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "load_helpers.h"

namespace hookbox {
namespace {

constexpr const char* kInline = R"(
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{env: GH_OLD_SECRET}, {value: "inline-secret-text"}]
)";

constexpr const char* kNoInline = R"(
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{env: GH_OLD_SECRET}, {file: /run/credentials/hookbox.service/gh}]
  - {name: open, path: /open, verify: none}
)";

constexpr const char* kInlineSigning = R"(
endpoints:
  - name: open
    path: /open
    verify: none
    routes:
      - events: ["*"]
        handlers:
          - name: relay
            http: {url: "http://127.0.0.1:9/x", sign: {secret: {value: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}}
          - http: {url: "http://127.0.0.1:9/y", sign: {secret: {env: DOWNSTREAM}}}
)";

// Handlers that do not sign (no `sign:` key at all) beside an inline endpoint secret.
constexpr const char* kInlineWithPlainHandlers = R"(
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{value: "inline-secret-text"}]
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/true]}
          - http: {url: "http://127.0.0.1:9/x"}
)";

// The config as check-config reads it without the service's secrets (no env needed).
Config LoadFrom(const testing::TempFile& file) {
  LoadResult r = LoadConfigFile(file.path(), {.resolve_secrets = false});
  INFO(testing::Dump(r));
  REQUIRE(r.config);
  return *r.config;
}

TEST_CASE("inline secrets are found in endpoints and in handlers' signing secrets", "[config]") {
  testing::TempFile a(kInline), b(kNoInline), c(kInlineSigning);
  CHECK(InlineSecretPlaces(LoadFrom(a)) == std::vector<std::string>{"endpoint gh secret 2"});
  CHECK(InlineSecretPlaces(LoadFrom(b)).empty());
  CHECK(InlineSecretPlaces(LoadFrom(c)) ==
        std::vector<std::string>{"endpoint open handler relay sign.secret"});
}

TEST_CASE("handlers without a sign: key are looked at without an exception", "[config]") {
  testing::TempFile f(kInlineWithPlainHandlers);
  CHECK(InlineSecretPlaces(LoadFrom(f)) == std::vector<std::string>{"endpoint gh secret 1"});
}

TEST_CASE(
    "a config with an inline secret readable by others, or by a group not the service's, is "
    "reported",
    "[config]") {
  testing::TempFile file(kInline);
  const Config config = LoadFrom(file);
  // A group that is not this process's (the tests run as root: nogroup, 65534, on Debian).
  const gid_t foreign = getegid() == 65534 ? 0 : 65534;
  REQUIRE(chown(file.path().c_str(), static_cast<uid_t>(-1), foreign) == 0);
  for (mode_t mode : {0644, 0640, 0604, 0444}) {
    REQUIRE(chmod(file.path().c_str(), mode) == 0);
    auto exposed = CheckInlineSecretsExposure(config);
    INFO("mode " << std::oct << mode);
    REQUIRE(exposed);
    CHECK(exposed->path == file.path());
    CHECK(exposed->mode == mode);
    CHECK_FALSE(exposed->owner.empty());
    const std::string m = exposed->Message();
    CHECK(m.find(file.path()) != std::string::npos);
    CHECK(m.find("mode " + exposed->ModeText()) != std::string::npos);
    CHECK(m.find("owner " + exposed->owner) != std::string::npos);
    CHECK(m.find("chmod 600") != std::string::npos);
    CHECK(m.find("640 with the service's group") != std::string::npos);
    CHECK(m.find("LoadCredential=") != std::string::npos);
    CHECK(m.find("endpoint gh secret 2") != std::string::npos);
    CHECK(m.find("inline-secret-text") == std::string::npos);  // never the secret itself
  }
  REQUIRE(chmod(file.path().c_str(), 0644) == 0);
  CHECK(CheckInlineSecretsExposure(config)->ModeText() == "0644");
  CHECK(CheckInlineSecretsExposure(config)->Message().find("readable by others") !=
        std::string::npos);
  REQUIRE(chmod(file.path().c_str(), 0640) == 0);
  CHECK(CheckInlineSecretsExposure(config)->Message().find("readable by its group") !=
        std::string::npos);
}

TEST_CASE("a config readable by the service's own group is not reported", "[config]") {
  // The Debian package's config is 0640 root:hookbox: the service's group reads it, nobody
  // else does. The service's group is the process's effective group (serve, and check-config
  // as ExecStartPre runs it) or the group named hookbox.
  testing::TempFile file(kInline);
  const Config config = LoadFrom(file);
  REQUIRE(chown(file.path().c_str(), static_cast<uid_t>(-1), getegid()) == 0);
  REQUIRE(chmod(file.path().c_str(), 0640) == 0);
  CHECK_FALSE(CheckInlineSecretsExposure(config));
  REQUIRE(chmod(file.path().c_str(), 0644) == 0);  // others still may not
  CHECK(CheckInlineSecretsExposure(config));
}

TEST_CASE("a private config, or one without inline secrets, is not reported", "[config]") {
  testing::TempFile inline_file(kInline), sourced(kNoInline);
  const Config inline_config = LoadFrom(inline_file);
  for (mode_t mode : {0600, 0400, 0700, 0620, 0602}) {  // write bits alone expose nothing
    REQUIRE(chmod(inline_file.path().c_str(), mode) == 0);
    INFO("mode " << std::oct << mode);
    CHECK_FALSE(CheckInlineSecretsExposure(inline_config));
  }
  REQUIRE(chmod(sourced.path().c_str(), 0644) == 0);
  CHECK_FALSE(CheckInlineSecretsExposure(LoadFrom(sourced)));
  // A config that never was a file (loaded from text) has no mode to judge.
  LoadResult text = LoadConfigText(kInline, "", {.resolve_secrets = false});
  REQUIRE(text.config);
  CHECK_FALSE(CheckInlineSecretsExposure(*text.config));
}

TEST_CASE("resolved inline secrets count as well", "[config]") {
  testing::TempFile file(kInline);
  setenv("GH_OLD_SECRET", "from-the-environment", 1);
  LoadResult r = LoadConfigFile(file.path());
  unsetenv("GH_OLD_SECRET");
  INFO(testing::Dump(r));
  REQUIRE(r.config);
  REQUIRE(chmod(file.path().c_str(), 0644) == 0);
  auto exposed = CheckInlineSecretsExposure(*r.config);
  REQUIRE(exposed);
  CHECK(exposed->places == std::vector<std::string>{"endpoint gh secret 2"});
}

}  // namespace
}  // namespace hookbox
