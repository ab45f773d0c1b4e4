// config.yaml -> Config. The loader walks the document once with the table-driven reader
// (yaml_reader.h: each mapping against the keys it may hold, every problem one line
// "FILE:LINE:COLUMN: where: what", so `hookbox check-config` shows them all at once); what is
// here is what the keys mean: the sections and the checks between keys (a handler's stable
// name is handler_names.cc's). A handler kind's own settings are read in the same walk, by the
// kind's reader (LoadOptions::kinds) with the loader's reader. Secrets are resolved here too
// (secrets.cc), so a daemon that loaded its config can verify. yaml-cpp throws; its exceptions stop
// at this file's edge and become error lines.

#include "config/config.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <set>
#include <span>

#include "base/http_url.h"
#include "config/handler_kinds.h"
#include "config/secrets.h"
#include "config/yaml_reader.h"

namespace hookbox {
namespace {

// `provider:`'s choices: the rows of config/providers.h, in their order.
#define HOOKBOX_PROVIDER_CHOICE(id, ...) {SpecOf(Provider::id).name, Provider::id},
constexpr Choice<Provider> kProviders[] = {HOOKBOX_PROVIDERS(HOOKBOX_PROVIDER_CHOICE)};
#undef HOOKBOX_PROVIDER_CHOICE
constexpr Choice<Durability> kDurabilities[] = {{"full", Durability::kFull},
                                                {"normal", Durability::kNormal}};
constexpr Choice<AlertCondition> kAlertConditions[] = {
    {"job_dead", AlertCondition::kJobDead},
    {"circuit_open", AlertCondition::kCircuitOpen},
    {"handler_held", AlertCondition::kHandlerHeld},
    {"storage_unavailable", AlertCondition::kStorageUnavailable},
    {"backlog", AlertCondition::kBacklog}};
constexpr Choice<LogLevel> kLogLevels[] = {{"debug", LogLevel::kDebug},
                                           {"info", LogLevel::kInfo},
                                           {"warn", LogLevel::kWarn},
                                           {"error", LogLevel::kError}};
constexpr Choice<Mode> kModes[] = {{"async", Mode::kAsync}, {"sync", Mode::kSync}};
constexpr Choice<std::string_view> kHmacAlgorithms[] = {
    {"sha1", "sha1"}, {"sha256", "sha256"}, {"sha512", "sha512"}};
constexpr Choice<std::string_view> kHmacEncodings[] = {{"hex", "hex"}, {"base64", "base64"}};

// The providers whose scheme is the endpoint's `hmac` block (ProviderSpec::hmac_block), for
// messages: "hmac", or "a or b".
std::string HmacBlockProviders() {
  std::string names;
  for (const ProviderSpec& row : Providers()) {
    if (row.hmac_block) names += (names.empty() ? "" : " or ") + std::string(row.name);
  }
  return names;
}

// Producers retry for up to 3 days; purging earlier than that forgets events they may still
// redeliver.
constexpr auto kProducerRetryWindow = std::chrono::hours(72);
constexpr Duration kZero{0};
constexpr size_t kMaxConfigFile = 16 << 20;

// [A-Za-z0-9_.-]+: endpoint and handler names end up in URLs, metrics labels and file names.
bool IsPlainName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// RFC 7230 token: the characters an HTTP header name may use.
bool IsHeaderName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// RFC 6901: "" (the whole document) or "/"-separated tokens where "~" is only "~0" or "~1".
bool IsJsonPointer(std::string_view s) {
  if (!s.empty() && s.front() != '/') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '~' && (i + 1 == s.size() || (s[i + 1] != '0' && s[i + 1] != '1'))) return false;
  }
  return true;
}

// Turns a YAML document into a Config, collecting errors and warnings in `out`.
class Loader final : private YamlReader {
 public:
  Loader(LoadResult& out, LoadOptions options, std::string file)
      : YamlReader(Positioned(&out.errors, &out.warnings, std::move(file))), options_(options) {}

  void ReadDocument(const YAML::Node& root, const std::string& file, Config& config);

 private:
  std::optional<std::string> Name(const YAML::Node& node, const std::string& where) {
    return Checked(node, where, IsPlainName,
                   " may use only letters, digits, \"_\", \".\" and \"-\"");
  }
  std::optional<std::string> Address(const YAML::Node& node, const std::string& where,
                                     bool allow_empty);
  std::optional<std::string> Database(const YAML::Node& node, const std::string& where);
  std::optional<std::string> PublicUrl(const YAML::Node& node, const std::string& where);
  std::optional<std::string> ClockTime(const YAML::Node& node, const std::string& where);
  std::optional<FieldRef> Source(const YAML::Node& node, const std::string& where);

