// The console (src/console/) through real HTTP on the admin listener of the real daemon,
// checked against the CLI: its pages, its Retry and Clear, and every refusal (Host, Origin,
// CSRF token, admin token), each shown to change nothing. The browser-driven tests
// (tests/console/) cover the same ground as a person would meet it.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "base/form.h"
#include "base/trace.h"
#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

// One endpoint whose handler fails until the file `ok` exists in the test's directory; a
// job dies at its first failure.
Daemon Start(const TempDir& dir, const std::string& extra = "") {
  return Daemon(dir, R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DB}
workers: 2
)" + extra + R"(
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    event_type: body:/type
    retry: {max_attempts: 1}
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/sh, -c, 'test -e {DIR}/ok']}
)");
}

httplib::Client Admin(const Daemon& d) { return httplib::Client("127.0.0.1", d.admin_port()); }

std::string Host(const Daemon& d) { return "127.0.0.1:" + std::to_string(d.admin_port()); }

// `hookbox inbox show open ID --json`, or null when the CLI finds no such event.
json Show(const Daemon& d, const std::string& id) {
  auto r = d.Cli({"inbox", "show", "open", id, "--json"});
  if (r.exit_code != 0) return nullptr;
  return json::parse(r.out);
}

std::string Status(const Daemon& d, const std::string& id) {
  json row = Show(d, id);
  return row.is_null() ? "" : row["status"].get<std::string>();
}

void Deliver(Daemon& d, const json& body) {
  auto r = d.Post("/hooks/open", {}, body.dump());
  REQUIRE(r);
  REQUIRE(r->status == 200);
}

// The value of the first hidden input `name` of a page.
std::string Hidden(const std::string& html, const std::string& name) {
  std::smatch m;
  REQUIRE(std::regex_search(html, m, std::regex("name=\"" + name + "\" value=\"([^\"]*)\"")));
  return m[1];
}

// The hrefs of a page's links, with &amp; read back as &.
std::vector<std::string> Links(const std::string& html) {
  std::vector<std::string> out;
  std::regex href("href=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), href); it != std::sregex_iterator();
       ++it) {
    std::string link = (*it)[1];
    for (size_t at; (at = link.find("&amp;")) != std::string::npos;) link.replace(at, 5, "&");
    out.push_back(link);
  }
  return out;
}

httplib::Result PostForm(httplib::Client& c, const std::string& path,
                         const std::vector<std::pair<std::string, std::string>>& fields,
                         const httplib::Headers& headers = {}) {
  std::string body;
  for (const auto& [k, v] : fields) {
    body += (body.empty() ? "" : "&") + k + "=" + hookbox::UrlEncode(v);
  }
  return c.Post(path, headers, body, "application/x-www-form-urlencoded");
}

void WaitForStatus(const Daemon& d, const std::string& id, const std::string& status) {
  INFO(id << " should become " << status);
  CHECK(Eventually([&] { return Status(d, id) == status; }));
}

}  // namespace

TEST_CASE("console: the list, newest first, links to each event's page; hostile text is text") {
  TempDir dir;
  Daemon d = Start(dir);
  const std::string hostile_id = "<script>alert('id')</script>";
  Deliver(d, {{"id", "first"}, {"type", "order.created"}});
  Deliver(d, {{"id", hostile_id},
              {"type", "<img src=x onerror=alert(1)>"},
              {"note", "</pre><script>alert('body')</script>"}});
  auto c = Admin(d);
  auto list = c.Get("/");
  REQUIRE(list);
  CHECK(list->status == 200);
  CHECK(list->get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK(list->get_header_value("Content-Security-Policy").find("default-src 'none'") !=
        std::string::npos);
  CHECK(list->get_header_value("Content-Security-Policy").find("frame-ancestors 'none'") !=
        std::string::npos);
  CHECK(list->get_header_value("X-Content-Type-Options") == "nosniff");
  // Escaped wherever it is written: no tag from the producer's text reaches the page.
  CHECK(list->body.find("<script") == std::string::npos);
  CHECK(list->body.find("<img") == std::string::npos);
  CHECK(list->body.find("&lt;script&gt;alert(&apos;id&apos;)&lt;/script&gt;") != std::string::npos);
  // Newest first: the hostile one was delivered last.
  CHECK(list->body.find("alert(&apos;id&apos;)") < list->body.find(">first<"));

  std::string link;
  for (const std::string& l : Links(list->body)) {
    if (l.starts_with("/event?") && l.find("first") == std::string::npos) link = l;
  }
  REQUIRE(!link.empty());
  auto page = c.Get(link);
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("<script") == std::string::npos);
  CHECK(page->body.find("&lt;/pre&gt;&lt;script&gt;") != std::string::npos);  // in the body
  CHECK(page->body.find("JSON, ") != std::string::npos);
  CHECK(Hidden(page->body, "id") == "&lt;script&gt;alert(&apos;id&apos;)&lt;/script&gt;");

  auto missing = c.Get("/event?endpoint=open&id=nope");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  auto bad = c.Get("/?status=bogus");
  REQUIRE(bad);
  CHECK(bad->status == 400);
  auto wrong_method = c.Get("/event/retry");
  REQUIRE(wrong_method);
  CHECK(wrong_method->status == 405);
  auto css = c.Get("/style.css");
  REQUIRE(css);
  CHECK(css->get_header_value("Content-Type") == "text/css; charset=utf-8");
  CHECK(c.Get("/nothing-here")->status == 404);
}

