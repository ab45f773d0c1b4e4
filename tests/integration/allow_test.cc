// IP allow lists through real HTTP (README, "IP allow lists"): a delivery from outside an
// endpoint's `allow_from:` is answered 403 before verification (an unsigned one too, and no
// signature failure is counted), stored nowhere, logged with its outcome and counted; a
// `file:` list is read again on SIGHUP, and a reload that cannot read it keeps the old list;
// behind `trusted_proxies:` the client is the rightmost X-Forwarded-For entry that is not a
// proxy; IPv6 on ::1. The endpoints have no routes: a delivery let in is stored `ignored`.
#include <catch2/catch.hpp>
#include <filesystem>

#include "daemon.h"

namespace {

using hookbox::testing::AnswerLine;
using hookbox::testing::Daemon;
using hookbox::testing::GithubSigned;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

const std::string kConfig = R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DB}
workers: 0
trusted_proxies: [127.0.0.2]
endpoints:
  - name: closed
    path: /closed
    provider: github
    secrets: [{value: allow-secret}]
    allow_from: ["file:{DIR}/allow.txt"]
  - name: open
    path: /open
    verify: none
    allow_from: [127.0.0.1]
  - name: proxied
    path: /proxied
    verify: none
    allow_from: [203.0.113.0/24]
)";

// The delivery log lines of `endpoint`, in order.
std::vector<json> Deliveries(const Daemon& d, const std::string& endpoint) {
  std::vector<json> out;
  for (json& j : d.LogLines("delivery")) {
    if (j.value("endpoint", "") == endpoint) out.push_back(std::move(j));
  }
  return out;
}

std::string Metrics(const Daemon& d) {
  httplib::Client admin("127.0.0.1", d.admin_port());
  auto r = admin.Get("/metrics");
  REQUIRE(r);
  return r->body;
}

// A POST to /proxied from 127.0.0.2 (a trusted proxy), with these X-Forwarded-For lines.
std::string ViaProxy(const Daemon& d, std::initializer_list<const char*> forwarded) {
  httplib::Client cli("127.0.0.1", d.port());
  cli.set_interface("127.0.0.2");  // bound to this source address: the proxy's
  httplib::Headers headers;
  for (const char* f : forwarded) headers.emplace("X-Forwarded-For", f);
  return AnswerLine(cli.Post("/proxied", headers, "{\"id\":\"p\"}", "application/json"));
}

}  // namespace

