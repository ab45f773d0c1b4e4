// The HTTP listener of the webhook and admin ports: sockets, connections and answers. Every
// request byte goes through one parser (http/request_parser.h, Boost.Beast's); the rest of
// hookbox sees plain Delivery / Answer structs (base/delivery.h).
//
// Threads: `threads` threads share one epoll set. A thread that is woken for a connection
// reads what has arrived, parses it and, once a request is whole, runs the handler and
// writes the answer itself, then serves the connection's next request if its bytes are
// already there. No thread ever waits for a client's bytes: a request reaches the handler
// only when the parser says it is complete, so a slow or malicious client holds a buffer,
// never a thread. A request must arrive whole within read_timeout of its first byte and an
// idle keep-alive connection closes after keep_alive_timeout; a sweep closes those that do
// not. Past max_connections (or max_connections_per_peer for one address), a new connection
// takes the place of an idle keep-alive one, else of the one whose request has been
// incomplete the longest (the peer's own, at the per-peer cap); it is closed at accept only
// when every connection is being answered. The bytes requests hold, all connections
// together, stay under max_buffered: past it, connections are not read (nothing is
// allocated) until bytes are freed, and their deadlines still run.
//
// Shutdown is prompt: Stop() stops accepting, idle and half-received connections close, and
// requests already received are answered (with `Connection: close`) before Run() returns.
// The listening socket may also come from systemd (Adopt()).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/delivery.h"
#include "base/status.h"

namespace hookbox {

struct HttpLimits {
  size_t max_body = 1 << 20;
  std::chrono::milliseconds read_timeout{10000};   // a whole request, from its first byte
  std::chrono::milliseconds write_timeout{10000};  // an answer
  int threads = 16;
  size_t max_headers = 100;
  size_t keep_alive_max = 1000;  // requests per connection
  int keep_alive_timeout_s = 5;
  int listen_backlog = 1024;
  size_t max_connections = 4096;
  size_t max_connections_per_peer = 1024;  // from one IP address; 0: no cap
  size_t max_buffered = 64 << 20;          // request bytes held, all connections together
  size_t max_request_head = 64 * 1024;     // request line + headers
};

// Called on a listener thread for every whole request the parser accepted.
using DeliveryHandler = std::function<Answer(const Delivery&)>;
// Called when a request's head is in and its client waits for `100 Continue` before sending
// the body (the Delivery has no body yet): an Answer refuses the request instead.
using HeadCheck = std::function<std::optional<Answer>(const Delivery& head)>;

// Every answer's bytes: the status line, Content-Type (JSON unless the answer names its
// own), the answer's headers, a Content-Length computed here, and Connection. The only code
// that writes a response.
std::string FormatAnswer(const Answer& answer, bool keep_alive, int keep_alive_timeout_s,
                         bool head_only = false);

class HttpServer final {
 public:
  HttpServer(HttpLimits limits, DeliveryHandler handler, HeadCheck head_check = {});
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
  // True from a successful Bind/Adopt (connections queue from then on) until Stop() or the
  // end of Run(): for the watchdog and /readyz.
  bool Serving() const;
  // Stops accepting; safe from any thread, and before or after Run() started.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hookbox
