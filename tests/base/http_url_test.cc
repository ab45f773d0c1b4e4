// ParseHttpUrl and HttpUrl::ToString (base/http_url.h): what an http(s) URL parses to (scheme,
// host, default and given ports, path and query as written, IPv6 in brackets), and each
// refusal with the words it gives: another scheme, credentials, a fragment, whitespace or a
// control character, no host, a bad port, an unbracketed or unclosed IPv6 address.
#include "base/http_url.h"

#include <catch2/catch.hpp>
#include <string>

using namespace hookbox;

namespace {

// The reason ParseHttpUrl gives for refusing `text`, or "<parsed>" when it did not.
std::string WhyNotUrl(const std::string& text) {
  auto url = ParseHttpUrl(text);
  if (url.ok()) return "<parsed>";
  CHECK(url.status().code() == Status::Code::kInvalidArgument);
  return url.status().what();
}

}  // namespace

TEST_CASE("ParseHttpUrl: host, port, path and query as written", "[http_url]") {
  auto url = ParseHttpUrl("http://127.0.0.1:8080/a/b?c=d");
  REQUIRE(url.ok());
  CHECK_FALSE(url->https);
  CHECK(url->host == "127.0.0.1");
  CHECK(url->port == 8080);
  CHECK(url->path == "/a/b?c=d");

  auto https = ParseHttpUrl("https://example.com");
  REQUIRE(https.ok());
  CHECK(https->https);
  CHECK(https->port == 443);
  CHECK(https->path == "/");

  CHECK(ParseHttpUrl("http://example.com/x")->port == 80);
  CHECK(ParseHttpUrl("https://example.com:8443/")->port == 8443);
  // A query with no path gets the path "/"; percent escapes are kept, not decoded.
  CHECK(ParseHttpUrl("http://h?q=1")->path == "/?q=1");
  CHECK(ParseHttpUrl("http://h/a%20b?x=%2F")->path == "/a%20b?x=%2F");
  CHECK(ParseHttpUrl("http://h:1/")->port == 1);
  CHECK(ParseHttpUrl("http://h:65535/")->port == 65535);
}

TEST_CASE("ParseHttpUrl: an IPv6 literal in brackets, kept without them", "[http_url]") {
  auto v6 = ParseHttpUrl("http://[::1]:9/x");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->port == 9);
  CHECK(v6->path == "/x");
  auto bare = ParseHttpUrl("https://[2001:db8::1]");
  REQUIRE(bare.ok());
  CHECK(bare->host == "2001:db8::1");
  CHECK(bare->port == 443);
}

TEST_CASE("ParseHttpUrl: each refusal says why", "[http_url]") {
  const std::string scheme = "must start with http:// or https://";
  for (const char* text : {"", "ftp://example.com/x", "HTTP://h/", "//h/", "example.com"}) {
    INFO(text);
    CHECK(WhyNotUrl(text) ==
          "\"" + std::string(text) + "\" is not an http(s) URL (" + scheme + ")");
  }
  CHECK(WhyNotUrl("http://u:pw@host/") ==
        "\"http://u:pw@host/\" is not an http(s) URL "
        "(no user:password@; send credentials in headers)");
  CHECK(WhyNotUrl("http://h/#frag") == "\"http://h/#frag\" is not an http(s) URL (no #fragment)");
  for (const char* text : {"http://h/a b", "http://h/\t", "http://h/\x7f", " http://h/"}) {
    INFO(text);
    CHECK(WhyNotUrl(text).ends_with("(whitespace or control character)"));
  }
  for (const char* text : {"http://", "http://:80/", "http:///x", "https://?q", "http://[]:80/"}) {
    INFO(text);
    CHECK(WhyNotUrl(text).ends_with("(no host)"));
  }
  for (const char* text : {"http://h:/", "http://h:0/", "http://h:65536/", "http://h:99999/",
                           "http://h:-1/", "http://h:8o/", "http://[::1]:/"}) {
    INFO(text);
    CHECK(WhyNotUrl(text).ends_with("(port must be 1-65535)"));
  }
  CHECK(WhyNotUrl("http://::1/").ends_with("(put an IPv6 address in brackets)"));
  CHECK(WhyNotUrl("http://[::1/").ends_with("(missing \"]\")"));
  CHECK(WhyNotUrl("http://[::1]x/").ends_with("(junk after \"]\")"));
}

TEST_CASE("HttpUrl::ToString: scheme, host, port always, then the path", "[http_url]") {
  CHECK(ParseHttpUrl("http://example.com")->ToString() == "http://example.com:80/");
  CHECK(ParseHttpUrl("https://example.com/a?b=c")->ToString() == "https://example.com:443/a?b=c");
  CHECK(ParseHttpUrl("http://[::1]:9/x")->ToString() == "http://[::1]:9/x");
  // What it prints parses back to the same URL.
  for (const char* text :
       {"http://127.0.0.1:8080/a/b?c=d", "https://[2001:db8::1]/", "http://h?q"}) {
    INFO(text);
    auto url = ParseHttpUrl(text);
    REQUIRE(url.ok());
    auto again = ParseHttpUrl(url->ToString());
    REQUIRE(again.ok());
    CHECK(again->https == url->https);
    CHECK(again->host == url->host);
    CHECK(again->port == url->port);
    CHECK(again->path == url->path);
  }
}
