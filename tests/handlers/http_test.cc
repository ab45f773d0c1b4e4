// Tests for handlers/http and src/http/client: a real downstream (cpp-httplib's server on
// 127.0.0.1, port 0) that records what it was sent and answers as each test says.
#include "handlers/http/http.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "base/crypto.h"
#include "http/client.h"
#include "tests/handlers/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::Build;
using testing::Event;
using testing::Quoted;

struct Seen {
  std::string body;
  Headers headers;
};

using Answer = std::function<void(const httplib::Request&, httplib::Response&)>;

// The downstream: records each request, then answers with `answer`.
class Downstream final {
 public:
  explicit Downstream(Answer answer) : answer_(std::move(answer)) {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      Seen seen{req.body, {}};
      for (const auto& [name, value] : req.headers) seen.headers.emplace(name, value);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        seen_.push_back(std::move(seen));
      }
      answer_(req, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib's stop() is lost if it comes before the accept loop has started.
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
  }
  ~Downstream() {
    Release();
    server_.stop();
    thread_.join();
  }

  std::string Url(const std::string& path = "/hook") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lock(mutex_);
    return seen_;
  }
  // For answers that hang: blocks until the test is over.
  void Hang() {
    std::unique_lock<std::mutex> lock(mutex_);
    released_cv_.wait_for(lock, std::chrono::seconds(10), [this] { return released_; });
  }

 private:
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }

  Answer answer_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Seen> seen_;  // guarded by mutex_
  bool released_ = false;   // guarded by mutex_
  std::condition_variable released_cv_;
};

Answer Reply(int status, const std::string& body = "", const Headers& headers = {}) {
  return [=](const httplib::Request&, httplib::Response& res) {
    res.status = status;
    for (const auto& [name, value] : headers) res.set_header(name, value);
    res.set_content(body, "text/plain");
  };
}

std::unique_ptr<Handler> HttpHandlerFor(const std::string& url, const std::string& more = "") {
  auto built = Build("http", "{url: " + Quoted(url) + (more.empty() ? "" : ", " + more) + "}");
  INFO(built.Errors());
  REQUIRE(built.handler != nullptr);
  return std::move(built.handler);
}

std::string First(const Headers& headers, const std::string& name) {
  auto value = HeaderValue(headers, name);
  return value ? std::string(*value) : std::string("<absent>");
}

TEST_CASE("http: 2xx is ok; the downstream gets the body, Content-Type and Idempotency-Key") {
  Downstream downstream(Reply(200, "thanks"));
  auto handler = HttpHandlerFor(downstream.Url(), "headers: {X-Token: abc}");
  CHECK(handler->timeout() == std::chrono::seconds(10));

  HandlerEvent event = Event("evt_1", "a=1&b=2");
  event.headers_json = R"({"content-type":"application/x-www-form-urlencoded","X-Other":"1"})";
  HandlerResult r = handler->Run(event);
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.detail == "HTTP 200: thanks");
  CHECK_FALSE(r.retry_after);

  CHECK(handler->Run(Event("evt_2", R"({"x":1})")).outcome == Outcome::kOk);
  auto seen = downstream.seen();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].body == "a=1&b=2");
  CHECK(First(seen[0].headers, "Content-Type") == "application/x-www-form-urlencoded");
  CHECK(First(seen[0].headers, "Idempotency-Key") == "ep:evt_1");
  CHECK(First(seen[0].headers, "X-Token") == "abc");
  CHECK(First(seen[0].headers, "X-Other") == "<absent>");
  CHECK(First(seen[0].headers, "webhook-signature") == "<absent>");
  CHECK(seen[1].body == R"({"x":1})");
  CHECK(First(seen[1].headers, "Content-Type") == "application/json");
}

TEST_CASE("http: an event id that cannot be a header value is permanent, and not sent") {
  Downstream downstream(Reply(200));
  HandlerResult r = HttpHandlerFor(downstream.Url())->Run(Event("evt\r\nX-Injected: 1"));
  CHECK(r.outcome == Outcome::kPermanent);
  CHECK(downstream.seen().empty());
}