TEST_CASE("console: an event's page names its trace, the one inbox show prints") {
  TempDir dir;
  Daemon d = Start(dir);
  const std::string producer = "4bf92f3577b34da6a3ce929d0e0e4736";
  auto traced = d.Post("/hooks/open", {{"traceparent", "00-" + producer + "-00f067aa0ba902b7-01"}},
                       json{{"id", "traced"}}.dump());
  REQUIRE(traced);
  REQUIRE(traced->status == 200);
  Deliver(d, {{"id", "untraced"}});
  auto c = Admin(d);
  for (const char* id : {"traced", "untraced"}) {
    INFO(id);
    const std::string trace_id = Show(d, id)["trace_id"];
    auto page = c.Get(std::string("/event?endpoint=open&id=") + id);
    REQUIRE(page);
    CHECK(page->body.find("<tr><th>Trace id</th><td class=\"id\">" + trace_id + "</td></tr>") !=
          std::string::npos);
  }
  CHECK(Show(d, "traced")["trace_id"] == producer);
  CHECK(Show(d, "untraced")["trace_id"] ==
        hookbox::EventTrace("open", "untraced", std::nullopt).trace_id);
}

TEST_CASE("console: Retry re-arms a dead event and Clear forgets one, after a confirmation") {
  TempDir dir;
  Daemon d = Start(dir);
  Deliver(d, {{"id", "to-retry"}});
  Deliver(d, {{"id", "to-clear"}});
  WaitForStatus(d, "to-retry", "dead");
  WaitForStatus(d, "to-clear", "dead");
  auto c = Admin(d);

  auto page = c.Get("/event?endpoint=open&id=to-retry");
  REQUIRE(page);
  REQUIRE(page->body.find(">Retry</button>") != std::string::npos);
  const std::string csrf = Hidden(page->body, "csrf");
  // The first press answers a confirmation, and changes nothing.
  auto confirm =
      PostForm(c, "/event/retry", {{"endpoint", "open"}, {"id", "to-retry"}, {"csrf", csrf}});
  REQUIRE(confirm);
  CHECK(confirm->status == 200);
  CHECK(confirm->body.find("re-armed") != std::string::npos);
  CHECK(Hidden(confirm->body, "confirm") == "yes");
  CHECK(Status(d, "to-retry") == "dead");

  hookbox::testing::WriteFile(dir / "ok", "");  // the handler now succeeds
  auto done =
      PostForm(c, "/event/retry",
               {{"endpoint", "open"}, {"id", "to-retry"}, {"csrf", csrf}, {"confirm", "yes"}});
  REQUIRE(done);
  CHECK(done->status == 303);
  CHECK(done->get_header_value("Location") == "/event?endpoint=open&id=to-retry&retried=1");
  WaitForStatus(d, "to-retry", "processed");
  json shown = Show(d, "to-retry");
  CHECK(shown["jobs"][0]["attempts"].size() == 2);

  // Nothing left to retry: 409, and the button is gone.
  auto again =
      PostForm(c, "/event/retry",
               {{"endpoint", "open"}, {"id", "to-retry"}, {"csrf", csrf}, {"confirm", "yes"}});
  REQUIRE(again);
  CHECK(again->status == 409);
  CHECK(c.Get("/event?endpoint=open&id=to-retry")->body.find(">Retry</button>") ==
        std::string::npos);

  const std::string clear_csrf = Hidden(c.Get("/event?endpoint=open&id=to-clear")->body, "csrf");
  auto cleared = PostForm(
      c, "/event/clear",
      {{"endpoint", "open"}, {"id", "to-clear"}, {"csrf", clear_csrf}, {"confirm", "yes"}});
  REQUIRE(cleared);
  CHECK(cleared->status == 303);
  CHECK(Show(d, "to-clear").is_null());
  auto notice = c.Get(cleared->get_header_value("Location"));
  CHECK(notice->body.find("Cleared open to-clear") != std::string::npos);
  // The producer's redelivery is new again, and now runs.
  auto redelivered = d.Post("/hooks/open", {}, json{{"id", "to-clear"}}.dump());
  REQUIRE(redelivered);
  CHECK(hookbox::testing::AnswerLine(redelivered) == "200 accepted");
  WaitForStatus(d, "to-clear", "processed");
}

TEST_CASE("console: Clear of an event whose job is running is 409 and forgets nothing") {
  TempDir dir;
  // The handler says it started, then runs until the file `go` exists.
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DB}
workers: 2
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - exec:
              command: [/bin/sh, -c, 'touch {DIR}/started; while [ ! -e {DIR}/go ]; do sleep 0.05; done']
              timeout: 60s
)");
  Deliver(d, {{"id", "busy"}});
  REQUIRE(Eventually([&] { return std::filesystem::exists(dir / "started"); }));
  auto c = Admin(d);
  const std::string csrf = Hidden(c.Get("/event?endpoint=open&id=busy")->body, "csrf");
  auto refused =
      PostForm(c, "/event/clear",
               {{"endpoint", "open"}, {"id", "busy"}, {"csrf", csrf}, {"confirm", "yes"}});
  REQUIRE(refused);
  CHECK(refused->status == 409);
  CHECK(refused->body.find("Not cleared") != std::string::npos);
  CHECK(refused->body.find("A job of this event is running") != std::string::npos);
  CHECK_FALSE(Show(d, "busy").is_null());  // the row is kept

  // Once the attempt has ended, the same Clear goes through.
  hookbox::testing::WriteFile(dir / "go", "");
  WaitForStatus(d, "busy", "processed");
  auto cleared =
      PostForm(c, "/event/clear",
               {{"endpoint", "open"}, {"id", "busy"}, {"csrf", csrf}, {"confirm", "yes"}});
  REQUIRE(cleared);
  CHECK(cleared->status == 303);
  CHECK(Show(d, "busy").is_null());
}

