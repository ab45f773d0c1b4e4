// The admin listener's guards (console/guards.h) on their own: which Host names the listener
// for each kind of address it is bound to (and that a DNS-rebinding name, another IP or port,
// two Hosts or a bad one do not), the token by Bearer or by the login's cookie, a POST from
// another site, and each kind of CSRF token bound to what it acts on. The route table that
// asks them is tests/admin/routes_test.cc.
#include "console/guards.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using hookbox::Delivery;
using hookbox::FormFields;
using hookbox::Headers;
using hookbox::console::FormToken;
using hookbox::console::Guards;

namespace {

const std::string kKey(32, 'k');

// A request with these headers.
Delivery Sent(Headers headers) {
  Delivery d;
  d.method = "POST";
  d.path = "/events/retry";
  d.headers = std::move(headers);
  return d;
}

// Guards without a token whose listener is `host` on port 8099.
struct ListeningOn {
  explicit ListeningOn(const std::string& host, std::vector<std::string> admin_hosts = {})
      : guards(std::move(admin_hosts), "", kKey) {
    guards.SetListener(host, 8099);
  }
  Guards guards;
};

bool HostPasses(const ListeningOn& listener, const std::string& host) {
  return listener.guards.HostAllowed(Sent({{"Host", host}}));
}

}  // namespace

TEST_CASE("Host on a loopback listener: its address, localhost and ::1, with its port",
          "[guards]") {
  const ListeningOn listener("127.0.0.1", {"Admin.Internal"});
  const Guards& guards = listener.guards;
  for (const char* host : {"127.0.0.1:8099", "localhost:8099", "LOCALHOST:8099", "[::1]:8099",
                           "admin.internal:8099", "[::ffff:127.0.0.1]:8099"}) {
    INFO(host);
    CHECK(HostPasses(listener, host));
  }
  for (const char* host : {"127.0.0.1", "127.0.0.1:80", "127.0.0.1:9464", "127.0.0.2:8099",
                           "0.0.0.0:8099", "evil.example:8099", "admin.internal.evil.example:8099",
                           "192.0.2.1:8099", "", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:+8099",
                           "[::1:8099", "[localhost]:8099", "[::1]8099"}) {
    INFO(host);
    CHECK_FALSE(HostPasses(listener, host));
  }
  // No Host at all (HTTP/1.0) passes; two do not, even both right.
  CHECK(guards.HostAllowed(Sent({})));
  CHECK_FALSE(guards.HostAllowed(Sent({{"Host", "127.0.0.1:8099"}, {"Host", "127.0.0.1:8099"}})));
}

TEST_CASE("Host on other listeners: a name, one address, every interface", "[guards]") {
  const ListeningOn named("localhost");
  CHECK(HostPasses(named, "localhost:8099"));
  CHECK(HostPasses(named, "127.0.0.1:8099"));
  CHECK(HostPasses(named, "[::1]:8099"));

  const ListeningOn by_name("admin.example");
  CHECK(HostPasses(by_name, "ADMIN.example:8099"));
  CHECK_FALSE(HostPasses(by_name, "localhost:8099"));
  CHECK_FALSE(HostPasses(by_name, "127.0.0.1:8099"));

  const ListeningOn one_address("192.0.2.10");
  CHECK(HostPasses(one_address, "192.0.2.10:8099"));
  CHECK_FALSE(HostPasses(one_address, "192.0.2.11:8099"));
  CHECK_FALSE(HostPasses(one_address, "localhost:8099"));
  CHECK_FALSE(HostPasses(one_address, "127.0.0.1:8099"));

  // 0.0.0.0: the addresses of this machine's interfaces (loopback's among them), and
  // localhost; not another machine's, nor 0.0.0.0 itself.
  const ListeningOn wildcard("0.0.0.0");
  CHECK(HostPasses(wildcard, "127.0.0.1:8099"));
  CHECK(HostPasses(wildcard, "localhost:8099"));
  CHECK_FALSE(HostPasses(wildcard, "203.0.113.7:8099"));
  CHECK_FALSE(HostPasses(wildcard, "0.0.0.0:8099"));
  CHECK_FALSE(HostPasses(wildcard, "rebound.example:8099"));
}