TEST_CASE("http: 503 with Retry-After is failed and asks for that delay") {
  Downstream downstream(Reply(503, "busy", {{"Retry-After", "7"}}));
  HandlerResult r = HttpHandlerFor(downstream.Url())->Run(Event());
  CHECK(r.outcome == Outcome::kFailed);
  CHECK(r.detail == "HTTP 503: busy");
  REQUIRE(r.retry_after);
  CHECK(*r.retry_after == std::chrono::seconds(7));
}

TEST_CASE("http: 408, 429 and 5xx retry; other 4xx and 3xx are permanent") {
  for (int status : {408, 429, 500, 502}) {
    Downstream downstream(Reply(status));
    INFO(status);
    HandlerResult r = HttpHandlerFor(downstream.Url())->Run(Event());
    CHECK(r.outcome == Outcome::kFailed);
    CHECK(r.detail == "HTTP " + std::to_string(status));
  }
  for (int status : {400, 404, 410, 301}) {
    Downstream downstream(Reply(status, "", {{"Location", "/elsewhere"}}));
    INFO(status);
    CHECK(HttpHandlerFor(downstream.Url())->Run(Event()).outcome == Outcome::kPermanent);
  }
}

TEST_CASE("http: only the first 512 bytes of an answer go into the detail") {
  Downstream downstream(Reply(500, std::string(100'000, 'e')));
  HandlerResult r = HttpHandlerFor(downstream.Url())->Run(Event());
  CHECK(r.outcome == Outcome::kFailed);
  CHECK(r.detail.size() == std::string("HTTP 500: ").size() + 512);
}

TEST_CASE("http: connection refused is failed") {
  int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), len) == 0);
  REQUIRE(::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(sock);  // bound, never listened, now closed: nothing accepts on that port
  HandlerResult r =
      HttpHandlerFor("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x")
          ->Run(Event());
  CHECK(r.outcome == Outcome::kFailed);
  CHECK(r.detail.starts_with("POST failed: "));
}

TEST_CASE("http: a downstream slower than the timeout is failed, at the timeout") {
  Downstream* self = nullptr;
  Downstream downstream([&self](const httplib::Request&, httplib::Response& res) {
    self->Hang();
    res.status = 200;
  });
  self = &downstream;
  auto handler = HttpHandlerFor(downstream.Url(), "timeout: 300ms");
  auto started = std::chrono::steady_clock::now();
  HandlerResult r = handler->Run(Event());
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(r.outcome == Outcome::kFailed);
  CHECK(r.detail == "POST failed: timed out (timeout 300ms)");
  CHECK(took < std::chrono::seconds(3));
}

TEST_CASE("http: sign re-signs as a Standard Webhook that hookbox itself verifies") {
  const std::string secret = "whsec_" + Base64Encode("0123456789abcdef0123456789abcdef");
  Downstream downstream(Reply(204));
  ::setenv("HOOKBOX_TEST_SIGN_SECRET", secret.c_str(), 1);
  auto handler =
      HttpHandlerFor(downstream.Url(), "sign: {secret: {env: HOOKBOX_TEST_SIGN_SECRET}}");
  ::unsetenv("HOOKBOX_TEST_SIGN_SECRET");
  HandlerResult r = handler->Run(Event("evt_signed", R"({"type":"x"})"));
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.detail.find(secret) == std::string::npos);

  auto seen = downstream.seen();
  REQUIRE(seen.size() == 1);
  CHECK(First(seen[0].headers, "webhook-id") == "evt_signed");
  Endpoint endpoint;
  endpoint.name = "downstream";
  endpoint.provider = Provider::kStandard;
  endpoint.secrets = {{"value", secret}};
  Status verified =
      Verify(endpoint, seen[0].headers, seen[0].body, std::chrono::system_clock::now());
  CHECK(verified.ToString() == "ok");
  endpoint.secrets = {{"value", "whsec_" + Base64Encode("another key, another signature..")}};
  CHECK_FALSE(
      Verify(endpoint, seen[0].headers, seen[0].body, std::chrono::system_clock::now()).ok());
}

