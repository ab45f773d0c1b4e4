// The `http` handler: one POST per attempt through src/http/client.h (this file never sees
// cpp-httplib), naming the event in X-Hookbox-Event-Type / -Event-Id / -Endpoint headers
// that configured `headers:` cannot override, and the mapping of the answer onto an outcome: 2xx
// ok; 408, 429, 5xx and every transport failure retry (honouring Retry-After, at most an hour); any
// other status, redirects included (they are not followed), is permanent: asking again will not
// change it. Re-signing reuses verify's Standard Webhooks Sign() (verify/sign.h, the one header of
// verify/ this file includes), so what the downstream checks is exactly what hookbox itself
// verifies. The signing secret and configured header values (often credentials) never reach
// a detail or a log.
#include "handlers/http/http.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "base/ascii.h"
#include "config/config.h"
#include "config/yaml_reader.h"
#include "http/client.h"
#include "verify/sign.h"

namespace hookbox {
namespace {

constexpr Duration kDefaultTimeout = std::chrono::seconds(10);
constexpr auto kMaxRetryAfter = std::chrono::hours(1);
constexpr size_t kDetailBody = 512;
constexpr const char* kDefaultContentType = "application/json";
// Set by hookbox on every request (or by the client library); configuring them is a mistake.
// So is any name under kOwnPrefix, where hookbox names the event (X-Hookbox-Event-Type,
// X-Hookbox-Event-Id, X-Hookbox-Endpoint): a downstream must be able to trust them.
constexpr std::string_view kOwnPrefix = "X-Hookbox-";
constexpr const char* kReservedHeaders[] = {
    "Content-Type",      "Content-Length",  "Transfer-Encoding", "Host",
    "Connection",        "Idempotency-Key", "webhook-id",        "webhook-timestamp",
    "webhook-signature", "traceparent",     "tracestate"};

// What the reader read at load (a KindSettings, handlers/handler.h).
struct HttpSpec final : KindSettings {
  HttpUrl url;
  Duration timeout = kDefaultTimeout;
  Headers headers;             // configured extra headers
  std::optional<Secret> sign;  // a Standard Webhooks key (its source only without resolve_secrets)
  int concurrency = Handler::kDefaultConcurrency;  // http waits on a thread each (client.h)
};

bool IsHeaderValue(std::string_view value) {
  for (unsigned char c : value) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

// The Content-Type the producer sent, from the stored headers; JSON when there was none.
std::string ContentTypeOf(const std::string& headers_json) {
  nlohmann::json headers = nlohmann::json::parse(headers_json, nullptr, false);
  if (!headers.is_object()) return kDefaultContentType;
  for (const auto& [name, value] : headers.items()) {
    if (!EqualsIgnoringAsciiCase(name, "Content-Type") || !value.is_string()) continue;
    const std::string& type = value.get_ref<const std::string&>();
    if (!type.empty() && IsHeaderValue(type)) return type;
  }
  return kDefaultContentType;
}

// At most `limit` bytes of `text`, not ending inside a UTF-8 character.
std::string_view Prefix(std::string_view text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

// After a failed POST: EMFILE or ENFILE when this process cannot open a socket now (the
// client library does not say why it could not connect), else 0.
int OutOfDescriptors() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    ::close(fd);
    return 0;
  }
  return errno == EMFILE || errno == ENFILE ? errno : 0;
}

HandlerResult Classify(const HttpReply& reply) {
  HandlerResult result;
  result.detail = "HTTP " + std::to_string(reply.status);
  std::string_view body = Prefix(reply.body, kDetailBody);
  if (!body.empty()) result.detail += ": " + std::string(body);
  const int s = reply.status;
  if (s >= 200 && s < 300) {
    result.outcome = Outcome::kOk;
  } else if (s == 408 || s == 429 || s >= 500) {
    result.outcome = Outcome::kFailed;
    if (auto value = HeaderValue(reply.headers, "Retry-After")) {
      result.retry_after = ParseRetryAfter(*value, std::chrono::system_clock::now());
    }
  } else {
    result.outcome = Outcome::kPermanent;
  }
  return result;
}

class HttpHandler final : public Handler {
 public:
  explicit HttpHandler(HttpSpec spec) : spec_(std::move(spec)) {
    signer_.name = "http handler";
    signer_.provider = Provider::kStandard;
  }

