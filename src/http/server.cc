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
//
// Room for new connections. While no thread has it, a connection is listed in one of two
// queues (and in its peer's own pair), by deadline: `idle` (kept alive between requests) or
// `waiting` (its request, or its first one, incomplete: the earliest deadline has waited the
// longest). A new connection past max_connections, or past max_connections_per_peer for its
// address, takes the place of the first idle one, else of the first waiting one (its
// peer's own, at the per-peer cap): a client that opens connections and sends nothing
// displaces its own oldest, and never keeps another's delivery out.
//
// Memory. `buffered` counts the bytes that requests hold (Held(): unparsed bytes, heads,
// body buffers) against max_buffered. Before each read a thread reserves what the read can
// add at most (Cost()); when the budget cannot take even a small read, the connection is
// parked: not read, armed in epoll for its peer's hang-up alone, its deadline running, until
// bytes are freed (an answer, a close) and it is woken, or its peer hangs up and it is
// closed. So past the budget nothing is read or allocated.
#include "http/server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/ascii.h"
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
bool HasNoLineBreak(const std::string& s) { return s.find_first_of("\r\n") == std::string::npos; }

Answer ErrorAnswer(int status, const std::string& message) {
  return Answer{status, nlohmann::json{{"error", message}}.dump(), {}};
}

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;

// A place in a queue of connections: the connection's deadline, then its id.
using QueueKey = std::pair<Steady::time_point, uint64_t>;
using Queue = std::set<QueueKey>;
enum class Lane { kNone, kIdle, kWaiting };

// A client connection, owned by the table; touched by one thread at a time (`busy`).
struct Connection {
  uint64_t id = 0;
  int fd = -1;
  std::string remote;                     // "ip:port", read once at accept
  std::string peer;                       // its IP address ("" for a unix socket)
  std::string in;                         // received, not yet taken by the parser
  std::unique_ptr<RequestParser> parser;  // the request being read; none between requests
  Steady::time_point deadline;
  bool busy = false;        // a thread is serving it (the sweep leaves it alone)
  bool continued = false;   // 100 Continue sent for the current request
  bool parked = false;      // waiting for room in max_buffered: not armed in epoll
  size_t served = 0;        // requests answered (keep_alive_max)
  size_t charged = 0;       // bytes counted in `buffered` for it (Held() when last settled)
  Lane lane = Lane::kNone;  // its queue while no thread has it, under {deadline, id}
};

// One client address's connections: their number and their queues.
struct Peer {
  size_t open = 0;
  Queue idle, waiting;
};

// What the buffers of c's request bytes hold (see the budget, above).
size_t Held(const Connection& c) { return c.in.capacity() + (c.parser ? c.parser->held() : 0); }

