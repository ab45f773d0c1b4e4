// Tests for handlers/http, and src/http/client's bounds as the handler reports them: a real
// downstream (cpp-httplib's server on 127.0.0.1, port 0) that records what it was sent and
// answers as each test says. HttpPost's own cases are tests/http/client_test.cc; the URLs,
// tests/base/http_url_test.cc.
#include "handlers/http/http.h"

#include <httplib.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "base/crypto.h"
#include "http/client.h"
#include "tests/handlers/testing.h"
#include "tests/http/raw_peer.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::Build;
using testing::Event;
using testing::Quoted;
using testing::TempDir;

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

// The URL of a raw peer (tests/http/raw_peer.h) as a handler's `url:`.
std::string UrlOf(const testing::RawPeer& peer) {
  return "http://127.0.0.1:" + std::to_string(peer.port()) + "/hook";
}

// This process's resident memory, in KiB (VmRSS of /proc/self/status).
long ResidentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// A raw answer: `status_line`, then `count` header lines of `line`, then an empty body.
std::string RawAnswer(const std::string& line, size_t count,
                      const std::string& status_line = "HTTP/1.1 200 OK") {
  std::string answer = status_line + "\r\n";
  answer.reserve(answer.size() + count * (line.size() + 2) + 64);
  for (size_t i = 0; i < count; ++i) answer += line + "\r\n";
  return answer + "Content-Length: 0\r\n\r\n";
}

// A 200 whose head (status line, header lines, the empty line) is exactly `total` bytes.
std::string AnswerWithHeadOf(size_t total) {
  const std::string start = "HTTP/1.1 200 OK\r\n", end = "Content-Length: 0\r\n\r\n";
  std::string answer = start;
  size_t left = total - start.size() - end.size();
  for (int i = 0; left > 0; ++i) {
    // Lines under cpp-httplib's 8 KiB per line; the last one takes what is left (> 100).
    const size_t line = left > 8100 ? 8000 : left;
    const std::string name = "X-Pad-" + std::to_string(i) + ": ";
    answer += name + std::string(line - name.size() - 2, 'a') + "\r\n";
    left -= line;
  }
  return answer + end;
}

// A self-signed certificate for 127.0.0.1 (a P-256 key), as PEM files in `dir`: the
// trust anchor of an https downstream, given to the client as SSL_CERT_FILE.
struct TlsFiles {
  std::string cert, key;
};
TlsFiles SelfSigned(const TempDir& dir) {
  TlsFiles files{dir / "cert.pem", dir / "key.pem"};
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "IP:127.0.0.1");
  X509_add_ext(cert, san, -1);
  X509_EXTENSION_free(san);
  X509_sign(cert, key, EVP_sha256());
  FILE* out = ::fopen(files.cert.c_str(), "w");
  PEM_write_X509(out, cert);
  ::fclose(out);
  out = ::fopen(files.key.c_str(), "w");
  PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
  ::fclose(out);
  X509_free(cert);
  EVP_PKEY_free(key);
  return files;
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

