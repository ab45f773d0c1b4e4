// Unit tests of the HTTP listener's lifecycle: a shutdown closes idle keep-alive
// connections at once (a keep-alive timeout of an hour would otherwise hold Run() for an
// hour: ctest's timeout is the bound), still answers a request in flight, and a listening
// socket made elsewhere (systemd socket activation) can be adopted; each request carries
// its client's address.
#include "http/server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <future>
#include <thread>

using namespace hookbox;

namespace {

HttpLimits SlowLimits() {
  HttpLimits limits;
  limits.threads = 4;
  limits.keep_alive_timeout_s = 3600;
  return limits;
}

Answer Hello(const Delivery& d) { return {200, R"({"path":")" + d.path + R"("})", {}}; }

// A server running on its own thread until the object goes.
class Running {
 public:
  Running(HttpLimits limits, DeliveryHandler handler) : server(limits, std::move(handler)) {}
  ~Running() {
    server.Stop();
    if (thread.joinable()) thread.join();
  }
  void Start() {
    thread = std::thread([this] { server.Run(); });
  }
  HttpServer server;
  std::thread thread;
};

int ConnectTo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  timeval tv{20, 0};  // bounds a broken test
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Reads one whole response (headers and a Content-Length body) from fd.
std::string ReadResponse(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {
    size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t at = in.find("Content-Length: ");
      size_t length = at == std::string::npos ? 0 : std::stoul(in.substr(at + 16));
      if (in.size() >= end + 4 + length) return in;
    }
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return in;
    in.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

TEST_CASE("a shutdown closes idle keep-alive connections at once") {
  Running r(SlowLimits(), Hello);
  auto port = r.server.Bind("127.0.0.1", 0);
  REQUIRE(port.ok());
  r.Start();
  int fd = ConnectTo(*port);
  const std::string request = "GET /one HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  std::string first = ReadResponse(fd);
  CHECK(first.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(first.find("Keep-Alive: timeout=3600") != std::string::npos);  // left open, idle
  r.server.Stop();
  r.thread.join();  // returns now, not after the hour-long keep-alive
  char byte;
  CHECK(recv(fd, &byte, 1, 0) == 0);  // the server closed it
  close(fd);
}

TEST_CASE("a request in flight when the shutdown starts is still answered, and last") {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  Running r(SlowLimits(), [&](const Delivery& d) {
    entered.set_value();
    released.wait();
    return Hello(d);
  });
  auto port = r.server.Bind("127.0.0.1", 0);
  REQUIRE(port.ok());
  r.Start();
  auto reply = std::async(std::launch::async, [&] {
    httplib::Client client("127.0.0.1", *port);
    client.set_read_timeout(std::chrono::seconds(20));
    return client.Get("/slow");
  });
  entered.get_future().wait();
  r.server.Stop();  // while the handler runs
  CHECK_FALSE(r.server.Serving());
  release.set_value();
  auto result = reply.get();
  REQUIRE(result);
  CHECK(result->status == 200);
  CHECK(result->body == R"({"path":"/slow"})");
  CHECK(result->get_header_value("Connection") == "close");
  r.thread.join();
}

TEST_CASE("a listening socket made elsewhere is adopted and served") {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(fd, 16) == 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);

  Running r(HttpLimits{}, Hello);
  auto address = r.server.Adopt(fd);
  REQUIRE(address.ok());
  CHECK(*address == "127.0.0.1:" + std::to_string(port));
  r.Start();
  httplib::Client client("127.0.0.1", port);
  auto result = client.Get("/adopted");
  REQUIRE(result);
  CHECK(result->status == 200);
  CHECK(result->body == R"({"path":"/adopted"})");
}

TEST_CASE("only a listening stream socket can be adopted") {
  HttpServer server(HttpLimits{}, Hello);
  int unbound = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK_FALSE(server.Adopt(unbound).ok());
  int datagram = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  CHECK_FALSE(server.Adopt(datagram).ok());
  close(unbound);
  close(datagram);
}

TEST_CASE("an answer may name its own content type") {
  Running r(HttpLimits{}, [](const Delivery&) {
    return Answer{200, "metric 1\n", {{"Content-Type", "text/plain; version=0.0.4"}}};
  });
  auto port = r.server.Bind("127.0.0.1", 0);
  REQUIRE(port.ok());
  r.Start();
  httplib::Client client("127.0.0.1", *port);
  auto result = client.Get("/metrics");
  REQUIRE(result);
  CHECK(result->get_header_value("Content-Type") == "text/plain; version=0.0.4");
  CHECK(result->get_header_value_count("Content-Type") == 1);
}

TEST_CASE("a 204 answer has no body, Content-Length or type (RFC 9110)") {
  // Discord's PING is answered 204; a keep-alive client must find the next response
  // right after the empty line.
  const std::string bytes = FormatAnswer({204, "ignored", {}}, /*keep_alive=*/true, 5);
  CHECK(bytes.starts_with("HTTP/1.1 204 No Content\r\n"));
  CHECK(bytes.ends_with("\r\n\r\n"));
  CHECK(bytes.find("Content-Length") == std::string::npos);
  CHECK(bytes.find("Content-Type") == std::string::npos);
  CHECK(bytes.find("ignored") == std::string::npos);
  // Every other status keeps its length.
  CHECK(FormatAnswer({200, "{}", {}}, true, 5).find("Content-Length: 2\r\n") != std::string::npos);
}

TEST_CASE("each request on a keep-alive connection carries the client's address and port") {
  Running r(HttpLimits{}, [](const Delivery& d) { return Answer{200, d.remote, {}}; });
  auto port = r.server.Bind("127.0.0.1", 0);
  REQUIRE(port.ok());
  r.Start();
  int fd = ConnectTo(*port);
  sockaddr_in mine{};
  socklen_t len = sizeof mine;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &len) == 0);
  const std::string expected = "127.0.0.1:" + std::to_string(ntohs(mine.sin_port));
  const std::string request = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 3; ++i) {  // the address is read once per connection, kept for each
    REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size()));
    const std::string response = ReadResponse(fd);
    REQUIRE(response.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(response.substr(response.find("\r\n\r\n") + 4) == expected);
  }
  close(fd);
}

TEST_CASE("an idle keep-alive connection is closed after keep_alive_timeout") {
  HttpLimits limits;
  limits.keep_alive_timeout_s = 1;
  Running r(limits, Hello);
  auto port = r.server.Bind("127.0.0.1", 0);
  REQUIRE(port.ok());
  r.Start();
  int fd = ConnectTo(*port);
  const std::string request = "GET /idle HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  CHECK(ReadResponse(fd).find("Keep-Alive: timeout=1") != std::string::npos);
  const auto idle_from = std::chrono::steady_clock::now();
  char byte;
  CHECK(recv(fd, &byte, 1, 0) == 0);  // closed by the server's sweep, not the test's bound
  const auto idle = std::chrono::steady_clock::now() - idle_from;
  CHECK(idle >= std::chrono::milliseconds(900));
  CHECK(idle < std::chrono::seconds(5));
  close(fd);
}
