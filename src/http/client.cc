// cpp-httplib behind HttpPost (see client.h): URL parsing, the request, a bounded reply
// body, and the watchdog that holds the whole exchange to its timeout. Debian's 0.11.4 has
// per-read and per-write timeouts only; ClientImpl::stop() shutting the socket down from
// another thread is what turns them into one deadline.
#include "http/client.h"

#include <httplib.h>

#include <charconv>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace hookbox {
namespace {

Status BadUrl(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("\"" + std::string(text) + "\" is not an http(s) URL (" +
                                 std::string(why) + ")");
}

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

}  // namespace

std::string HttpUrl::ToString() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return (https ? "https://" : "http://") + h + ":" + std::to_string(port) + path;
}

StatusOr<HttpUrl> ParseHttpUrl(std::string_view text) {
  for (unsigned char c : text) {
    if (c <= ' ' || c == 0x7f) return BadUrl(text, "whitespace or control character");
  }
  HttpUrl url;
  std::string_view rest = text;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
    url.https = true;
    url.port = 443;
  } else {
    return BadUrl(text, "must start with http:// or https://");
  }
  if (rest.find('#') != std::string_view::npos) return BadUrl(text, "no #fragment");
  size_t end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, end);
  if (end != std::string_view::npos) {
    url.path = std::string(rest.substr(end));
    if (url.path.front() == '?') url.path.insert(0, "/");
  }
  if (authority.find('@') != std::string_view::npos) {
    return BadUrl(text, "no user:password@; send credentials in headers");
  }
  std::string_view port;
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return BadUrl(text, "missing \"]\"");
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return BadUrl(text, "junk after \"]\"");
    if (!after.empty()) port = after.substr(1);
  } else {
    size_t colon = authority.find(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
    if (port.find(':') != std::string_view::npos) {
      return BadUrl(text, "put an IPv6 address in brackets");
    }
  }
  if (url.host.empty()) return BadUrl(text, "no host");
  if (port.data() != nullptr) {
    int value = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || p != port.data() + port.size() || value < 1 ||
        value > 65535) {
      return BadUrl(text, "port must be 1-65535");
    }
    url.port = value;
  }
  return url;
}

StatusOr<HttpReply> HttpPost(const HttpUrl& url, const Headers& headers, std::string_view body,
                             const std::string& content_type, std::chrono::milliseconds timeout) {
  std::unique_ptr<httplib::ClientImpl> client;
  if (url.https) {
    client = std::make_unique<httplib::SSLClient>(url.host, url.port);
  } else {
    client = std::make_unique<httplib::ClientImpl>(url.host, url.port);
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
  if (!result) return Status::Unavailable(Describe(result.error()), url.ToString());
  reply.status = result->status;
  for (const auto& [name, value] : result->headers) reply.headers.emplace(name, value);
  return reply;
}

}  // namespace hookbox
