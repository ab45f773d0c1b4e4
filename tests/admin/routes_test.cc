// The admin listener's route table (admin/routes.h), in-process on a real SQLite inbox and
// the real console: which paths it has, the methods and guards of each row, and the one
// dispatch's refusals in its order (404, Host 403, token 401, 405 with Allow, form 403),
// row by row, with the same statuses and bodies as the daemon answered before the table.
#include "admin/routes.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "inbox/inbox.h"

using namespace hookbox;
using admin::Auth;

namespace {

constexpr const char* kHost = "127.0.0.1:8099";
constexpr const char* kToken = "s3cret-admin-token";

struct TestInbox {
  TestInbox() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-admin-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    auto opened = OpenInbox({dir + "/inbox.db", /*durable=*/false, /*create=*/true});
    REQUIRE(opened.ok());
    inbox = std::move(*opened);
  }
  ~TestInbox() {
    inbox.reset();
    std::filesystem::remove_all(dir);
  }
  std::string dir;
  std::unique_ptr<Inbox> inbox;
};

console::ConsoleOptions Options() {
  console::ConsoleOptions o;
  o.endpoints = {"ep"};
  return o;
}

Delivery Request(const std::string& method, const std::string& path) {
  Delivery d;
  d.method = method;
  d.path = path;
  return d;
}

// The admin listener as serve.cc puts it together: guards, console, table.
struct Admin {
  explicit Admin(std::string token) : guards({}, std::move(token), std::string(32, 'k')) {
    guards.SetListener("127.0.0.1", 8099);
  }
  TestInbox inbox;
  console::Guards guards;
  console::Console console{*inbox.inbox, *inbox.inbox, Options(), guards};
  std::string problem;  // what /readyz reports
  admin::RouteTable table{admin::AdminRoutes([this] { return problem; }, console), guards};

  Answer Ask(const std::string& method, const std::string& path, Headers headers = {},
             std::string body = "") const {
    Delivery d;
    d.method = method;
    d.path = path;
    d.remote = "127.0.0.1:1";
    d.headers = std::move(headers);
    if (!d.headers.contains("Host")) d.headers.emplace("Host", kHost);
    d.body = std::move(body);
    return table.Dispatch(d);
  }
};

Headers WithToken() { return {{"Authorization", std::string("Bearer ") + kToken}}; }

// Every row of the table as it must be: its path, its Allow ("" for every method), its auth.
struct Row {
  const char* path;
  const char* allow;
  Auth auth;
};
const std::vector<Row> kRows = {
    {"/healthz", "", Auth::kOpen},
    {"/readyz", "", Auth::kOpen},
    {"/metrics", "", Auth::kToken},
    {"/style.css", "GET, HEAD", Auth::kConsoleOpen},
    {"/login", "", Auth::kConsoleOpen},
    {"/", "GET, HEAD", Auth::kConsole},
    {"/event", "GET, HEAD", Auth::kConsole},
    {"/dead", "GET, HEAD", Auth::kConsole},
    {"/handlers", "GET, HEAD", Auth::kConsole},
    {"/bulk", "GET, HEAD, POST", Auth::kConsole},
    {"/event/retry", "POST", Auth::kConsoleForm},
    {"/event/clear", "POST", Auth::kConsoleForm},
    {"/handler/pause", "POST", Auth::kConsoleForm},
    {"/handler/resume", "POST", Auth::kConsoleForm},
};

bool IsPage(const Answer& a) {
  auto type = HeaderValue(a.headers, "Content-Type");
  return type && type->starts_with("text/html");
}

// A method that the row takes, for asking it past its method check.
std::string MethodFor(const Row& r) {
  const std::string allow = r.allow;
  return allow.empty() || allow.starts_with("GET") ? "GET" : "POST";
}

}  // namespace

