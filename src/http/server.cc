// The listener behind HttpServer (see server.h for what it promises): accept, read, parse
// (RequestParser, the only reader of request bytes), call the handler, write the answer
// (FormatAnswer, the only writer of response bytes).
//
// Threads and connections. The listening socket, an eventfd (to wake everyone at Stop) and
// every connection are in one epoll set, the connections and the listening socket with
// EPOLLONESHOT: an event hands its connection to exactly one thread, which owns it until it
// re-arms or closes it. The connections live in a table keyed by a 64-bit id (the epoll
// cookie), under one mutex that is held only to take, re-arm, sweep or close one; an event
// for a connection that is gone (closed by the sweep) finds no entry and is ignored, so a
// file descriptor number reused by a new connection is never mistaken for the old one.
#include "http/server.h"

#include <fcntl.h>
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
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/request_parser.h"
#include "ops/log.h"

namespace hookbox {
namespace {

using Steady = std::chrono::steady_clock;

const char* Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 303:
      return "See Other";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Status";
  }
}

// A header our own code set could still carry a line break; such a header is dropped
// rather than let it split the response.
bool Safe(const std::string& s) { return s.find_first_of("\r\n") == std::string::npos; }

Answer ErrorAnswer(int status, const std::string& message) {
  return Answer{status, nlohmann::json{{"error", message}}.dump(), {}};
}

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;

// A client connection, owned by the table; touched by one thread at a time (`busy`).
struct Connection {
  uint64_t id = 0;
  int fd = -1;
  std::string remote;                     // "ip:port", read once at accept
  std::string in;                         // received, not yet taken by the parser
  std::unique_ptr<RequestParser> parser;  // the request being read; none between requests
  Steady::time_point deadline;
  bool busy = false;       // a thread is serving it (the sweep leaves it alone)
  bool continued = false;  // 100 Continue sent for the current request
  size_t served = 0;       // requests answered (keep_alive_max)
};

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

void SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

