// HttpPost (http/client.h) against real servers on 127.0.0.1, port 0: what it sends (path and
// query, headers, Content-Type, body), that any status is a reply and a redirect is not
// followed, the body kept to kMaxReplyBody, https through a certificate it trusts; and each
// failure it documents as Status::Unavailable with its words and the URL: cannot connect,
// closed without an answer, timed out, a head over kMaxReplyHead bytes or kMaxReplyHeaders
// lines, a certificate it cannot verify. The http handler's use of it is
// tests/handlers/http_test.cc.
#include "http/client.h"

#include <httplib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "tests/http/raw_peer.h"

using namespace hookbox;
using std::chrono::milliseconds;

namespace {

// cpp-httplib's server on a port of its own, answering every POST with `answer`.
class HttplibPeer final {
 public:
  using Respond = std::function<void(const httplib::Request&, httplib::Response&)>;
  explicit HttplibPeer(Respond answer, httplib::Server* server = nullptr)
      : server_(server != nullptr ? *server : own_) {
    server_.Post(".*", std::move(answer));
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();  // a stop() before is lost
  }
  ~HttplibPeer() {
    server_.stop();
    thread_.join();
  }
  HttpUrl Url(const std::string& path, bool https = false) const {
    return HttpUrl{.https = https, .host = "127.0.0.1", .port = port_, .path = path};
  }