// The most Held(c) grows by when `n` bytes are read and fed: c.in's growth (bytes left over
// are copied into it), the bytes themselves as head or body, and one growth of the body's
// buffer. An over-estimate: what is not used is given back once the bytes are fed.
size_t Cost(const Connection& c, size_t n) {
  size_t in_growth = n;
  if (!c.in.empty()) {
    const size_t need = c.in.size() + n;
    in_growth = need > c.in.capacity() ? std::max(2 * c.in.capacity(), need) - c.in.capacity() : 0;
  }
  return in_growth + 2 * n + (c.parser ? c.parser->body_growth(n) : 0);
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
    if (!HasNoLineBreak(name) || !HasNoLineBreak(value) ||
        EqualsIgnoringAsciiCase(name, "Content-Length") ||
        EqualsIgnoringAsciiCase(name, "Connection")) {
      continue;
    }
    typed = typed || EqualsIgnoringAsciiCase(name, "Content-Type");
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
    if (it == conns.end() || it->second->busy || it->second->parked) return nullptr;
    Connection* c = it->second.get();
    UnlistLocked(c);
    c->busy = true;
    return c;
  }

  // Back to epoll, waiting for more bytes until its deadline. The caller lets go of `c`.
  void Rearm(Connection* c) {
    std::lock_guard lock(mu);
    if (stopping) return CloseLocked(c);
    c->busy = false;
    ListLocked(c);
    ArmLocked(c);
  }
  void ArmLocked(Connection* c) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.u64 = c->id;
    ::epoll_ctl(epoll, EPOLL_CTL_MOD, c->fd, &ev);
  }

  // Not read until max_buffered has room (WakeParkedLocked); its deadline still runs. The
  // caller lets go of `c`. Watched meanwhile for its peer's hang-up alone (EPOLLRDHUP;
  // EPOLLHUP and EPOLLERR are always reported): see CloseParked.
  void Park(Connection* c) {
    std::lock_guard lock(mu);
    if (stopping) return CloseLocked(c);
    c->busy = false;
    c->parked = true;
    ListLocked(c);
    parked.push_back(c->id);
    parked_count = parked.size();
    ++parked_now;
    epoll_event ev{};
    ev.events = EPOLLRDHUP | EPOLLONESHOT;
    ev.data.u64 = c->id;
    ::epoll_ctl(epoll, EPOLL_CTL_MOD, c->fd, &ev);
  }

  // A parked connection whose peer hung up (or shut down its sending side) is closed at once,
  // its request unanswered, as at its deadline: it will send nothing more, and the bytes it
  // holds are what keeps the others parked, so a flood that hangs up frees max_buffered
  // for the next delivery then, not at its read_timeout. (Its request may be whole in the
  // kernel's buffer for a client that half-closes; none is read while the budget is full,
  // and a producer retries a delivery it got no answer to.) An event that finds the
  // connection woken meanwhile is left to its new arming, which reports the hang-up again.
  void CloseParked(uint64_t id) {
    std::lock_guard lock(mu);
    auto it = conns.find(id);
    if (it == conns.end() || !it->second->parked) return;
    ++parked_hung_up;
    CloseLocked(it->second.get());
  }

  // Arms up to `threads` parked connections again, first parked first.
  void WakeParkedLocked() {
    for (int woken = 0; woken < std::max(1, limits.threads) && !parked.empty();) {
      auto it = conns.find(parked.front());
      parked.pop_front();
      if (it == conns.end() || !it->second->parked) continue;
      it->second->parked = false;
      ArmLocked(it->second.get());
      ++woken;
    }
    parked_count = parked.size();
  }

  void Close(Connection* c) {
    std::lock_guard lock(mu);
    CloseLocked(c);
  }
  void CloseLocked(Connection* c) {
    UnlistLocked(c);
    if (auto peer = peers.find(c->peer); peer != peers.end() && --peer->second.open == 0) {
      peers.erase(peer);
    }
    buffered -= c->charged;
    ::epoll_ctl(epoll, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    conns.erase(c->id);
    if (parked_count > 0) WakeParkedLocked();
  }

  // ---- the queues of connections no thread has (room for new ones)
  void ListLocked(Connection* c) {
    c->lane = !c->parser && c->served > 0 ? Lane::kIdle : Lane::kWaiting;
    const QueueKey key{c->deadline, c->id};
    Peer& peer = peers[c->peer];
    (c->lane == Lane::kIdle ? idle : waiting).insert(key);
    (c->lane == Lane::kIdle ? peer.idle : peer.waiting).insert(key);
  }
  void UnlistLocked(Connection* c) {
    if (c->lane == Lane::kNone) return;
    const QueueKey key{c->deadline, c->id};
    (c->lane == Lane::kIdle ? idle : waiting).erase(key);
    if (auto peer = peers.find(c->peer); peer != peers.end()) {
      (c->lane == Lane::kIdle ? peer->second.idle : peer->second.waiting).erase(key);
    }
    c->lane = Lane::kNone;
  }
  // The connection a new one takes the place of: the first idle one, else the first
  // waiting one; none when every one is being served.
  Connection* VictimLocked(const Queue& idle_queue, const Queue& waiting_queue) {
    const Queue& from = idle_queue.empty() ? waiting_queue : idle_queue;
    if (from.empty()) return nullptr;
    auto it = conns.find(from.begin()->second);
    return it == conns.end() ? nullptr : it->second.get();
  }

  // ---- the budget of buffered bytes
  // Counts `bytes` in `buffered` if max_buffered can take them.
  bool Reserve(size_t bytes) {
    size_t now = buffered.load();
    do {
      if (now + bytes > limits.max_buffered) return false;
    } while (!buffered.compare_exchange_weak(now, now + bytes));
    return true;
  }
  // Recounts what c holds after its bytes were fed or answered, and gives back `reserved`.
  void Settle(Connection* c, size_t reserved) {
    const size_t held = Held(*c), counted = c->charged + reserved;
    const bool freed = held < counted;
    if (freed) {
      buffered -= counted - held;
    } else {
      buffered += held - counted;
    }
    c->charged = held;
    if (freed && parked_count > 0) {
      std::lock_guard lock(mu);
      WakeParkedLocked();
    }
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
        c->peer = NumericHost(addr, len, port);
        c->remote = c->peer + ":" + std::to_string(port);
      } else {
        c->remote = ":0";
      }
      c->deadline = Steady::now() + limits.read_timeout;  // its first request
      std::lock_guard lock(mu);
      if (!MakeRoomLocked(c->peer)) {
        ++refused;  // every connection is being answered: reported at the next sweep
        ::close(fd);
        continue;
      }
      c->id = next_id++;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
      ev.data.u64 = c->id;
      ::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev);
      ++peers[c->peer].open;
      ListLocked(c.get());
      conns.emplace(c->id, std::move(c));
    }
    std::lock_guard lock(mu);
    if (!stopping && !accept_paused) ArmListener(EPOLL_CTL_MOD);
  }

  // Room for a new connection from `peer`: at max_connections_per_peer, the place of that
  // peer's own idle or longest-waiting connection; else at max_connections, anyone's. False
  // when there is none to take (every candidate is being served).
  bool MakeRoomLocked(const std::string& peer) {
    Connection* victim = nullptr;
    if (auto it = peers.find(peer); limits.max_connections_per_peer > 0 && it != peers.end() &&
                                    it->second.open >= limits.max_connections_per_peer) {
      victim = VictimLocked(it->second.idle, it->second.waiting);
    } else if (conns.size() >= limits.max_connections) {
      victim = VictimLocked(idle, waiting);
    } else {
      return true;
    }
    if (victim == nullptr) return false;
    ++displaced;
    CloseLocked(victim);
    return true;
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

  static Delivery ToDelivery(HttpRequest& r, const Connection& c) {
    Delivery d;
    d.method = std::move(r.method);
    d.path = std::string(TargetPath(r.target));
    d.query = std::string(TargetQuery(r.target));
    d.remote = c.remote;
    d.peer = c.peer;
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
    const Delivery d = ToDelivery(r, *c);
    c->parser.reset();
    const Answer a = handler(d);
    // After the handler: a Stop() while it ran makes this answer the connection's last.
    const bool keep = client_keeps && may_keep && !stopping && ++c->served < limits.keep_alive_max;
    return Send(c, FormatAnswer(a, keep, limits.keep_alive_timeout_s, head_only)) && keep;
  }

  // Feeds the bytes c holds and `fresh` ones just read to its parser, answering each request
  // they complete; what is left (a head not yet whole) stays in c->in. False when `c` is
  // closed (refused, or its answer ended the connection or could not be written).
  bool Process(Connection* c, std::string_view fresh, bool eof) {
    std::string_view data = fresh;
    if (!c->in.empty()) {
      c->in.append(fresh);
      data = c->in;
    }
    while (!data.empty()) {
      if (!c->parser) {  // a request's first byte: it has read_timeout to arrive whole
        c->parser = std::make_unique<RequestParser>(ParserLimitsFor());
        c->deadline = Steady::now() + limits.read_timeout;
        c->continued = false;
      }
      RequestParser& p = *c->parser;
      data.remove_prefix(p.Feed(data));
      if (p.failed()) {
        Refuse(c, ErrorAnswer(p.refusal().status, p.refusal().message),
               "malformed or over a limit");
        return false;
      }
      if (p.done()) {
        if (!AnswerRequest(c, /*may_keep=*/!eof)) {
          Close(c);
          return false;
        }
        continue;
      }
      if (p.head_done() && p.request().expect_continue && !c->continued) {
        c->continued = true;
        if (head_check) {
          HttpRequest head = p.request();
          head.body.clear();
          if (auto refusal = head_check(ToDelivery(head, *c))) {
            Refuse(c, *refusal, "refused before its body (Expect: 100-continue)");
            return false;
          }
        }
        if (!Send(c, "HTTP/1.1 100 Continue\r\n\r\n")) {
          Close(c);
          return false;
        }
      }
      break;  // the rest of this request is still to come
    }
    // Body bytes pass from the read straight to the parser; only a head's beginning waits
    // in c->in, whose buffer is let go once it is empty.
    if (data.empty()) {
      std::string().swap(c->in);
    } else if (!c->in.empty()) {
      c->in.erase(0, static_cast<size_t>(data.data() - c->in.data()));
    } else {
      c->in.assign(data);
    }
    return true;
  }

  // Reads and serves what `c` has sent, then re-arms, parks or closes it; `c` is not
  // touched after.
  void Serve(Connection* c) {
    char chunk[16384];
    // Bytes read at one wake, so that one client cannot hold a thread: when there are more,
    // epoll (level-triggered) hands the connection out again.
    size_t turn = limits.max_request_head + limits.max_body + sizeof chunk;
    for (;;) {
      size_t want = sizeof chunk, cost = 0;
      for (; want >= 1024; want /= 4) {
        cost = Cost(*c, want);
        if (Reserve(cost)) break;
      }
      if (want < 1024) return Park(c);  // max_buffered is full: read nothing, allocate nothing
      const ssize_t n = ::recv(c->fd, chunk, want, 0);
      if (n < 0) {
        buffered -= cost;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return Close(c);
      }
      // A client that shut down its sending side (n == 0) got answers to what it sent whole,
      // and will not finish a request it left incomplete.
      const bool eof = n == 0;
      if (!Process(c, std::string_view(chunk, static_cast<size_t>(n)), eof)) {
        buffered -= cost;
        return;
      }
      Settle(c, cost);
      if (eof) return Close(c);
      if (static_cast<size_t>(n) >= turn) break;
      turn -= static_cast<size_t>(n);
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
          if (Connection* c = Take(ev.data.u64)) {
            Serve(c);
          } else if ((ev.events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
            CloseParked(ev.data.u64);
          }
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
    size_t displaced_now = 0, parked_now_count = 0, hung_up_now = 0, open = 0;
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
      // A connection parked just as bytes were freed is woken here at the latest.
      if (parked_count > 0 && buffered < limits.max_buffered) WakeParkedLocked();
      std::swap(refused_now, refused);
      std::swap(accept_failures_now, accept_failures);
      std::swap(displaced_now, displaced);
      std::swap(parked_now_count, parked_now);
      std::swap(hung_up_now, parked_hung_up);
      open = conns.size();
    }
    if (timed_out > 0 || refused_now > 0 || accept_failures_now > 0 || displaced_now > 0 ||
        parked_now_count > 0 || hung_up_now > 0) {
      LogWarn({{"msg", "connections closed at the edge"},
               {"request_timeouts", timed_out},
               {"refused_over_limit", refused_now},
               {"displaced_over_limit", displaced_now},
               {"paused_over_max_buffered", parked_now_count},
               {"paused_then_hung_up", hung_up_now},
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
      char chunk[16384];
      bool open = true;
      // What has arrived, up to one whole request; stopping, Process closes the connection
      // once it has answered one.
      for (size_t turn = limits.max_request_head + limits.max_body; open && turn > 0;) {
        const ssize_t n = ::recv(c->fd, chunk, sizeof chunk, 0);
        if (n <= 0) break;
        open = Process(c, std::string_view(chunk, static_cast<size_t>(n)), false);
        turn -= std::min(turn, static_cast<size_t>(n));
      }
      if (open) Close(c);
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

  std::atomic<size_t> buffered{0};      // Held() of every connection, and reservations
  std::atomic<size_t> parked_count{0};  // parked.size(), read without the mutex

  std::mutex mu;  // guards everything below
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns;
  Queue idle, waiting;                          // connections no thread has (see the top)
  std::unordered_map<std::string, Peer> peers;  // by IP address
  std::deque<uint64_t> parked;                  // ids, first parked first (some gone since)
  uint64_t next_id = 2;
  size_t displaced = 0;       // connections closed to make room, since the last sweep
  size_t parked_now = 0;      // parkings since the last sweep
  size_t parked_hung_up = 0;  // parked ones closed at their peer's hang-up, since then
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
