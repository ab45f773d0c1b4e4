// A loopback peer that answers with raw bytes, for the HTTP client's tests
// (tests/http/client_test.cc) and the http handler's (tests/handlers/http_test.cc): answers
// cpp-httplib's server would not write (a head past the client's limits, too many header
// lines, a 204 with a body). Serves one connection: reads the request's head and its
// Content-Length body (closing with bytes unread would reset the connection), writes the
// answer, and closes; a client that hangs up early ends the write.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <thread>

namespace hookbox::testing {

class RawPeer final {
 public:
  explicit RawPeer(std::string answer) : answer_(std::move(answer)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    REQUIRE(::listen(listener_, 4) == 0);
    REQUIRE(::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RawPeer() {
    ::shutdown(listener_, SHUT_RDWR);  // ends an accept() still waiting
    thread_.join();
    ::close(listener_);
  }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  int port() const { return port_; }

 private:
  void Serve() {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    std::string request;
    char buf[4096];
    size_t want = std::string::npos;
    while (request.size() < want) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
      const size_t end = request.find("\r\n\r\n");
      if (want == std::string::npos && end != std::string::npos) {
        const size_t at = request.find("Content-Length: ");
        want = end + 4 + (at < end ? std::stoul(request.substr(at + 16)) : 0);
      }
    }
    for (size_t sent = 0; sent < answer_.size();) {
      const ssize_t n = ::send(fd, answer_.data() + sent, answer_.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;  // the client hung up: it has read what it wanted
      sent += static_cast<size_t>(n);
    }
    ::close(fd);
  }

  std::string answer_;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace hookbox::testing