TEST_CASE("http: Retry-After as seconds or an HTTP-date, at most an hour") {
  using std::chrono::seconds;
  const auto now = std::chrono::system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37
  CHECK(ParseRetryAfter("7", now) == seconds(7));
  CHECK(ParseRetryAfter(" 120 ", now) == seconds(120));
  CHECK(ParseRetryAfter("86400", now) == seconds(3600));
  CHECK(ParseRetryAfter("99999999999999999999999", now) == seconds(3600));
  CHECK(ParseRetryAfter("Sun, 06 Nov 1994 08:51:37 GMT", now) == seconds(120));
  CHECK(ParseRetryAfter("Mon, 07 Nov 1994 08:49:37 GMT", now) == seconds(3600));
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 08:40:00 GMT", now));  // past
  CHECK_FALSE(ParseRetryAfter("0", now));
  CHECK_FALSE(ParseRetryAfter("-5", now));
  CHECK_FALSE(ParseRetryAfter("soon", now));
  CHECK_FALSE(ParseRetryAfter("", now));
}

TEST_CASE("http: the factory reports every problem, and never a secret") {
  auto built = Build("http", R"({
    url: "ftp://example.com/x", timeout: 10, retries: 3,
    headers: {Content-Type: text/plain, "Bad Name": x, X-Ok: [1], Idempotency-Key: k},
    sign: {secret: {value: "not-a-key!"}, algo: v1}})");
  CHECK(built.handler == nullptr);
  INFO(built.Errors());
  CHECK(built.HasError("h.url: \"ftp://example.com/x\" is not an http(s) URL"));
  CHECK(built.HasError("h.timeout: \"10\" is not a duration"));
  CHECK(built.HasError("h: unknown key \"retries\""));
  CHECK(built.HasError("h.headers.Content-Type: is set by hookbox"));
  CHECK(built.HasError("h.headers.Idempotency-Key: is set by hookbox"));
  CHECK(built.HasError("h.headers.Bad Name: not a valid header name"));
  CHECK(built.HasError("h.headers.X-Ok: expected a single-line text value"));
  CHECK(built.HasError("h.sign.secret: the secret from value is not a Standard Webhooks key"));
  CHECK(built.HasError("h.sign: unknown key \"algo\""));
  CHECK(built.errors.size() == 9);
  CHECK_FALSE(built.HasError("not-a-key!"));

  CHECK(Build("http", "{timeout: 1s}").HasError("h: url is required"));
  CHECK(Build("http", "{url: \"http://u:p@host/\"}").HasError("no user:password@"));
  CHECK(Build("http", "{url: \"http://host:0/\"}").HasError("port must be 1-65535"));
  CHECK(Build("http", "{url: \"http://h/\", sign: {}}").HasError("h.sign: secret is required"));
  CHECK(Build("http", "{url: \"http://h/\", sign: {secret: {env: HOOKBOX_TEST_UNSET_VAR}}}")
            .HasError("h.sign.secret: environment variable HOOKBOX_TEST_UNSET_VAR is not set"));
  CHECK(Build("http", "{url: \"http://h/\", sign: {secret: whsec_abc}}")
            .HasError("h.sign.secret: expected one of {env: NAME}"));
}

TEST_CASE("http client: URLs") {
  auto url = ParseHttpUrl("http://127.0.0.1:8080/a/b?c=d");
  REQUIRE(url.ok());
  CHECK(url->host == "127.0.0.1");
  CHECK(url->port == 8080);
  CHECK(url->path == "/a/b?c=d");
  CHECK_FALSE(url->https);
  auto https = ParseHttpUrl("https://example.com");
  REQUIRE(https.ok());
  CHECK(https->https);
  CHECK(https->port == 443);
  CHECK(https->path == "/");
  auto v6 = ParseHttpUrl("http://[::1]:9/x");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(ParseHttpUrl("http://h?q=1")->path == "/?q=1");
  for (const char* bad :
       {"", "http://", "http://:80/", "http://h:/", "http://h:99999/", "http://h/a b",
        "http://h/#frag", "http://::1/", "HTTP://h/", "http://[::1/"}) {
    INFO(bad);
    CHECK_FALSE(ParseHttpUrl(bad).ok());
  }
}

}  // namespace
}  // namespace hookbox