TEST_CASE(
    "console: actions without the page's token, from another origin or Host: 403, no change") {
  TempDir dir;
  Daemon d = Start(dir);
  Deliver(d, {{"id", "target"}});
  Deliver(d, {{"id", "other"}});
  WaitForStatus(d, "target", "dead");
  auto c = Admin(d);
  const std::string csrf = Hidden(c.Get("/event?endpoint=open&id=target")->body, "csrf");
  const std::string other_csrf = Hidden(c.Get("/event?endpoint=open&id=other")->body, "csrf");
  auto clear = [&](const std::string& token, const httplib::Headers& headers = {}) {
    return PostForm(c, "/event/clear",
                    {{"endpoint", "open"}, {"id", "target"}, {"csrf", token}, {"confirm", "yes"}},
                    headers);
  };
  CHECK(PostForm(c, "/event/clear", {{"endpoint", "open"}, {"id", "target"}, {"confirm", "yes"}})
            ->status == 403);               // no token
  CHECK(clear("")->status == 403);          // empty token
  CHECK(clear(other_csrf)->status == 403);  // another event's token
  CHECK(clear(csrf + "0")->status == 403);  // a forged one
  CHECK(clear(csrf, {{"Origin", "http://evil.example"}})->status == 403);
  CHECK(clear(csrf, {{"Origin", "null"}})->status == 403);
  CHECK(clear(csrf, {{"Sec-Fetch-Site", "cross-site"}})->status == 403);
  // DNS rebinding: the page itself and the action, under a name that is not the listener's.
  CHECK(c.Get("/", {{"Host", "evil.example:" + std::to_string(d.admin_port())}})->status == 403);
  CHECK(c.Get("/", {{"Host", "127.0.0.1:1"}})->status == 403);
  CHECK(clear(csrf, {{"Host", "evil.example:" + std::to_string(d.admin_port())}})->status == 403);
  CHECK(Status(d, "target") == "dead");  // nothing changed
  // The browser's own same-origin request goes through.
  CHECK(clear(csrf, {{"Origin", "http://" + Host(d)}, {"Sec-Fetch-Site", "same-origin"}})->status ==
        303);
  CHECK(Show(d, "target").is_null());
  // localhost names the listener too.
  CHECK(c.Get("/", {{"Host", "localhost:" + std::to_string(d.admin_port())}})->status == 200);
}

TEST_CASE("console: with admin_token, pages, actions and /metrics need it; probes do not") {
  TempDir dir;
  Daemon d = Start(dir, "admin_token: {value: correct-horse-battery}\n");
  Deliver(d, {{"id", "guarded"}});
  WaitForStatus(d, "guarded", "dead");
  auto c = Admin(d);
  auto page = c.Get("/");
  REQUIRE(page);
  CHECK(page->status == 401);
  CHECK(page->body.find("name=\"token\"") != std::string::npos);  // the login form
  CHECK(c.Get("/event?endpoint=open&id=guarded")->status == 401);
  CHECK(c.Get("/metrics")->status == 401);
  CHECK(c.Get("/healthz")->status == 200);
  CHECK(PostForm(c, "/event/clear", {{"endpoint", "open"}, {"id", "guarded"}, {"confirm", "yes"}})
            ->status == 401);
  CHECK(Status(d, "guarded") == "dead");

  const httplib::Headers bearer = {{"Authorization", "Bearer correct-horse-battery"}};
  CHECK(c.Get("/", bearer)->status == 200);
  CHECK(c.Get("/metrics", bearer)->status == 200);
  CHECK(c.Get("/", {{"Authorization", "Bearer wrong"}})->status == 401);

  auto wrong = PostForm(c, "/login", {{"token", "wrong"}});
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
  CHECK(!wrong->has_header("Set-Cookie"));
  CHECK(PostForm(c, "/login", {{"token", "correct-horse-battery"}},
                 {{"Origin", "http://evil.example"}})
            ->status == 403);
  auto login = PostForm(c, "/login", {{"token", "correct-horse-battery"}});
  REQUIRE(login);
  CHECK(login->status == 303);
  const std::string cookie = login->get_header_value("Set-Cookie");
  CHECK(cookie.find("HttpOnly") != std::string::npos);
  CHECK(cookie.find("SameSite=Strict") != std::string::npos);
  CHECK(cookie.find("correct-horse-battery") == std::string::npos);  // not the token itself
  const httplib::Headers session = {{"Cookie", cookie.substr(0, cookie.find(';'))}};
  auto in = c.Get("/event?endpoint=open&id=guarded", session);
  REQUIRE(in);
  CHECK(in->status == 200);
  const std::string csrf = Hidden(in->body, "csrf");
  CHECK(PostForm(c, "/event/clear",
                 {{"endpoint", "open"}, {"id", "guarded"}, {"csrf", csrf}, {"confirm", "yes"}},
                 session)
            ->status == 303);
  CHECK(Show(d, "guarded").is_null());
}