 private:
  httplib::Server own_;
  httplib::Server& server_;
  int port_ = 0;
  std::thread thread_;
};

// The URL of a raw peer (tests/http/raw_peer.h).
HttpUrl UrlOf(const testing::RawPeer& peer) {
  return HttpUrl{.host = "127.0.0.1", .port = peer.port(), .path = "/raw"};
}

// A 200 with `count` header lines of `line` before its Content-Length.
std::string HeadOfLines(const std::string& line, size_t count,
                        const std::string& status_line = "HTTP/1.1 200 OK") {
  std::string answer = status_line + "\r\n";
  for (size_t i = 0; i < count; ++i) answer += line + "\r\n";
  return answer + "Content-Length: 0\r\n\r\n";
}

StatusOr<HttpReply> PostTo(const HttpUrl& url, milliseconds timeout = milliseconds(10'000)) {
  return HttpPost(url, {{"X-Test", "1"}}, R"({"a":1})", "application/json", timeout);
}

// The failure `reply` should be: Unavailable, saying `what`, about `url`.
void CheckUnavailable(const StatusOr<HttpReply>& reply, const std::string& what,
                      const HttpUrl& url) {
  REQUIRE_FALSE(reply.ok());
  CHECK(reply.status().code() == Status::Code::kUnavailable);
  CHECK(reply.status().what() == what);
  CHECK(reply.status().ToString() == what + ": " + url.ToString());  // "what: about"
}

}  // namespace

TEST_CASE("HttpPost: the request as given; any status is a reply; no redirect followed",
          "[client]") {
  std::string path, body, type, test_header;  // the server's thread writes them before answering
  HttplibPeer peer([&](const httplib::Request& req, httplib::Response& res) {
    path = req.path + "?" + req.get_param_value("q");
    body = req.body;
    type = req.get_header_value("Content-Type");
    test_header = req.get_header_value("X-Test");
    res.status = req.path == "/moved" ? 302 : 503;
    res.set_header("Location", "/elsewhere");
    res.set_header("Retry-After", "7");
    res.set_content("try later", "text/plain");
  });
  auto reply = PostTo(peer.Url("/hook?q=v"));
  REQUIRE(reply.ok());
  CHECK(path == "/hook?v");
  CHECK(body == R"({"a":1})");
  CHECK(type == "application/json");
  CHECK(test_header == "1");
  CHECK(reply->status == 503);
  CHECK(reply->body == "try later");
  CHECK(HeaderValue(reply->headers, "retry-after") == "7");

  auto moved = PostTo(peer.Url("/moved"));
  REQUIRE(moved.ok());
  CHECK(moved->status == 302);
  CHECK(HeaderValue(moved->headers, "Location") == "/elsewhere");
}

TEST_CASE("HttpPost: the first kMaxReplyBody bytes of the body are kept", "[client]") {
  const std::string big = std::string(kMaxReplyBody, 'a') + std::string(40'000, 'b');
  HttplibPeer peer(
      [&](const httplib::Request&, httplib::Response& res) { res.set_content(big, "text/plain"); });
  auto reply = PostTo(peer.Url("/big"));
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
  CHECK(reply->body == std::string(kMaxReplyBody, 'a'));
}

TEST_CASE("HttpPost: no listener, or a peer that closes, is Unavailable", "[client]") {
  HttpUrl nowhere;
  {
    testing::RawPeer closed("");  // takes one connection, then the port is free again
    nowhere = UrlOf(closed);
    CheckUnavailable(PostTo(nowhere), "connection closed or read timed out", nowhere);
  }
  CheckUnavailable(PostTo(nowhere), "cannot connect", nowhere);
}

TEST_CASE("HttpPost: an answer slower than the timeout is Unavailable: timed out", "[client]") {
  std::mutex mutex;
  std::condition_variable wake;
  bool over = false;
  HttplibPeer peer([&](const httplib::Request&, httplib::Response& res) {
    std::unique_lock<std::mutex> lock(mutex);
    wake.wait_for(lock, std::chrono::seconds(10), [&] { return over; });
    res.status = 200;
  });
  const HttpUrl url = peer.Url("/slow");
  CheckUnavailable(PostTo(url, milliseconds(200)), "timed out", url);
  {
    std::lock_guard<std::mutex> lock(mutex);
    over = true;
  }
  wake.notify_all();
}

TEST_CASE("HttpPost: a head of more than 64 KiB or 256 lines is Unavailable", "[client]") {
  {
    testing::RawPeer peer(HeadOfLines("X-Pad: " + std::string(7000, 'p'), 10));
    CheckUnavailable(PostTo(UrlOf(peer)), "response head over 64 KiB", UrlOf(peer));
  }
  {
    testing::RawPeer peer(HeadOfLines("X-Flood: y", 400'000));
    CheckUnavailable(PostTo(UrlOf(peer)), "response head over 64 KiB", UrlOf(peer));
  }
  {
    testing::RawPeer peer(HeadOfLines("X-A: b", kMaxReplyHeaders - 1));  // and Content-Length: 256
    auto reply = PostTo(UrlOf(peer));
    REQUIRE(reply.ok());
    CHECK(reply->status == 200);
  }
  for (const char* status_line : {"HTTP/1.1 200 OK", "HTTP/1.1 204 No Content"}) {
    INFO(status_line);
    testing::RawPeer peer(HeadOfLines("X-A: b", kMaxReplyHeaders, status_line));
    CheckUnavailable(PostTo(UrlOf(peer)), "response has over 256 header lines", UrlOf(peer));
  }
}

TEST_CASE("HttpPost over https: a trusted certificate works, another is refused", "[client]") {
  // A self-signed certificate for 127.0.0.1, made by the openssl command.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hookbox-client-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string cert = dir / "cert.pem", key = dir / "key.pem";
  const std::string make =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
      "-days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
      "-keyout " +
      key + " -out " + cert + " 2>/dev/null";
  REQUIRE(std::system(make.c_str()) == 0);
  httplib::SSLServer tls(cert.c_str(), key.c_str());
  REQUIRE(tls.is_valid());
  HttplibPeer peer([](const httplib::Request& req,
                      httplib::Response& res) { res.set_content("tls:" + req.body, "text/plain"); },
                   &tls);
  const HttpUrl url = peer.Url("/secure", true);

  ::setenv("SSL_CERT_FILE", cert.c_str(), 1);  // OpenSSL's default trust store
  auto trusted = PostTo(url);
  ::unsetenv("SSL_CERT_FILE");
  auto untrusted = PostTo(url);
  std::filesystem::remove_all(dir);

  REQUIRE(trusted.ok());
  CHECK(trusted->status == 200);
  CHECK(trusted->body == R"(tls:{"a":1})");
  CheckUnavailable(untrusted, "TLS certificate verification failed", url);
}
