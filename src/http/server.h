// The HTTP listener: the only code that includes cpp-httplib (pimpl), so the rest of
// hookbox sees plain Delivery / Answer structs and a newer server library can replace this
// file alone.
//
// Debian 12's cpp-httplib (0.11.4) predates fixes for unbounded chunked bodies, unbounded
// header counts and request smuggling, so this file guards the edge itself, before any body
// byte is read: chunked or length-less bodies -> 411, conflicting or bad Content-Length ->
// 400, Content-Length over max_body -> 413, more than max_headers headers -> 431. Every limit
// the library has is set explicitly; TCP_NODELAY is on (without it every answer waits ~40 ms
// for a delayed ACK).
//
// Shutdown is prompt: Stop() closes the listening socket, idle keep-alive connections close
// at once, and requests already received are answered (with `Connection: close`) before
// Run() returns. The listening socket may also come from systemd (Adopt()).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "receive/delivery.h"

namespace hookbox {

struct HttpLimits {
  size_t max_body = 1 << 20;
  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds write_timeout{10000};
  int threads = 16;
  size_t max_headers = 100;
  size_t keep_alive_max = 1000;  // requests per connection (the library's default is 5)
  int keep_alive_timeout_s = 5;
  int listen_backlog = 1024;     // the library hard-codes 5; raised after bind
  // Connections waiting for a whole request (they hold no thread); more are closed at once.
  size_t max_waiting_connections = 4096;
  size_t max_request_head = 64 * 1024;  // request line + headers
};

// Called on a worker thread for every request that passed the edge guards.
using HttpHandler = std::function<Answer(const Delivery&)>;

class HttpServer final {
 public:
  HttpServer(HttpLimits limits, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: any free port) and returns the bound port.
  StatusOr<int> Bind(const std::string& host, int port);
  // Serves on a listening socket made elsewhere (systemd socket activation), instead of
  // Bind(); takes ownership of fd. Returns its address: "host:port", or a unix socket's path.
  StatusOr<std::string> Adopt(int fd);
  // Serves until Stop(); in-flight requests finish before it returns.
  void Run();
  // True while Run() is accepting connections (for the watchdog and /readyz).
  bool Serving() const;
  // Stops accepting; safe from any thread, and before or after Run() started.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hookbox