TEST_CASE("console: pages by keyset show every row once; filters and the id search narrow them") {
  TempDir dir;
  Daemon d = Start(dir);
  hookbox::testing::WriteFile(dir / "ok", "");
  std::set<std::string> sent;
  for (int i = 0; i < 120; ++i) {
    const std::string id = "ev-" + std::to_string(i);
    Deliver(d, {{"id", id}});
    sent.insert(id);
  }
  auto c = Admin(d);
  std::set<std::string> seen;
  std::string next = "/";
  int pages = 0;
  std::regex id_cell(">(ev-[0-9]+)</a>");
  while (!next.empty() && pages < 10) {
    auto page = c.Get(next);
    REQUIRE(page);
    REQUIRE(page->status == 200);
    ++pages;
    int rows = 0;
    for (auto it = std::sregex_iterator(page->body.begin(), page->body.end(), id_cell);
         it != std::sregex_iterator(); ++it, ++rows) {
      CHECK(seen.insert((*it)[1]).second);  // never twice
    }
    CHECK(rows <= 50);
    next.clear();
    for (const std::string& l : Links(page->body)) {
      if (l.find("before_id=") != std::string::npos &&
          page->body.find("rel=\"next\"") != std::string::npos) {
        next = l;
      }
    }
  }
  CHECK(pages == 3);
  CHECK(seen == sent);

  auto one = c.Get("/?id=ev-7");
  REQUIRE(one);
  CHECK(one->body.find(">ev-7</a>") != std::string::npos);
  CHECK(one->body.find(">ev-70</a>") == std::string::npos);
  auto none = c.Get("/?status=dead");
  REQUIRE(none);
  CHECK(none->body.find("No events match these filters") != std::string::npos);
  auto dead = c.Get("/dead");
  REQUIRE(dead);
  CHECK(dead->body.find("No dead jobs") != std::string::npos);
}

TEST_CASE("console: the list takes the inbox filter, pages through it, and refuses a bad one") {
  TempDir dir;
  Daemon d = Start(dir);
  hookbox::testing::WriteFile(dir / "ok", "");
  std::set<std::string> wanted;  // the customer's, whose id holds & and =: escaped in links
  for (int i = 0; i < 110; ++i) {
    const std::string id = "ev-" + std::to_string(i);
    const bool theirs = i % 2 == 0;
    Deliver(d, {{"id", id},
                {"type", theirs ? "invoice.paid" : "charge.paid"},
                {"data", {{"customer", theirs ? "cus_a&b=c" : "cus_other"}, {"n", i}}}});
    if (theirs) wanted.insert(id);
  }
  auto c = Admin(d);
  // The where text area: one POINTER=VALUE per line (CRLF, as a browser sends it).
  const std::string first = "/?where=" + hookbox::UrlEncode("/data/customer=cus_a&b=c\r\n") +
                            "&type=" + hookbox::UrlEncode("invoice.*") + "&since=1h";
  std::set<std::string> seen;
  std::string next = first;
  int pages = 0;
  std::regex id_cell(">(ev-[0-9]+)</a>");
  while (!next.empty() && pages < 5) {
    auto page = c.Get(next);
    REQUIRE(page);
    REQUIRE(page->status == 200);
    ++pages;
    for (auto it = std::sregex_iterator(page->body.begin(), page->body.end(), id_cell);
         it != std::sregex_iterator(); ++it) {
      CHECK(seen.insert((*it)[1]).second);
    }
    next.clear();
    for (const std::string& l : Links(page->body)) {
      if (l.find("before_id=") != std::string::npos) next = l;
    }
    if (!next.empty()) {
      // The filter travels escaped, the relative time as the instant it meant.
      CHECK(next.find("where=%2Fdata%2Fcustomer%3Dcus_a%26b%3Dc") != std::string::npos);
      CHECK(next.find("type=invoice.%2A") != std::string::npos);
      CHECK(next.find("since=20") != std::string::npos);
    }
  }
  CHECK(pages == 2);
  CHECK(seen == wanted);
  auto two = c.Get("/?where=" + hookbox::UrlEncode("/data/n=3") +
                   "&where=" + hookbox::UrlEncode("/type=charge.paid"));
  REQUIRE(two);
  CHECK(two->status == 200);
  CHECK(two->body.find(">ev-3</a>") != std::string::npos);
  CHECK(std::distance(std::sregex_iterator(two->body.begin(), two->body.end(), id_cell),
                      std::sregex_iterator()) == 1);

  for (const auto& [query, named] : std::vector<std::pair<std::string, std::string>>{
           {"where=%2Fdata%2Fcustomer", "--where /data/customer"},
           {"where=data%3Dx", "starts with /"},
           {"where=%2Fa~2%3Dx", "~ must be followed"},
           {"status=done", "unknown status"},
           {"since=yesterday", "--since yesterday"},
           {"since=1h&until=2h", "the time range is empty"},
       }) {
    auto bad = c.Get("/?" + query);
    REQUIRE(bad);
    INFO(query);
    CHECK(bad->status == 400);
    CHECK(bad->body.find(named) != std::string::npos);
  }
}

