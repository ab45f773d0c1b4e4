// The admin listener's Host rule, through the real daemon: every path — /metrics, /healthz,
// /readyz, the console, an unknown one — answers only to a Host that names the listener (its
// own address with its port, `localhost` on loopback, or a name in `admin_hosts`). Another IP
// literal or a DNS-rebinding name gets 403, and the body of that 403 holds nothing of /metrics.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::TempDir;

namespace {

const char* const kPaths[] = {"/metrics", "/healthz",   "/readyz", "/",
                              "/dead",    "/style.css", "/nowhere"};

Daemon Start(const TempDir& dir, const std::string& admin_listen, const std::string& extra = "") {
  return Daemon(dir, "listen: 127.0.0.1:0\nadmin_listen: " + admin_listen + "\ndatabase: {DB}\n" +
                         extra + R"(endpoints:
  - name: secret-endpoint-name
    path: /hooks/open
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - file: {dir: "{DIR}/out"}
)");
}

// The status of GET `path` on the admin listener with the given Host header.
int StatusWithHost(const Daemon& d, const std::string& path, const std::string& host,
                   std::string* body = nullptr) {
  httplib::Client c("127.0.0.1", d.admin_port());
  auto r = c.Get(path.c_str(), {{"Host", host}});
  REQUIRE(r);
  if (body) *body = r->body;
  return r->status;
}

// The status line of `request`, sent as raw bytes to the admin listener on a connection of
// its own (httplib always sends HTTP/1.1 and a Host); the answer ends with the connection.
std::string AdminStatusLine(const Daemon& d, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(d.admin_port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
  }
  close(fd);
  return answer.substr(0, answer.find("\r\n"));
}

}  // namespace

TEST_CASE("admin Host: every path refuses another IP literal or a rebinding name (loopback)") {
  TempDir dir;
  Daemon d = Start(dir, "127.0.0.1:0", "admin_hosts: [hookbox.internal]\n");
  const std::string port = ":" + std::to_string(d.admin_port());
  for (const char* path : kPaths) {
    INFO(path);
    // Any IP literal that is not the listener's own.
    CHECK(StatusWithHost(d, path, "10.9.8.7" + port) == 403);
    CHECK(StatusWithHost(d, path, "192.168.1.1" + port) == 403);
    CHECK(StatusWithHost(d, path, "[2001:db8::1]" + port) == 403);
    CHECK(StatusWithHost(d, path, "127.0.0.2" + port) == 403);  // loopback, not the listener
    // DNS rebinding: the attacker's name, pointed at 127.0.0.1.
    CHECK(StatusWithHost(d, path, "rebind.evil.example" + port) == 403);
    CHECK(StatusWithHost(d, path, "127.0.0.1.nip.io" + port) == 403);
    CHECK(StatusWithHost(d, path, "localhost.evil.example" + port) == 403);
    // The right name with another port, or a Host that is not host:port.
    CHECK(StatusWithHost(d, path, "127.0.0.1:1") == 403);
    CHECK(StatusWithHost(d, path, "127.0.0.1") == 403);
    CHECK(StatusWithHost(d, path, "[127.0.0.1]" + port) == 403);
    CHECK(StatusWithHost(d, path, "") == 403);
    // The listener's own names, and what admin_hosts lists, pass the Host rule (the
    // console's pages then answer 200, /nowhere 404).
    const int expected = std::string(path) == "/nowhere" ? 404 : 200;
    CHECK(StatusWithHost(d, path, "127.0.0.1" + port) == expected);
    CHECK(StatusWithHost(d, path, "localhost" + port) == expected);
    CHECK(StatusWithHost(d, path, "LocalHost" + port) == expected);
    CHECK(StatusWithHost(d, path, "[::1]" + port) == expected);
    CHECK(StatusWithHost(d, path, "hookbox.internal" + port) == expected);
    CHECK(StatusWithHost(d, path, "HOOKBOX.internal" + port) == expected);
  }
  // The 403 for /metrics tells nothing of the endpoints and handlers.
  std::string body;
  CHECK(StatusWithHost(d, "/metrics", "rebind.evil.example" + port, &body) == 403);
  CHECK(body.find("hookbox_") == std::string::npos);
  CHECK(StatusWithHost(d, "/metrics", "127.0.0.1" + port, &body) == 200);
  CHECK(body.find("hookbox_") != std::string::npos);
  // A request with two Host headers, to the admin listener (in HTTP/1.0 too, where the
  // parser lets one Host be left out but never two be sent).
  for (const char* version : {"HTTP/1.1", "HTTP/1.0"}) {
    CHECK(AdminStatusLine(d, std::string("GET /healthz ") + version + "\r\nHost: 127.0.0.1" + port +
                                 "\r\nHost: 127.0.0.1" + port + "\r\nConnection: close\r\n\r\n")
              .starts_with("HTTP/1.1 400 "));
  }
}

