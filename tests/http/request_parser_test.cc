// Unit tests of the one request parser (src/http/request_parser.h): what it takes, what it
// refuses and with which status, where a request ends (pipelining), and that it reads a
// request the same whether its bytes arrive at once or one at a time.
#include "http/request_parser.h"

#include <catch2/catch.hpp>
#include <string>

using namespace hookbox;

namespace {

ParserLimits Small() {
  ParserLimits l;
  l.max_head = 1024;
  l.max_body = 64;
  l.max_headers = 8;
  return l;
}

struct Parsed {
  size_t taken = 0;
  bool done = false;
  int refused = 0;  // the status, when refused
  std::string message;
  HttpRequest request;
};

// Feeds `bytes` as a server would: each arrival of `step` bytes is offered with what was
// not taken before.
Parsed Parse(const std::string& bytes, size_t step = 0, ParserLimits limits = Small()) {
  RequestParser p(limits);
  Parsed out;
  std::string pending;
  size_t at = 0;
  if (step == 0) step = bytes.size();
  while (at < bytes.size() && !p.done() && !p.failed()) {
    const size_t n = std::min(step, bytes.size() - at);
    pending.append(bytes, at, n);
    at += n;
    const size_t took = p.Feed(pending);
    out.taken += took;
    pending.erase(0, took);
  }
  out.done = p.done();
  if (p.failed()) {
    out.refused = p.refusal().status;
    out.message = p.refusal().message;
  }
  out.request = p.request();
  return out;
}

const std::string kPost = "POST /hooks/a HTTP/1.1\r\nHost: x\r\n";
constexpr char kNulHead[] = "X-A: a\0b\r\nContent-Length: 0\r\n\r\n";

}  // namespace

TEST_CASE("a request with a Content-Length body, whole or byte by byte") {
  const std::string bytes = kPost + "Content-Length: 2\r\nX-Id:  k%41-1 \r\n\r\n{}";
  for (size_t step : {0, 1, 3}) {
    Parsed r = Parse(bytes, step);
    INFO("step " << step);
    REQUIRE(r.done);
    CHECK(r.taken == bytes.size());
    CHECK(r.request.method == "POST");
    CHECK(r.request.target == "/hooks/a");
    CHECK(r.request.body == "{}");
    REQUIRE(r.request.headers.size() == 3);
    CHECK(r.request.headers[2].first == "X-Id");
    CHECK(r.request.headers[2].second == "k%41-1");  // kept, never percent-decoded
    CHECK(r.request.keep_alive);
  }
}

TEST_CASE("header values are kept byte for byte") {
  Parsed r = Parse(kPost + "Content-Length: 0\r\nX-Sig: a%1b\xff\"b\r\n\r\n");
  REQUIRE(r.done);
  CHECK(r.request.headers[2].second == "a%1b\xff\"b");
}

TEST_CASE("a chunked body is decoded; extensions tolerated, trailers dropped") {
  const std::string bytes = kPost +
                            "Transfer-Encoding: chunked\r\n\r\n"
                            "2;ext=1\r\n{\"\r\n3\r\na\":\r\n2\r\n1}\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (size_t step : {0, 1, 5}) {
    Parsed r = Parse(bytes, step);
    INFO("step " << step);
    REQUIRE(r.done);
    CHECK(r.taken == bytes.size());
    CHECK(r.request.chunked);
    CHECK(r.request.body == "{\"a\":1}");
    CHECK(r.request.headers.size() == 2);  // the trailer is not a header
  }
}

TEST_CASE("a chunked body over max_body is refused as it arrives") {
  std::string bytes = kPost + "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 10; ++i) bytes += "10\r\n0123456789abcdef\r\n";  // 160 > 64
  Parsed r = Parse(bytes, 7);
  CHECK(r.refused == 413);
  CHECK(r.taken < bytes.size());
}