  HandlerResult Run(const HandlerEvent& event) override {
    // Receive refuses such ids; should one get here anyway, it must not split a header.
    if (!IsHeaderValue(event.IdempotencyKey())) {
      return {
          Outcome::kPermanent, "the event id has control characters: it cannot be a header", {}};
    }
    if (!IsHeaderValue(event.event_type)) {
      return {
          Outcome::kPermanent, "the event type has control characters: it cannot be a header", {}};
    }
    Headers headers = spec_.headers;
    headers.emplace("Idempotency-Key", event.IdempotencyKey());
    // So a downstream can route without parsing the body (which may not even be JSON).
    headers.emplace("X-Hookbox-Event-Type", event.event_type);
    headers.emplace("X-Hookbox-Event-Id", event.event_id);
    headers.emplace("X-Hookbox-Endpoint", event.endpoint);
    // W3C trace context: the event's trace, this attempt's span (README, "Trace context").
    if (!event.traceparent.empty()) headers.emplace("traceparent", event.traceparent);
    // A replay (`hookbox inbox replay`) says so: its Idempotency-Key differs from the first
    // run's, and this tells the downstream why.
    if (event.generation > 0) {
      headers.emplace("X-Hookbox-Replay", std::to_string(event.generation));
    }
    if (spec_.sign) {
      headers.merge(
          Sign(signer_, *spec_.sign, event.body, std::chrono::system_clock::now(), event.event_id));
    }
    StatusOr<HttpReply> reply =
        HttpPost(spec_.url, headers, event.body, ContentTypeOf(event.headers_json), spec_.timeout);
    if (!reply.ok()) {
      if (const int err = OutOfDescriptors(); err != 0) {
        // The daemon cannot open a socket at all: its problem, not the downstream's.
        HandlerResult r{
            Outcome::kFailed, "cannot open a socket: " + std::string(strerror(err)), {}};
        r.infrastructure = true;
        return r;
      }
      // what() only: about() is the URL, whose query may hold a token.
      return {Outcome::kFailed,
              "POST failed: " + reply.status().what() + " (timeout " +
                  FormatDuration(spec_.timeout) + ")",
              {}};
    }
    return Classify(*reply);
  }
  std::chrono::milliseconds timeout() const override { return spec_.timeout; }
  int concurrency() const override { return spec_.concurrency; }

 private:
  const HttpSpec spec_;
  Endpoint signer_;  // provider standard: what Sign() needs to know of the scheme
};

// --- the reader and the factory --------------------------------------------------------------

// Reads the settings with the loader's reader and a table of keys (config/yaml_reader.h);
// what each value must be is checked here.
class SpecReader final {
 public:
  SpecReader(YamlReader& reader, const LoadOptions& options)
      : reader_(reader), resolve_secrets_(options.resolve_secrets) {}

  void Read(const YAML::Node& config, const std::string& where, HttpSpec& spec);

 private:
  void Error(const std::string& at, const std::string& what) { reader_.Error(at, what); }
  void ReadUrl(const YAML::Node& node, const std::string& at, HttpUrl& url);
  void ReadHeaders(const YAML::Node& node, const std::string& at, Headers& headers);
  void ReadSign(const YAML::Node& node, const std::string& at, std::optional<Secret>& secret);