TEST_CASE("admin routes: the table has exactly these paths, methods and guards") {
  Admin admin("");
  std::map<std::string, std::string> allow;
  std::map<std::string, Auth> auth;
  for (const admin::Route& r : admin.table.routes()) {
    allow[r.path];  // a row that takes every method has no Allow
    for (const std::string& m : r.methods) {
      allow[r.path] += (allow[r.path].empty() ? "" : ", ") + m;
    }
    if (!auth.contains(r.path)) auth[r.path] = r.auth;
  }
  REQUIRE(allow.size() == kRows.size());
  for (const Row& r : kRows) {
    INFO(r.path);
    CHECK(allow.at(r.path) == r.allow);
    CHECK(auth.at(r.path) == r.auth);
  }
  // Each form row names the kind of CSRF token its form carries; no other row has one.
  const std::map<std::string, console::FormToken> tokens = {
      {"/bulk", console::FormToken::kBulk},
      {"/event/retry", console::FormToken::kEvent},
      {"/event/clear", console::FormToken::kEvent},
      {"/handler/pause", console::FormToken::kHandler},
      {"/handler/resume", console::FormToken::kHandler}};
  for (const admin::Route& r : admin.table.routes()) {
    INFO(r.path + " " + (r.methods.empty() ? std::string("*") : r.methods.front()));
    if (r.auth == Auth::kConsoleForm) {
      REQUIRE(tokens.contains(r.path));
      CHECK(r.form == tokens.at(r.path));
    } else {
      CHECK(r.form == console::FormToken::kNone);
    }
  }
}