TEST_CASE("console: the handlers page pauses and resumes behind a confirmation, token and Origin") {
  TempDir dir;
  Daemon d = Start(dir);
  auto c = Admin(d);
  auto page = c.Get("/handlers");
  REQUIRE(page);
  REQUIRE(page->status == 200);
  CHECK(page->body.find("running") != std::string::npos);
  const std::string handler = Hidden(page->body, "id");
  const std::string csrf = Hidden(page->body, "csrf");
  auto pause = [&](const std::string& token, const httplib::Headers& headers = {}) {
    return PostForm(c, "/handler/pause",
                    {{"endpoint", "open"},
                     {"id", handler},
                     {"csrf", token},
                     {"confirm", "yes"},
                     {"reason", "console test"}},
                    headers);
  };
  auto state = [&] {
    auto r = d.Cli({"handler", "list", "--json"});
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out)[0]["state"].get<std::string>();
  };
  CHECK(PostForm(c, "/handler/pause", {{"endpoint", "open"}, {"id", handler}, {"confirm", "yes"}})
            ->status == 403);  // no token
  CHECK(pause(csrf + "0")->status == 403);
  CHECK(pause(csrf, {{"Origin", "http://evil.example"}})->status == 403);
  CHECK(pause(csrf, {{"Sec-Fetch-Site", "cross-site"}})->status == 403);
  CHECK(pause(csrf, {{"Host", "evil.example:" + std::to_string(d.admin_port())}})->status == 403);
  // An event's token of the same name is not a handler's.
  Deliver(d, {{"id", handler}});
  const std::string event_csrf =
      Hidden(c.Get("/event?endpoint=open&id=" + hookbox::UrlEncode(handler))->body, "csrf");
  CHECK(pause(event_csrf)->status == 403);
  CHECK(state() == "running");  // nothing changed

  // The first POST only asks.
  auto ask = PostForm(c, "/handler/pause", {{"endpoint", "open"}, {"id", handler}, {"csrf", csrf}});
  REQUIRE(ask);
  CHECK(ask->status == 200);
  CHECK(ask->body.find("Pause this handler?") != std::string::npos);
  CHECK(state() == "running");
  auto done = pause(csrf, {{"Origin", "http://" + Host(d)}});
  REQUIRE(done);
  CHECK(done->status == 303);
  CHECK(state() == "paused");
  auto after = c.Get("/handlers");
  REQUIRE(after);
  CHECK(after->body.find("console test") != std::string::npos);
  CHECK(after->body.find("/handler/resume") != std::string::npos);
  auto resumed =
      PostForm(c, "/handler/resume",
               {{"endpoint", "open"}, {"id", handler}, {"csrf", csrf}, {"confirm", "yes"}});
  REQUIRE(resumed);
  CHECK(resumed->status == 303);
  CHECK(state() == "running");
  // A handler the config lacks.
  CHECK(PostForm(c, "/handler/pause",
                 {{"endpoint", "open"}, {"id", "nope"}, {"csrf", csrf}, {"confirm", "yes"}})
            ->status == 403);  // its token is not this one's
}

TEST_CASE("console: the bulk page plans a retry of dead jobs; its POST re-arms them") {
  TempDir dir;
  Daemon d = Start(dir);
  for (const char* id : {"b1", "b2", "b3"}) Deliver(d, {{"id", id}});
  for (const char* id : {"b1", "b2", "b3"}) WaitForStatus(d, id, "dead");
  auto c = Admin(d);

  // The plan: the same numbers as the CLI's --dry-run; nothing changed.
  auto page = c.Get("/bulk?verb=retry&endpoint=open");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("id=\"plan-rows\">3<") != std::string::npos);
  CHECK(page->body.find("id=\"plan-jobs\">3<") != std::string::npos);
  auto dry = d.Cli({"inbox", "retry", "--dead", "--endpoint", "open", "--dry-run", "--json"});
  REQUIRE(dry.exit_code == 0);
  CHECK(json::parse(dry.out)["plan"]["jobs"] == 3);
  CHECK(Status(d, "b1") == "dead");
  const std::string csrf = Hidden(page->body, "csrf");
  CHECK(Hidden(page->body, "endpoint") == "open");
  // A bad filter names its bad part.
  auto bad = c.Get("/bulk?verb=retry&status=sleeping");
  REQUIRE(bad);
  CHECK(bad->status == 400);
  CHECK(bad->body.find("sleeping") != std::string::npos);

  // Refused: no token, another page's token, another origin, another site. Nothing changes.
  const std::string event_csrf = Hidden(c.Get("/event?endpoint=open&id=b1")->body, "csrf");
  auto post = [&](const std::string& token, const httplib::Headers& headers = {}) {
    return PostForm(c, "/bulk", {{"verb", "retry"}, {"endpoint", "open"}, {"csrf", token}},
                    headers);
  };
  CHECK(PostForm(c, "/bulk", {{"verb", "retry"}, {"endpoint", "open"}})->status == 403);
  CHECK(post("")->status == 403);
  CHECK(post(event_csrf)->status == 403);
  CHECK(post(csrf, {{"Origin", "http://evil.example"}})->status == 403);
  CHECK(post(csrf, {{"Sec-Fetch-Site", "cross-site"}})->status == 403);
  CHECK(post(csrf, {{"Host", "evil.example:" + std::to_string(d.admin_port())}})->status == 403);
  for (const char* id : {"b1", "b2", "b3"}) CHECK(Status(d, id) == "dead");

  hookbox::testing::WriteFile(dir / "ok", "");  // the handler now succeeds
  auto done = post(csrf, {{"Origin", "http://" + Host(d)}, {"Sec-Fetch-Site", "same-origin"}});
  REQUIRE(done);
  CHECK(done->status == 303);
  const std::string location = done->get_header_value("Location");
  CHECK(location.find("done=3") != std::string::npos);
  for (const char* id : {"b1", "b2", "b3"}) WaitForStatus(d, id, "processed");
  auto after = c.Get(location);
  CHECK(after->body.find("Re-armed 3 job(s)") != std::string::npos);
  CHECK(after->body.find("id=\"plan-jobs\">0<") != std::string::npos);
  // Counted where the daemon's /metrics shows it.
  auto metrics = c.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("hookbox_bulk_jobs_rearmed_total{verb=\"retry\"} 3") !=
        std::string::npos);
}

