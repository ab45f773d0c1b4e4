// cpp-httplib behind HttpServer: limits, edge guards, and the translation between
// httplib's request/response and Delivery/Answer (see server.h).
//
// Two things Debian's cpp-httplib 0.11.4 cannot do through its public API are done through
// its protected one, in a subclass (Listener):
// - Socket activation: there is no call to serve on a socket someone else made. Binding
//   cannot be bent into it (the socket-options hook sees a fresh socket that the library
//   then binds, and bind() on an already-bound socket fails, so a dup2 onto it is no use);
//   but the listening socket is the protected member `svr_sock_`, and listen_after_bind()
//   accepts on whatever it holds. Adopt() sets it.
// - Prompt shutdown: the library's connection loop waits for a keep-alive connection's
//   next request for up to keep_alive_timeout, polling, and checks for stop() only between
//   requests, so every idle connection held a shutdown up by that long. The loop is the
//   private virtual process_and_close_socket(); Listener overrides it with one that waits
//   on the socket *and* a stop event, serves requests whose bytes have already arrived,
//   and closes idle connections at once. Requests are still parsed, routed and answered
//   by the library's own process_request() (protected), so all of its behaviour — and
//   every limit set below — stays as it was.
#include "http/server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include <httplib.h>

#include "ops/log.h"

namespace hookbox {
namespace {

// JSON unless the answer names its own Content-Type (the admin listener's /metrics).
void SetAnswer(httplib::Response& res, const Answer& a) {
  res.status = a.status;
  std::string type = "application/json";
  for (const auto& [k, v] : a.headers) {
    if (strcasecmp(k.c_str(), "Content-Type") == 0) type = v;
    else res.set_header(k, v);
  }
  res.set_content(a.body, type);
}

// Set by a handler on the connection's own thread when the connection must close after
// this answer (the library's loop would otherwise read on, into an unread body).
thread_local bool t_close_after_answer = false;

void Refuse(httplib::Response& res, int status, const std::string& message) {
  // The unread body (if any) is still in the socket: the connection must not be reused.
  res.set_header("Connection", "close");
  t_close_after_answer = true;
  SetAnswer(res, Answer{status, nlohmann::json{{"error", message}}.dump(), {}});
}

// cpp-httplib adds the connection's addresses to the request headers under these names.
bool IsLibraryPseudoHeader(const std::string& name) {
  return name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" ||
         name == "LOCAL_PORT";
}

size_t ClientHeaderCount(const httplib::Request& req) {
  size_t n = 0;
  for (const auto& [name, value] : req.headers) n += IsLibraryPseudoHeader(name) ? 0 : 1;
  return n;
}

// The edge guards: run by the library after the headers and before the body are read.
bool RefuseAtEdge(const httplib::Request& req, httplib::Response& res, const HttpLimits& limits) {
  if (ClientHeaderCount(req) > limits.max_headers) {
    Refuse(res, 431, "too many request headers (limit " + std::to_string(limits.max_headers) + ")");
    return true;
  }
  if (req.has_header("Transfer-Encoding")) {
    if (req.has_header("Content-Length")) {
      Refuse(res, 400, "both Transfer-Encoding and Content-Length");
    } else {
      Refuse(res, 411, "chunked bodies are not accepted: send Content-Length");
    }
    return true;
  }
  size_t lengths = req.get_header_value_count("Content-Length");
  if (lengths == 0) {
    if (req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
      Refuse(res, 411, "Content-Length required");
      return true;
    }
    return false;
  }
  if (lengths > 1) {
    Refuse(res, 400, "more than one Content-Length");
    return true;
  }
  const std::string value = req.get_header_value("Content-Length");
  uint64_t length = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    Refuse(res, 400, "Content-Length is not a number");
    return true;
  }
  if (length > limits.max_body) {
    Refuse(res, 413, "body larger than " + std::to_string(limits.max_body) + " bytes");
    return true;
  }
  return false;
}

// Waits until fd is ready for `events` or `timeout` passes; false on timeout or error.
bool WaitFor(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

std::string NumericHost(const sockaddr_storage& addr, socklen_t len, int& port) {
  char host[NI_MAXHOST] = "";
  char serv[NI_MAXSERV] = "";
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, serv,
                  sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "";
  }
  port = std::atoi(serv);
  return host;
}

// One accepted connection, as the library's request parser reads it: reads are buffered
// (the parser reads headers a byte at a time) and bounded by read_timeout, writes by
// write_timeout. The buffer lives as long as the connection, so bytes of a pipelined next
// request are never lost between requests.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, const HttpLimits& limits) : fd_(fd), limits_(limits) {}

