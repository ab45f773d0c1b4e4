// cpp-httplib behind HttpServer: limits, edge guards, and the translation between
// httplib's request/response and Delivery/Answer (see server.h).
#include "http/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <cstring>
#include <thread>

#include <httplib.h>

#include "ops/log.h"

namespace hookbox {
namespace {

void SetAnswer(httplib::Response& res, const Answer& a) {
  res.status = a.status;
  for (const auto& [k, v] : a.headers) res.set_header(k, v);
  res.set_content(a.body, "application/json");
}

void Refuse(httplib::Response& res, int status, const std::string& message) {
  // The unread body (if any) is still in the socket: the connection must not be reused.
  res.set_header("Connection", "close");
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

}  // namespace

struct HttpServer::Impl {
  HttpLimits limits;
  HttpHandler handler;
  httplib::Server server;
  std::atomic<int> listen_fd{-1};
  std::atomic<bool> stopping{false};
  std::atomic<bool> running{false};  // inside Run()
};

HttpServer::HttpServer(HttpLimits limits, HttpHandler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
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

void HttpServer::Run() {
  impl_->running = true;
  if (!impl_->stopping) impl_->server.listen_after_bind();
  impl_->running = false;
}

void HttpServer::Stop() {
  impl_->stopping = true;
  // The library ignores stop() until its accept loop has started: wait for it if Run() is
  // about to enter that loop, so a stop right after start is never lost.
  while (impl_->running && !impl_->server.is_running()) std::this_thread::yield();
  impl_->server.stop();
}

}  // namespace hookbox