  // Sections.
  void ReadLimits(const YAML::Node& node, const std::string& where, Limits& limits);
  void ReadRetention(const YAML::Node& node, const std::string& where, Retention& retention);
  void ReadTracing(const YAML::Node& node, const std::string& where, Tracing& tracing);
  void ReadEndpoint(const YAML::Node& node, const std::string& where, Endpoint& endpoint);
  void ReadPath(const YAML::Node& node, const std::string& where, Endpoint& endpoint);
  void CheckSyncHandlers(const std::string& where, const Endpoint& endpoint);
  // `allow_from:` and `trusted_proxies:`: ranges, and for allow_from `file:PATH` entries.
  std::vector<IpRange> ReadRanges(const YAML::Node& node, const std::string& where, bool files);
  void ReadRangeFile(const std::string& path, const std::string& where,
                     std::vector<IpRange>& ranges);
  // What ReadEndpoint read of the verification keys, which depend on one another.
  struct VerifyKeys {
    bool has_provider = false, verify_none = false;
    std::optional<YAML::Node> secrets, hmac;
    bool public_url = false;
  };
  std::vector<YamlField> VerifyFields(Endpoint& endpoint, VerifyKeys& keys);
  void CheckVerification(const VerifyKeys& keys, const std::string& where, Endpoint& endpoint);
  void ReadSecrets(const YAML::Node& node, const std::string& where, Endpoint& endpoint);
  std::optional<Secret> SecretEntry(const YAML::Node& item, const std::string& where,
                                    const std::string& named) {
    return YamlReader::SecretEntry(item, where, options_.resolve_secrets, named);
  }
  void CheckAdmin(const Config& config);
  void ReadHmac(const YAML::Node& node, const std::string& where, HmacScheme& hmac);
  void ReadDedupe(const YAML::Node& node, const std::string& where, Endpoint& endpoint);
  void ReadRetry(const YAML::Node& node, const std::string& where, RetryPolicy& retry);
  void ReadRoutes(const YAML::Node& node, const std::string& where, std::vector<Route>& routes);
  void CheckHandlerName(const HandlerSpec& handler, const std::string& where,
                        std::map<std::string, std::pair<std::string, std::string>>& seen);
  // A handler's mapping: a kind key and `name`, and the keys `extra` reads (an alert's).
  void ReadHandler(const YAML::Node& node, const std::string& where, HandlerSpec& handler,
                   std::span<const YamlField> extra = {});
  void ReadAlerts(const YAML::Node& node, const std::string& where, Config& config);
  void FinishEndpoints(Config& config);
  void ReadAlert(const YAML::Node& node, const std::string& where, Alert& alert,
                 HandlerSpec& target);
  void ReadKindSettings(size_t row, const std::string& where, HandlerSpec& handler);
  YAML::Node ReadHandlerControls(const YAML::Node& node, const std::string& where,
                                 HandlerSpec& handler);
  void CheckUnique(const std::vector<Endpoint>& endpoints);

  LoadOptions options_;
  // `alerts:`'s endpoint, added after the configured ones once they are read.
  std::optional<Endpoint> pending_alerts_;
};

std::optional<std::string> Loader::Address(const YAML::Node& node, const std::string& where,
                                           bool allow_empty) {
  if (allow_empty && node.IsScalar() && node.Scalar().empty()) return std::string();
  if (!Parsed(node, where, ParseHostPort)) return std::nullopt;
  return node.Scalar();
}

std::optional<std::string> Loader::Database(const YAML::Node& node, const std::string& where) {
  auto text = NonEmptyText(node, where);
  if (!text) return std::nullopt;
  bool postgres = text->starts_with("postgresql://") || text->starts_with("postgres://");
  if (!postgres && text->find("://") != std::string::npos) {
    Expected(where, "a file path (SQLite) or a postgresql:// URL");
    return std::nullopt;
  }
  return text;
}

std::optional<std::string> Loader::PublicUrl(const YAML::Node& node, const std::string& where) {
  auto text = NonEmptyText(node, where);
  if (!text) return std::nullopt;
  const bool http = text->starts_with("http://") || text->starts_with("https://");
  const size_t host = text->find("://") + 3;
  if (!http || host >= text->size() || (*text)[host] == '/') {
    Error(where, Quote(*text) + " is not an http(s) URL with a host");
  } else if (text->find_first_of("?#") != std::string::npos) {
    Error(where, Quote(*text) +
                     " must not contain \"?\" or \"#\" (the query a delivery "
                     "arrives with is added to it)");
  } else if (text->find_first_of(" \t\r\n") != std::string::npos) {
    Error(where, Quote(*text) + " must not contain spaces");
  } else {
    return text;
  }
  return std::nullopt;
}

std::optional<std::string> Loader::ClockTime(const YAML::Node& node, const std::string& where) {
  auto text = Text(node, where);
  if (!text) return std::nullopt;
  const std::string& t = *text;
  auto digit = [&](size_t i) { return t[i] >= '0' && t[i] <= '9'; };
  bool shape = t.size() == 5 && t[2] == ':' && digit(0) && digit(1) && digit(3) && digit(4);
  if (shape && std::stoi(t.substr(0, 2)) < 24 && std::stoi(t.substr(3, 2)) < 60) return text;
  Error(where, Quote(t) + " is not a time of day (use HH:MM, 24-hour, e.g. \"03:30\")");
  return std::nullopt;
}

std::optional<FieldRef> Loader::Source(const YAML::Node& node, const std::string& where) {
  auto text = Text(node, where);
  if (!text) return std::nullopt;
  std::string_view t = *text;
  if (t.starts_with("header:")) {
    std::string_view name = t.substr(7);
    if (IsHeaderName(name)) return FieldRef{FieldRef::From::kHeader, std::string(name)};
    Error(where, Quote(t) + " does not name a valid header");
    return std::nullopt;
  }
  if (t.starts_with("body:")) {
    std::string_view pointer = t.substr(5);
    if (IsJsonPointer(pointer)) return FieldRef{FieldRef::From::kBody, std::string(pointer)};
    Error(where,
          Quote(t) + " is not a JSON pointer (RFC 6901: \"\" or \"/a/b\", \"~\" only as ~0 or ~1)");
    return std::nullopt;
  }
  if (t.starts_with("form:")) {
    std::string_view name = t.substr(5);
    bool printable = !name.empty();
    for (unsigned char c : name) printable = printable && c >= 0x20 && c != 0x7f;
    if (printable) return FieldRef{FieldRef::From::kForm, std::string(name)};
    Error(where, Quote(t) + " does not name a form field");
    return std::nullopt;
  }
  Error(where, Quote(t) + " is not a field (use header:NAME, body:/json/pointer or form:NAME)");
  return std::nullopt;
}