// The bulk page's third verb, `inbox retry --waiting`'s: jobs waiting in backoff (an hour
// here) made due now. Its plan names each handler's state and the drain time; a rate over a
// paused handler's jobs is refused on the page (no button) and by the POST (409), nothing
// changed; once resumed the POST runs them at once, each keeping its attempt count.
TEST_CASE("console: the bulk page runs waiting jobs now; a rate over a paused one is refused") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DB}
workers: 2
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    retry: {max_attempts: 10, base: 1h, max: 1h}
    routes:
      - events: ["*"]
        handlers:
          - name: flaky
            exec: {command: [/bin/sh, -c, 'test -e {DIR}/ok || exit 1']}
)");
  for (const char* id : {"w1", "w2"}) Deliver(d, {{"id", id}});
  auto waiting = [&](const std::string& id) {
    const json row = Show(d, id);
    if (row.is_null()) return false;
    const json& job = row["jobs"][0];
    return job["status"] == "pending" && job["attempts"].size() == 1 &&
           !job["attempts"][0]["finished_at"].get<std::string>().empty();
  };
  for (const char* id : {"w1", "w2"}) REQUIRE(Eventually([&] { return waiting(id); }));
  const json next = Show(d, "w1")["jobs"][0]["next_attempt_at"];
  auto c = Admin(d);

  auto page = c.Get("/bulk?verb=retry_waiting&endpoint=open");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("<option value=\"retry_waiting\" selected>Run waiting jobs now") !=
        std::string::npos);
  CHECK(page->body.find("id=\"plan-jobs\">2<") != std::string::npos);
  CHECK(page->body.find("open/flaky <span class=\"state\" data-state=\"running\">running<") !=
        std::string::npos);
  CHECK(page->body.find("id=\"plan-drain\">all due now") != std::string::npos);
  CHECK(page->body.find("id=\"bulk-confirm\">Run now 2 job(s)<") != std::string::npos);
  const std::string csrf = Hidden(page->body, "csrf");

  // Paused, a rate is refused: the page offers no button and says why; the POST is 409.
  auto paused = d.Cli({"handler", "pause", "open/flaky", "--reason", "target down"});
  REQUIRE(paused.exit_code == 0);
  auto refused = c.Get("/bulk?verb=retry_waiting&endpoint=open&rate=1%2Fs");
  REQUIRE(refused);
  CHECK(refused->body.find("data-state=\"paused\">paused (target down)<") != std::string::npos);
  CHECK(refused->body.find("id=\"plan-drain\">about 1 s at the rate") != std::string::npos);
  CHECK(refused->body.find("id=\"plan-refusal\">Handler open/flaky is paused") !=
        std::string::npos);
  CHECK(refused->body.find("bulk-confirm") == std::string::npos);
  auto post =
      PostForm(c, "/bulk",
               {{"verb", "retry_waiting"}, {"endpoint", "open"}, {"rate", "1/s"}, {"csrf", csrf}});
  REQUIRE(post);
  CHECK(post->status == 409);
  CHECK(post->body.find("Nothing was changed") != std::string::npos);
  CHECK(Show(d, "w1")["jobs"][0]["next_attempt_at"] == next);

  // Resumed and fixed: the POST makes both due now; they run, their attempts counted on.
  REQUIRE(d.Cli({"handler", "resume", "open/flaky"}).exit_code == 0);
  hookbox::testing::WriteFile(dir / "ok", "");
  auto done =
      PostForm(c, "/bulk", {{"verb", "retry_waiting"}, {"endpoint", "open"}, {"csrf", csrf}});
  REQUIRE(done);
  CHECK(done->status == 303);
  CHECK(done->get_header_value("Location").find("done=2") != std::string::npos);
  for (const char* id : {"w1", "w2"}) {
    WaitForStatus(d, id, "processed");
    CHECK(Show(d, id)["jobs"][0]["attempts"].size() == 2);
  }
  auto metrics = c.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("hookbox_bulk_jobs_rearmed_total{verb=\"retry_waiting\"} 2") !=
        std::string::npos);
}

