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
// - Slow clients and prompt shutdown: the library serves each connection on a thread of
//   its pool from accept to close, reading with read_timeout per read and no deadline for
//   a whole request, so a few hundred clients sending half a request (slowloris), or just
//   idle keep-alive connections, held every thread and real deliveries waited behind them.
//   Here a connection holds no thread while it waits: the accept loop hands each socket to
//   the Edge (one epoll thread), which buffers bytes until a whole request (head and
//   Content-Length body) has arrived, closing connections that take longer than
//   read_timeout for it (or keep_alive_timeout idle between requests), and only then gives
//   the connection to a worker thread. The worker parses, routes and answers it with the
//   library's own process_request() (protected), so all of its behaviour — and every limit
//   set below — stays as it was; then the connection goes back to the Edge. The hooks are
//   the task queue (new_task_queue: the accept loop's handoff runs inline) and the private
//   virtual process_and_close_socket().
#include "http/server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

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

// A socket's numeric address; empty for a unix socket or when it cannot be read.
struct Address {
  std::string ip;
  int port = 0;
};
Address SocketAddress(int fd, int (*get)(int, sockaddr*, socklen_t*)) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  Address a;
  if (get(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 && addr.ss_family != AF_UNIX) {
    a.ip = NumericHost(addr, len, a.port);
  }
  return a;
}

// A connection: its socket and both ends' addresses (read once, at accept), the bytes that
// arrived and are not answered yet, and how many requests it has had answered
// (keep_alive_max).
struct Conn {
  int fd = -1;
  Address remote, local;
  std::string buf;
  size_t served = 0;
};

// One connection, as the library's request parser reads it: first the bytes the Edge
// already buffered, then the socket, each read bounded by read_timeout and each write by
// write_timeout. Bytes past the current request (a pipelined next one) stay buffered and go
// back to the Edge with the connection.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(const Conn& conn, const HttpLimits& limits, std::string buffered)
      : fd_(conn.fd), conn_(conn), limits_(limits), buf_(std::move(buffered)) {}

  bool Buffered() const { return off_ < buf_.size(); }
  std::string TakeBuffered() {
    std::string rest = buf_.substr(off_);
    buf_.clear();
    off_ = 0;
    return rest;
  }

  bool is_readable() const override {
    return Buffered() || WaitFor(fd_, POLLIN, limits_.read_timeout);
  }
  bool is_writable() const override { return WaitFor(fd_, POLLOUT, limits_.write_timeout); }

  ssize_t read(char* ptr, size_t size) override {
    if (!Buffered()) {
      if (!WaitFor(fd_, POLLIN, limits_.read_timeout)) return -1;
      char chunk[4096];
      ssize_t n = Recv(chunk, sizeof chunk);
      if (n <= 0) return n;
      buf_.assign(chunk, static_cast<size_t>(n));
      off_ = 0;
    }
    size_t n = std::min(size, buf_.size() - off_);
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
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
    ip = conn_.remote.ip;
    port = conn_.remote.port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = conn_.local.ip;
    port = conn_.local.port;
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
  const Conn& conn_;  // its addresses; outlives this stream (Listener::Serve)
  const HttpLimits& limits_;
  std::string buf_;
  size_t off_ = 0;
};

void SetBlocking(int fd, bool blocking) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK);
}

void Close(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// Whether `buf` holds a whole request: the head, and as many body bytes as its
// Content-Length says. Requests the library's edge guards will refuse (no or several
// Content-Lengths, chunked, too large) are "whole" once the head is: they are answered
// without reading a body.
enum class Arrival { kPartial, kWhole, kHeadTooLarge };
Arrival RequestArrival(const std::string& buf, const HttpLimits& limits) {
  const size_t head_end = buf.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    return buf.size() > limits.max_request_head ? Arrival::kHeadTooLarge : Arrival::kPartial;
  }
  if (head_end > limits.max_request_head) return Arrival::kHeadTooLarge;
  std::string_view head(buf.data(), head_end);
  size_t length = 0, lengths = 0;
  for (size_t at = head.find("\r\n"); at != std::string_view::npos;
       at = head.find("\r\n", at + 2)) {
    std::string_view line = head.substr(at + 2, head.find("\r\n", at + 2) - (at + 2));
    constexpr std::string_view kName = "content-length:";
    if (line.size() < kName.size() || strncasecmp(line.data(), kName.data(), kName.size()) != 0) {
      continue;
    }
    std::string_view value = line.substr(kName.size());
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
    if (ec != std::errc() || end != value.data() + value.size()) return Arrival::kWhole;
    ++lengths;
  }
  if (lengths != 1 || length > limits.max_body) return Arrival::kWhole;
  return buf.size() >= head_end + 4 + length ? Arrival::kWhole : Arrival::kPartial;
}