void Loader::ReadDocument(const YAML::Node& root, const std::string& file, Config& config) {
  if (root.IsNull() || !root.IsDefined()) {
    Error(file, "the file is empty; expected the settings as a mapping");
    return;
  }
  bool has_endpoints = false;
  const std::string top;
  bool is_map = ReadMapping(
      root, top,
      {
          {"listen", [&](auto& n, auto& w) { Set(config.listen, Address(n, w, false)); }},
          {"admin_listen",
           [&](auto& n, auto& w) { Set(config.admin_listen, Address(n, w, true)); }},
          {"admin_token",
           [&](auto& n, auto& w) {
             if (auto token = SecretEntry(n, w, "")) config.admin_token = std::move(*token);
           }},
          {"admin_hosts",
           [&](auto& n, auto& w) {
             ReadList(n, w, false, [&](auto& item, auto& iw, size_t) {
               if (auto host = NonEmptyText(item, iw)) config.admin_hosts.push_back(*host);
             });
           }},
          {"database", [&](auto& n, auto& w) { Set(config.database, Database(n, w)); }},
          {"durability",
           [&](auto& n, auto& w) {
             Set(config.durability, OneOf<Durability>(n, w, kDurabilities));
           }},
          {"limits", [&](auto& n, auto& w) { ReadLimits(n, w, config.limits); }},
          {"workers", [&](auto& n, auto& w) { Set(config.workers, Int(n, w, 0, 256)); }},
          {"retention", [&](auto& n, auto& w) { ReadRetention(n, w, config.retention); }},
          {"purge_at", [&](auto& n, auto& w) { Set(config.purge_at, ClockTime(n, w)); }},
          {"shutdown_grace",
           [&](auto& n, auto& w) { Set(config.shutdown_grace, DurationValue(n, w, kZero)); }},
          {"heartbeat_timeout",
           [&](auto& n, auto& w) {
             Set(config.heartbeat_timeout, DurationValue(n, w, std::chrono::seconds(1)));
           }},
          {"log_level",
           [&](auto& n, auto& w) { Set(config.log_level, OneOf<LogLevel>(n, w, kLogLevels)); }},
          {"allow_from", [&](auto& n, auto& w) { config.allow_from = ReadRanges(n, w, true); }},
          {"trusted_proxies",
           [&](auto& n, auto& w) { config.trusted_proxies = ReadRanges(n, w, false); }},
          {"tracing", [&](auto& n, auto& w) { ReadTracing(n, w, config.tracing); }},
          {"alerts", [&](auto& n, auto& w) { ReadAlerts(n, w, config); }},
          {"endpoints",
           [&](auto& n, auto& w) {
             has_endpoints = true;
             ReadList(n, w, true, [&](auto& item, auto& iw, size_t) {
               ReadEndpoint(item, iw, config.endpoints.emplace_back());
             });
           }},
      });
  if (!is_map) return;
  if (!has_endpoints) Error("endpoints", "required: list at least one endpoint");
  FinishEndpoints(config);
  CheckAdmin(config);
}

// The endpoints once read: unique names and paths, none taking `alerts:`'s endpoint's name,
// which follows them; the top level's allow_from for those without their own.
void Loader::FinishEndpoints(Config& config) {
  CheckUnique(config.endpoints);
  for (size_t i = 0; i < config.endpoints.size(); ++i) {
    if (config.endpoints[i].name == kAlertsEndpoint) {
      Error(Key(Item("endpoints", i), "name"),
            Quote(kAlertsEndpoint) + " is hookbox's own, the endpoint alerts are stored under");
    }
  }
  if (pending_alerts_) config.endpoints.push_back(*std::move(pending_alerts_));
  for (Endpoint& endpoint : config.endpoints) {
    if (!endpoint.allow_from) endpoint.allow_from = config.allow_from;  // the default
  }
}

// The console reads every event and can clear and retry them: reachable beyond this host
// without a token, it is open to anyone on the network; with a short one, to anyone who
// guesses it (nothing limits how often a client may try).
void Loader::CheckAdmin(const Config& config) {
  // The admin port serves /metrics and must never share the public webhook port.
  auto listen = ParseHostPort(config.listen);
  if (auto admin = ParseHostPort(config.admin_listen);
      listen.ok() && admin.ok() && listen->port != 0 && listen->port == admin->port) {
    Error("admin_listen", "must not use the same port as listen (" + config.listen + ")");
  }
  constexpr size_t kShortToken = 16;
  if (config.admin_token && options_.resolve_secrets &&
      config.admin_token->value.size() < kShortToken) {
    Warning("admin_token", "the token from " + config.admin_token->source + " is only " +
                               std::to_string(config.admin_token->value.size()) +
                               " characters: a client may try tokens as fast as it can; use 32 "
                               "or more random characters (e.g. openssl rand -hex 32)");
  }
  auto admin = ParseHostPort(config.admin_listen);
  if (config.admin_listen.empty() || config.admin_token || !admin.ok()) return;
  const std::string& host = admin->host;
  const bool loopback = host == "localhost" || host == "::1" || host.starts_with("127.");
  if (!loopback) {
    Warning("admin_listen",
            config.admin_listen +
                " is not a loopback address and no admin_token is set: anyone who can reach it "
                "can read the inbox and clear or retry events (set admin_token)");
  }
}

namespace {
constexpr size_t kMaxBufferedMargin = 128 << 10;
}  // namespace