TEST_CASE("allow_from: 403 before verification, nothing stored; the file re-read on SIGHUP") {
  TempDir dir;
  WriteFile(dir / "allow.txt", "# the producer's published ranges\n192.0.2.0/24\n");
  Daemon d(dir, kConfig);
  const std::string body = R"({"zen":"allowed?"})";

  // Signed or not, a delivery from outside the list is refused first.
  CHECK(AnswerLine(d.Post("/closed", GithubSigned("allow-secret", body, "g-1", "ping"), body)) ==
        "403 this endpoint does not take deliveries from this address");
  CHECK(AnswerLine(d.Post("/closed", {}, body)) ==
        "403 this endpoint does not take deliveries from this address");
  CHECK(d.Rows().empty());
  auto logged = Deliveries(d, "closed");
  REQUIRE(logged.size() == 2);
  CHECK(logged[0]["outcome"] == "forbidden");
  CHECK(logged[0]["status"] == 403);
  CHECK(logged[0]["remote"].get<std::string>().starts_with("127.0.0.1:"));
  const std::string metrics = Metrics(d);
  CHECK(metrics.find("hookbox_deliveries_total{endpoint=\"closed\",outcome=\"forbidden\"} 2") !=
        std::string::npos);
  // Never verified: each of the endpoint's signature failure series (there from the start)
  // stays at 0.
  std::istringstream lines(metrics);
  int failure_series = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("hookbox_signature_failures_total{endpoint=\"closed\"")) continue;
    ++failure_series;
    CHECK(line.ends_with(" 0"));
  }
  CHECK(failure_series > 0);
  // The open endpoint's list has this address.
  CHECK(AnswerLine(d.Post("/open", {}, R"({"id":"o-1"})")) == "200 ignored");

  // The operator adds loopback to the file and reloads: the file is read again.
  WriteFile(dir / "allow.txt", "192.0.2.0/24\n127.0.0.0/8  # the local relay\n");
  d.Signal(SIGHUP);
  REQUIRE(d.WaitForLog("reloaded", 1));
  CHECK(AnswerLine(d.Post("/closed", GithubSigned("allow-secret", body, "g-2", "ping"), body)) ==
        "200 ignored");
  // Now verified: an unsigned one is 401.
  CHECK(AnswerLine(d.Post("/closed", {}, body)).starts_with("401"));

  // A bad line, then a missing file: each reload is refused, and the list in force stays.
  WriteFile(dir / "allow.txt", "127.0.0.0/8\n127.0.0.1/8\n");
  d.Signal(SIGHUP);
  REQUIRE(d.WaitForLog("reload refused: the config has errors; the old one stays", 1));
  CHECK(d.Log().find("allow.txt:2: \\\"127.0.0.1/8\\\" has bits set past its prefix length") !=
        std::string::npos);
  std::filesystem::remove(dir / "allow.txt");
  d.Signal(SIGHUP);
  REQUIRE(d.WaitForLog("reload refused: the config has errors; the old one stays", 2));
  CHECK(d.Log().find("allow.txt: No such file or directory") != std::string::npos);
  CHECK(AnswerLine(d.Post("/closed", GithubSigned("allow-secret", body, "g-3", "ping"), body)) ==
        "200 ignored");
}

TEST_CASE("trusted_proxies: the client is the rightmost untrusted X-Forwarded-For entry") {
  TempDir dir;
  WriteFile(dir / "allow.txt", "192.0.2.0/24\n");
  Daemon d(dir, kConfig);

  CHECK(ViaProxy(d, {"203.0.113.9"}) == "200 ignored");
  // What the client wrote itself stands left of what the proxy appended: not believed.
  CHECK(ViaProxy(d, {"203.0.113.9, 198.51.100.7"}).starts_with("403"));
  CHECK(ViaProxy(d, {"203.0.113.9", "127.0.0.2"}).starts_with("200"));  // a second proxy hop
  CHECK(ViaProxy(d, {}).starts_with("403"));  // the proxy itself is not in the list
  // From 127.0.0.1, not a trusted proxy, X-Forwarded-For is the client's own claim.
  CHECK(AnswerLine(d.Post("/proxied", {{"X-Forwarded-For", "203.0.113.9"}}, "{}"))
            .starts_with("403"));

  auto logged = Deliveries(d, "proxied");
  REQUIRE(logged.size() == 5);
  CHECK(logged[0]["client"] == "203.0.113.9");
  CHECK(logged[0]["remote"].get<std::string>().starts_with("127.0.0.2:"));
  CHECK(logged[1]["client"] == "198.51.100.7");
  CHECK(logged[1]["outcome"] == "forbidden");
  CHECK_FALSE(logged[3].contains("client"));
  CHECK_FALSE(logged[4].contains("client"));
}

TEST_CASE("allow_from on IPv6: ::1 allowed by its range, refused by an IPv4 one") {
  TempDir dir;
  Daemon d(dir, R"(
listen: "[::1]:0"
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: six
    path: /six
    verify: none
    allow_from: ["::1/128"]
  - name: four
    path: /four
    verify: none
    allow_from: [127.0.0.0/8]
)");
  httplib::Client cli("::1", d.port());
  CHECK(AnswerLine(cli.Post("/six", R"({"id":"v6"})", "application/json")) == "200 ignored");
  CHECK(AnswerLine(cli.Post("/four", R"({"id":"v4"})", "application/json")).starts_with("403"));
  CHECK(d.Rows().size() == 1);
}