TEST_CASE("admin routes: an unknown path is 404 in JSON, and 403 to a foreign Host") {
  Admin admin(kToken);
  for (const char* path : {"/nope", "/healthz/", "/event/", "/metrics.txt", "/EVENT"}) {
    INFO(path);
    Answer a = admin.Ask("GET", path, WithToken());
    CHECK(a.status == 404);
    CHECK(a.body == R"({"error":"not found"})");
    Answer foreign = admin.Ask("GET", path, {{"Host", "evil.example:8099"}});
    CHECK(foreign.status == 403);
    CHECK(foreign.body.starts_with(R"({"error":"wrong Host)"));
  }
}

TEST_CASE("admin routes: every row refuses a foreign Host, before its token and its method") {
  Admin admin(kToken);
  for (const Row& r : kRows) {
    INFO(r.path);
    for (const char* method : {"GET", "POST", "PUT"}) {
      Answer a = admin.Ask(method, r.path, {{"Host", "attacker.example:8099"}});
      CHECK(a.status == 403);
      const bool console = r.auth != Auth::kOpen && r.auth != Auth::kToken;
      CHECK(IsPage(a) == console);
      if (console) CHECK(a.body.find("Wrong address") != std::string::npos);
    }
    // The right name on another port is another listener.
    CHECK(admin.Ask(MethodFor(r), r.path, {{"Host", "127.0.0.1:8100"}}).status == 403);
  }
}

TEST_CASE("admin routes: rows behind the token refuse without it, before the method") {
  Admin admin(kToken);
  for (const Row& r : kRows) {
    INFO(r.path);
    const bool needs_token =
        r.auth == Auth::kToken || r.auth == Auth::kConsole || r.auth == Auth::kConsoleForm;
    for (const char* method : {"GET", "POST", "PUT"}) {
      INFO(method);
      Answer a = admin.Ask(method, r.path);
      if (!needs_token) {
        // The login's own 401 is its form's answer to a wrong token, not the guard's.
        if (std::string(r.path) == "/login" && std::string(method) == "POST") {
          CHECK(a.body.find("That is not the admin token") != std::string::npos);
        } else {
          CHECK(a.status != 401);
        }
        continue;
      }
      CHECK(a.status == 401);
      if (r.auth == Auth::kToken) {
        CHECK(a.body == R"({"error":"admin token required"})");
        CHECK(HeaderValue(a.headers, "WWW-Authenticate") == "Bearer");
      } else if (std::string(method) == "GET") {
        CHECK(a.body.find("Sign in") != std::string::npos);  // the login page
        CHECK(a.body.find(R"(name="token")") != std::string::npos);
      } else {
        CHECK(a.body.find("Sign in first") != std::string::npos);
      }
    }
    // A wrong token is no token.
    CHECK((admin.Ask(MethodFor(r), r.path, {{"Authorization", "Bearer wrong"}}).status == 401) ==
          needs_token);
  }
}

TEST_CASE("admin routes: a method no row of the path takes is 405 with Allow") {
  Admin admin(kToken);
  for (const Row& r : kRows) {
    INFO(r.path);
    if (std::string(r.allow).empty()) continue;  // takes every method
    for (const char* method : {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"}) {
      const std::string allow = r.allow;
      if (allow.find(method) != std::string::npos) continue;
      INFO(method);
      Answer a = admin.Ask(method, r.path, WithToken());
      CHECK(a.status == 405);
      CHECK(HeaderValue(a.headers, "Allow") == r.allow);
      CHECK(IsPage(a));
      CHECK(a.body.find("This address takes " + allow + ".") != std::string::npos);
    }
  }
}

TEST_CASE("admin routes: a form row refuses a POST without its CSRF token or from another site") {
  Admin admin(kToken);
  for (const Row& r : kRows) {
    if (r.auth != Auth::kConsoleForm && std::string(r.path) != "/bulk") continue;
    INFO(r.path);
    Headers h = WithToken();
    Answer no_token = admin.Ask("POST", r.path, h, "endpoint=ep&id=e1&confirm=yes");
    CHECK(no_token.status == 403);
    CHECK(no_token.body.find("token is missing or out of date") != std::string::npos);
    h.emplace("Origin", "http://evil.example");
    Answer foreign = admin.Ask("POST", r.path, h, "endpoint=ep&id=e1&confirm=yes");
    CHECK(foreign.status == 403);
    CHECK(foreign.body.find("came from another site") != std::string::npos);
    Headers cross = WithToken();
    cross.emplace("Sec-Fetch-Site", "cross-site");
    CHECK(admin.Ask("POST", r.path, cross, "endpoint=ep&id=e1").status == 403);
  }
  // With the event's token, the action runs: here, its confirmation page.
  Answer confirm = admin.Ask("POST", "/event/retry", WithToken(),
                             "endpoint=ep&id=e1&csrf=" + admin.guards.CsrfToken("ep", "e1"));
  CHECK(confirm.status == 200);
  CHECK(confirm.body.find("Retry?") != std::string::npos);
  // An event's token is not a handler's, nor the bulk form's.
  CHECK(admin
            .Ask("POST", "/handler/pause", WithToken(),
                 "endpoint=ep&id=e1&csrf=" + admin.guards.CsrfToken("ep", "e1"))
            .status == 403);
  CHECK(admin
            .Ask("POST", "/bulk", WithToken(),
                 "verb=retry&csrf=" + admin.guards.CsrfToken("ep", "e1"))
            .status == 403);
}

TEST_CASE("admin routes: the probes take every method and need no token; /metrics needs it") {
  Admin admin(kToken);
  for (const char* method : {"GET", "HEAD", "POST", "DELETE"}) {
    INFO(method);
    Answer health = admin.Ask(method, "/healthz");
    CHECK(health.status == 200);
    CHECK(health.body == R"({"status":"ok"})");
    CHECK(admin.Ask(method, "/readyz").body == R"({"status":"ready"})");
    Answer metrics = admin.Ask(method, "/metrics", WithToken());
    CHECK(metrics.status == 200);
    CHECK(HeaderValue(metrics.headers, "Content-Type") ==
          "text/plain; version=0.0.4; charset=utf-8");
  }
  admin.problem = "draining";
  Answer ready = admin.Ask("GET", "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body == R"({"status":"draining"})");
  // No Host at all (HTTP/1.0) passes the Host guard.
  CHECK(admin.table.Dispatch(Request("GET", "/healthz")).status == 200);
}

TEST_CASE("admin routes: without admin_token the pages are open and /login sends to the list") {
  Admin admin("");
  CHECK(admin.Ask("GET", "/").status == 200);
  CHECK(admin.Ask("GET", "/metrics").status == 200);
  CHECK(admin.Ask("GET", "/style.css").status == 200);
  for (const char* method : {"GET", "POST", "PUT"}) {
    Answer login = admin.Ask(method, "/login");
    CHECK(login.status == 303);
    CHECK(HeaderValue(login.headers, "Location") == "/");
  }
}

TEST_CASE("admin routes: a JSON row with methods answers 405 in JSON, with Allow") {
  Admin admin("");
  admin::RouteTable table({{"/probe",
                            {"GET", "HEAD"},
                            Auth::kOpen,
                            [](const Delivery&) {
                              return Answer{200, "{}", {}};
                            }}},
                          admin.guards);
  Delivery d = Request("POST", "/probe");
  Answer a = table.Dispatch(d);
  CHECK(a.status == 405);
  CHECK(HeaderValue(a.headers, "Allow") == "GET, HEAD");
  CHECK(a.body == R"({"error":"method not allowed"})");
  d.method = "HEAD";
  CHECK(table.Dispatch(d).status == 200);
}