void Loader::ReadLimits(const YAML::Node& node, const std::string& where, Limits& limits) {
  std::optional<size_t> max_buffered;
  ReadMapping(
      node, where,
      {
          {"max_body", [&](auto& n, auto& w) { Set(limits.max_body, Size(n, w)); }},
          {"read_timeout",
           [&](auto& n, auto& w) { Set(limits.read_timeout, DurationValue(n, w)); }},
          {"threads", [&](auto& n, auto& w) { Set(limits.threads, Int(n, w, 1, 1024)); }},
          {"max_headers", [&](auto& n, auto& w) { Set(limits.max_headers, Int(n, w, 1, 1000)); }},
          {"max_connections",
           [&](auto& n, auto& w) { Set(limits.max_connections, Int(n, w, 1, 1000000)); }},
          {"max_connections_per_peer",
           [&](auto& n, auto& w) { Set(limits.max_connections_per_peer, Int(n, w, 0, 1000000)); }},
          {"max_buffered", [&](auto& n, auto& w) { Set(max_buffered, Size(n, w)); }},
      });
  // The budget must hold one whole request (a head of up to 64 KiB, a body of max_body, one
  // read of 16 KiB), or a request of max_body could never be read: unset, it grows with
  // max_body; set too small, it is an error.
  const size_t least = limits.max_body + kMaxBufferedMargin;
  if (!max_buffered) {
    limits.max_buffered = std::max(limits.max_buffered, least);
    return;
  }
  limits.max_buffered = *max_buffered;
  if (limits.max_buffered < least) {
    Error(where + ".max_buffered", "must hold one whole request: at least max_body + 128KiB (" +
                                       std::to_string(least) + " bytes)");
  }
}

// An alert's `http: {secret: KEY}` is the http kind's `sign: {secret: KEY}`: the alert's
// POST signed as a Standard Webhook. The item again, with that key moved.
YAML::Node WithSignSecret(const YAML::Node& item) {
  const YAML::Node http = item["http"];
  if (!http || !http.IsMap() || !http["secret"] || http["sign"]) return item;
  YAML::Node moved(YAML::NodeType::Map);
  for (const auto& kv : http) {
    if (kv.first.Scalar() == "secret") {
      moved["sign"]["secret"] = kv.second;
    } else {
      moved[kv.first] = kv.second;
    }
  }
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : item) out[kv.first] = kv.first.Scalar() == "http" ? moved : kv.second;
  return out;
}

// `alerts:` (README, "Failure alerts"): each item is its target handler's mapping (`http:` or
// `exec:`) with the alert's own keys beside it; the targets become the routes of
// kAlertsEndpoint's endpoint, added after the configured ones.
void Loader::ReadAlerts(const YAML::Node& node, const std::string& where, Config& config) {
  Endpoint alerts;
  alerts.name = std::string(kAlertsEndpoint);
  std::map<std::string, std::string> names;  // alert name -> where it was first given
  ReadList(node, where, true, [&](auto& item, auto& iw, size_t) {
    Alert& alert = config.alerts.emplace_back();
    Route& route = alerts.routes.emplace_back();
    HandlerSpec& target = route.handlers.emplace_back();
    ReadAlert(item, iw, alert, target);
    for (AlertCondition c : alert.on) route.events.emplace_back(AlertConditionName(c));
    if (alert.name.empty()) return;
    if (auto [first, inserted] = names.emplace(alert.name, iw); !inserted) {
      Error(Key(iw, "name"), Quote(alert.name) + " is already used by " + first->second);
    }
  });
  if (!config.alerts.empty()) pending_alerts_ = std::move(alerts);
}

void Loader::ReadAlert(const YAML::Node& node, const std::string& where, Alert& alert,
                       HandlerSpec& target) {
  std::string backlog_age_at;  // where `backlog_age` was given, if it was
  const YamlField keys[] = {
      {"on",
       [&](auto& n, auto& w) {
         ReadList(n, w, true, [&](auto& c, auto& cw, size_t) {
           auto condition = OneOf<AlertCondition>(c, cw, kAlertConditions);
           if (condition) {
             if (std::find(alert.on.begin(), alert.on.end(), *condition) == alert.on.end())
               alert.on.push_back(*condition);
           }
         });
       }},
      {"backlog_age",
       [&](auto& n, auto& w) {
         Set(alert.backlog_age, DurationValue(n, w));
         backlog_age_at = w;
       }},
      {"repeat", [&](auto& n, auto& w) { Set(alert.repeat, DurationValue(n, w)); }},
  };
  const YAML::Node http = node.IsMap() ? node["http"] : YAML::Node();
  if (http && http.IsMap() && http["secret"] && http["sign"]) {
    Error(Key(Key(where, "http"), "secret"), "give the key once: secret, or sign.secret");
  }
  ReadHandler(node.IsMap() ? WithSignSecret(node) : node, where, target, keys);
  if (!node.IsMap()) return;
  Require(node, where, {"name", "on"});
  alert.name = target.name;
  if (!backlog_age_at.empty() && node["on"] &&
      std::find(alert.on.begin(), alert.on.end(), AlertCondition::kBacklog) == alert.on.end()) {
    Error(backlog_age_at, "only the backlog condition reads it: add backlog to on");
  }
  if (!target.kind.empty() && target.kind != "http" && target.kind != "exec") {
    Error(Key(where, target.kind), "an alert is sent by http or exec");
  }
}

void Loader::ReadTracing(const YAML::Node& node, const std::string& where, Tracing& tracing) {
  ReadMapping(node, where,
              {
                  {"otlp",
                   [&](auto& n, auto& w) {
                     auto text = NonEmptyText(n, w);
                     if (!text) return;
                     auto url = ParseHttpUrl(*text);
                     if (!url.ok()) return Error(w, url.status().what());
                     tracing.otlp = *text;
                     if (url->path == "/") {
                       if (tracing.otlp.ends_with('/')) tracing.otlp.pop_back();
                       tracing.otlp += "/v1/traces";
                     }
                   }},
                  {"service_name",
                   [&](auto& n, auto& w) { Set(tracing.service_name, NonEmptyText(n, w)); }},
              });
}