  bool Buffered() const { return off_ < len_; }

  bool is_readable() const override {
    return Buffered() || WaitFor(fd_, POLLIN, limits_.read_timeout);
  }
  bool is_writable() const override { return WaitFor(fd_, POLLOUT, limits_.write_timeout); }

  ssize_t read(char* ptr, size_t size) override {
    if (Buffered()) {
      size_t n = std::min(size, len_ - off_);
      std::memcpy(ptr, buf_ + off_, n);
      off_ += n;
      return static_cast<ssize_t>(n);
    }
    if (!WaitFor(fd_, POLLIN, limits_.read_timeout)) return -1;
    if (size >= sizeof buf_) return Recv(ptr, size);
    ssize_t n = Recv(buf_, sizeof buf_);
    if (n <= 0) return n;
    off_ = 0;
    len_ = static_cast<size_t>(n);
    return read(ptr, size);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    for (;;) {
      ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        addr.ss_family != AF_UNIX) {
      ip = NumericHost(addr, len, port);
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        addr.ss_family != AF_UNIX) {
      ip = NumericHost(addr, len, port);
    }
  }
  socket_t socket() const override { return fd_; }

 private:
  ssize_t Recv(char* into, size_t size) {
    for (;;) {
      ssize_t n = ::recv(fd_, into, size, 0);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }

  const int fd_;
  const HttpLimits& limits_;
  char buf_[4096];
  size_t off_ = 0, len_ = 0;
};

// httplib::Server with an adoptable listening socket and a connection loop that a shutdown
// interrupts (see the top of this file).
class Listener final : public httplib::Server {
 public:
  explicit Listener(const HttpLimits& limits)
      : limits_(limits), stop_event_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~Listener() override {
    if (stop_event_ >= 0) ::close(stop_event_);
  }

  void Adopt(int fd) { svr_sock_ = fd; }

  // From now on, idle connections close and each connection answers at most the request
  // whose bytes have already arrived. Level-triggered: every waiting connection wakes.
  void Shutdown() {
    shutting_down_ = true;
    uint64_t one = 1;
    (void)!::write(stop_event_, &one, sizeof one);
  }
  bool shutting_down() const { return shutting_down_; }