std::string FormatAnswer(const Answer& a, bool keep_alive, int keep_alive_timeout_s,
                         bool head_only) {
  std::string out;
  out.reserve(192 + a.body.size());
  out += "HTTP/1.1 ";
  out += std::to_string(a.status);
  out += ' ';
  out += Reason(a.status);
  out += "\r\n";
  bool typed = false;
  for (const auto& [name, value] : a.headers) {
    if (!Safe(name) || !Safe(value) || strcasecmp(name.c_str(), "Content-Length") == 0 ||
        strcasecmp(name.c_str(), "Connection") == 0) {
      continue;
    }
    typed = typed || strcasecmp(name.c_str(), "Content-Type") == 0;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  // 204 has no content, and RFC 9110 forbids its Content-Length and type.
  const bool no_content = a.status == 204;
  if (!typed && !no_content) out += "Content-Type: application/json\r\n";
  if (!no_content) {
    out += "Content-Length: ";
    out += std::to_string(a.body.size());
    out += "\r\n";
  }
  if (keep_alive) {
    out += "Connection: keep-alive\r\nKeep-Alive: timeout=";
    out += std::to_string(keep_alive_timeout_s);
    out += "\r\n\r\n";
  } else {
    out += "Connection: close\r\n\r\n";
  }
  if (!head_only && !no_content) out += a.body;
  return out;
}

struct HttpServer::Impl {
  Impl(HttpLimits l, DeliveryHandler h, HeadCheck c)
      : limits(l),
        handler(std::move(h)),
        head_check(std::move(c)),
        epoll(::epoll_create1(EPOLL_CLOEXEC)),
        wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    epoll_event ev{};
    ev.events = EPOLLIN;  // level-triggered: once written, it wakes every thread
    ev.data.u64 = kWakeId;
    ::epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &ev);
  }
  ~Impl() {
    for (auto& [id, c] : conns) ::close(c->fd);
    if (listen_fd >= 0) ::close(listen_fd);
    ::close(epoll);
    ::close(wake);
  }

  ParserLimits ParserLimitsFor() const {
    return ParserLimits{limits.max_request_head, limits.max_body, limits.max_headers};
  }

  // ---- the table
  Connection* Take(uint64_t id) {
    std::lock_guard lock(mu);
    auto it = conns.find(id);
    if (it == conns.end() || it->second->busy) return nullptr;
    it->second->busy = true;
    return it->second.get();
  }

  // Back to epoll, waiting for more bytes until its deadline. The caller lets go of `c`.
  void Rearm(Connection* c) {
    std::lock_guard lock(mu);
    if (stopping) return CloseLocked(c);
    c->busy = false;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.u64 = c->id;
    ::epoll_ctl(epoll, EPOLL_CTL_MOD, c->fd, &ev);
  }

  void Close(Connection* c) {
    std::lock_guard lock(mu);
    CloseLocked(c);
  }
  void CloseLocked(Connection* c) {
    ::epoll_ctl(epoll, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    conns.erase(c->id);
  }

  // ---- accepting
  void ArmListener(int op) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u64 = kListenId;
    ::epoll_ctl(epoll, op, listen_fd, &ev);
  }

  void AcceptAll() {
    for (int i = 0; i < 64 && !stopping; ++i) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: pause accepting for a moment (the sweep re-arms), instead of
          // spinning on a listening socket that stays readable.
          std::lock_guard lock(mu);
          if (!accept_paused) {
            ++accept_failures;
            accept_paused = true;
            accept_resume = Steady::now() + std::chrono::milliseconds(100);
          }
          return;
        }
        break;  // EAGAIN: nothing more to accept
      }
      int on = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      if (addr.ss_family != AF_UNIX) {
        int port = 0;
        std::string ip = NumericHost(addr, len, port);
        c->remote = ip + ":" + std::to_string(port);
      } else {
        c->remote = ":0";
      }
      c->deadline = Steady::now() + limits.read_timeout;  // its first request
      std::lock_guard lock(mu);
      if (conns.size() >= limits.max_connections) {
        ++refused;  // a flood: bounded, and reported at the next sweep
        ::close(fd);
        continue;
      }
      c->id = next_id++;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
      ev.data.u64 = c->id;
      ::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev);
      conns.emplace(c->id, std::move(c));
    }
    std::lock_guard lock(mu);
    if (!stopping && !accept_paused) ArmListener(EPOLL_CTL_MOD);
  }

  // ---- serving one connection (the calling thread owns it)

  bool Send(Connection* c, const std::string& bytes) {
    size_t at = 0;
    const auto deadline = Steady::now() + limits.write_timeout;
    while (at < bytes.size()) {
      ssize_t n = ::send(c->fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n > 0) {
        at += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
        pollfd p{c->fd, POLLOUT, 0};
        if (left.count() > 0 && ::poll(&p, 1, static_cast<int>(left.count())) > 0) continue;
      }
      return false;
    }
    return true;
  }

  // Reads what has arrived. False when the client is gone (an error); `eof` when it has
  // shut down its sending side (what it sent before is still served).
  bool Receive(Connection* c, bool& eof) {
    char chunk[16384];
    const size_t cap = limits.max_request_head + limits.max_body + sizeof chunk;
    while (c->in.size() < cap) {
      ssize_t n = ::recv(c->fd, chunk, sizeof chunk, 0);
      if (n > 0) {
        c->in.append(chunk, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) {
        eof = true;
        return true;
      }
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    return true;
  }

  static Delivery ToDelivery(HttpRequest& r, const std::string& remote) {
    Delivery d;
    d.method = std::move(r.method);
    d.path = std::string(TargetPath(r.target));
    d.query = std::string(TargetQuery(r.target));
    d.remote = remote;
    for (auto& [name, value] : r.headers) d.headers.emplace(std::move(name), std::move(value));
    d.body = std::move(r.body);
    return d;
  }

  // Answers the refusal and closes: the rest of what the client sends is not read.
  void Refuse(Connection* c, const Answer& a, const char* why) {
    LogWarn(
        {{"msg", "request refused"}, {"remote", c->remote}, {"status", a.status}, {"reason", why}});
    Send(c, FormatAnswer(a, /*keep_alive=*/false, limits.keep_alive_timeout_s));
    Close(c);
  }

  // Runs the handler on the request c's parser completed and writes its answer; the parser
  // is done with. True when the connection stays open for the next request (the client
  // wants it, `may_keep`, not stopping, keep_alive_max not reached) and the write went out.
  bool AnswerRequest(Connection* c, bool may_keep) {
    HttpRequest& r = c->parser->request();
    const bool head_only = r.method == "HEAD";
    const bool client_keeps = r.keep_alive;
    const Delivery d = ToDelivery(r, c->remote);
    c->parser.reset();
    const Answer a = handler(d);
    // After the handler: a Stop() while it ran makes this answer the connection's last.
    const bool keep = client_keeps && may_keep && !stopping && ++c->served < limits.keep_alive_max;
    return Send(c, FormatAnswer(a, keep, limits.keep_alive_timeout_s, head_only)) && keep;
  }

  // Serves what `c` has sent, then re-arms or closes it; `c` is not touched after.
  void Serve(Connection* c) {
    for (;;) {
      bool eof = false;
      if (!Receive(c, eof)) return Close(c);
      bool answered = false;
      while (!c->in.empty()) {
        if (!c->parser) {  // a request's first byte: it has read_timeout to arrive whole
          c->parser = std::make_unique<RequestParser>(ParserLimitsFor());
          c->deadline = Steady::now() + limits.read_timeout;
          c->continued = false;
        }
        RequestParser& p = *c->parser;
        c->in.erase(0, p.Feed(c->in));
        if (p.failed()) {
          return Refuse(c, ErrorAnswer(p.refusal().status, p.refusal().message),
                        "malformed or over a limit");
        }
        if (p.done()) {
          if (!AnswerRequest(c, /*may_keep=*/!eof)) return Close(c);
          answered = true;
          continue;
        }
        if (p.head_done() && p.request().expect_continue && !c->continued) {
          c->continued = true;
          if (head_check) {
            HttpRequest head = p.request();
            head.body.clear();
            if (auto refusal = head_check(ToDelivery(head, c->remote))) {
              return Refuse(c, *refusal, "refused before its body (Expect: 100-continue)");
            }
          }
          if (!Send(c, "HTTP/1.1 100 Continue\r\n\r\n")) return Close(c);
        }
        break;  // the rest of this request is still to come
      }
      // A client that shut down its sending side in the middle of a request will not finish
      // it; one that did so after whole requests got its answers above.
      if (eof) return Close(c);
      // After answering, the connection's next request may be here already: serve it on
      // this thread rather than through another wait.
      if (!answered) break;
    }
    if (!c->parser) c->deadline = Steady::now() + std::chrono::seconds(limits.keep_alive_timeout_s);
    Rearm(c);
  }

  // ---- the threads

  void Loop() {
    while (!stopping) {
      epoll_event ev{};
      int n = ::epoll_wait(epoll, &ev, 1, 100);
      if (n == 1 && !stopping) {
        if (ev.data.u64 == kListenId) {
          AcceptAll();
        } else if (ev.data.u64 != kWakeId) {
          if (Connection* c = Take(ev.data.u64)) Serve(c);
        }
      }
      MaybeSweep();
    }
  }

  // Closes connections past their deadline, resumes accepting after a pause, and reports a
  // flood; by one thread at a time, every 100 ms.
  void MaybeSweep() {
    const auto now = Steady::now();
    auto last = last_sweep.load();
    if (now - last < std::chrono::milliseconds(100) ||
        !last_sweep.compare_exchange_strong(last, now)) {
      return;
    }
    size_t timed_out = 0, idle_closed = 0, refused_now = 0, accept_failures_now = 0;
    size_t open = 0;
    {
      std::lock_guard lock(mu);
      for (auto it = conns.begin(); it != conns.end();) {
        Connection* c = it->second.get();
        ++it;
        if (c->busy || now < c->deadline) continue;
        (c->parser || c->served == 0 ? timed_out : idle_closed) += 1;
        CloseLocked(c);
      }
      if (accept_paused && now >= accept_resume && !stopping) {
        accept_paused = false;
        ArmListener(EPOLL_CTL_MOD);
      }
      std::swap(refused_now, refused);
      std::swap(accept_failures_now, accept_failures);
      open = conns.size();
    }
    if (timed_out > 0 || refused_now > 0 || accept_failures_now > 0) {
      LogWarn({{"msg", "connections closed at the edge"},
               {"request_timeouts", timed_out},
               {"refused_over_limit", refused_now},
               {"accept_out_of_descriptors", accept_failures_now},
               {"open", open}});
    }
  }

  // After the threads stopped: answers the requests that had arrived whole, closes the rest.
  void Drain() {
    std::vector<Connection*> left;
    {
      std::lock_guard lock(mu);
      for (auto& [id, c] : conns) left.push_back(c.get());
    }
    for (Connection* c : left) {
      bool eof = false;
      if (Receive(c, eof) && !c->in.empty()) {
        if (!c->parser) c->parser = std::make_unique<RequestParser>(ParserLimitsFor());
        c->in.erase(0, c->parser->Feed(c->in));
        if (c->parser->done()) AnswerRequest(c, /*may_keep=*/false);
      }
      Close(c);
    }
  }

  const HttpLimits limits;
  const DeliveryHandler handler;
  const HeadCheck head_check;
  const int epoll;
  const int wake;
  std::atomic<int> listen_fd{-1};
  std::atomic<bool> stopping{false};
  std::atomic<bool> ended{false};  // Run() returned
  std::atomic<Steady::time_point> last_sweep{Steady::now()};

  std::mutex mu;  // guards everything below
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns;
  uint64_t next_id = 2;
  size_t refused = 0;
  size_t accept_failures = 0;
  bool accept_paused = false;
  Steady::time_point accept_resume;
};

HttpServer::HttpServer(HttpLimits limits, DeliveryHandler handler, HeadCheck head_check)
    : impl_(std::make_unique<Impl>(limits, std::move(handler), std::move(head_check))) {}

HttpServer::~HttpServer() { Stop(); }

StatusOr<int> HttpServer::Bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  auto fail = [&](const std::string& why) {
    return Status::Unavailable("cannot listen", host + ":" + service + ": " + why);
  };
  if (int rc =
          ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return fail(gai_strerror(rc));
  }
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        ::listen(fd, impl_->limits.listen_backlog) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return fail(error);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int bound = 0;
  NumericHost(addr, len, bound);
  impl_->listen_fd = fd;
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
  impl_->listen_fd = fd;
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

// From Bind/Adopt (the kernel queues connections from then on, and Run() is about to take
// them) until Stop() or the end of Run().
bool HttpServer::Serving() const {
  return impl_->listen_fd >= 0 && !impl_->stopping && !impl_->ended;
}

void HttpServer::Run() {
  Impl& s = *impl_;
  if (s.stopping || s.listen_fd < 0) return;
  SetNonBlocking(s.listen_fd);
  s.ArmListener(EPOLL_CTL_ADD);
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, s.limits.threads); ++i) threads.emplace_back([&s] { s.Loop(); });
  s.Loop();
  for (std::thread& t : threads) t.join();
  {
    std::lock_guard lock(s.mu);
    ::close(s.listen_fd);  // connections not yet accepted are refused from now on
    s.listen_fd = -1;
  }
  s.Drain();
  s.ended = true;
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    if (s.stopping.exchange(true)) return;
    if (s.listen_fd >= 0) ::epoll_ctl(s.epoll, EPOLL_CTL_DEL, s.listen_fd, nullptr);
  }
  uint64_t one = 1;
  (void)!::write(s.wake, &one, sizeof one);
}

}  // namespace hookbox
