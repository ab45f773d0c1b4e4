// The daemon's configuration as plain values: what config.yaml says once it has been read,
// checked and resolved (secrets loaded from env:/file:/value:). Everything downstream reads
// these structs; only what includes yaml_reader.h (the loader, a kind's reader) knows YAML:
// a handler's settings are kept as written, as a YamlTree this header does not open. Keys
// whose feature lands in a later release (workers, retention, purge_at, routes, retry, mode)
// are parsed, validated and kept here so one config file works across releases.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/crypto.h"
#include "base/field_match.h"
#include "base/ip_range.h"
#include "base/log_level.h"
#include "base/status.h"
#include "config/providers.h"

namespace hookbox {

using Duration = std::chrono::milliseconds;

// A piece of config.yaml as written (yaml_reader.h, which only the readers include).
struct YamlTree;

enum class Durability { kFull, kNormal };
enum class Mode { kAsync, kSync };

// A resolved secret. `source` ("env:STRIPE_WEBHOOK_SECRET", "file:/run/...", "value") is
// what logs and errors may name; `value` never leaves verification.
struct Secret {
  Secret() = default;
  Secret(std::string source, std::string value,
         std::shared_ptr<const Ed25519PublicKey> public_key = nullptr)
      : source(std::move(source)), value(std::move(value)), public_key(std::move(public_key)) {}
  std::string source;
  std::string value;
  // Set, at load, when the entry is an Ed25519 public key (standard `whpk_…`, discord):
  // parsed once, never per request.
  std::shared_ptr<const Ed25519PublicKey> public_key;
};

// Where a field of a delivery comes from: `header:NAME`, `body:/json/pointer`, or
// `form:NAME` (a field of an application/x-www-form-urlencoded body, e.g. Twilio's).
struct FieldRef {
  using From = FieldFrom;  // config/providers.h: the rows' defaults are of the same kinds
  From from = From::kNone;
  // header name, RFC 6901 JSON pointer ("" = whole document), or form field name (decoded)
  std::string name;
  bool empty() const { return from == From::kNone; }
};

// An endpoint's `hmac` block: the scheme of a provider whose row says so (hmac_block: the
// generic `provider: hmac`).
struct HmacScheme {
  std::string header;                // required, e.g. X-Signature
  std::string algorithm = "sha256";  // sha1 | sha256 | sha512
  std::string encoding = "hex";      // hex | base64
  std::string prefix;                // e.g. "sha256=" (stripped before decoding)
};

struct RetryPolicy {
  int max_attempts = 12;
  Duration base = std::chrono::seconds(10);
  Duration max = std::chrono::hours(1);
};

// A handler kind's settings as its reader left them at load (handlers/<kind>/, read through
// LoadOptions::kinds): the kind's own plain values, which config/ does not know; the kind's
// factory builds its handler from them (handlers/registry.cc).
struct KindSettings {
  virtual ~KindSettings() = default;
};

// One handler of a route: the kind (a key of config/handler_kinds.h), its settings as written,
// and what the kind's reader read of them at load.
struct HandlerSpec {
  // `name:` if given, else DerivedHandlerName(): a job names its handler by this, so it
  // must not change when routes are reordered or settings other than the target edited.
  std::string name;
  std::string kind;
  // The settings under the kind key, without `rate` and `circuit` (below). Set by the loader
  // whenever `kind` is.
  std::shared_ptr<const YamlTree> config;
  bool named = false;  // `name:` was given (last: {name, kind, config} initialises the rest)
  // The kind's settings read and checked, in the same pass as the rest of the file; null when
  // the load had no LoadOptions::kinds (config/ alone) or the settings had errors.
  std::shared_ptr<const KindSettings> settings;
  // Beside `concurrency:` in the kind's settings, read by the loader for every kind and
  // taken out of `config` (DESIGN.md, "Handler state"). `rate: N/s` or `N/min`: claims a
  // second on average, 0 = no limit; `rate_text` as written.
  double rate_per_second = 0;
  std::string rate_text;
  // `circuit: {failures: N, cooldown: D}`: 0 failures = no breaker.
  int circuit_failures = 0;
  Duration circuit_cooldown{0};
};

// Limits the loader enforces on `rate:` and `circuit:` (docs/SECURITY.md).
inline constexpr double kMaxRatePerSecond = 100000;
inline constexpr int kMaxCircuitFailures = 1000;

struct Route {
  std::vector<std::string> events;  // event type globs: "*", "invoice.*", "push"
  // `where:`: conditions on the body, all of which must hold (base/field_match.h, the same
  // as `inbox list --where`); empty: any body.
  std::vector<FieldMatch> where;
  std::vector<HandlerSpec> handlers;
};

// "N/s" or "N/min", N a whole number from 1: claims per second (N/min: N/60). An error
// message for zero, a fraction, another unit or more than kMaxRatePerSecond.
StatusOr<double> ParseRate(std::string_view text);

struct Endpoint {
  std::string name;
  std::string path;
  Provider provider = Provider::kNone;
  std::vector<Secret> secrets;  // empty only when provider == kNone (verify: none)
  Duration tolerance = std::chrono::seconds(300);  // timestamped providers
  HmacScheme hmac;                                 // ProviderSpec::hmac_block
  // The URL the producer calls, as its dashboard shows it (scheme, host, path; no query).
  // Schemes that sign the URL (square) need it: behind a proxy hookbox cannot know it.
  std::string public_url;
  // Identity. Empty FieldRefs mean "the provider's default" (docs/DESIGN.md, "Providers") for
  // event_id and event_type, and "no ordering" for resource and sequence.
  FieldRef event_id, event_type, resource, sequence;
  bool strict_body = false;
  // `dedupe: [id, body]`: a delivery whose body is byte-identical to a stored event's of
  // this endpoint is that event's duplicate, whatever its id (`dedupe: [id]`, the default,
  // keys on the event id alone).
  bool dedupe_body = false;
  Mode mode = Mode::kAsync;
  Duration sync_wait = std::chrono::seconds(10);
  RetryPolicy retry;
  std::vector<Route> routes;
  // `allow_from:`, or the top level's when the endpoint has none: the ranges a delivery may
  // come from (receive/allow.h); nullopt: any address.
  std::optional<std::vector<IpRange>> allow_from;
};

struct Limits {
  size_t max_body = 1 << 20;
  Duration read_timeout = std::chrono::seconds(10);
  int threads = 16;
  size_t max_headers = 100;
  // Open client connections (they hold no thread). At the limit a new one takes the place of
  // an idle keep-alive connection, else of the one whose request has been incomplete the
  // longest; it is closed at accept only when every one is being answered.
  size_t max_connections = 4096;
  // Connections from one IP address; 0: no cap. At it, that address's new connection takes
  // the place of its own idle or oldest one, never of another address's (a flood from one
  // address displaces only itself). A reverse proxy is one address: it is never refused,
  // only its own oldest connection is closed (see the README).
  size_t max_connections_per_peer = 1024;
  // Request bytes held in memory, all connections together (heads and bodies not yet
  // answered). Past it, no connection reads more until bytes are freed.
  size_t max_buffered = 64 << 20;
};

struct Retention {
  Duration processed = std::chrono::hours(24 * 7);
  Duration dead = std::chrono::hours(24 * 30);
  Duration sequences = std::chrono::hours(24 * 90);
};

// `tracing:` (README, "Trace context"): the spans of each delivery, its accept and each
// attempt, exported as OTLP/HTTP JSON (ops/spans.h). A reload applies a change.
struct Tracing {
  // The collector's traces URL, checked at load; a URL without a path gets /v1/traces, the
  // OTLP/HTTP default. "" exports nothing (the trace context still reaches handlers).
  std::string otlp;
  std::string service_name = "hookbox";  // the spans' resource `service.name`
};

// `alerts:` (README, "Failure alerts"): the conditions an operator is told of, and where.
enum class AlertCondition { kJobDead, kCircuitOpen, kHandlerHeld, kStorageUnavailable, kBacklog };
const char* AlertConditionName(AlertCondition condition);

// Alerts are events of this internal endpoint (no path: nothing arrives at it over HTTP; no
// verification): its routes are the alerts, each routing its conditions (the event types)
// to its target, a handler named as the alert. So an alert is stored, retried, leased and
// seen (`inbox list --endpoint hookbox.alerts`) as any event is. No configured endpoint may
// take the name.
inline constexpr std::string_view kAlertsEndpoint = "hookbox.alerts";

struct Alert {
  std::string name;  // also its target's handler name on kAlertsEndpoint
  std::vector<AlertCondition> on;
  // `backlog`: a handler's oldest due job has waited this long.
  Duration backlog_age = std::chrono::minutes(10);
  // A condition of one handler is sent at most once per `repeat`.
  Duration repeat = std::chrono::minutes(15);
};

struct Config {
  std::string path;  // the file it was read from
  std::string listen = "127.0.0.1:8080";
  std::string admin_listen = "127.0.0.1:9464";  // "" disables the admin listener
  // The console and /metrics on admin_listen: with a token, each asks for it (a login form's
  // cookie, or `Authorization: Bearer`). Host names the console answers to, beside the
  // listener's IP address and `localhost` (DNS rebinding: any other Host is refused).
  std::optional<Secret> admin_token;
  std::vector<std::string> admin_hosts;
  std::string database = "/var/lib/hookbox/inbox.db";
  Durability durability = Durability::kFull;
  Limits limits;
  int workers = 4;
  Retention retention;
  std::string purge_at = "03:30";
  Duration shutdown_grace = std::chrono::seconds(30);
  // Lease liveness (work/liveness.h): how long after this process's last heartbeat the others
  // may count it dead and take over its jobs. It beats every sixth of it.
  Duration heartbeat_timeout = std::chrono::seconds(30);
  // The lowest level `serve` writes (ops/log.h); a reload applies a new one. The operator's
  // CLI verbs write theirs whatever it says.
  LogLevel log_level = LogLevel::kInfo;
  std::vector<Endpoint> endpoints;
  // The default `allow_from:` of endpoints that set none (each endpoint holds its own after
  // loading), and the proxies whose X-Forwarded-For is believed (receive/allow.h).
  std::optional<std::vector<IpRange>> allow_from;
  std::vector<IpRange> trusted_proxies;
  Tracing tracing;
  // `alerts:`; when there are any, `endpoints` ends with kAlertsEndpoint's, their targets.
  std::vector<Alert> alerts;