  YamlReader& reader_;
  const bool resolve_secrets_;
};

void SpecReader::Read(const YAML::Node& config, const std::string& where, HttpSpec& spec) {
  const bool is_map = reader_.ReadMapping(
      config, where,
      {
          {"url", [&](auto& n, auto& at) { ReadUrl(n, at, spec.url); }},
          {"timeout", [&](auto& n, auto& at) { Set(spec.timeout, reader_.Timeout(n, at, "10s")); }},
          {"headers", [&](auto& n, auto& at) { ReadHeaders(n, at, spec.headers); }},
          {"sign", [&](auto& n, auto& at) { ReadSign(n, at, spec.sign); }},
          ConcurrencyField(reader_, &spec.concurrency),
      });
  if (is_map) reader_.Require(config, where, {"url"});
}

void SpecReader::ReadUrl(const YAML::Node& node, const std::string& at, HttpUrl& url) {
  auto text = reader_.Scalar(node, at, "a URL");
  if (!text) return;
  auto parsed = ParseHttpUrl(*text);
  if (!parsed.ok()) return Error(at, parsed.status().what());
  url = *parsed;
}

void SpecReader::ReadHeaders(const YAML::Node& node, const std::string& at, Headers& headers) {
  reader_.ReadEntries(
      node, at, "a mapping of Name: value", [&](auto& key, auto& value, auto& name_at) {
        const std::string name = key.Scalar();
        bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) ||
                 std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
        });
        bool reserved =
            std::any_of(std::begin(kReservedHeaders), std::end(kReservedHeaders),
                        [&](const char* r) { return EqualsIgnoringAsciiCase(r, name); }) ||
            EqualsIgnoringAsciiCase(std::string_view(name).substr(0, kOwnPrefix.size()),
                                    kOwnPrefix);
        auto error = [&](const std::string& what) { reader_.ErrorAt(key, name_at, what); };
        // No message echoes a value: it is often a credential.
        if (!token) {
          error("not a valid header name");
        } else if (reserved) {
          error("is set by hookbox");
        } else if (auto text =
                       reader_.Scalar(value, name_at, "a single-line text value", IsHeaderValue)) {
          headers.emplace(name, *text);
        }
      });
}

// `sign: {secret: …}`: its repeated keys have always been read, not refused.
void SpecReader::ReadSign(const YAML::Node& node, const std::string& at,
                          std::optional<Secret>& secret) {
  const bool is_map = reader_.ReadMappingKeepingRepeats(
      node, at, "{secret: {env: NAME}}",
      {{"secret", [&](auto& n, auto& sw) {
          Set(secret,
              resolve_secrets_ ? reader_.SigningKey(n, sw) : reader_.SecretEntry(n, sw, false, ""));
        }}});
  if (is_map) reader_.Require(node, at, {"secret"});
}

}  // namespace

std::optional<std::chrono::milliseconds> ParseRetryAfter(
    std::string_view value, std::chrono::system_clock::time_point now) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  std::chrono::milliseconds delay{0};
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    uint64_t seconds = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec == std::errc::result_out_of_range) return kMaxRetryAfter;
    delay = std::chrono::seconds(std::min<uint64_t>(seconds, 3600));
  } else {
    // IMF-fixdate, the form RFC 9110 requires senders to use: "Sun, 06 Nov 1994 08:49:37 GMT".
    std::tm tm{};
    const std::string text(value);
    const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == nullptr || *end != '\0') return std::nullopt;
    const time_t at = ::timegm(&tm);
    if (at == static_cast<time_t>(-1)) return std::nullopt;
    // In whole seconds first: system_clock counts nanoseconds, which overflow before 1678
    // and after 2262, so a date becomes a time_point only once it is known to be near.
    const time_t from = std::chrono::system_clock::to_time_t(now);
    if (at < from) return std::nullopt;
    if (at - from > std::chrono::seconds(kMaxRetryAfter).count() + 1) return kMaxRetryAfter;
    delay = std::chrono::ceil<std::chrono::milliseconds>(
        std::chrono::system_clock::from_time_t(at) - now);
  }
  if (delay.count() <= 0) return std::nullopt;
  return std::min<std::chrono::milliseconds>(delay, kMaxRetryAfter);
}

std::shared_ptr<const KindSettings> ReadHttpSettings(YamlReader& reader, const YamlTree& settings,
                                                     const std::string& where,
                                                     const LoadOptions& options) {
  const size_t before = reader.error_count();
  auto spec = std::make_shared<HttpSpec>();
  SpecReader(reader, options).Read(settings.node, where, *spec);
  if (reader.error_count() != before) return nullptr;
  return spec;
}

std::unique_ptr<Handler> MakeHttpHandler(const KindSettings& settings, const std::string& where,
                                         std::vector<std::string>* errors) {
  const auto* spec = KindSpec<HttpSpec>(settings, where, "an http handler's", errors);
  if (spec == nullptr) return nullptr;
  return std::make_unique<HttpHandler>(*spec);
}

}  // namespace hookbox
