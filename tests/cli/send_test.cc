// `hookbox send ENDPOINT FILE` (src/cli/send.cc) as a verb: a delivery the real daemon
// accepts (exit 0, its answer on stdout), a non-2xx answer and no listener (exit 1), usage
// errors (exit 1), and --help. send never opens the inbox, so a database that cannot be
// opened changes nothing for it. Signing, --insecure and --type/--id are
// integration/send_test.cc's.
#include <catch2/catch.hpp>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::Has;
using hookbox::testing::kCliConfig;
using hookbox::testing::Workspace;
using hookbox::testing::WriteFile;

namespace {

std::string Url(const Daemon& d, const std::string& path) {
  return "http://127.0.0.1:" + std::to_string(d.port()) + path;
}

}  // namespace

TEST_CASE("send: a delivery the daemon accepts is exit 0, its answer on stdout") {
  Workspace w;
  Daemon d(w.dir(), kCliConfig);
  const std::string body = w.dir() / "body.json";
  WriteFile(body, R"({"hello":"world"})");
  CliResult r = w.Run({"send", "raw", body, "--url", Url(d, "/hooks/raw"), "--id", "sent-1"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "200"));
  CHECK(Has(r.out, "\"status\":\"accepted\""));
  CHECK(Has(r.err, "hookbox: sending"));
  // The inbox is not send's: a config whose database cannot be opened sends the same.
  CliResult again =
      w.RunBadDb({"send", "raw", body, "--url", Url(d, "/hooks/raw"), "--id", "sent-1"});
  CHECK(again.exit_code == 0);
  CHECK(Has(again.out, "\"status\":\"duplicate\""));
}

TEST_CASE("send: a non-2xx answer, or no answer, is exit 1") {
  Workspace w;
  Daemon d(w.dir(), kCliConfig);
  const std::string body = w.dir() / "body.json";
  WriteFile(body, "{}");
  CliResult missing = w.Run({"send", "raw", body, "--url", Url(d, "/hooks/nope"), "--id", "x"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.out, "404"));
  // Port 9 (discard) on loopback: nothing listens there.
  CliResult nobody = w.Run({"send", "raw", body, "--url", "http://127.0.0.1:9/hooks/raw"});
  CHECK(nobody.exit_code == 1);
  CHECK(Has(nobody.err, "hookbox: cannot connect"));
}

TEST_CASE("send: usage errors are exit 1") {
  Workspace w;
  const std::string body = w.dir() / "body.json";
  WriteFile(body, "{}");
  CliResult missing = w.Run({"send", "raw"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "FILE is required"));
  CliResult flag = w.Run({"send", "raw", body, "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult endpoint = w.Run({"send", "raw2", body});
  CHECK(endpoint.exit_code == 1);
  CHECK(Has(endpoint.err, "raw2"));
  // listen: 127.0.0.1:0 is no address to send to: --url is needed.
  CliResult url = w.Run({"send", "raw", body});
  CHECK(url.exit_code == 1);
  CHECK(Has(url.err, "hookbox: the config's listen address"));
}

TEST_CASE("send --help: exit 0, its options on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"send", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "sign FILE as the endpoint's provider would and POST it"));
  CHECK(Has(r.out, "--insecure"));
}