// A connection at the Edge, waiting for a whole request.
struct Waiting {
  Conn conn;
  std::chrono::steady_clock::time_point deadline;
  bool idle;  // between requests, nothing of the next one yet
};

// Connections waiting for a whole request, in one epoll thread (see the top of this file).
// `ready` is called, on this thread, with each connection whose request has arrived.
class Edge final {
 public:
  Edge(const HttpLimits& limits, std::function<void(Conn)> ready)
      : limits_(limits),
        ready_(std::move(ready)),
        epoll_(::epoll_create1(EPOLL_CLOEXEC)),
        wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
    thread_ = std::thread([this] { Loop(); });
  }
  ~Edge() {
    stopping_ = true;
    Wake();
    thread_.join();
    for (auto& [fd, w] : waiting_) Close(fd);
    for (auto& w : incoming_) Close(w.conn.fd);
    ::close(epoll_);
    ::close(wake_);
  }

  // A new connection (`idle` false: its first request is due within read_timeout), or one
  // back from a worker between requests (`idle` true: keep_alive_timeout for the next one).
  // Safe from any thread.
  void Add(Conn conn, bool idle) {
    SetBlocking(conn.fd, false);
    const bool nothing_yet = idle && conn.buf.empty();
    const auto wait = nothing_yet ? std::chrono::milliseconds(limits_.keep_alive_timeout_s * 1000)
                                  : limits_.read_timeout;
    Waiting w{std::move(conn), std::chrono::steady_clock::now() + wait, nothing_yet};
    {
      std::lock_guard lock(mu_);
      incoming_.push_back(std::move(w));
    }
    Wake();
  }

  // Closes every waiting connection, now and from now on.
  void Shutdown() {
    closing_ = true;
    Wake();
  }

 private:
  void Wake() {
    uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
  }

  void Loop() {
    epoll_event events[256];
    auto last_sweep = std::chrono::steady_clock::now();
    while (!stopping_) {
      int n = ::epoll_wait(epoll_, events, 256, 100);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.fd == wake_) {
          uint64_t drained;
          (void)!::read(wake_, &drained, sizeof drained);
          continue;
        }
        Readable(events[i].data.fd);
      }
      TakeIncoming();
      const auto now = std::chrono::steady_clock::now();
      if (closing_ || now - last_sweep >= std::chrono::milliseconds(100)) {
        last_sweep = now;
        Sweep(now);
      }
    }
  }

  void TakeIncoming() {
    std::vector<Waiting> incoming;
    {
      std::lock_guard lock(mu_);
      incoming.swap(incoming_);
    }
    for (Waiting& w : incoming) {
      const int fd = w.conn.fd;
      if (closing_) {
        Close(fd);
        continue;
      }
      if (waiting_.size() >= limits_.max_waiting_connections) {
        // A flood: bounded, and reported at the next sweep rather than per connection.
        ++refused_;
        Close(fd);
        continue;
      }
      if (!w.conn.buf.empty() && RequestArrival(w.conn.buf, limits_) == Arrival::kWhole) {
        Hand(std::move(w.conn));
        continue;
      }
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = fd;
      ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
      waiting_.emplace(fd, std::move(w));
    }
  }

  void Readable(int fd) {
    auto it = waiting_.find(fd);
    if (it == waiting_.end()) return;
    Waiting& w = it->second;
    char chunk[16384];
    for (;;) {
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {  // closed by the client, or an error
        Drop(it);
        return;
      }
      if (w.idle) {  // the next request has begun: it has read_timeout to arrive whole
        w.idle = false;
        w.deadline = std::chrono::steady_clock::now() + limits_.read_timeout;
      }
      w.conn.buf.append(chunk, static_cast<size_t>(n));
      if (w.conn.buf.size() > limits_.max_request_head + limits_.max_body + 16) break;
    }
    switch (RequestArrival(w.conn.buf, limits_)) {
      case Arrival::kPartial:
        return;
      case Arrival::kHeadTooLarge: {
        static const char kAnswer[] =
            "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\n"
            "Connection: close\r\nContent-Length: 40\r\n\r\n{\"error\":\"request head too large\"}\n   ";
        (void)!::send(fd, kAnswer, sizeof kAnswer - 4, MSG_NOSIGNAL);
        Drop(it);
        return;
      }
      case Arrival::kWhole: {
        ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
        Conn conn = std::move(w.conn);
        waiting_.erase(it);
        Hand(std::move(conn));
        return;
      }
    }
  }

  void Hand(Conn conn) {
    if (closing_) {
      Close(conn.fd);
      return;
    }
    SetBlocking(conn.fd, true);
    ready_(std::move(conn));
  }

  void Drop(std::unordered_map<int, Waiting>::iterator it) {
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, it->first, nullptr);
    Close(it->first);
    waiting_.erase(it);
  }

  // Closes connections past their deadline (or all, when closing), and reports a flood.
  void Sweep(std::chrono::steady_clock::time_point now) {
    size_t timed_out = 0;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (closing_ || now >= it->second.deadline) {
        timed_out += it->second.idle ? 0 : 1;
        auto next = std::next(it);
        Drop(it);
        it = next;
      } else {
        ++it;
      }
    }
    if (timed_out > 0 || refused_ > 0) {
      LogWarn({{"msg", "connections closed at the edge"},
               {"request_timeouts", timed_out},
               {"refused_over_limit", refused_},
               {"waiting", waiting_.size()}});
      refused_ = 0;
    }
  }

  const HttpLimits& limits_;
  const std::function<void(Conn)> ready_;
  const int epoll_;
  const int wake_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> closing_{false};
  std::mutex mu_;                   // guards incoming_
  std::vector<Waiting> incoming_;
  std::unordered_map<int, Waiting> waiting_;  // the epoll thread's own
  size_t refused_ = 0;                        // the epoll thread's own
  std::thread thread_;
};