void Loader::ReadRetention(const YAML::Node& node, const std::string& where, Retention& retention) {
  auto read = [&](Duration& target, std::string_view consequence) {
    return [this, &target, consequence](const YAML::Node& n, const std::string& w) {
      auto value = DurationValue(n, w);
      if (!value) return;
      target = *value;
      if (*value < kProducerRetryWindow) {
        Warning(w, FormatDuration(*value) +
                       " is shorter than 3 days; producers retry for up to 3 days, so " +
                       std::string(consequence));
      }
    };
  };
  ReadMapping(
      node, where,
      {
          {"processed",
           read(retention.processed, "a redelivery after the purge would run its handlers again")},
          {"dead",
           read(retention.dead, "a redelivery after the purge would run its handlers again")},
          {"sequences",
           read(retention.sequences, "an old delivery after the purge would not be seen as stale")},
      });
}

// The keys of an endpoint's verification, read into `keys` (secrets and hmac depend on the
// provider, which may come later in the mapping) and checked together by CheckVerification.
std::vector<YamlField> Loader::VerifyFields(Endpoint& endpoint, VerifyKeys& keys) {
  return {
      {"provider",
       [&](auto& n, auto& w) {
         keys.has_provider = true;
         Set(endpoint.provider, OneOf<Provider>(n, w, kProviders));
       }},
      {"verify",
       [&](auto& n, auto& w) {
         auto text = Text(n, w);
         if (text && *text != "none") {
           Error(w, Quote(*text) + " is not allowed; the only value is none");
         }
         keys.verify_none = true;
       }},
      {"secrets", [&](auto& n, auto&) { keys.secrets = n; }},
      {"tolerance", [&](auto& n, auto& w) { Set(endpoint.tolerance, DurationValue(n, w)); }},
      {"public_url",
       [&](auto& n, auto& w) {
         keys.public_url = true;
         Set(endpoint.public_url, PublicUrl(n, w));
       }},
      {"hmac", [&](auto& n, auto&) { keys.hmac = n; }},
  };
}

void Loader::ReadEndpoint(const YAML::Node& node, const std::string& where, Endpoint& endpoint) {
  VerifyKeys keys;
  std::vector<YamlField> fields = VerifyFields(endpoint, keys);
  fields.insert(
      fields.end(),
      {
          {"name", [&](auto& n, auto& w) { Set(endpoint.name, Name(n, w)); }},
          {"path", [&](auto& n, auto& w) { ReadPath(n, w, endpoint); }},
          {"event_id", [&](auto& n, auto& w) { Set(endpoint.event_id, Source(n, w)); }},
          {"event_type", [&](auto& n, auto& w) { Set(endpoint.event_type, Source(n, w)); }},
          {"resource", [&](auto& n, auto& w) { Set(endpoint.resource, Source(n, w)); }},
          {"sequence", [&](auto& n, auto& w) { Set(endpoint.sequence, Source(n, w)); }},
          {"strict_body", [&](auto& n, auto& w) { Set(endpoint.strict_body, Bool(n, w)); }},
          {"dedupe", [&](auto& n, auto& w) { ReadDedupe(n, w, endpoint); }},
          {"mode", [&](auto& n, auto& w) { Set(endpoint.mode, OneOf<Mode>(n, w, kModes)); }},
          {"sync_wait", [&](auto& n, auto& w) { Set(endpoint.sync_wait, DurationValue(n, w)); }},
          {"retry", [&](auto& n, auto& w) { ReadRetry(n, w, endpoint.retry); }},
          {"routes", [&](auto& n, auto& w) { ReadRoutes(n, w, endpoint.routes); }},
          {"allow_from", [&](auto& n, auto& w) { endpoint.allow_from = ReadRanges(n, w, true); }},
      });
  if (!ReadMapping(node, where, fields)) return;
  Require(node, where, {"name", "path"});
  CheckVerification(keys, where, endpoint);
  if (!node["resource"] != !node["sequence"]) {
    Error(where, "resource and sequence go together: ordering needs both");
  }
  if (endpoint.mode == Mode::kSync) CheckSyncHandlers(where, endpoint);
}

// A sync handler runs in the producer's request, which the producer's own retries pace;
// holding it back would only hold the request (README, "Pausing a handler").
void Loader::CheckSyncHandlers(const std::string& where, const Endpoint& endpoint) {
  for (size_t r = 0; r < endpoint.routes.size(); ++r) {
    for (size_t h = 0; h < endpoint.routes[r].handlers.size(); ++h) {
      const HandlerSpec& spec = endpoint.routes[r].handlers[h];
      if (spec.rate_per_second > 0 || spec.circuit_failures > 0) {
        Error(where + ".routes[" + std::to_string(r) + "].handlers[" + std::to_string(h) + "]",
              "rate and circuit do not apply to mode: sync (its handlers run in the "
              "producer's request; the producer's retries pace them)");
      }
    }
  }
}

// A list of ranges (base/ip_range.h); with `files`, an entry `file:PATH` adds the ranges of
// that file, one a line, `#` starting a comment. The file is read with the config, so a
// reload (SIGHUP) reads it again, and a reload that cannot read it keeps the running config.
// The operator's CLI verbs (no secrets resolved, no host checks) do not read it: they never
// look at a delivery's address, and the file may be the daemon's alone to read.
std::vector<IpRange> Loader::ReadRanges(const YAML::Node& node, const std::string& where,
                                        bool files) {
  std::vector<IpRange> out;
  const bool read_files = options_.resolve_secrets || options_.host_checks;
  ReadList(node, where, true, [&](auto& item, auto& iw, size_t) {
    auto text = NonEmptyText(item, iw);
    if (!text) return;
    if (files && text->starts_with("file:")) {
      if (read_files) ReadRangeFile(text->substr(5), iw, out);
      return;
    }
    if (auto range = ParseIpRange(*text); range.ok()) {
      out.push_back(std::move(*range));
    } else {
      Error(iw, range.status().what());
    }
  });
  if (read_files && out.empty() && error_count() == 0) {
    Error(where, "allows no address: its files list no range (leave it out to allow any)");
  }
  return out;
}