TEST_CASE("pipelined requests: the parser stops where the first ends") {
  const std::string one = kPost + "Content-Length: 3\r\n\r\nabc";
  const std::string two = "GET /b HTTP/1.1\r\nHost: x\r\n\r\n";
  Parsed r = Parse(one + two);
  REQUIRE(r.done);
  CHECK(r.taken == one.size());
  CHECK(r.request.body == "abc");
}

TEST_CASE("refusals: each with its status") {
  struct Case {
    const char* what;
    std::string bytes;
    int status;
  };
  const std::string post = "POST /h HTTP/1.1\r\nHost: x\r\n";
  const Case cases[] = {
      {"bare LF before Content-Length", post + "X-A: 1\nContent-Length: 10\r\n\r\n", 400},
      {"bare LF ending the head", "POST /h HTTP/1.1\nContent-Length: 1\n\nx", 400},
      {"percent-encoded Content-Length", post + "Content-Length: %31000\r\n\r\n", 400},
      {"signed Content-Length", post + "Content-Length: +5\r\n\r\nabcde", 400},
      {"two different Content-Lengths", post + "Content-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
       400},
      {"Content-Length list that differs", post + "Content-Length: 2, 3\r\n\r\nabc", 400},
      {"Transfer-Encoding with Content-Length",
       post + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400},
      {"Content-Length after Transfer-Encoding",
       post + "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}", 400},
      {"gzip coding", post + "Transfer-Encoding: gzip\r\n\r\nxx", 501},
      {"gzip then chunked", post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
      {"chunked twice", post + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 501},
      {"obs-fold", post + "Content-Length: 0\r\nX-A: 1\r\n X-B: 2\r\n\r\n", 400},
      {"obs-fold after an empty value", post + "Content-Length: 0\r\nX-A:\r\n\tb\r\n\r\n", 400},
      {"no length on a POST", post + "\r\n", 411},
      {"body over max_body by Content-Length", post + "Content-Length: 65\r\n\r\n", 413},
      {"HTTP/2.0", "POST /h HTTP/2.0\r\nContent-Length: 0\r\n\r\n", 505},
      {"too many headers",
       post + "A: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\nF: 1\r\nG: 1\r\nContent-Length: 0\r\n\r\n",
       431},
      {"a head over max_head", post + "X-Big: " + std::string(2000, 'a') + "\r\n\r\n", 431},
      {"bad chunk size", post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"space before the colon", post + "Content-Length : 0\r\n\r\n", 400},
      {"NUL in a value", post + std::string(kNulHead, sizeof kNulHead - 1), 400},
  };
  for (const Case& c : cases) {
    for (size_t step : {0, 1}) {
      Parsed r = Parse(c.bytes, step);
      INFO(c.what << ", step " << step << ": " << r.message);
      CHECK(r.refused == c.status);
      CHECK_FALSE(r.done);
      CHECK_FALSE(r.message.empty());
    }
  }
}

TEST_CASE("identical Content-Length values are one value") {
  Parsed r = Parse(kPost + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}");
  REQUIRE(r.done);
  CHECK(r.request.body == "{}");
  Parsed list = Parse(kPost + "Content-Length: 2, 2\r\n\r\n{}");
  REQUIRE(list.done);
  CHECK(list.request.body == "{}");
}

TEST_CASE("Expect: 100-continue is seen once the head is in") {
  RequestParser p(Small());
  const std::string head = kPost + "Content-Length: 2\r\nExpect: 100-continue\r\n\r\n";
  CHECK(p.Feed(head) == head.size());
  CHECK(p.head_done());
  CHECK_FALSE(p.done());
  CHECK(p.request().expect_continue);
  CHECK(p.request().content_length == 2);
  CHECK(p.Feed("{}") == 2);
  CHECK(p.done());
  CHECK(p.request().body == "{}");
}

TEST_CASE("keep-alive follows the version and Connection") {
  CHECK_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  CHECK(Parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").request.keep_alive);
  CHECK_FALSE(Parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").request.keep_alive);
  CHECK(Parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n").request.keep_alive);
  // RFC 9112 §9.3: close wins over keep-alive.
  CHECK_FALSE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n").request.keep_alive);
  CHECK_FALSE(Parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: x,Close\r\n\r\n").request.keep_alive);
}

TEST_CASE("HTTP/1.0 with Transfer-Encoding: chunked is the connection's last request") {
  // RFC 9112 §6.1: an HTTP/1.0 peer may have framed it otherwise, so what follows it on the
  // connection is not read as a request; keep-alive asked for or not.
  for (const std::string connection : {"", "Connection: keep-alive\r\n"}) {
    const std::string bytes = "POST /h HTTP/1.0\r\n" + connection +
                              "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    for (size_t step : {0, 1}) {
      Parsed r = Parse(bytes, step);
      INFO(connection << "step " << step);
      REQUIRE(r.done);
      CHECK(r.request.body == "{}");
      CHECK_FALSE(r.request.keep_alive);
    }
  }
  // Without Transfer-Encoding, HTTP/1.0 keep-alive stays as asked.
  CHECK(Parse("POST /h HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}")
            .request.keep_alive);
}

TEST_CASE("Host: one, of host[:port], in every HTTP/1.1 request") {
  // RFC 9112 §3.2: 400 for an HTTP/1.1 request without Host, and for any with two.
  const std::string get = "GET /h HTTP/1.1\r\n";
  for (const std::string& head : {
           get + "\r\n",
           get + "Host: a\r\nHost: a\r\n\r\n",
           get + "Host: a\r\nhost: b\r\n\r\n",
           std::string("GET /h HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"),
           get + "Host: a b\r\n\r\n",
           get + "Host: a/b\r\n\r\n",
           get + "Host: user@a\r\n\r\n",
           get + "Host: a:80x\r\n\r\n",
           get + "Host: [::1\r\n\r\n",
       }) {
    for (size_t step : {0, 1}) {
      Parsed r = Parse(head, step);
      INFO(head << "step " << step);
      CHECK(r.refused == 400);
      CHECK(r.message.find("Host") != std::string::npos);
    }
  }
  for (const std::string host :
       {"a", "127.0.0.1:9464", "[::1]:8080", "hooks.example.com", "xn--bcher-kva.example", ""}) {
    INFO(host);
    CHECK(Parse(get + "Host: " + host + "\r\n\r\n").done);
  }
  CHECK(Parse("GET /h HTTP/1.0\r\n\r\n").done);  // HTTP/1.0 may leave it out
}

TEST_CASE("the target: origin or absolute form, or * for OPTIONS") {
  const std::string tail = " HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string target :
       {"hooks/a", "example.com:443", "ftp://example.com/hooks/a", "http:///hooks/a",
        "http://user@evil.example/hooks/a", "http://:80/hooks/a", "http://[::1/hooks/a"}) {
    Parsed r = Parse("GET " + target + tail);
    INFO(target);
    CHECK(r.refused == 400);
  }
  CHECK(Parse("GET *" + tail).refused == 400);
  CHECK(Parse("OPTIONS *" + tail).done);
  for (const std::string target :
       {"/hooks/a", "http://evil.example?x=/hooks/github", "HTTPS://h.example:8443/hooks/a?x"}) {
    INFO(target);
    CHECK(Parse("GET " + target + tail).done);
  }
}

TEST_CASE("a read that ends inside the head's last CRLF CRLF: the body is not the head") {
  // Bodies with LF line ends and indented lines, which a head may not have.
  const std::string body = "{\n  \"a\": 1\n}";
  const std::string request =
      kPost + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  const size_t head_end = request.find("\r\n\r\n");
  for (size_t cut = head_end; cut <= head_end + 4; ++cut) {
    RequestParser p(Small());
    std::string pending = request.substr(0, cut);
    pending.erase(0, p.Feed(pending));
    pending += request.substr(cut);
    pending.erase(0, p.Feed(pending));
    INFO("cut at " << cut << ": " << p.refusal().message);
    REQUIRE(p.done());
    CHECK(p.request().body == body);
    CHECK(pending.empty());
  }
  // The same with no header at all after the request line.
  const std::string bare = "GET / HTTP/1.0\r\n\r\nGET /next\n HTTP/1.1\r\n\r\n";
  for (size_t cut = 14; cut <= 19; ++cut) {
    RequestParser p(Small());
    std::string pending = bare.substr(0, cut);
    pending.erase(0, p.Feed(pending));
    pending += bare.substr(cut);
    p.Feed(pending);
    INFO("cut at " << cut << ": " << p.refusal().message);
    CHECK(p.done());
  }
}

TEST_CASE("the path: no query, no scheme and authority, not decoded") {
  CHECK(TargetPath("/hooks/a?x=1") == "/hooks/a");
  CHECK(TargetPath("/hooks/%61") == "/hooks/%61");
  CHECK(TargetPath("http://example.com/hooks/a?x") == "/hooks/a");
  CHECK(TargetPath("https://example.com") == "/");
  CHECK(TargetPath("*") == "*");
  // The authority ends at '?' or '#' as well as '/': a '/' in the query is not the path.
  CHECK(TargetPath("http://evil.example?x=/hooks/github") == "/");
  CHECK(TargetQuery("http://evil.example?x=/hooks/github") == "x=/hooks/github");
  CHECK(TargetPath("http://evil.example#/hooks/github") == "/");
  CHECK(TargetPath("HTTP://h.example:80/hooks/a?b=/c") == "/hooks/a");
}

TEST_CASE("the query: after the first '?', byte for byte") {
  CHECK(TargetQuery("/hooks/a?x=1&y=%20?z") == "x=1&y=%20?z");
  CHECK(TargetQuery("/hooks/a?") == "");
  CHECK(TargetQuery("/hooks/a") == "");
  CHECK(TargetQuery("http://example.com/a?b=c") == "b=c");
}

TEST_CASE("max_head counts the whole head, however its bytes arrive") {
  // A head of exactly max_head bytes (blank line included) is taken; one byte more is 431,
  // whole, byte by byte, or cut after its request line.
  auto head_of = [](size_t size) {
    std::string head = "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ";
    head += std::string(size - head.size() - 4, 'a');
    return head + "\r\n\r\n";
  };
  for (size_t step : {0, 1, 16, 17}) {
    INFO("step " << step);
    Parsed fits = Parse(head_of(1024), step);
    CHECK(fits.done);
    CHECK(fits.taken == 1024);
    Parsed over = Parse(head_of(1025), step);
    CHECK(over.refused == 431);
  }
}

TEST_CASE("a body's buffer grows as its bytes arrive, never past its Content-Length") {
  // A Content-Length is only a claim: nothing is allocated for bytes not yet sent.
  ParserLimits limits = Small();
  limits.max_body = 1 << 20;
  RequestParser p(limits);
  const std::string head = kPost + "Content-Length: 1000000\r\n\r\n";
  CHECK(p.Feed(head + std::string(10, 'x')) == head.size() + 10);
  CHECK(p.head_done());
  CHECK(p.request().body.capacity() < 4096);
  CHECK(p.held() < head.size() + 4096);
  // Fed in pieces, it ends at exactly its length: doubling stops at the Content-Length.
  for (size_t fed = 10; fed < 1000000; fed += 65536) {
    const size_t n = std::min<size_t>(65536, 1000000 - fed);
    CHECK(p.body_growth(n) + p.request().body.capacity() <= 1000000);
    p.Feed(std::string(n, 'x'));
  }
  REQUIRE(p.done());
  CHECK(p.request().body.size() == 1000000);
  CHECK(p.request().body.capacity() == 1000000);
}