// The threads that answer whole requests (limits.threads). Stop() answers what is queued,
// then joins.
class RequestThreads final {
 public:
  RequestThreads(size_t threads, std::function<void(Conn)> serve) : serve_(std::move(serve)) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~RequestThreads() { Stop(); }

  void Push(Conn conn) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(conn));
    }
    cv_.notify_one();
  }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Loop() {
    for (;;) {
      Conn conn;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        conn = std::move(queue_.front());
        queue_.pop_front();
      }
      serve_(std::move(conn));
    }
  }

  std::function<void(Conn)> serve_;
  std::mutex mu_;  // guards queue_, stopping_
  std::condition_variable cv_;
  std::deque<Conn> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// The accept loop's handoff, run inline: process_and_close_socket() below only passes the
// socket to the Edge, so the accept thread never waits on a client.
class Inline final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// httplib::Server with an adoptable listening socket, whose connections wait for whole
// requests at the Edge and are answered by Workers (see the top of this file).
class Listener final : public httplib::Server {
 public:
  explicit Listener(const HttpLimits& limits)
      : limits_(limits),
        threads_(static_cast<size_t>(limits.threads), [this](Conn c) { Serve(std::move(c)); }),
        edge_(limits, [this](Conn c) { threads_.Push(std::move(c)); }) {
    new_task_queue = [] { return new Inline(); };
  }
  ~Listener() override { threads_.Stop(); }  // before the Edge they hand connections back to

  void Adopt(int fd) { svr_sock_ = fd; }

  // From now on, waiting connections close and each answer is its connection's last.
  void Shutdown() {
    shutting_down_ = true;
    edge_.Shutdown();
  }
  bool shutting_down() const { return shutting_down_; }

  // After the accept loop ended: answers the requests that had arrived whole, then returns.
  void Drain() { threads_.Stop(); }

 private:
  // Called inline by the accept loop (Inline): the connection waits at the Edge.
  bool process_and_close_socket(socket_t sock) override {
    int on = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  // adopted sockets too
    if (shutting_down_) {
      Close(sock);
      return false;
    }
    edge_.Add(Conn{sock, SocketAddress(sock, ::getpeername), SocketAddress(sock, ::getsockname),
                   std::string(), 0},
              /*idle=*/false);
    return true;
  }

  // On a request thread: answers the request that arrived whole (and any pipelined ones
  // that are whole too), then gives the connection back to the Edge or closes it.
  void Serve(Conn conn) {
    for (;;) {
      ConnectionStream stream(conn, limits_, std::move(conn.buf));
      const bool last = ++conn.served >= limits_.keep_alive_max || shutting_down_;
      bool closed_by_client = false;
      t_close_after_answer = false;
      const bool ok = process_request(stream, last, closed_by_client, nullptr);
      if (!ok || closed_by_client || last || t_close_after_answer || shutting_down_) break;
      conn.buf = stream.TakeBuffered();
      if (conn.buf.empty() || RequestArrival(conn.buf, limits_) != Arrival::kWhole) {
        edge_.Add(std::move(conn), /*idle=*/true);
        return;
      }
    }
    Close(conn.fd);
  }

  const HttpLimits& limits_;
  std::atomic<bool> shutting_down_{false};
  RequestThreads threads_;
  Edge edge_;
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
  impl_->server.Drain();  // in-flight requests finish before Run() returns
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
