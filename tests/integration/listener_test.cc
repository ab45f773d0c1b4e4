// End-to-end tests of the listener on raw sockets: the real daemon, bytes written by hand,
// so that what reaches the parser is exactly what a client (or an attacker) sends. Each
// test is one of the defects the rebuilt listener fixed: a slow-client bypass through a
// head the old edge read differently, header values percent-decoded into one event,
// half-closed clients left unanswered, malformed hand-written answers, `Expect:
// 100-continue` ignored, chunked bodies refused, and pipelined requests.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <thread>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::GithubSigned;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

constexpr const char* kSecret = "gh-secret-for-listener-tests";

const std::string kConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
limits: {max_body: 4KiB, read_timeout: 2s, threads: 4}
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{value: "gh-secret-for-listener-tests"}]
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
)";

// One client connection, written to and read from by hand.
class Conn {
 public:
  explicit Conn(int port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~Conn() { close(fd_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  void HalfClose() { shutdown(fd_, SHUT_WR); }

  // Reads one response: its head, and a body of exactly its Content-Length. Empty when
  // nothing whole came within `timeout` (or the server closed first).
  std::string Response(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const size_t end = in_.find("\r\n\r\n");
      if (end != std::string::npos) {
        const std::string head = in_.substr(0, end);
        size_t length = 0;
        const size_t at = head.find("Content-Length: ");
        if (at != std::string::npos) length = std::stoul(head.substr(at + 16));
        if (in_.size() >= end + 4 + length) {
          std::string out = in_.substr(0, end + 4 + length);
          in_.erase(0, out.size());
          return out;
        }
      }
      if (!Read(deadline)) return "";
    }
  }

  // True when the server closed the connection within `timeout` (nothing more to read).
  bool Closed(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (Read(deadline)) {
    }
    return closed_;
  }

  // Whatever arrived within `timeout`, taken.
  std::string Pending(std::chrono::milliseconds timeout) {
    Read(std::chrono::steady_clock::now() + timeout);
    return std::exchange(in_, "");
  }

 private:
  bool Read(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  std::string in_;
  bool closed_ = false;
};

int StatusOf(const std::string& response) {
  return response.size() > 12 && response.rfind("HTTP/1.1 ", 0) == 0
             ? std::stoi(response.substr(9, 3))
             : 0;
}

std::string BodyOf(const std::string& response) {
  return response.substr(response.find("\r\n\r\n") + 4);
}

// Every answer's Content-Length is the length of the body that follows it.
void CheckWellFormed(const std::string& response) {
  INFO(response);
  const size_t end = response.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  const size_t at = response.find("Content-Length: ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoul(response.substr(at + 16)) == response.size() - end - 4);
  CHECK(json::parse(BodyOf(response), nullptr, false).is_object());
}

std::string OpenPost(const std::string& id, const std::string& extra_headers = "") {
  const std::string body = json{{"id", id}}.dump();
  return "POST /hooks/open HTTP/1.1\r\nHost: x\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

TEST_CASE("heads the old edge misread are refused at once; slow bodies hold no thread",
          "[listener]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string post = "POST /hooks/open HTTP/1.1\r\nHost: x\r\n";
  for (const std::string& head :
       {post + "X-A: 1\nContent-Length: 1000\r\n\r\n", post + "Content-Length: %31000\r\n\r\n",
        post + "X-A: 1\r\n X-B: 2\r\nContent-Length: 1000\r\n\r\n"}) {
    Conn c(d.port());
    REQUIRE(c.Send(head + "x"));
    const std::string r = c.Response(std::chrono::milliseconds(1000));
    INFO(head);
    CHECK(StatusOf(r) == 400);
    CheckWellFormed(r);
    CHECK(c.Closed());
  }
  // 12 clients (threads: 4) that announce 1000 bytes and trickle them: deliveries from
  // other clients are answered meanwhile, and the trickling ones are cut at read_timeout.
  std::vector<std::unique_ptr<Conn>> slow;
  for (int i = 0; i < 12; ++i) {
    slow.push_back(std::make_unique<Conn>(d.port()));
    REQUIRE(slow.back()->Send(post + "Content-Length: 1000\r\n\r\n{"));
  }
  for (int i = 0; i < 5; ++i) {
    for (auto& s : slow) s->Send(" ");
    Conn c(d.port());
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(c.Send(OpenPost("evt-fast-" + std::to_string(i))));
    CHECK(StatusOf(c.Response(std::chrono::milliseconds(1500))) == 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(100) -
                                (std::chrono::steady_clock::now() - started));
  }
  for (auto& s : slow) CHECK(s->Closed(std::chrono::milliseconds(4000)));  // read_timeout 2 s
  CHECK(d.WaitForLog("connections closed at the edge"));
  CHECK(d.Rows().size() == 5);
}

TEST_CASE("header values are opaque: percent signs are not decoded", "[listener]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  auto deliver = [&](const std::string& delivery, const std::string& body) {
    std::string head = "POST /hooks/github HTTP/1.1\r\nHost: x\r\n";
    for (const auto& [k, v] : GithubSigned(kSecret, body, delivery)) head += k + ": " + v + "\r\n";
    Conn c(d.port());
    REQUIRE(c.Send(head + "Content-Type: application/json\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body));
    return json::parse(BodyOf(c.Response()));
  };
  CHECK(deliver("k%41-1", R"({"n":1})") == json{{"status", "ignored"}, {"event_id", "k%41-1"}});
  CHECK(deliver("kA-1", R"({"n":2})") == json{{"status", "ignored"}, {"event_id", "kA-1"}});
  CHECK(deliver("k%1b-2", R"({"n":3})")["event_id"] == "k%1b-2");
  CHECK(d.Rows().size() == 3);
  const std::string headers = d.Cli({"inbox", "show", "gh", "k%1b-2"}).out;
  CHECK(headers.find("k%1b-2") != std::string::npos);
  CHECK(headers.find('\x1b') == std::string::npos);
}

TEST_CASE("a client that half-closes after its request gets its answer", "[listener]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  for (int i = 0; i < 20; ++i) {
    Conn c(d.port());
    REQUIRE(c.Send(OpenPost("evt-half-" + std::to_string(i))));
    c.HalfClose();
    const std::string r = c.Response();
    INFO("round " << i);
    CHECK(StatusOf(r) == 200);
    CHECK(c.Closed());
  }
  CHECK(d.Rows().size() == 20);
}

TEST_CASE("pipelined requests are answered in order on one connection", "[listener]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  Conn c(d.port());
  REQUIRE(c.Send(OpenPost("p-1") + OpenPost("p-2") + "GET /hooks/open HTTP/1.1\r\nHost: x\r\n\r\n" +
                 OpenPost("p-1")));
  CHECK(json::parse(BodyOf(c.Response())) == json{{"status", "ignored"}, {"event_id", "p-1"}});
  CHECK(json::parse(BodyOf(c.Response())) == json{{"status", "ignored"}, {"event_id", "p-2"}});
  CHECK(StatusOf(c.Response()) == 405);
  CHECK(json::parse(BodyOf(c.Response())) == json{{"status", "duplicate"}, {"event_id", "p-1"}});
}

TEST_CASE("chunked bodies are accepted, decoded, and bounded by max_body", "[listener]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string head =
      "POST /hooks/open HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  {
    Conn c(d.port());
    REQUIRE(c.Send(head + "7;note=x\r\n{\"id\":\"\r\n"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // chunks in separate packets
    REQUIRE(c.Send("8\r\nchunked\"\r\n1\r\n}\r\n0\r\nX-Trailer: t\r\n\r\n"));
    const std::string r = c.Response();
    CHECK(StatusOf(r) == 200);
    CHECK(json::parse(BodyOf(r)) == json{{"status", "ignored"}, {"event_id", "chunked"}});
  }
  {
    Conn c(d.port());
    REQUIRE(c.Send(head));
    std::string r;
    for (int i = 0; i < 10 && r.empty(); ++i) {  // 10 x 1 KiB against max_body 4 KiB
      c.Send("400\r\n" + std::string(1024, 'x') + "\r\n");
      r = c.Response(std::chrono::milliseconds(200));
    }
    CHECK(StatusOf(r) == 413);
    CheckWellFormed(r);
  }
  json rows = d.Rows();
  REQUIRE(rows.size() == 1);
  CHECK(d.Cli({"inbox", "show", "open", "chunked"}).out.find(R"({"id":"chunked"})") !=
        std::string::npos);
}

TEST_CASE("Expect: 100-continue is answered from the head", "[listener]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string body = R"({"id":"evt-continue"})";
  SECTION("a good head: 100 Continue at once, then the answer") {
    Conn c(d.port());
    REQUIRE(
        c.Send("POST /hooks/open HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
               "Content-Length: " +
               std::to_string(body.size()) + "\r\n\r\n"));
    CHECK(c.Pending(std::chrono::milliseconds(1000)) == "HTTP/1.1 100 Continue\r\n\r\n");
    REQUIRE(c.Send(body));
    CHECK(StatusOf(c.Response()) == 200);
  }
  SECTION("a body over max_body: 413 and never 100 Continue") {
    Conn c(d.port());
    REQUIRE(
        c.Send("POST /hooks/open HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
               "Content-Length: 5000\r\n\r\n"));
    const std::string r = c.Response(std::chrono::milliseconds(1000));
    CHECK(StatusOf(r) == 413);
    CheckWellFormed(r);
  }
  SECTION("no endpoint at the path: 404 before the body") {
    Conn c(d.port());
    REQUIRE(
        c.Send("POST /hooks/nope HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
               "Content-Length: 10\r\n\r\n"));
    const std::string r = c.Response(std::chrono::milliseconds(1000));
    CHECK(StatusOf(r) == 404);
    CheckWellFormed(r);
  }
}

TEST_CASE("every refusal is a well-formed answer", "[listener]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string post = "POST /hooks/open HTTP/1.1\r\nHost: x\r\n";
  struct Case {
    std::string bytes;
    int status;
  };
  const Case cases[] = {
      {post + "X-Big: " + std::string(70 * 1024, 'a') + "\r\n\r\n", 431},  // head > 64 KiB
      {post + "Transfer-Encoding: gzip\r\n\r\n", 501},
      {post + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400},
      {"POST /hooks/open HTTP/1.1\nContent-Length: 2\n\n{}", 400},
      {post + "\r\n", 411},
      {"POST /hooks/open HTTP/3.0\r\nContent-Length: 2\r\n\r\n{}", 505},
  };
  for (const Case& k : cases) {
    Conn c(d.port());
    c.Send(k.bytes);
    const std::string r = c.Response(std::chrono::milliseconds(2000));
    INFO(k.bytes.substr(0, 80));
    CHECK(StatusOf(r) == k.status);
    CheckWellFormed(r);
    CHECK(c.Closed());
  }
  CHECK(d.Rows().empty());
}

TEST_CASE("HTTP/1.0 chunked is the last request; Host once; absolute targets route by path",
          "[listener]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  const std::string body = R"({"id":"evt-10"})";
  SECTION("HTTP/1.0 with Transfer-Encoding: chunked: answered, then closed (RFC 9112 6.1)") {
    Conn c(d.port());
    std::ostringstream size;
    size << std::hex << body.size();
    REQUIRE(
        c.Send("POST /hooks/open HTTP/1.0\r\nConnection: keep-alive\r\n"
               "Transfer-Encoding: chunked\r\n\r\n" +
               size.str() + "\r\n" + body + "\r\n0\r\n\r\n" + OpenPost("evt-smuggled")));
    const std::string r = c.Response();
    CHECK(StatusOf(r) == 200);
    CHECK(r.find("Connection: close\r\n") != std::string::npos);
    CHECK(c.Closed());
    const json rows = d.Rows();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]["event_id"] == "evt-10");
  }
  SECTION("HTTP/1.1 without Host, or with two: 400 (RFC 9112 3.2)") {
    for (const std::string& hosts : {std::string(), std::string("Host: x\r\nHost: y\r\n")}) {
      Conn c(d.port());
      REQUIRE(c.Send("POST /hooks/open HTTP/1.1\r\n" + hosts +
                     "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
      const std::string r = c.Response();
      INFO(hosts);
      CHECK(StatusOf(r) == 400);
      CheckWellFormed(r);
      CHECK(c.Closed());
    }
    CHECK(d.Rows().empty());
  }
  SECTION("an absolute-form target routes by its own path, never by its query") {
    Conn c(d.port());
    REQUIRE(
        c.Send("POST http://evil.example?x=/hooks/open HTTP/1.1\r\nHost: x\r\n"
               "Content-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body));
    CHECK(StatusOf(c.Response()) == 404);
    CHECK(d.Rows().empty());
    Conn routed(d.port());
    REQUIRE(
        routed.Send("POST http://hooks.example/hooks/open?x=/y HTTP/1.1\r\nHost: x\r\n"
                    "Content-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body));
    CHECK(StatusOf(routed.Response()) == 200);
    CHECK(d.Rows().size() == 1);
  }
}