TEST_CASE("console: the bulk page's replay runs a handler again under a new key") {
  TempDir dir;
  hookbox::testing::WriteFile(dir / "ok", "");
  Daemon d = Start(dir);
  Deliver(d, {{"id", "r1"}});
  WaitForStatus(d, "r1", "processed");
  const std::string handler = Show(d, "r1")["jobs"][0]["handler"];
  auto c = Admin(d);
  auto none = c.Get("/bulk?verb=replay&endpoint=open");
  REQUIRE(none);
  CHECK(none->body.find("name it") != std::string::npos);  // which handler?
  auto page = c.Get("/bulk?verb=replay&endpoint=open&handler=" + hookbox::UrlEncode(handler));
  REQUIRE(page);
  CHECK(page->body.find("id=\"plan-jobs\">1<") != std::string::npos);
  auto done = PostForm(c, "/bulk",
                       {{"verb", "replay"},
                        {"endpoint", "open"},
                        {"handler", handler},
                        {"csrf", Hidden(page->body, "csrf")}});
  REQUIRE(done);
  CHECK(done->status == 303);
  REQUIRE(Eventually([&] { return Show(d, "r1")["jobs"][0]["attempts"].size() == 2; }));
  WaitForStatus(d, "r1", "processed");
  CHECK(Show(d, "r1")["jobs"][0]["generation"] == 1);
}

TEST_CASE("console: the event page counts every attempt of a job and marks a replay's") {
  TempDir dir;
  Daemon d = Start(dir);
  Deliver(d, {{"id", "h1"}});
  // Dead at its first try, twice retried dead, then retried once the handler is fixed: four
  // attempts, of which the current budget has spent one; then a replay, the fifth.
  WaitForStatus(d, "h1", "dead");
  for (int i = 0; i < 2; ++i) {
    REQUIRE(d.Cli({"inbox", "retry", "open", "h1"}).exit_code == 0);
    REQUIRE(Eventually([&] { return Show(d, "h1")["jobs"][0]["attempts"].size() == 2u + i; }));
    WaitForStatus(d, "h1", "dead");
  }
  hookbox::testing::WriteFile(dir / "ok", "");
  REQUIRE(d.Cli({"inbox", "retry", "open", "h1"}).exit_code == 0);
  WaitForStatus(d, "h1", "processed");
  const std::string handler = Show(d, "h1")["jobs"][0]["handler"];
  REQUIRE(d.Cli({"inbox", "replay", "--endpoint", "open", "--handler", handler}).exit_code == 0);
  REQUIRE(Eventually([&] { return Show(d, "h1")["jobs"][0]["attempts"].size() == 5; }));
  WaitForStatus(d, "h1", "processed");
  auto cli = d.Cli({"inbox", "show", "open", "h1"});
  REQUIRE(cli.out.find("done (5 attempts, replay 1)") != std::string::npos);

  auto c = Admin(d);
  auto page = c.Get("/event?endpoint=open&id=h1");
  REQUIRE(page);
  REQUIRE(page->status == 200);
  INFO(page->body);
  CHECK(page->body.find("<p>5 attempt(s), replay 1") != std::string::npos);
  // Only the replay's attempt is marked, as `inbox show` marks it.
  CHECK(page->body.find("<td class=\"num\">5 <small class=\"replay\">replay 1</small></td>") !=
        std::string::npos);
  for (int n = 1; n <= 4; ++n) {
    CHECK(page->body.find("<td class=\"num\">" + std::to_string(n) + "</td>") != std::string::npos);
  }
  size_t marks = 0;
  for (size_t at = 0; (at = page->body.find("class=\"replay\"", at)) != std::string::npos; ++at) {
    ++marks;
  }
  CHECK(marks == 1);
}