void Loader::ReadRangeFile(const std::string& path, const std::string& where,
                           std::vector<IpRange>& ranges) {
  // Far more than any provider publishes; a larger file is the wrong one (or /dev/zero).
  constexpr size_t kMaxRangeFile = 1 << 20;
  if (!path.starts_with('/')) {
    Error(where, "file:" + path + ": the path must be absolute");
    return;
  }
  auto content = config_internal::ReadFile(path, kMaxRangeFile);
  if (!content.ok()) {
    Error(where, "cannot read " + path + ": " + content.status().what());
    return;
  }
  std::string_view rest = *content;
  for (int number = 1; !rest.empty(); ++number) {
    const size_t end = rest.find('\n');
    std::string_view text = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    text = text.substr(0, text.find('#'));
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
      text.remove_suffix(1);
    }
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
      text.remove_prefix(1);
    }
    if (text.empty()) continue;
    if (auto range = ParseIpRange(text); range.ok()) {
      ranges.push_back(std::move(*range));
    } else {
      Error(where, path + ":" + std::to_string(number) + ": " + range.status().what());
    }
  }
}

void Loader::ReadPath(const YAML::Node& node, const std::string& where, Endpoint& endpoint) {
  auto path = NonEmptyText(node, where);
  if (!path) return;
  if (!path->starts_with('/')) {
    Error(where, Quote(*path) + " must start with \"/\"");
  } else if (path->find_first_of("?#") != std::string::npos) {
    Error(where, Quote(*path) + " must not contain \"?\" or \"#\"");
  } else if (path->find_first_of(" \t\r\n") != std::string::npos) {
    Error(where, Quote(*path) + " must not contain spaces");
  }
  endpoint.path = *path;
}

// Verification: a provider with its secrets (and its `hmac` block, when its row's scheme is
// that block), or an explicit `verify: none`.
void Loader::CheckVerification(const VerifyKeys& keys, const std::string& where,
                               Endpoint& endpoint) {
  if (keys.has_provider && keys.verify_none) {
    Error(where, "provider and verify: none exclude each other; set one");
  } else if (!keys.has_provider && !keys.verify_none) {
    Error(where, "no provider; set one, or verify: none to accept unsigned deliveries");
  }
  if (keys.verify_none && keys.secrets) {
    Error(Key(where, "secrets"), "not allowed with verify: none");
  } else if (keys.has_provider && !keys.secrets) {
    Error(where, "secrets is required with a provider (at least one)");
  } else if (keys.secrets) {
    ReadSecrets(*keys.secrets, Key(where, "secrets"), endpoint);
  }
  // An unknown provider was reported already; do not pile consequences on top of it.
  bool provider_known = !keys.has_provider || endpoint.provider != Provider::kNone;
  const ProviderSpec& spec = SpecOf(endpoint.provider);
  if (keys.hmac && spec.hmac_block) {
    ReadHmac(*keys.hmac, Key(where, "hmac"), endpoint.hmac);
  } else if (keys.hmac && provider_known) {
    Error(Key(where, "hmac"), "only allowed with provider " + HmacBlockProviders());
  } else if (spec.hmac_block) {
    Error(where, "hmac is required with provider " + std::string(spec.name) +
                     " (header, algorithm, encoding, prefix)");
  }
  if (spec.needs_public_url && !keys.public_url) {
    Error(where, std::string("provider ") + ProviderName(endpoint.provider) +
                     " signs the URL it calls: set public_url (the URL as the producer's "
                     "dashboard shows it)");
  }
}

void Loader::ReadSecrets(const YAML::Node& node, const std::string& where, Endpoint& endpoint) {
  // A secret's problem names its endpoint too: secrets often come from files or variables
  // shared by several endpoints, and the operator fixes them by endpoint.
  const std::string named =
      endpoint.name.empty() ? std::string() : " (endpoint " + Quote(endpoint.name) + ")";
  ReadList(node, where, true, [&](auto& item, auto& iw, size_t) {
    auto secret = SecretEntry(item, iw, named);
    if (!secret) return;
    if (!options_.resolve_secrets) {
      endpoint.secrets.push_back(std::move(*secret));
      return;
    }
    // Keys are checked here, once, as the provider's row says: a config that loads verifies
    // with every entry.
    if (std::string problem = config_internal::CheckKey(endpoint.provider, *secret);
        !problem.empty()) {
      Error(iw, "the secret from " + secret->source + problem + named);
      return;
    }
    endpoint.secrets.push_back(std::move(*secret));
  });
}

// `dedupe: [id]` (the default) or `[id, body]`: what makes a delivery a duplicate. The id
// is always a key (it cannot be turned off); `body` adds the body's SHA-256.
void Loader::ReadDedupe(const YAML::Node& node, const std::string& where, Endpoint& endpoint) {
  std::set<std::string> keys;
  ReadList(node, where, true, [&](auto& item, auto& iw, size_t) {
    auto key = Text(item, iw);
    if (!key) return;
    if (*key != "id" && *key != "body") {
      Error(iw, Quote(*key) + " is not one of id, body");
    } else if (!keys.insert(*key).second) {
      Error(iw, Quote(*key) + " appears twice");
    }
  });
  if (!node.IsSequence() || node.size() == 0) return;  // reported by ReadList
  if (!keys.count("id")) Error(where, "must include id (the event id is always a dedupe key)");
  endpoint.dedupe_body = keys.count("body") > 0;
}

