// End-to-end tests of the config file mode warning: a config file others can read while it
// holds inline `value:` secrets is warned about by `check-config` (stderr) and `serve` (a warn
// log line), which still starts; a 0600 file, or secrets from files, are not.
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>

#include "daemon.h"

using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::RunHookbox;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;

namespace {

const std::string kInlineSecretConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{value: "inline-secret-for-tests"}]
)";

const std::string kSourcedSecretConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{file: {DIR}/gh.secret}]
)";

std::string Filled(std::string text, const TempDir& dir) {
  for (auto [key, value] : {std::pair<std::string, std::string>{"{DB}", dir / "inbox.db"},
                            {"{DIR}", dir.path().string()}}) {
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key)) {
      text.replace(at, key.size(), value);
    }
  }
  return text;
}

}  // namespace

TEST_CASE("check-config warns about a readable config holding inline secrets", "[cli]") {
  TempDir dir;
  const std::string path = dir / "config.yaml";
  WriteFile(path, Filled(kInlineSecretConfig, dir));

  REQUIRE(chmod(path.c_str(), 0644) == 0);
  CliResult open = RunHookbox({"check-config", "-c", path}, dir.path().string());
  CHECK(open.exit_code == 0);  // a warning, not an error
  CHECK(open.err.find("warning") != std::string::npos);
  CHECK(open.err.find(path) != std::string::npos);
  CHECK(open.err.find("mode 0644") != std::string::npos);
  CHECK(open.err.find("owner ") != std::string::npos);
  CHECK(open.err.find("chmod 600") != std::string::npos);
  CHECK(open.err.find("LoadCredential=") != std::string::npos);
  CHECK(open.err.find("inline-secret-for-tests") == std::string::npos);
  CHECK((open.out + open.err).find("inline-secret-for-tests") == std::string::npos);
  // The same without reading secrets.
  CliResult shape = RunHookbox({"check-config", "--no-secrets", "-c", path}, dir.path().string());
  CHECK(shape.err.find("chmod 600") != std::string::npos);

  REQUIRE(chmod(path.c_str(), 0600) == 0);
  CliResult closed = RunHookbox({"check-config", "-c", path}, dir.path().string());
  CHECK(closed.exit_code == 0);
  CHECK(closed.err.find("chmod 600") == std::string::npos);
  CHECK(closed.err.find("inline secret") == std::string::npos);

  // Secrets from files (or the environment) leave only their names in the config.
  WriteFile(dir / "gh.secret", "from-a-file\n");
  REQUIRE(chmod((dir / "gh.secret").c_str(), 0600) == 0);
  WriteFile(path, Filled(kSourcedSecretConfig, dir));
  REQUIRE(chmod(path.c_str(), 0644) == 0);
  CliResult sourced = RunHookbox({"check-config", "-c", path}, dir.path().string());
  CHECK(sourced.exit_code == 0);
  CHECK(sourced.err.find("chmod 600") == std::string::npos);
}

TEST_CASE("serve logs the config mode warning and starts anyway", "[cli]") {
  TempDir dir;
  Daemon d(dir, kInlineSecretConfig);
  const std::string kWarning = "config file readable by others holds inline secrets";
  d.Kill(SIGTERM);
  REQUIRE(chmod(d.config_path().c_str(), 0644) == 0);
  d.Start();  // returns once it listens
  const std::string log = d.Log();
  CHECK(log.find(kWarning) != std::string::npos);
  CHECK(log.find("\"mode\":\"0644\"") != std::string::npos);
  CHECK(log.find("inline-secret-for-tests") == std::string::npos);

  d.Kill(SIGTERM);
  REQUIRE(chmod(d.config_path().c_str(), 0600) == 0);
  d.Start();
  CHECK(d.Log().find(kWarning) == std::string::npos);
}