TEST_CASE("Authorized: open without a token; else Bearer or the login's cookie", "[guards]") {
  CHECK(ListeningOn("127.0.0.1").guards.Authorized(Sent({})));

  const Guards guards({}, "s3cret-token-0123", kKey);
  CHECK(guards.HasToken());
  CHECK(guards.IsToken("s3cret-token-0123"));
  CHECK_FALSE(guards.IsToken("s3cret-token-012"));
  CHECK_FALSE(guards.Authorized(Sent({})));
  CHECK(guards.Authorized(Sent({{"Authorization", "Bearer s3cret-token-0123"}})));
  CHECK_FALSE(guards.Authorized(Sent({{"Authorization", "Bearer wrong"}})));
  CHECK_FALSE(guards.Authorized(Sent({{"Authorization", "Basic s3cret-token-0123"}})));

  // The cookie the login sets: an HMAC of the token, HttpOnly and SameSite=Strict.
  const std::string set_cookie = guards.SessionSetCookie();
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  CHECK(cookie.starts_with("hookbox_session="));
  CHECK(cookie.size() == std::string("hookbox_session=").size() + 64);
  CHECK(set_cookie == cookie + "; Path=/; HttpOnly; SameSite=Strict");
  CHECK(set_cookie.find("s3cret-token-0123") == std::string::npos);
  CHECK(guards.Authorized(Sent({{"Cookie", cookie}})));
  CHECK(guards.Authorized(Sent({{"Cookie", "theme=dark;  " + cookie + "; lang=en"}})));
  CHECK(guards.Authorized(Sent({{"Cookie", "theme=dark"}, {"Cookie", cookie}})));
  CHECK_FALSE(guards.Authorized(Sent({{"Cookie", cookie + "0"}})));
  CHECK_FALSE(guards.Authorized(Sent({{"Cookie", "x" + cookie}})));
  // A wrong Bearer is not rescued by a good cookie.
  CHECK_FALSE(guards.Authorized(Sent({{"Authorization", "Bearer wrong"}, {"Cookie", cookie}})));
  // Another token's session is not this one's: changing the token ends every session.
  const Guards changed({}, "another-token-4567", kKey);
  CHECK_FALSE(changed.Authorized(Sent({{"Cookie", cookie}})));
}

TEST_CASE("RefusedPost: another site's Origin or Sec-Fetch-Site, whatever the form", "[guards]") {
  const ListeningOn listener("127.0.0.1");
  const Guards& guards = listener.guards;
  const FormFields none;
  const std::string other_site = "This request came from another site.";
  const Headers host = {{"Host", "127.0.0.1:8099"}};
  CHECK_FALSE(guards.RefusedPost(Sent(host), none, FormToken::kNone));
  for (const char* origin :
       {"http://127.0.0.1:8099", "https://127.0.0.1:8099", "HTTP://127.0.0.1:8099"}) {
    Headers h = host;
    h.emplace("Origin", origin);
    CHECK_FALSE(guards.RefusedPost(Sent(h), none, FormToken::kNone));
  }
  for (const char* origin : {"http://evil.example", "http://127.0.0.1:9999", "null", ""}) {
    INFO(origin);
    Headers h = host;
    h.emplace("Origin", origin);
    CHECK(guards.RefusedPost(Sent(h), none, FormToken::kNone) == other_site);
  }
  for (const char* site : {"same-origin", "none"}) {
    CHECK_FALSE(guards.RefusedPost(Sent({{"Sec-Fetch-Site", site}}), none, FormToken::kNone));
  }
  for (const char* site : {"cross-site", "same-site"}) {
    CHECK(guards.RefusedPost(Sent({{"Sec-Fetch-Site", site}}), none, FormToken::kNone) ==
          other_site);
  }
}

TEST_CASE("RefusedPost: each form's CSRF token, tied to what it acts on", "[guards]") {
  const ListeningOn listener("127.0.0.1");
  const Guards& guards = listener.guards;
  const std::string stale =
      "The form's token is missing or out of date (the daemon may have restarted): open the "
      "event's page again and repeat.";
  auto refused = [&](const FormFields& form, FormToken token) {
    return guards.RefusedPost(Sent({{"Host", "127.0.0.1:8099"}}), form, token);
  };
  const std::string event = guards.CsrfToken("ep", "evt_1");
  CHECK(event.size() == 64);
  CHECK(event == guards.CsrfToken("ep", "evt_1"));
  CHECK_FALSE(refused({{"endpoint", "ep"}, {"id", "evt_1"}, {"csrf", event}}, FormToken::kEvent));
  CHECK(refused({{"endpoint", "ep"}, {"id", "evt_2"}, {"csrf", event}}, FormToken::kEvent) ==
        stale);
  CHECK(refused({{"endpoint", "ep2"}, {"id", "evt_1"}, {"csrf", event}}, FormToken::kEvent) ==
        stale);
  CHECK(refused({{"endpoint", "ep"}, {"id", "evt_1"}}, FormToken::kEvent) == stale);
  // The same name as a handler is bound apart from the event's.
  const std::string handler = guards.HandlerToken("ep", "evt_1");
  CHECK(handler != event);
  CHECK_FALSE(
      refused({{"endpoint", "ep"}, {"id", "evt_1"}, {"csrf", handler}}, FormToken::kHandler));
  CHECK(refused({{"endpoint", "ep"}, {"id", "evt_1"}, {"csrf", event}}, FormToken::kHandler) ==
        stale);
  CHECK(refused({{"endpoint", "ep"}, {"id", "evt_1"}, {"csrf", handler}}, FormToken::kEvent) ==
        stale);
  // The bulk form's is tied to no event.
  CHECK_FALSE(refused({{"csrf", guards.BulkCsrfToken()}}, FormToken::kBulk));
  CHECK(refused({{"csrf", event}}, FormToken::kBulk) == stale);
  // A restart draws another key: every open form is out of date.
  Guards restarted({}, "", std::string(32, 'r'));
  restarted.SetListener("127.0.0.1", 8099);
  CHECK(restarted.CsrfToken("ep", "evt_1") != event);
  CHECK(restarted.RefusedPost(Sent({}), {{"endpoint", "ep"}, {"id", "evt_1"}, {"csrf", event}},
                              FormToken::kEvent) == stale);
}
