// cpp-httplib behind HttpPost (see client.h): URL parsing, the request, a bounded reply
// head and body, and the watchdog that holds the whole exchange to its timeout. Debian's
// 0.11.4 has per-read and per-write timeouts only; ClientImpl::stop() shutting the socket
// down from another thread is what turns them into one deadline.
//
// The head bound: 0.11.4 reads response headers with no limit on their number (each line
// is limited to 8 KiB, and the library is compiled, so that cannot be changed either), and
// it offers no hook between the status line and the body. What it does let a subclass
// replace is process_socket(), which hands the exchange its Stream; ours wraps that Stream
// in a HeadBound, which refuses to read past kMaxReplyHead bytes until the response handler
// (called once the headers are in, before the body) says the head has ended. For https the
// library's own TLS stream is not in its public header, so TlsStream is the same few lines
// over the SSL* that SSLClient has connected and verified.
#include "http/client.h"

#include <httplib.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

namespace hookbox {
namespace {

std::string Describe(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "cannot connect";
    case httplib::Error::ConnectionTimeout:
      return "connect timed out";
    case httplib::Error::Read:
      return "connection closed or read timed out";
    case httplib::Error::Write:
      return "write failed";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLLoadingCerts:
      return "cannot load CA certificates";
    case httplib::Error::SSLServerVerification:
      return "TLS certificate verification failed";
    default:
      return httplib::to_string(error);
  }
}

// Calls client.stop() once `deadline` passes, unless Done() came first.
class Watchdog final {
 public:
  Watchdog(httplib::ClientImpl& client, std::chrono::steady_clock::time_point deadline) {
    try {
      thread_ = std::thread([this, &client, deadline] {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!wakeup_.wait_until(lock, deadline, [this] { return done_; })) {
          fired_ = true;
          client.stop();
        }
      });
    } catch (const std::system_error&) {
      // No thread to spare: the per-operation timeouts still bound every single wait.
    }
  }
  ~Watchdog() { Done(); }

  // Stops the watchdog; true if it had already cut the exchange off.
  bool Done() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wakeup_.notify_one();
    if (thread_.joinable()) thread_.join();
    return fired_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable wakeup_;
  bool done_ = false;   // guarded by mutex_
  bool fired_ = false;  // guarded by mutex_ until the thread is joined
  std::thread thread_;
};

// What the exchange learned of the answer's head, for the error it becomes.
struct HeadState {
  size_t bytes = 0;       // read before the head ended
  bool ended = false;     // the response handler ran: what follows is the body
  bool too_long = false;  // refused to read past kMaxReplyHead
  bool too_many = false;  // more than kMaxReplyHeaders lines
};

// The exchange's Stream, refusing to read more than kMaxReplyHead bytes of head. The
// library reads the head a byte at a time (or from its own buffer), so the count is exact.
class HeadBound final : public httplib::Stream {
 public:
  HeadBound(httplib::Stream& inner, HeadState& state) : inner_(inner), state_(state) {}