void Loader::ReadHmac(const YAML::Node& node, const std::string& where, HmacScheme& hmac) {
  bool is_map = ReadMapping(
      node, where,
      {
          {"header",
           [&](auto& n, auto& w) {
             Set(hmac.header, Checked(n, w, IsHeaderName, " is not a valid header name"));
           }},
          {"algorithm",
           [&](auto& n, auto& w) {
             Set(hmac.algorithm, OneOf<std::string_view>(n, w, kHmacAlgorithms));
           }},
          {"encoding",
           [&](auto& n, auto& w) {
             Set(hmac.encoding, OneOf<std::string_view>(n, w, kHmacEncodings));
           }},
          {"prefix", [&](auto& n, auto& w) { Set(hmac.prefix, Text(n, w)); }},
      });
  if (is_map) Require(node, where, {"header"});
}

void Loader::ReadRetry(const YAML::Node& node, const std::string& where, RetryPolicy& retry) {
  bool is_map =
      ReadMapping(node, where,
                  {
                      {"max_attempts",
                       [&](auto& n, auto& w) {
                         Set(retry.max_attempts, Int(n, w, 1, std::numeric_limits<int>::max()));
                       }},
                      {"base", [&](auto& n, auto& w) { Set(retry.base, DurationValue(n, w)); }},
                      {"max", [&](auto& n, auto& w) { Set(retry.max, DurationValue(n, w)); }},
                  });
  if (is_map && retry.base > retry.max) {
    Error(where, "base (" + FormatDuration(retry.base) + ") is longer than max (" +
                     FormatDuration(retry.max) + ")");
  }
}

// One name, one handler. The same handler may serve several routes (an event that matches
// more than one still gets one job of it): the same name written twice with the same kind
// and settings is that. The same name with other settings would make two handlers share the
// jobs of one, so it is an error; for a derived name it says how to tell them apart.
void Loader::CheckHandlerName(const HandlerSpec& handler, const std::string& where,
                              std::map<std::string, std::pair<std::string, std::string>>& seen) {
  if (handler.name.empty()) return;  // the kind was wrong: already an error
  // No config: `name:` without a kind (already an error), dumped as the empty node it was.
  const std::string settings =
      handler.kind + "\n" + YAML::Dump(handler.config ? handler.config->node : YAML::Node());
  auto [first, inserted] = seen.emplace(handler.name, std::make_pair(where, settings));
  if (inserted || first->second.second == settings) return;
  if (handler.named) {
    Error(where, "handler name " + Quote(handler.name) + " is already used by " +
                     first->second.first + " with other settings");
  } else {
    Error(where, "handler name " + Quote(handler.name) + " (derived from its " +
                     std::string(HandlerTargetKey(handler.kind)) + ") is already used by " +
                     first->second.first +
                     " with other settings; give one of them a name: of its own");
  }
}

void Loader::ReadRoutes(const YAML::Node& node, const std::string& where,
                        std::vector<Route>& routes) {
  // name -> (where it was first given, its kind and settings)
  std::map<std::string, std::pair<std::string, std::string>> handler_names;
  ReadList(node, where, false, [&](auto& item, auto& rw, size_t) {
    Route& route = routes.emplace_back();
    bool is_map = ReadMapping(item, rw,
                              {
                                  {"events",
                                   [&](auto& n, auto& w) {
                                     ReadList(n, w, true, [&](auto& e, auto& ew, size_t) {
                                       if (auto glob = NonEmptyText(e, ew))
                                         route.events.push_back(*glob);
                                     });
                                   }},
                                  {"where",
                                   [&](auto& n, auto& w) {
                                     ReadList(n, w, true, [&](auto& c, auto& cw, size_t) {
                                       if (auto m = Parsed(c, cw, &ParseFieldMatch))
                                         route.where.push_back(*std::move(m));
                                     });
                                   }},
                                  {"handlers",
                                   [&](auto& n, auto& w) {
                                     ReadList(n, w, true, [&](auto& h, auto& hw, size_t) {
                                       HandlerSpec& handler = route.handlers.emplace_back();
                                       ReadHandler(h, hw, handler);
                                       CheckHandlerName(handler, hw, handler_names);
                                     });
                                   }},
                              });
    if (is_map) Require(item, rw, {"events", "handlers"});
  });
}

// `rate:` and `circuit:` of any kind (DESIGN.md, "Handler state"): read here, once for all
// kinds, into the spec; the kind's reader gets its settings without them (the first of each,
// as yaml-cpp finds them: a repeat stays for the kind to refuse).
YAML::Node Loader::ReadHandlerControls(const YAML::Node& node, const std::string& where,
                                       HandlerSpec& handler) {
  if (!node["rate"] && !node["circuit"]) return node;
  // The other entries themselves, not copies (YAML::Clone drops the marks): the kind's
  // mistakes keep their line and column.
  YAML::Node rest(YAML::NodeType::Map);
  bool rate_taken = false, circuit_taken = false;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
    if (key == "rate" && !rate_taken) {
      rate_taken = true;
    } else if (key == "circuit" && !circuit_taken) {
      circuit_taken = true;
    } else {
      rest.force_insert(it->first, it->second);
    }
  }
  if (const YAML::Node rate = node["rate"]) {
    const std::string w = Key(where, "rate");
    auto text = Text(rate, w);
    if (text) {
      auto per_second = ParseRate(*text);
      if (per_second.ok()) {
        handler.rate_per_second = *per_second;
        handler.rate_text = *text;
      } else {
        Error(w, per_second.status().what());
      }
    }
  }
  if (const YAML::Node circuit = node["circuit"]) {
    const std::string w = Key(where, "circuit");
    std::optional<int> failures;
    std::optional<Duration> cooldown;
    bool is_map = ReadMapping(
        circuit, w,
        {
            {"failures", [&](auto& n, auto& fw) { failures = Int(n, fw, 1, kMaxCircuitFailures); }},
            {"cooldown",
             [&](auto& n, auto& cw) {
               auto d = DurationValue(n, cw);
               if (d && (*d < std::chrono::milliseconds(100) || *d > std::chrono::hours(24))) {
                 Expected(cw, "100ms to 24h");
               } else if (d) {
                 cooldown = *d;
               }
             }},
        });
    if (is_map) Require(circuit, w, {"failures", "cooldown"});
    if (failures && cooldown) {
      handler.circuit_failures = *failures;
      handler.circuit_cooldown = *cooldown;
    }
  }
  return rest;
}