 private:
  bool process_and_close_socket(socket_t sock) override {
    int on = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  // adopted sockets too
    ConnectionStream stream(sock, limits_);
    bool ok = false;
    for (size_t served = 0; served < limits_.keep_alive_max; ++served) {
      if (!NextRequestArrived(sock, stream)) break;
      const bool last = served + 1 == limits_.keep_alive_max || shutting_down_;
      bool closed_by_client = false;
      t_close_after_answer = false;
      ok = process_request(stream, last, closed_by_client, nullptr);
      if (!ok || closed_by_client || last || t_close_after_answer) break;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  // Between requests: waits up to keep_alive_timeout for the next request's first bytes,
  // but not past Shutdown().
  bool NextRequestArrived(int sock, const ConnectionStream& stream) const {
    if (stream.Buffered()) return true;
    pollfd p[2] = {{sock, POLLIN, 0}, {stop_event_, POLLIN, 0}};
    const int timeout_ms = shutting_down_ ? 0 : limits_.keep_alive_timeout_s * 1000;
    for (;;) {
      int n = ::poll(p, 2, timeout_ms);
      if (n < 0 && errno == EINTR) continue;
      // Readable: a request, or the client's close, which process_request() notices.
      return n > 0 && (p[0].revents & POLLIN) != 0;
    }
  }

  const HttpLimits& limits_;
  const int stop_event_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace

struct HttpServer::Impl {
  explicit Impl(HttpLimits l) : limits(l), server(limits) {}
  HttpLimits limits;
  HttpHandler handler;
  Listener server;
  std::atomic<int> listen_fd{-1};
  std::atomic<bool> stopping{false};
  std::atomic<bool> running{false};  // inside Run()
};

HttpServer::HttpServer(HttpLimits limits, HttpHandler handler)
    : impl_(std::make_unique<Impl>(limits)) {
  impl_->handler = std::move(handler);
  httplib::Server& s = impl_->server;
  Impl* impl = impl_.get();

  s.set_tcp_nodelay(true);
  s.set_keep_alive_max_count(limits.keep_alive_max);
  s.set_keep_alive_timeout(limits.keep_alive_timeout_s);
  s.set_read_timeout(limits.read_timeout);
  s.set_write_timeout(limits.write_timeout);
  s.set_payload_max_length(limits.max_body);
  const size_t threads = static_cast<size_t>(limits.threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_socket_options([impl](socket_t sock) {
    int on = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    impl->listen_fd = sock;
  });

  s.set_pre_routing_handler([impl](const httplib::Request& req, httplib::Response& res) {
    return RefuseAtEdge(req, res, impl->limits) ? httplib::Server::HandlerResponse::Handled
                                                : httplib::Server::HandlerResponse::Unhandled;
  });
  auto serve = [impl](const httplib::Request& req, httplib::Response& res) {
    Delivery d;
    d.method = req.method;
    d.path = req.path;
    d.remote = req.remote_addr + ":" + std::to_string(req.remote_port);
    for (const auto& [k, v] : req.headers) {
      if (!IsLibraryPseudoHeader(k)) d.headers.emplace(k, v);
    }
    d.body = req.body;
    SetAnswer(res, impl->handler(d));
    if (impl->server.shutting_down()) {
      // Draining: this answer is the connection's last.
      res.set_header("Connection", "close");
      t_close_after_answer = true;
    }
  };
  for (auto route : {&httplib::Server::Get, &httplib::Server::Post, &httplib::Server::Put,
                     &httplib::Server::Patch, &httplib::Server::Delete,
                     &httplib::Server::Options}) {
    (s.*route)(".*", serve);
  }
  // Last fail-safe: the handler does not throw, but a library exception must not kill us.
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                             std::exception_ptr) {
    Refuse(res, 500, "internal error");
  });
}

HttpServer::~HttpServer() { Stop(); }

StatusOr<int> HttpServer::Bind(const std::string& host, int port) {
  int bound = port == 0 ? impl_->server.bind_to_any_port(host) : 
                          (impl_->server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    return Status::Unavailable("cannot listen", host + ":" + std::to_string(port) + ": " +
                                                    std::strerror(errno));
  }
  // Listening again on a listening socket only changes its backlog (Linux).
  if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, impl_->limits.listen_backlog);
  return bound;
}

StatusOr<std::string> HttpServer::Adopt(int fd) {
  int type = 0, listening = 0;
  socklen_t len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
    return Status::InvalidArgument("not a stream socket", "fd " + std::to_string(fd));
  }
  len = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) {
    return Status::InvalidArgument("not a listening socket", "fd " + std::to_string(fd));
  }
  impl_->server.Adopt(fd);
  sockaddr_storage addr{};
  socklen_t addr_len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) return std::string();
  if (addr.ss_family == AF_UNIX) {
    const auto& un = reinterpret_cast<const sockaddr_un&>(addr);
    return std::string(un.sun_path, strnlen(un.sun_path, sizeof un.sun_path));
  }
  int port = 0;
  std::string host = NumericHost(addr, addr_len, port);
  if (addr.ss_family == AF_INET6) host = "[" + host + "]";
  return host + ":" + std::to_string(port);
}

bool HttpServer::Serving() const { return impl_->server.is_running() && !impl_->stopping; }

void HttpServer::Run() {
  impl_->running = true;
  if (!impl_->stopping) impl_->server.listen_after_bind();
  impl_->running = false;
}

void HttpServer::Stop() {
  impl_->stopping = true;
  impl_->server.Shutdown();
  // The library ignores stop() until its accept loop has started: wait for it if Run() is
  // about to enter that loop, so a stop right after start is never lost.
  while (impl_->running && !impl_->server.is_running()) std::this_thread::yield();
  impl_->server.stop();
}

}  // namespace hookbox