TEST_CASE("http: an answer of 400,000 headers fails at 64 KiB of head, and memory stays down") {
  // Such a downstream must not grow the daemon's memory for good.
  testing::RawPeer raw(RawAnswer("X-Flood: y", 400'000));
  auto handler = HttpHandlerFor(UrlOf(raw));
  const long before = ResidentKiB();
  const auto started = std::chrono::steady_clock::now();
  HandlerResult r = handler->Run(Event());
  const auto took = std::chrono::steady_clock::now() - started;
  const long after = ResidentKiB();
  CHECK(r.outcome == Outcome::kFailed);
  CHECK(r.detail == "POST failed: response head over 64 KiB (timeout 10s)");
  CHECK(took < std::chrono::seconds(5));
  INFO("VmRSS " << before << " KiB before, " << after << " KiB after");
  CHECK(after - before < 16 * 1024);
}

TEST_CASE("http: an answer head of exactly 64 KiB and 256 header lines is taken; one more is not") {
  SECTION("64 KiB") {
    testing::RawPeer raw(AnswerWithHeadOf(kMaxReplyHead));
    CHECK(HttpHandlerFor(UrlOf(raw))->Run(Event()).outcome == Outcome::kOk);
  }
  SECTION("64 KiB and a byte") {
    testing::RawPeer raw(AnswerWithHeadOf(kMaxReplyHead + 1));
    HandlerResult r = HttpHandlerFor(UrlOf(raw))->Run(Event());
    CHECK(r.outcome == Outcome::kFailed);
    CHECK(r.detail == "POST failed: response head over 64 KiB (timeout 10s)");
  }
  SECTION("256 header lines") {  // 255 and Content-Length
    testing::RawPeer raw(RawAnswer("X-A: b", kMaxReplyHeaders - 1));
    CHECK(HttpHandlerFor(UrlOf(raw))->Run(Event()).outcome == Outcome::kOk);
  }
  SECTION("257 header lines") {
    testing::RawPeer raw(RawAnswer("X-A: b", kMaxReplyHeaders));
    HandlerResult r = HttpHandlerFor(UrlOf(raw))->Run(Event());
    CHECK(r.outcome == Outcome::kFailed);
    CHECK(r.detail == "POST failed: response has over 256 header lines (timeout 10s)");
  }
  SECTION("257 header lines on a 204, which has no body") {
    testing::RawPeer raw(RawAnswer("X-A: b", kMaxReplyHeaders, "HTTP/1.1 204 No Content"));
    CHECK(HttpHandlerFor(UrlOf(raw))->Run(Event()).outcome == Outcome::kFailed);
  }
}

TEST_CASE("http: https works through the client's own TLS stream, and its head is bounded too") {
  TempDir dir;
  const TlsFiles files = SelfSigned(dir);
  httplib::SSLServer server(files.cert.c_str(), files.key.c_str());
  std::string seen_body, seen_type;  // written by the server's thread before it answers
  server.Post("/ok", [&](const httplib::Request& req, httplib::Response& res) {
    seen_body = req.body;
    seen_type = req.get_header_value("X-Hookbox-Event-Type");
    res.status = 200;
    res.set_content(std::string(100'000, 'b'), "text/plain");  // over kMaxReplyBody
  });
  server.Post("/big", [](const httplib::Request&, httplib::Response& res) {
    for (int i = 0; i < 10; ++i)
      res.set_header("X-Big-" + std::to_string(i), std::string(7000, 'a'));
    res.status = 200;
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::yield();
  ::setenv("SSL_CERT_FILE", files.cert.c_str(), 1);  // OpenSSL's default trust store

  const std::string base = "https://127.0.0.1:" + std::to_string(port);
  HandlerResult ok = HttpHandlerFor(base + "/ok")->Run(Event("evt_tls", R"({"tls":true})"));
  HandlerResult big = HttpHandlerFor(base + "/big")->Run(Event());
  ::unsetenv("SSL_CERT_FILE");
  HandlerResult untrusted = HttpHandlerFor(base + "/ok")->Run(Event());
  server.stop();
  serving.join();

  CHECK(ok.outcome == Outcome::kOk);
  CHECK(ok.detail == "HTTP 200: " + std::string(512, 'b'));
  CHECK(seen_body == R"({"tls":true})");
  CHECK(seen_type == "invoice.paid");
  CHECK(big.outcome == Outcome::kFailed);
  CHECK(big.detail == "POST failed: response head over 64 KiB (timeout 10s)");
  CHECK(untrusted.outcome == Outcome::kFailed);
  CHECK(untrusted.detail.starts_with("POST failed: TLS certificate verification failed"));
}

TEST_CASE("http: a replay's POST has its own Idempotency-Key and says X-Hookbox-Replay") {
  Downstream downstream(Reply(200));
  auto handler = HttpHandlerFor(downstream.Url(), "");
  HandlerEvent event = Event("evt_r", "{}");
  CHECK(handler->Run(event).outcome == Outcome::kOk);
  event.generation = 1;
  CHECK(handler->Run(event).outcome == Outcome::kOk);
  auto seen = downstream.seen();
  REQUIRE(seen.size() == 2);
  CHECK(First(seen[0].headers, "Idempotency-Key") == "ep:evt_r");
  CHECK(First(seen[0].headers, "X-Hookbox-Replay") == "<absent>");
  CHECK(First(seen[1].headers, "Idempotency-Key") == "ep/replay-1:evt_r");
  CHECK(First(seen[1].headers, "X-Hookbox-Replay") == "1");
}

TEST_CASE("idempotency keys: no replay's key is another event's key, whatever the ids") {
  // Issue 41, finding 8: the first replay of event k1 was keyed `rep:k1:replay-1`, the key of
  // event `k1:replay-1`'s first run, and a downstream that dedupes on it dropped one of the
  // two (GitHub's, Shopify's and GitLab's ids are not signed: a sender chooses them).
  auto key = [](const std::string& endpoint, const std::string& id, int generation) {
    HandlerEvent e;
    e.endpoint = endpoint;
    e.event_id = id;
    e.generation = generation;
    return e.IdempotencyKey();
  };
  CHECK(key("rep", "k1", 0) == "rep:k1");  // unchanged: downstreams dedupe on it
  CHECK(key("rep", "k1", 1) != key("rep", "k1:replay-1", 0));
  CHECK(key("rep", "k1", 2) != key("rep", "k1:replay-2", 0));
  CHECK(key("rep", "k1", 1) != key("rep", "k1:replay-1:replay-1", 0));

  // Ids a sender could pick to meet another key: ids with the separators, then every key of
  // those and every tail of one (what follows each '/' or ':' in it) as an id too, on
  // endpoints that are prefixes of one another. Each (endpoint, id, generation) has a key of
  // its own.
  const std::vector<std::string> endpoints = {"rep", "re", "rep.x", "rep-1", "r"};
  const std::vector<int> generations = {0, 1, 2, 10, 12};
  std::vector<std::string> ids = {"k1",           "",          "k1:replay-1",    "replay-1:k1",
                                  "/replay-1:k1", ":replay-1", "1:k1",           "k1/replay-1",
                                  "a/b:c",        "rep:k1",    "rep/replay-1:k1"};
  {
    std::vector<std::string> more = ids;
    for (const std::string& endpoint : endpoints) {
      for (const std::string& id : ids) {
        for (int generation : generations) {
          const std::string k = key(endpoint, id, generation);
          for (size_t i = 0; i < k.size(); ++i) {
            if (k[i] == '/' || k[i] == ':') more.push_back(k.substr(i + 1));
          }
          more.push_back(k);
        }
      }
    }
    std::sort(more.begin(), more.end());
    more.erase(std::unique(more.begin(), more.end()), more.end());
    ids = std::move(more);
  }
  std::map<std::string, std::tuple<std::string, std::string, int>> owner;
  int collisions = 0;
  for (const std::string& endpoint : endpoints) {
    for (const std::string& id : ids) {
      for (int generation : generations) {
        auto [it, fresh] = owner.try_emplace(key(endpoint, id, generation),
                                             std::make_tuple(endpoint, id, generation));
        if (!fresh) {
          ++collisions;
          if (collisions <= 5) {
            UNSCOPED_INFO("key " << it->first << ": " << endpoint << " " << id << " " << generation
                                 << " and " << std::get<0>(it->second) << " "
                                 << std::get<1>(it->second) << " " << std::get<2>(it->second));
          }
        }
      }
    }
  }
  CHECK(ids.size() >= 300);  // the 11 above, their keys and the keys' tails
  CHECK(collisions == 0);
}

TEST_CASE("http: every POST names the event's type, id and endpoint in X-Hookbox-* headers") {
  // The type and id are in headers too: a downstream need not parse the body to route it.
  Downstream downstream(Reply(200));
  auto handler = HttpHandlerFor(downstream.Url(), "headers: {X-Token: abc}");
  HandlerEvent event = Event("evt_h", "not json at all");
  event.event_type = "customer.created";
  CHECK(handler->Run(event).outcome == Outcome::kOk);
  auto seen = downstream.seen();
  REQUIRE(seen.size() == 1);
  CHECK(First(seen[0].headers, "X-Hookbox-Event-Type") == "customer.created");
  CHECK(First(seen[0].headers, "X-Hookbox-Event-Id") == "evt_h");
  CHECK(First(seen[0].headers, "X-Hookbox-Endpoint") == "ep");
  CHECK(First(seen[0].headers, "Idempotency-Key") == "ep:evt_h");
  CHECK(First(seen[0].headers, "X-Token") == "abc");

  // The configured headers cannot stand in for them (or for any X-Hookbox- name).
  auto built = Build("http", "{url: " + Quoted(downstream.Url()) +
                                 ", headers: {x-hookbox-event-type: forged, "
                                 "X-Hookbox-Event-Id: forged, X-Hookbox-Anything: x}}");
  INFO(built.Errors());
  CHECK(built.handler == nullptr);
  CHECK(built.HasError("h.headers.x-hookbox-event-type: is set by hookbox"));
  CHECK(built.HasError("h.headers.X-Hookbox-Event-Id: is set by hookbox"));
  CHECK(built.HasError("h.headers.X-Hookbox-Anything: is set by hookbox"));
}

TEST_CASE("http: an event type that cannot be a header value is permanent, and not sent") {
  Downstream downstream(Reply(200));
  HandlerEvent event = Event();
  event.event_type = "a\r\nX-Injected: 1";
  CHECK(HttpHandlerFor(downstream.Url())->Run(event).outcome == Outcome::kPermanent);
  CHECK(downstream.seen().empty());
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

TEST_CASE("http: a Retry-After date past 2262 is capped at an hour, not overflowed") {
  // Such a date must not overflow the nanosecond clock (undefined behaviour): the wrapped
  // value would be taken as a past date, and the retry would not wait at all.
  using std::chrono::seconds;
  const auto now = std::chrono::system_clock::from_time_t(1'800'000'000);  // 2027
  CHECK(ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now) == seconds(3600));
  CHECK(ParseRetryAfter("Sat, 12 Apr 2262 00:00:00 GMT", now) == seconds(3600));
  CHECK(ParseRetryAfter("Wed, 01 Jan 3000 00:00:00 GMT", now) == seconds(3600));
  CHECK(ParseRetryAfter("Fri, 15 Jan 2027 08:00:30 GMT", now) == seconds(30));
  CHECK_FALSE(ParseRetryAfter("Thu, 01 Jan 1970 00:00:00 GMT", now));  // past
  CHECK_FALSE(ParseRetryAfter("Mon, 01 Jan 0001 00:00:00 GMT", now));
  CHECK_FALSE(ParseRetryAfter("Fri, 31 Dec 99999 23:59:59 GMT", now));
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

}  // namespace
}  // namespace hookbox