void Loader::ReadHandler(const YAML::Node& node, const std::string& where, HandlerSpec& handler,
                         std::span<const YamlField> extra) {
  std::vector<std::string_view> kinds;
  auto kind_field = [&](size_t row) {
    const std::string_view kind = kHandlerKinds[row];
    return YamlField{kind, [&, kind, row](const YAML::Node& n, const std::string& w) {
                       kinds.push_back(kind);
                       if (!n.IsMap()) Expected(w, "a mapping");
                       handler.kind = std::string(kind);
                       handler.config = std::make_shared<const YamlTree>(
                           YamlTree{n.IsMap() ? ReadHandlerControls(n, w, handler) : n});
                       ReadKindSettings(row, w, handler);
                     }};
  };
  std::optional<std::string> name;
  // One key per kind (config/handler_kinds.h), and `name`.
  std::vector<YamlField> fields;
  std::string expected;
  for (size_t row = 0; row < std::size(kHandlerKinds); ++row) {
    fields.push_back(kind_field(row));
    expected += (expected.empty() ? "" : ", ") + std::string(kHandlerKinds[row]);
  }
  fields.push_back(YamlField{"name", [&](auto& n, auto& w) { name = Name(n, w); }});
  fields.insert(fields.end(), extra.begin(), extra.end());
  if (!ReadMapping(node, where, fields)) return;
  if (kinds.empty()) {
    Expected(where, "one of " + expected);
  } else if (kinds.size() > 1) {
    Error(where, "has " + std::string(kinds[0]) + " and " + std::string(kinds[1]) +
                     "; one kind per handler");
  }
  handler.named = name.has_value();
  if (name) {
    handler.name = *name;
  } else if (kinds.size() == 1) {
    handler.name = DerivedHandlerName(handler.kind, *handler.config);
  }
}

// The kind's own settings, read by the kind (LoadOptions::kinds) with this reader, so that its
// mistakes come with every other one, each at its line and column. A settings node that is not
// a mapping was reported already.
void Loader::ReadKindSettings(size_t row, const std::string& where, HandlerSpec& handler) {
  if (options_.kinds == nullptr || !handler.config->node.IsMap()) return;
  YamlReader& reader = *this;
  try {
    handler.settings = options_.kinds->read[row](reader, *handler.config, where, options_);
  } catch (const YAML::Exception& e) {
    Error(where, e.what());
  }
}

void Loader::CheckUnique(const std::vector<Endpoint>& endpoints) {
  std::map<std::string, size_t> names, paths;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const Endpoint& e = endpoints[i];
    std::string where = Item("endpoints", i);
    if (!e.name.empty()) {
      auto [first, inserted] = names.emplace(e.name, i);
      if (!inserted) {
        Error(Key(where, "name"),
              Quote(e.name) + " is already used by " + Item("endpoints", first->second));
      }
    }
    if (!e.path.empty()) {
      auto [first, inserted] = paths.emplace(e.path, i);
      if (!inserted) {
        Error(Key(where, "path"), Quote(e.path) + " is already used by endpoint " +
                                      Quote(endpoints[first->second].name));
      }
    }
  }
}

}  // namespace

LoadResult LoadConfigText(const std::string& yaml_text, const std::string& path_for_messages,
                          LoadOptions options) {
  LoadResult result;
  Config config;
  config.path = path_for_messages;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    Loader(result, options, path_for_messages).ReadDocument(root, path_for_messages, config);
  } catch (const YAML::Exception& e) {
    result.errors.push_back(YamlError(path_for_messages, e));
  } catch (const std::exception& e) {  // last fail-safe; nothing above should throw
    result.errors.push_back(path_for_messages + ": " + e.what());
  }
  if (result.errors.empty()) result.config = std::move(config);
  return result;
}

LoadResult LoadConfigFile(const std::string& path, LoadOptions options) {
  auto text = config_internal::ReadFile(path, kMaxConfigFile);
  if (!text.ok()) {
    LoadResult result;
    result.errors.push_back(path + ": cannot read: " + text.status().what());
    return result;
  }
  return LoadConfigText(*text, path, options);
}

const Endpoint* Config::FindByPath(std::string_view path) const {
  for (const Endpoint& e : endpoints) {
    if (!e.path.empty() && e.path == path) return &e;  // kAlertsEndpoint has none
  }
  return nullptr;
}

const Endpoint* Config::FindByName(std::string_view name) const {
  for (const Endpoint& e : endpoints) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const char* AlertConditionName(AlertCondition condition) {
  for (const auto& c : kAlertConditions) {
    if (c.value == condition) return c.name.data();
  }
  return "?";
}

const char* ProviderName(Provider p) { return SpecOf(p).name.data(); }

}  // namespace hookbox