TEST_CASE("console: the bulk page takes the filter's status and where; its POST carries them") {
  TempDir dir;
  Daemon d = Start(dir);
  Deliver(d, {{"id", "w1"}, {"data", {{"customer", "cus_a&b=c"}}}});
  Deliver(d, {{"id", "w2"}, {"data", {{"customer", "cus_other"}}}});
  Deliver(d, {{"id", "w3"}, {"data", {{"customer", "cus_a&b=c"}, {"n", 3}}}});
  for (const char* id : {"w1", "w2", "w3"}) WaitForStatus(d, id, "dead");
  auto c = Admin(d);

  // The form has both fields; the where text area one POINTER=VALUE a line (CRLF, as a
  // browser sends it), the same as the list's and the CLI's --where.
  auto blank = c.Get("/bulk");
  REQUIRE(blank);
  CHECK(blank->body.find("<select name=\"status\">") != std::string::npos);
  CHECK(blank->body.find("<textarea name=\"where\"") != std::string::npos);
  const std::string where = "/data/customer=cus_a&b=c\r\n/data/n=3\r\n";
  auto page =
      c.Get("/bulk?verb=retry&endpoint=open&status=dead&where=" + hookbox::UrlEncode(where));
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("id=\"plan-rows\">1<") != std::string::npos);
  CHECK(page->body.find("<option value=\"dead\" selected>") != std::string::npos);
  auto dry = d.Cli({"inbox", "retry", "--dead", "--endpoint", "open", "--status", "dead", "--where",
                    "/data/customer=cus_a&b=c", "--where", "/data/n=3", "--dry-run", "--json"});
  REQUIRE(dry.exit_code == 0);
  CHECK(json::parse(dry.out)["plan"]["jobs"] == 1);
  // Another status matches nothing.
  auto processed = c.Get("/bulk?verb=retry&status=processed&where=" + hookbox::UrlEncode(where));
  REQUIRE(processed);
  CHECK(processed->body.find("id=\"plan-rows\">0<") != std::string::npos);

  // The confirming form carries status and each where line as hidden fields; its POST acts
  // on w3 alone.
  const std::string csrf = Hidden(page->body, "csrf");
  CHECK(Hidden(page->body, "status") == "dead");
  CHECK(Hidden(page->body, "where") == "/data/customer=cus_a&amp;b=c");
  auto done = PostForm(c, "/bulk",
                       {{"verb", "retry"},
                        {"endpoint", "open"},
                        {"status", "dead"},
                        {"where", "/data/customer=cus_a&b=c"},
                        {"where", "/data/n=3"},
                        {"csrf", csrf}});
  REQUIRE(done);
  CHECK(done->status == 303);
  const std::string location = done->get_header_value("Location");
  CHECK(location.find("done=1") != std::string::npos);
  CHECK(location.find("status=dead") != std::string::npos);
  INFO(location);
  CHECK(location.find("&where=") != location.rfind("&where="));  // both lines
  // w3's job ran again (and died again: the handler still fails); the others were not touched.
  REQUIRE(Eventually([&] { return Show(d, "w3")["jobs"][0]["attempts"].size() == 2; }));
  CHECK(Show(d, "w1")["jobs"][0]["attempts"].size() == 1);
  CHECK(Show(d, "w2")["jobs"][0]["attempts"].size() == 1);

  // A bad filter gets the list's 400 page, on the plan and on the POST alike (behind its
  // guards: the POST without a token is still a 403); nothing changes.
  for (const auto& [query, named] : std::vector<std::pair<std::string, std::string>>{
           {"where=%2Fdata%2Fcustomer", "--where /data/customer"},
           {"where=data%3Dx", "starts with /"},
           {"status=done", "unknown status"},
       }) {
    INFO(query);
    auto list = c.Get("/?" + query);
    auto bad = c.Get("/bulk?verb=retry&" + query);
    REQUIRE(list);
    REQUIRE(bad);
    CHECK(bad->status == 400);
    CHECK(bad->body == list->body);
    CHECK(bad->body.find(named) != std::string::npos);
    const std::string body = query + "&verb=retry&csrf=" + hookbox::UrlEncode(csrf);
    auto post = c.Post("/bulk", body, "application/x-www-form-urlencoded");
    REQUIRE(post);
    CHECK(post->status == 400);
    CHECK(post->body == list->body);
    auto unguarded = c.Post("/bulk", query + "&verb=retry", "application/x-www-form-urlencoded");
    REQUIRE(unguarded);
    CHECK(unguarded->status == 403);
  }
  for (const char* id : {"w1", "w2"}) CHECK(Status(d, id) == "dead");

  // hookbox_bulk_jobs_rearmed_total counts this daemon's console only (README, "Metrics"):
  // the CLI's run is another process. Each logs one "bulk re-armed" line with its count.
  // The CLI re-arms w1, w2 and w3 (dead again: the handler still fails).
  auto cli = d.Cli({"inbox", "retry", "--dead", "--yes"});
  REQUIRE(cli.exit_code == 0);
  CHECK(cli.out.find("re-armed 3 job(s)") != std::string::npos);
  json logged;
  std::istringstream lines(cli.err);
  for (std::string line; std::getline(lines, line);) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("msg", "") == "bulk re-armed") logged = j;
  }
  REQUIRE(logged.is_object());
  CHECK(logged["by"] == "cli");
  CHECK(logged["verb"] == "retry");
  CHECK(logged["rearmed"] == 3);
  REQUIRE(d.WaitForLog("bulk re-armed"));
  CHECK(d.Log().find(R"("by":"console")") != std::string::npos);
  auto metrics = c.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("hookbox_bulk_jobs_rearmed_total{verb=\"retry\"} 1\n") !=
        std::string::npos);
}

TEST_CASE("console: after a reload the handlers page and its actions follow the new config") {
  TempDir dir;
  const std::string config = R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DB}
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - name: NAME
            exec: {command: [/bin/true]}
)";
  auto named = [&](const std::string& name) {
    std::string c = config;
    c.replace(c.find("NAME"), 4, name);
    return c;
  };
  Daemon d(dir, named("before"));
  auto c = Admin(d);
  auto page = c.Get("/handlers");
  REQUIRE(page);
  CHECK(Hidden(page->body, "id") == "before");
  const std::string csrf = Hidden(page->body, "csrf");

  d.WriteConfig(named("after"));
  d.Signal(SIGHUP);
  REQUIRE(d.WaitForLog("reloaded"));
  auto reloaded = c.Get("/handlers");
  REQUIRE(reloaded);
  CHECK(Hidden(reloaded->body, "id") == "after");
  CHECK(reloaded->body.find("before") == std::string::npos);
  // The removed handler cannot be paused (its page's token still verifies): no state is
  // written for a handler the daemon no longer has.
  auto pause =
      PostForm(c, "/handler/pause",
               {{"endpoint", "open"}, {"id", "before"}, {"csrf", csrf}, {"confirm", "yes"}},
               {{"Origin", "http://" + Host(d)}});
  REQUIRE(pause);
  CHECK(pause->status == 404);
  auto list = d.Cli({"handler", "list", "--json"});
  REQUIRE(list.exit_code == 0);
  for (const json& h : json::parse(list.out)) CHECK(h["handler"] != "before");
}