  const Endpoint* FindByPath(std::string_view path) const;
  const Endpoint* FindByName(std::string_view name) const;
};

// The outcome of loading: a config when there were no errors; every error and warning found,
// each as one line "where: what" (e.g. "endpoints[0].secrets[1]: env STRIPE_SECRET is not
// set"), so check-config can print them all at once.
struct LoadResult {
  std::optional<Config> config;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
};

// The handler kinds' readers, one per row of config/handler_kinds.h (yaml_reader.h):
// handlers/registry.cc's HandlerKindReaders(). config/ cannot link handlers/ (it is built on
// config/), so whoever loads a config for the daemon hands them in.
struct HandlerKindReaders;

struct LoadOptions {
  // false: secrets are checked for shape but not read (Secret::value stays empty). For the
  // operator's CLI verbs, which need the database and endpoint names but not the secrets:
  // an operator's shell does not have the daemon's environment or credentials. A handler
  // kind's secret (http's sign.secret) is read or not alike.
  bool resolve_secrets = true;
  // true: what a handler kind's settings name on this host is checked as the daemon will use
  // it: exec's program (found on PATH, executable) and workdir, file's dir (created when
  // missing, writable). check-config and serve; not the operator's verbs, whose shell has
  // another PATH and other permissions, and which must create nothing.
  bool host_checks = false;
  // Each handler's kind settings are read with these, in the same pass as the rest of the
  // file and in its wording (FILE:LINE:COLUMN). Without them (config/ alone: its fuzzer) the
  // settings are left as written and HandlerSpec::settings stays null.
  const HandlerKindReaders* kinds = nullptr;
};

LoadResult LoadConfigFile(const std::string& path, LoadOptions options = {});
LoadResult LoadConfigText(const std::string& yaml_text, const std::string& path_for_messages,
                          LoadOptions options = {});

// "300ms", "300s", "5m", "2h", "7d" (whole numbers; a bare number is an error).
StatusOr<Duration> ParseDuration(std::string_view text);
// The shortest exact spelling of d in those units ("90s" -> "90s", 7200000ms -> "2h"), for
// messages and logs.
std::string FormatDuration(Duration d);
// "512", "64KiB", "1MiB", "1GiB", also "64KB"/"1MB" as powers of 1000.
StatusOr<size_t> ParseSize(std::string_view text);
// "host:port" / "[v6]:port"; port 0 means "any free port".
struct HostPort {
  std::string host;
  int port = 0;
};
StatusOr<HostPort> ParseHostPort(std::string_view text);

const char* ProviderName(Provider p);

// The name of a handler given no `name:` (DESIGN.md, Handler names): its kind, a readable
// hint of its target, and 8 hex digits of SHA-256 over the kind and the target, the one
// setting that says what it acts on (config/handler_kinds.h: exec's command, http's url,
// file's dir, sql's statements). "exec.on-invoice.1a2b3c4d". Reordering routes, moving the
// handler, or editing any other setting (timeout, env, concurrency, …) keeps the name.
std::string DerivedHandlerName(std::string_view kind, const YamlTree& settings);
// The target key of a kind ("command" for exec), "" for an unknown kind.
std::string_view HandlerTargetKey(std::string_view kind);

}  // namespace hookbox