  using httplib::Stream::write;
  bool is_readable() const override { return inner_.is_readable(); }
  bool is_writable() const override { return inner_.is_writable(); }
  ssize_t read(char* ptr, size_t size) override {
    if (state_.ended) return inner_.read(ptr, size);
    if (state_.bytes >= kMaxReplyHead) {
      state_.too_long = true;
      return -1;
    }
    const ssize_t n = inner_.read(ptr, std::min(size, kMaxReplyHead - state_.bytes));
    if (n > 0) state_.bytes += static_cast<size_t>(n);
    return n;
  }
  ssize_t write(const char* ptr, size_t size) override { return inner_.write(ptr, size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    inner_.get_remote_ip_and_port(ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    inner_.get_local_ip_and_port(ip, port);
  }
  socket_t socket() const override { return inner_.socket(); }

 private:
  httplib::Stream& inner_;
  HeadState& state_;
};

// Waits up to `timeout` for `events` on `fd`.
bool Ready(int fd, short events, std::chrono::microseconds timeout) {
  pollfd p{fd, events, 0};
  const int ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(timeout).count());
  int n;
  do {
    n = ::poll(&p, 1, ms);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

void Address(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return;
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

// The TLS connection SSLClient has made (handshake and certificate check done), as a
// Stream: each read and write waits at most its timeout for the socket.
class TlsStream final : public httplib::Stream {
 public:
  TlsStream(int fd, SSL* ssl, std::chrono::microseconds read_timeout,
            std::chrono::microseconds write_timeout)
      : fd_(fd), ssl_(ssl), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  using httplib::Stream::write;
  bool is_readable() const override {
    return SSL_pending(ssl_) > 0 || Ready(fd_, POLLIN, read_timeout_);
  }
  bool is_writable() const override { return Ready(fd_, POLLOUT, write_timeout_); }
  ssize_t read(char* ptr, size_t size) override {
    const int want = static_cast<int>(std::min<size_t>(size, INT_MAX));
    for (;;) {
      if (!is_readable()) return -1;
      const int n = SSL_read(ssl_, ptr, want);
      if (n > 0) return n;
      // A record that held no data (a TLS 1.3 session ticket): wait for the next.
      if (SSL_get_error(ssl_, n) != SSL_ERROR_WANT_READ) return n == 0 ? 0 : -1;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    const int want = static_cast<int>(std::min<size_t>(size, INT_MAX));
    for (;;) {
      if (!is_writable()) return -1;
      const int n = SSL_write(ssl_, ptr, want);
      if (n > 0) return n;
      if (SSL_get_error(ssl_, n) != SSL_ERROR_WANT_WRITE) return -1;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(fd_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(fd_, false, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  const int fd_;
  SSL* const ssl_;
  const std::chrono::microseconds read_timeout_, write_timeout_;
};

std::chrono::microseconds Micros(time_t sec, time_t usec) {
  return std::chrono::seconds(sec) + std::chrono::microseconds(usec);
}

// The clients, each handing the exchange a HeadBound over its connection's stream. These
// override a private virtual of the library's, which C++ allows and 0.11.4's ABI fixes.
class PlainClient final : public httplib::ClientImpl {
 public:
  PlainClient(const std::string& host, int port, HeadState& head)
      : ClientImpl(host, port), head_(head) {}

 private:
  bool process_socket(const Socket& socket,
                      std::function<bool(httplib::Stream&)> callback) override {
    // What ClientImpl::process_socket does, with the wrapper.
    return httplib::detail::process_client_socket(
        socket.sock, read_timeout_sec_, read_timeout_usec_, write_timeout_sec_, write_timeout_usec_,
        [&](httplib::Stream& stream) {
          HeadBound bounded(stream, head_);
          return callback(bounded);
        });
  }
  HeadState& head_;
};

class TlsClient final : public httplib::SSLClient {
 public:
  TlsClient(const std::string& host, int port, HeadState& head)
      : SSLClient(host, port), head_(head) {}

 private:
  bool process_socket(const Socket& socket,
                      std::function<bool(httplib::Stream&)> callback) override {
    if (socket.ssl == nullptr) return false;
    TlsStream tls(socket.sock, socket.ssl, Micros(read_timeout_sec_, read_timeout_usec_),
                  Micros(write_timeout_sec_, write_timeout_usec_));
    HeadBound bounded(tls, head_);
    return callback(bounded);
  }
  HeadState& head_;
};

}  // namespace

StatusOr<HttpReply> HttpPost(const HttpUrl& url, const Headers& headers, std::string_view body,
                             const std::string& content_type, std::chrono::milliseconds timeout) {
  HeadState head;
  std::unique_ptr<httplib::ClientImpl> client;
  if (url.https) {
    client = std::make_unique<TlsClient>(url.host, url.port, head);
  } else {
    client = std::make_unique<PlainClient>(url.host, url.port, head);
  }
  client->set_connection_timeout(timeout);
  client->set_read_timeout(timeout);
  client->set_write_timeout(timeout);
  client->set_keep_alive(false);
  client->set_follow_location(false);
  client->set_tcp_nodelay(true);

  HttpReply reply;
  httplib::Request request;
  request.method = "POST";
  request.path = url.path;
  for (const auto& [name, value] : headers) request.headers.emplace(name, value);
  request.headers.emplace("Content-Type", content_type);
  request.body = std::string(body);
  request.response_handler = [&head](const httplib::Response& response) {
    head.ended = true;
    head.too_many = response.headers.size() > kMaxReplyHeaders;
    return !head.too_many;  // false ends the exchange before the body
  };
  request.content_receiver = [&reply](const char* data, size_t length, uint64_t, uint64_t) {
    size_t room = kMaxReplyBody - reply.body.size();
    reply.body.append(data, std::min(room, length));
    return true;  // keep reading: stopping early would lose the status
  };

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Watchdog watchdog(*client, deadline);
  httplib::Result result = client->send(request);
  // The library's own read timeout (the same length, per read) may end the exchange a
  // moment before the watchdog does: a failure at the deadline is the timeout either way.
  const bool cut_off = watchdog.Done();
  if (cut_off || (!result && std::chrono::steady_clock::now() >= deadline)) {
    return Status::Unavailable("timed out", url.ToString());
  }
  if (head.too_long) {
    return Status::Unavailable(
        "response head over " + std::to_string(kMaxReplyHead / 1024) + " KiB", url.ToString());
  }
  // The response handler is not called for a 204, which has no body: counted here.
  if (head.too_many || (result && result->headers.size() > kMaxReplyHeaders)) {
    return Status::Unavailable(
        "response has over " + std::to_string(kMaxReplyHeaders) + " header lines", url.ToString());
  }
  if (!result) return Status::Unavailable(Describe(result.error()), url.ToString());
  reply.status = result->status;
  for (const auto& [name, value] : result->headers) reply.headers.emplace(name, value);
  return reply;
}

}  // namespace hookbox