TEST_CASE("admin Host: curl-style probes of a loopback admin_listen keep working") {
  // What README's `curl -s 127.0.0.1:9464/readyz` and systemd/k8s-style probes send: the
  // listener's address as they dialled it.
  TempDir dir;
  Daemon d = Start(dir, "127.0.0.1:0");
  httplib::Client c("127.0.0.1", d.admin_port());  // sends Host: 127.0.0.1:PORT
  CHECK(c.Get("/healthz")->status == 200);
  CHECK(c.Get("/readyz")->status == 200);
  CHECK(c.Get("/metrics")->status == 200);
}

TEST_CASE("admin Host: bound to 0.0.0.0, the machine's own addresses pass and no other") {
  TempDir dir;
  Daemon d = Start(dir, "0.0.0.0:0");
  const std::string port = ":" + std::to_string(d.admin_port());
  for (const char* path : {"/metrics", "/healthz", "/readyz", "/"}) {
    INFO(path);
    CHECK(StatusWithHost(d, path, "127.0.0.1" + port) == 200);  // lo is an interface
    CHECK(StatusWithHost(d, path, "localhost" + port) == 200);
    CHECK(StatusWithHost(d, path, "0.0.0.0" + port) == 403);    // a wildcard is no address
    CHECK(StatusWithHost(d, path, "192.0.2.7" + port) == 403);  // TEST-NET-1: no interface
    CHECK(StatusWithHost(d, path, "10.9.8.7" + port) == 403);
    CHECK(StatusWithHost(d, path, "rebind.evil.example" + port) == 403);
  }
}

TEST_CASE("admin Host: an HTTP/1.0 request without Host passes; a foreign Host does not") {
  // No browser sends a request without Host (HTTP/1.1 requires one, and fetch cannot drop
  // it), so a DNS-rebinding page cannot: an HTTP/1.0 probe without Host (an old load
  // balancer's health check, `printf 'GET /healthz HTTP/1.0\r\n\r\n' | nc`) is let
  // through.
  TempDir dir;
  Daemon d = Start(dir, "127.0.0.1:0");
  const std::string port = std::to_string(d.admin_port());
  for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
    INFO(path);
    CHECK(AdminStatusLine(d, std::string("GET ") + path + " HTTP/1.0\r\n\r\n") ==
          "HTTP/1.1 200 OK");
    // Every other Host rule holds: a foreign Host, an empty one, the wrong port.
    for (const std::string& host :
         {std::string("rebind.evil.example:") + port, std::string("10.9.8.7:") + port,
          std::string(""), std::string("127.0.0.1:1")}) {
      INFO(host);
      CHECK(AdminStatusLine(d, std::string("GET ") + path + " HTTP/1.0\r\nHost: " + host +
                                   "\r\n\r\n") == "HTTP/1.1 403 Forbidden");
    }
    // HTTP/1.1 without Host never reaches the Host rule: 400 (RFC 9112 3.2).
    CHECK(AdminStatusLine(d, std::string("GET ") + path + " HTTP/1.1\r\nConnection: close\r\n\r\n")
              .starts_with("HTTP/1.1 400 "));
  }
  // The console's pages too: nothing there is within a browser's reach without Host.
  CHECK(AdminStatusLine(d, "GET / HTTP/1.0\r\n\r\n") == "HTTP/1.1 200 OK");
}
