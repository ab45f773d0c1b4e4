// The config loader: a complete file loads with the right values; each kind of mistake gives
// its "where: what" line; several mistakes are reported together; YAML syntax errors carry a
// line number; the `hmac` block is required and refused as the provider rows say.

#include "config/config.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "config/exposure.h"
#include "config/providers.h"
#include "config/yaml_reader.h"
#include "load_helpers.h"

namespace hookbox {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::Dump;
using testing::HasLine;
using testing::Load;

// A config with every key the loader knows (those of config.example.yaml and the rest).
constexpr const char* kFull = R"(
listen: 127.0.0.1:8080
admin_listen: "[::1]:9464"
database: /var/lib/hookbox/inbox.db
durability: normal
limits: {max_body: 2MiB, read_timeout: 15s, threads: 8, max_headers: 50}
workers: 6
retention: {processed: 7d, dead: 30d, sequences: 90d}
purge_at: "03:30"
shutdown_grace: 45s
heartbeat_timeout: 20s
log_level: warn
endpoints:
  - name: stripe
    path: /hooks/stripe
    provider: stripe
    secrets: [{value: whsec_old}, {value: whsec_new}]
    tolerance: 5m
    event_id: body:/id
    event_type: body:/type
    resource: body:/data/object/id
    sequence: body:/created
    strict_body: yes
    mode: sync
    sync_wait: 20s
    retry: {max_attempts: 12, base: 10s, max: 1h}
    routes:
      - events: ["invoice.*", "charge.succeeded"]
        handlers:
          - exec: {command: ["/usr/local/bin/on-invoice"], timeout: 30s}
          - name: archive
            file: {dir: /var/lib/hookbox/files}
      - events: ["*"]
        handlers: [{http: {url: "http://127.0.0.1:9000/"}}, {sql: {statements: ["SELECT 1"]}}]
  - name: signer
    path: /hooks/signer
    provider: hmac
    secrets: [{value: s3}]
    hmac: {header: X-Signature, algorithm: sha512, encoding: base64, prefix: "sha512="}
    event_id: header:X-Event-Id
  - name: open
    path: /hooks/open
    verify: none
)";

TEST_CASE("a complete config loads with every value", "[config]") {
  LoadResult r = Load(kFull);
  INFO(Dump(r));
  REQUIRE(r.errors.empty());
  CHECK(r.warnings.empty());
  REQUIRE(r.config);
  const Config& c = *r.config;
  CHECK(c.path == "test.yaml");
  CHECK(c.listen == "127.0.0.1:8080");
  CHECK(c.admin_listen == "[::1]:9464");
  CHECK(c.database == "/var/lib/hookbox/inbox.db");
  CHECK(c.durability == Durability::kNormal);
  CHECK(c.log_level == LogLevel::kWarn);
  CHECK(c.limits.max_body == 2u << 20);
  CHECK(c.limits.read_timeout == seconds(15));
  CHECK(c.limits.threads == 8);
  CHECK(c.limits.max_headers == 50);
  CHECK(c.workers == 6);
  CHECK(c.retention.processed == hours(24 * 7));
  CHECK(c.retention.dead == hours(24 * 30));
  CHECK(c.retention.sequences == hours(24 * 90));
  CHECK(c.purge_at == "03:30");
  CHECK(c.shutdown_grace == seconds(45));
  CHECK(c.heartbeat_timeout == seconds(20));
  REQUIRE(c.endpoints.size() == 3);

  const Endpoint& s = c.endpoints[0];
  CHECK(s.name == "stripe");
  CHECK(s.path == "/hooks/stripe");
  CHECK(s.provider == Provider::kStripe);
  REQUIRE(s.secrets.size() == 2);
  CHECK(s.secrets[0].source == "value");
  CHECK(s.secrets[0].value == "whsec_old");
  CHECK(s.secrets[1].value == "whsec_new");
  CHECK(s.tolerance == minutes(5));
  CHECK(s.event_id.from == FieldRef::From::kBody);
  CHECK(s.event_id.name == "/id");
  CHECK(s.event_type.name == "/type");
  CHECK(s.resource.name == "/data/object/id");
  CHECK(s.sequence.from == FieldRef::From::kBody);
  CHECK(s.sequence.name == "/created");
  CHECK(s.strict_body);
  CHECK(s.mode == Mode::kSync);
  CHECK(s.sync_wait == seconds(20));
  CHECK(s.retry.max_attempts == 12);
  CHECK(s.retry.base == seconds(10));
  CHECK(s.retry.max == hours(1));
  REQUIRE(s.routes.size() == 2);
  CHECK(s.routes[0].events == std::vector<std::string>{"invoice.*", "charge.succeeded"});
  REQUIRE(s.routes[0].handlers.size() == 2);
  CHECK(s.routes[0].handlers[0].kind == "exec");
  CHECK(s.routes[0].handlers[0].name ==
        DerivedHandlerName("exec", *s.routes[0].handlers[0].config));
  CHECK_FALSE(s.routes[0].handlers[0].named);
  CHECK(s.routes[0].handlers[0].config->node["timeout"].as<std::string>() == "30s");
  CHECK(s.routes[0].handlers[0].config->node["command"][0].as<std::string>() ==
        "/usr/local/bin/on-invoice");
  CHECK(s.routes[0].handlers[1].kind == "file");
  CHECK(s.routes[0].handlers[1].name == "archive");
  REQUIRE(s.routes[1].handlers.size() == 2);
  CHECK(s.routes[0].handlers[1].named);
  CHECK(s.routes[1].handlers[0].name.starts_with("http.127.0.0.1-9000."));
  CHECK(s.routes[1].handlers[1].name.starts_with("sql."));

  const Endpoint& h = c.endpoints[1];
  CHECK(h.provider == Provider::kHmac);
  CHECK(h.hmac.header == "X-Signature");
  CHECK(h.hmac.algorithm == "sha512");
  CHECK(h.hmac.encoding == "base64");
  CHECK(h.hmac.prefix == "sha512=");
  CHECK(h.event_id.from == FieldRef::From::kHeader);
  CHECK(h.event_id.name == "X-Event-Id");
  CHECK(h.event_type.empty());
  CHECK(h.resource.empty());

  const Endpoint& o = c.endpoints[2];
  CHECK(o.provider == Provider::kNone);
  CHECK(o.secrets.empty());
  CHECK(o.mode == Mode::kAsync);
  CHECK(o.tolerance == seconds(300));

  CHECK(c.FindByPath("/hooks/signer") == &h);
  CHECK(c.FindByName("open") == &o);
  CHECK(c.FindByPath("/hooks/nope") == nullptr);
  CHECK(c.FindByName("nope") == nullptr);
}

TEST_CASE("defaults apply to keys left out", "[config]") {
  LoadResult r = Load("endpoints: [{name: a, path: /a, verify: none}]\n");
  INFO(Dump(r));
  REQUIRE(r.config);
  const Config& c = *r.config;
  CHECK(c.listen == "127.0.0.1:8080");
  CHECK(c.durability == Durability::kFull);
  CHECK(c.log_level == LogLevel::kInfo);
  CHECK(c.limits.max_body == 1u << 20);
  CHECK(c.limits.max_connections_per_peer == 1024);
  CHECK(c.limits.max_buffered == 64u << 20);
  CHECK(c.workers == 4);
  CHECK(c.purge_at == "03:30");
  CHECK(c.heartbeat_timeout == seconds(30));
  const Endpoint& e = c.endpoints[0];
  CHECK(e.retry.max_attempts == 12);
  CHECK(e.hmac.algorithm == "sha256");
  CHECK(e.hmac.encoding == "hex");
  CHECK_FALSE(e.strict_body);
}

TEST_CASE("limits.max_buffered left out grows with max_body; set, it is kept", "[config]") {
  LoadResult big =
      Load("limits: {max_body: 100MiB}\nendpoints: [{name: a, path: /a, verify: none}]\n");
  REQUIRE(big.config);
  CHECK(big.config->limits.max_buffered == (100u << 20) + (128u << 10));
  LoadResult set = Load(
      "limits: {max_buffered: 8MiB, max_connections_per_peer: 0}\n"
      "endpoints: [{name: a, path: /a, verify: none}]\n");
  REQUIRE(set.config);
  CHECK(set.config->limits.max_buffered == 8u << 20);
  CHECK(set.config->limits.max_connections_per_peer == 0);
}

TEST_CASE("public_url is kept as written, for square and any other provider", "[config]") {
  LoadResult r = Load(
      "endpoints:\n"
      "  - {name: sq, path: /sq, provider: square, secrets: [{value: k}],\n"
      "     public_url: \"https://hooks.example.com:8443/sq/\"}\n"
      "  - {name: gh, path: /gh, provider: github, secrets: [{value: k}],\n"
      "     public_url: \"http://10.0.0.1/gh\"}\n");
  INFO(Dump(r));
  REQUIRE(r.config);
  CHECK(r.config->endpoints[0].provider == Provider::kSquare);
  CHECK(r.config->endpoints[0].public_url == "https://hooks.example.com:8443/sq/");
  CHECK(r.config->endpoints[1].public_url == "http://10.0.0.1/gh");
}

TEST_CASE("databases: relative paths and postgres URLs are kept as written", "[config]") {
  const char* kept[] = {"inbox.db", "./data/inbox.db", "postgresql://hookbox@db/hookbox",
                        "postgres://localhost/hookbox"};
  for (const char* db : kept) {
    INFO(db);
    LoadResult r = Load(std::string("database: \"") + db +
                        "\"\nendpoints: [{name: a, path: /a, verify: none}]\n");
    REQUIRE(r.config);
    CHECK(r.config->database == db);
  }
  LoadResult r = Load("database: mysql://x/y\nendpoints: [{name: a, path: /a, verify: none}]\n");
  CHECK(HasLine(r.errors, "database: expected a file path (SQLite) or a postgresql:// URL"));
}

TEST_CASE("ProviderName", "[config]") {
  CHECK(std::string(ProviderName(Provider::kStripe)) == "stripe");
  CHECK(std::string(ProviderName(Provider::kStandard)) == "standard");
  CHECK(std::string(ProviderName(Provider::kHmac)) == "hmac");
  CHECK(std::string(ProviderName(Provider::kNone)) == "none");
}

// One error per entry: `yaml` is a config that is valid but for one mistake, `want` is the
// line (or part of it) that must be reported.
struct ErrorCase {
  std::string yaml;
  std::string want;
};

constexpr const char* kOpen = "endpoints: [{name: a, path: /a, verify: none}]\n";

std::string WithEndpoint(const std::string& fields) {
  return "endpoints:\n  - {name: e, path: /e, " + fields + "}\n";
}

TEST_CASE("each kind of mistake is reported where it is", "[config]") {
  const ErrorCase cases[] = {
      // Top level.
      {"listn: 127.0.0.1:1\n" + std::string(kOpen), "unknown key \"listn\" (top level)"},
      {"listen: localhost\n" + std::string(kOpen), "listen: \"localhost\" is not host:port"},
      {"admin_listen: \"::1:9\"\n" + std::string(kOpen),
       "admin_listen: \"::1:9\" is not host:port"},
      {"listen: 0.0.0.0:8080\nadmin_listen: 127.0.0.1:8080\n" + std::string(kOpen),
       "admin_listen: must not use the same port as listen"},
      {"database: \"\"\n" + std::string(kOpen), "database: must not be empty"},
      {"durability: fast\n" + std::string(kOpen),
       "durability: \"fast\" is not one of full, normal"},
      {"log_level: warning\n" + std::string(kOpen),
       "log_level: \"warning\" is not one of debug, info, warn, error"},
      {"limits: {max_body: 1XB}\n" + std::string(kOpen),
       "limits.max_body: \"1XB\" is not a size (use e.g. 64KiB, 1MiB)"},
      {"limits: {max_body: 0}\n" + std::string(kOpen), "limits.max_body: must be greater than 0"},
      {"limits: {max_body: 1MiB, max_buffered: 1MiB}\n" + std::string(kOpen),
       "limits.max_buffered: must hold one whole request: at least max_body + 128KiB (1179648 "
       "bytes)"},
      {"limits: {read_timeout: 10}\n" + std::string(kOpen),
       "limits.read_timeout: \"10\" is not a duration: add a unit"},
      {"limits: {read_timeout: 0s}\n" + std::string(kOpen),
       "limits.read_timeout: \"0s\" is too short"},
      {"limits: {threads: 0}\n" + std::string(kOpen),
       "limits.threads: \"0\" is not a whole number in 1..1024"},
      {"limits: {threads: 2000}\n" + std::string(kOpen), "limits.threads: \"2000\""},
      {"limits: {max_headers: 1001}\n" + std::string(kOpen), "limits.max_headers: \"1001\""},
      {"limits: {max_headers: lots}\n" + std::string(kOpen), "limits.max_headers: \"lots\""},
      {"limits: {timeout: 1s}\n" + std::string(kOpen), "limits: unknown key \"timeout\""},
      {"limits: [1]\n" + std::string(kOpen), "limits: expected a mapping"},
      {"workers: 257\n" + std::string(kOpen), "workers: \"257\" is not a whole number in 0..256"},
      {"workers: -1\n" + std::string(kOpen), "workers: \"-1\""},
      {"workers: 2.5\n" + std::string(kOpen), "workers: \"2.5\""},
      {"retention: {processed: 7}\n" + std::string(kOpen), "retention.processed: \"7\""},
      {"retention: {ever: 7d}\n" + std::string(kOpen), "retention: unknown key \"ever\""},
      {"purge_at: \"24:00\"\n" + std::string(kOpen), "purge_at: \"24:00\" is not a time of day"},
      {"purge_at: \"3:30\"\n" + std::string(kOpen), "purge_at: \"3:30\" is not a time of day"},
      {"purge_at: \"03:60\"\n" + std::string(kOpen), "purge_at: \"03:60\""},
      {"shutdown_grace: soon\n" + std::string(kOpen), "shutdown_grace: \"soon\" is not a duration"},
      {"heartbeat_timeout: 500ms\n" + std::string(kOpen),
       "heartbeat_timeout: \"500ms\" is too short (at least 1s)"},
      {"listen: [a, b]\n" + std::string(kOpen), "listen: expected a single value, found a list"},
      {"listen:\n" + std::string(kOpen), "listen: expected a value, found nothing"},
      {"workers: 4\n", "endpoints: required"},
      {"endpoints: []\n", "endpoints: expected a non-empty list"},
      {"endpoints: {a: 1}\n", "endpoints: expected a list"},
      {"endpoints: [hello]\n", "endpoints[0]: expected a mapping"},
      {"workers: 1\nworkers: 2\n" + std::string(kOpen),
       "key \"workers\" appears twice (top level)"},
      {"- a\n- b\n", "expected a mapping (top level)"},
      {"", "test.yaml: the file is empty"},
      // Endpoints.
      {WithEndpoint("verify: none, pathh: /x"), "endpoints[0]: unknown key \"pathh\""},
      {"endpoints: [{path: /e, verify: none}]\n", "endpoints[0]: name is required"},
      {"endpoints: [{name: e, verify: none}]\n", "endpoints[0]: path is required"},
      {"endpoints: [{name: \"my hook\", path: /e, verify: none}]\n",
       "endpoints[0].name: \"my hook\" may use only letters, digits"},
      {"endpoints: [{name: e, path: hooks/e, verify: none}]\n",
       "endpoints[0].path: \"hooks/e\" must start with \"/\""},
      {"endpoints: [{name: e, path: \"/e?x=1\", verify: none}]\n",
       "endpoints[0].path: \"/e?x=1\" must not contain \"?\" or \"#\""},
      {"endpoints: [{name: e, path: \"/e#x\", verify: none}]\n", "must not contain \"?\" or \"#\""},
      {WithEndpoint("provider: paypal, secrets: [{value: x}]"),
       "endpoints[0].provider: \"paypal\" is not one of stripe, github, standard, shopify, slack, "
       "gitlab, paddle, square, discord, twilio, hmac"},
      {WithEndpoint("verify: yes"), "endpoints[0].verify: \"yes\" is not allowed"},
      {WithEndpoint("provider: square, secrets: [{value: k}]"),
       "endpoints[0]: provider square signs the URL it calls: set public_url"},
      {WithEndpoint("provider: square, secrets: [{value: k}], public_url: example.com/e"),
       "endpoints[0].public_url: \"example.com/e\" is not an http(s) URL with a host"},
      {WithEndpoint("provider: square, secrets: [{value: k}], public_url: \"https:///e\""),
       "endpoints[0].public_url: \"https:///e\" is not an http(s) URL with a host"},
      {WithEndpoint("provider: square, secrets: [{value: k}], public_url: \"https://h/e?a=1\""),
       "endpoints[0].public_url: \"https://h/e?a=1\" must not contain \"?\" or \"#\""},
      {WithEndpoint("provider: square, secrets: [{value: k}], public_url: \"https://h/a b\""),
       "endpoints[0].public_url: \"https://h/a b\" must not contain spaces"},
      {WithEndpoint("provider: square, secrets: [{value: k}], public_url: \"\""),
       "endpoints[0].public_url: must not be empty"},

      {"endpoints: [{name: e, path: /e}]\n", "endpoints[0]: no provider; set one, or verify: none"},
      {WithEndpoint("provider: github, verify: none, secrets: [{value: x}]"),
       "endpoints[0]: provider and verify: none exclude each other"},
      {WithEndpoint("verify: none, secrets: [{value: x}]"),
       "endpoints[0].secrets: not allowed with verify: none"},
      {WithEndpoint("provider: github"), "endpoints[0]: secrets is required with a provider"},
      {WithEndpoint("provider: github, secrets: []"),
       "endpoints[0].secrets: expected a non-empty list"},
      {WithEndpoint("provider: github, secrets: {value: x}"),
       "endpoints[0].secrets: expected a list"},
      {WithEndpoint("provider: github, secrets: [{value: x, env: Y}]"),
       "endpoints[0].secrets[0]: expected one of {env: NAME}, {file: PATH} or {value: TEXT}"},
      {WithEndpoint("provider: github, secrets: [{val: x}]"),
       "endpoints[0].secrets[0]: unknown key \"val\""},
      {WithEndpoint("provider: github, secrets: [{value: \"\"}]"),
       "endpoints[0].secrets[0]: value is empty (an empty secret refuses to start)"},
      {WithEndpoint("provider: github, secrets: [{value: }]"), "an empty secret refuses to start"},
      {WithEndpoint("verify: none, tolerance: 5"),
       "endpoints[0].tolerance: \"5\" is not a duration"},
      {WithEndpoint("verify: none, strict_body: maybe"),
       "endpoints[0].strict_body: \"maybe\" is not true or false"},
      {WithEndpoint("verify: none, mode: eventually"),
       "endpoints[0].mode: \"eventually\" is not one of async, sync"},
      {WithEndpoint("verify: none, sync_wait: 1y"), "endpoints[0].sync_wait: \"1y\""},
      // Field references.
      {WithEndpoint("verify: none, event_id: id"),
       "endpoints[0].event_id: \"id\" is not a field (use header:NAME, body:/json/pointer or "
       "form:NAME)"},
      {WithEndpoint("verify: none, event_id: \"form:\""),
       "endpoints[0].event_id: \"form:\" does not name a form field"},
      {WithEndpoint("provider: twilio, secrets: [{value: k}]"),
       "endpoints[0]: provider twilio signs the URL it calls: set public_url"},
      {WithEndpoint("verify: none, event_type: \"body:type\""),
       "endpoints[0].event_type: \"body:type\" is not a JSON pointer"},
      {WithEndpoint("verify: none, event_type: \"body:/a~2b\""), "is not a JSON pointer"},
      {WithEndpoint("verify: none, event_id: \"header:\""),
       "endpoints[0].event_id: \"header:\" does not name a valid header"},
      {WithEndpoint("verify: none, event_id: \"header:X Id\""), "does not name a valid header"},
      {WithEndpoint("verify: none, resource: body:/id"),
       "endpoints[0]: resource and sequence go together"},
      {WithEndpoint("verify: none, sequence: body:/created"), "resource and sequence go together"},
      // hmac.
      {WithEndpoint("provider: hmac, secrets: [{value: x}]"),
       "endpoints[0]: hmac is required with provider hmac"},
      {WithEndpoint("provider: github, secrets: [{value: x}], hmac: {header: X-Sig}"),
       "endpoints[0].hmac: only allowed with provider hmac"},
      {WithEndpoint("verify: none, hmac: {header: X-Sig}"),
       "endpoints[0].hmac: only allowed with provider hmac"},
      {WithEndpoint("provider: hmac, secrets: [{value: x}], hmac: {algorithm: sha256}"),
       "endpoints[0].hmac: header is required"},
      {WithEndpoint("provider: hmac, secrets: [{value: x}], hmac: {header: X, algorithm: md5}"),
       "endpoints[0].hmac.algorithm: \"md5\" is not one of sha1, sha256, sha512"},
      {WithEndpoint("provider: hmac, secrets: [{value: x}], hmac: {header: X, encoding: b32}"),
       "endpoints[0].hmac.encoding: \"b32\" is not one of hex, base64"},
      {WithEndpoint("provider: hmac, secrets: [{value: x}], hmac: {header: X, salt: y}"),
       "endpoints[0].hmac: unknown key \"salt\""},
      // Retry.
      {WithEndpoint("verify: none, retry: {max_attempts: 0}"),
       "endpoints[0].retry.max_attempts: \"0\" is not a whole number >= 1"},
      {WithEndpoint("verify: none, retry: {base: 1h, max: 10s}"),
       "endpoints[0].retry: base (1h) is longer than max (10s)"},
      {WithEndpoint("verify: none, retry: {base: 2h}"),
       "endpoints[0].retry: base (2h) is longer than max (1h)"},
      {WithEndpoint("verify: none, retry: {jitter: full}"),
       "endpoints[0].retry: unknown key \"jitter\""},
      // Routes and handlers.
      {WithEndpoint("verify: none, routes: {events: [a]}"), "endpoints[0].routes: expected a list"},
      {WithEndpoint("verify: none, routes: [{events: [a]}]"),
       "endpoints[0].routes[0]: handlers is required"},
      {WithEndpoint("verify: none, routes: [{handlers: [{exec: {}}]}]"),
       "endpoints[0].routes[0]: events is required"},
      {WithEndpoint("verify: none, routes: [{events: [], handlers: [{exec: {}}]}]"),
       "endpoints[0].routes[0].events: expected a non-empty list"},
      {WithEndpoint("verify: none, routes: [{events: a, handlers: [{exec: {}}]}]"),
       "endpoints[0].routes[0].events: expected a list"},
      {WithEndpoint("verify: none, routes: [{events: [\"\"], handlers: [{exec: {}}]}]"),
       "endpoints[0].routes[0].events[0]: must not be empty"},
      {WithEndpoint("verify: none, routes: [{events: [a], handlers: []}]"),
       "endpoints[0].routes[0].handlers: expected a non-empty list"},
      {WithEndpoint("verify: none, routes: [{events: [a], handlers: [{exec: {}}], when: x}]"),
       "endpoints[0].routes[0]: unknown key \"when\""},
      {WithEndpoint("verify: none, routes: [{events: [a], handlers: [{shell: {}}]}]"),
       "endpoints[0].routes[0].handlers[0]: unknown key \"shell\""},
      {WithEndpoint("verify: none, routes: [{events: [a], handlers: [{name: x}]}]"),
       "endpoints[0].routes[0].handlers[0]: expected one of exec, http, file, sql"},
      {WithEndpoint("verify: none, routes: [{events: [a], handlers: [{exec: {}, http: {}}]}]"),
       "endpoints[0].routes[0].handlers[0]: has exec and http; one kind per handler"},
      {WithEndpoint("verify: none, routes: [{events: [a], handlers: [{exec: [a]}]}]"),
       "endpoints[0].routes[0].handlers[0].exec: expected a mapping"},
      {WithEndpoint("verify: none, routes: [{events: [a], handlers: [exec]}]"),
       "endpoints[0].routes[0].handlers[0]: expected a mapping"},
      {WithEndpoint("verify: none, routes: [{events: [a], handlers: [{name: x, exec: {}}]}, "
                    "{events: [b], handlers: [{name: x, file: {}}]}]"),
       "endpoints[0].routes[1].handlers[0]: handler name \"x\" is already used by "
       "endpoints[0].routes[0].handlers[0]"},
      {WithEndpoint("verify: none, routes: [{events: [a], handlers: [{name: x, exec: {}}]}, "
                    "{events: [b], handlers: [{name: x, exec: {timeout: 5s}}]}]"),
       "endpoints[0].routes[1].handlers[0]: handler name \"x\" is already used by "
       "endpoints[0].routes[0].handlers[0] with other settings"},
      {WithEndpoint(
           "verify: none, routes: [{events: [a], handlers: [{exec: {command: [/bin/true]}}]}, "
           "{events: [b], handlers: [{exec: {command: [/bin/true], timeout: 5s}}]}]"),
       "(derived from its command) is already used by endpoints[0].routes[0].handlers[0] with "
       "other settings; give one of them a name: of its own"},
  };
  for (const ErrorCase& c : cases) {
    LoadResult r = Load(c.yaml);
    INFO("yaml:\n" << c.yaml << "want: " << c.want << "\ngot:\n" << Dump(r));
    CHECK(HasLine(r.errors, c.want));
    CHECK_FALSE(r.config);
  }
}

TEST_CASE("unknown keys are reported at every level", "[config]") {
  LoadResult r = Load(R"(
listn: 1
limits: {max_bdy: 1}
retention: {proccessed: 7d}
endpoints:
  - name: e
    path: /e
    provider: hmac
    secrets: [{value: x}]
    hmac: {header: X, algo: sha1}
    retry: {attempts: 3}
    colour: blue
    routes:
      - events: [a]
        handler: []
        handlers: [{exec: {command: [/bin/true], shell: yes}, timeout: 3s}]
)");
  INFO(Dump(r));
  CHECK(HasLine(r.errors, "unknown key \"listn\" (top level)"));
  CHECK(HasLine(r.errors, "limits: unknown key \"max_bdy\""));
  CHECK(HasLine(r.errors, "retention: unknown key \"proccessed\""));
  CHECK(HasLine(r.errors, "endpoints[0].hmac: unknown key \"algo\""));
  CHECK(HasLine(r.errors, "endpoints[0].retry: unknown key \"attempts\""));
  CHECK(HasLine(r.errors, "endpoints[0]: unknown key \"colour\""));
  CHECK(HasLine(r.errors, "endpoints[0].routes[0]: unknown key \"handler\""));
  CHECK(HasLine(r.errors, "endpoints[0].routes[0].handlers[0]: unknown key \"timeout\""));
  CHECK(HasLine(r.errors, "endpoints[0].routes[0].handlers[0].exec: unknown key \"shell\""));
  CHECK(r.errors.size() == 9);
  CHECK_FALSE(r.config);
}

// A key of the kind `keys` names that the loader accepts.
std::string GoodKey(ProviderSpec::Keys keys) {
  switch (keys) {
    case ProviderSpec::Keys::kSecret:
    case ProviderSpec::Keys::kToken:
      return "x";
    case ProviderSpec::Keys::kStandard:
      return "whsec_c2VjcmV0Cg==";
    case ProviderSpec::Keys::kEd25519Hex:  // RFC 8032's first test key
      return "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
  }
  return "";
}

TEST_CASE(
    "the hmac block is required with the providers whose row says so, and refused with "
    "every other",
    "[config]") {
  // Not vacuous: some row (the generic hmac's) takes the block, so both halves are reached.
  CHECK(std::any_of(Providers().begin(), Providers().end(),
                    [](const ProviderSpec& row) { return row.hmac_block; }));
  for (const ProviderSpec& row : Providers()) {
    const std::string name(row.name);
    INFO("provider " << name);
    // Everything else this provider needs, so that the block is the only question.
    std::string fields =
        "provider: " + name + ", secrets: [{value: \"" + GoodKey(row.keys) + "\"}]";
    if (row.needs_public_url) fields += ", public_url: \"https://example.com/e\"";
    LoadResult without = Load(WithEndpoint(fields));
    LoadResult with = Load(WithEndpoint(fields + ", hmac: {header: X-Sig}"));
    INFO(Dump(without) << Dump(with));
    if (row.hmac_block) {
      CHECK(HasLine(without.errors, "endpoints[0]: hmac is required with provider " + name +
                                        " (header, algorithm, encoding, prefix)"));
      CHECK(without.errors.size() == 1);
      REQUIRE(with.config);
      CHECK(with.config->endpoints[0].hmac.header == "X-Sig");
    } else {
      CHECK(without.config);
      CHECK(HasLine(with.errors, "endpoints[0].hmac: only allowed with provider hmac"));
      CHECK(with.errors.size() == 1);
    }
  }
}

TEST_CASE("several mistakes in one file are all reported together", "[config]") {
  LoadResult r = Load(R"(
listen: nowhere
limits: {max_body: 1XB, threads: 0}
workers: lots
purge_at: "25:00"
endpoints:
  - name: a
    path: /hooks/a
    verify: none
  - name: b
    path: /hooks/b
    provider: stripe
    secrets: [{env: HOOKBOX_TEST_SURELY_UNSET_VARIABLE}]
  - name: a
    path: /hooks/a
    verify: none
    retry: {base: 1h, max: 1m}
)");
  INFO(Dump(r));
  CHECK(HasLine(r.errors, "listen: \"nowhere\" is not host:port"));
  CHECK(HasLine(r.errors, "limits.max_body: \"1XB\" is not a size (use e.g. 64KiB, 1MiB)"));
  CHECK(HasLine(r.errors, "limits.threads: \"0\""));
  CHECK(HasLine(r.errors, "workers: \"lots\""));
  CHECK(HasLine(r.errors, "purge_at: \"25:00\""));
  CHECK(HasLine(r.errors,
                "endpoints[1].secrets[0]: environment variable "
                "HOOKBOX_TEST_SURELY_UNSET_VARIABLE is not set"));
  CHECK(HasLine(r.errors, "endpoints[2].name: \"a\" is already used by endpoints[0]"));
  CHECK(HasLine(r.errors, "endpoints[2].path: \"/hooks/a\" is already used by endpoint \"a\""));
  CHECK(HasLine(r.errors, "endpoints[2].retry: base (1h) is longer than max (1m)"));
  CHECK(r.errors.size() == 9);
  CHECK_FALSE(r.config);
}

TEST_CASE("duplicate endpoint names and paths", "[config]") {
  LoadResult r = Load(R"(
endpoints:
  - {name: a, path: /hooks/a, verify: none}
  - {name: b, path: /hooks/a, verify: none}
  - {name: a, path: /hooks/c, verify: none}
)");
  // Each at the key it is about: line 4, column 15 is endpoints[1]'s `path`.
  CHECK(r.errors ==
        std::vector<std::string>{
            "test.yaml:4:15: endpoints[1].path: \"/hooks/a\" is already used by endpoint \"a\"",
            "test.yaml:5:6: endpoints[2].name: \"a\" is already used by endpoints[0]"});
}

TEST_CASE(
    "five mistakes in three endpoints, two in handlers' kinds: all seven, each with its line "
    "and column",
    "[config]") {
  // Line numbers as an editor shows them (the raw string starts with a newline: line 1 is
  // empty). None of the mistakes hides another: a bad provider still has its secrets and its
  // handlers checked, a secret that cannot be read does not stop the next endpoint's checks,
  // and a handler kind's own settings (http's url, an unknown key under exec:) are read in the
  // same pass as the rest, each at its key and line.
  LoadResult r = LoadConfigText(
      R"(
endpoints:
  - name: a
    path: /a
    provider: stripey
    secrets: [{env: HOOKBOX_TEST_UNSET_VARIABLE}]
    routes:
      - events: ["*"]
        handlers:
          - http: {url: "ftp://downstream/x", concurrency: 8}
  - name: b
    path: b-without-slash
    verify: none
    event_id: nowhere:/id
    routes:
      - events: ["*"]
        handlers:
          - exec:
              command: [/bin/true]
              timeot: 5s
  - name: c
    path: /c
    provider: github
    secrets:
      - file: /nonexistent/hookbox/secret
)",
      "five.yaml", {.resolve_secrets = true, .host_checks = true, .kinds = &KindReaders()});
  INFO(Dump(r));
  CHECK_FALSE(r.config);
  CHECK(r.errors.size() == 7);
  CHECK(HasLine(r.errors, "five.yaml:5:5: endpoints[0].provider: \"stripey\" is not one of"));
  CHECK(HasLine(r.errors, "five.yaml:6:15: endpoints[0].secrets[0]: environment variable"));
  CHECK(HasLine(r.errors, "five.yaml:10:20: endpoints[0].routes[0].handlers[0].http.url: "));
  CHECK(HasLine(r.errors, "five.yaml:12:5: endpoints[1].path: "));
  CHECK(HasLine(r.errors, "five.yaml:14:5: endpoints[1].event_id: "));
  CHECK(
      HasLine(r.errors,
              "five.yaml:20:15: endpoints[1].routes[0].handlers[0].exec: unknown key \"timeot\""));
  CHECK(HasLine(r.errors, "five.yaml:25:9: endpoints[2].secrets[0]: cannot read file"));
}

TEST_CASE("a handler kind's mistakes: at their key, in the loader's words", "[config]") {
  // Each kind's reader is handed the loader's reader: a value, an item, a nested key and a
  // missing key are each placed at the nearest key or item of theirs, beside `rate:` and
  // `circuit:` (read by the loader) in the same mapping.
  LoadResult r = LoadConfigText(R"(
endpoints:
  - name: a
    path: /a
    verify: none
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/true], timeout: soon, rate: 5/s, env: {HOOKBOX_X: y}}
          - http:
              url: http://127.0.0.1:1/x
              sign: {secret: {vault: x}}
              headers: {Host: a}
          - sql: {statements: ["select :nope", "  "], concurrency: 2}
          - file: {dir: [a, b], circuit: {failures: 3, cooldown: 1s}}
          - exec: {permanent_exit_codes: [0]}
)",
                                "kinds.yaml", {.kinds = &KindReaders()});
  INFO(Dump(r));
  CHECK_FALSE(r.config);
  const std::string h = "endpoints[0].routes[0].handlers";
  CHECK(HasLine(r.errors, "kinds.yaml:9:42: " + h + "[0].exec.timeout: "));
  CHECK(HasLine(r.errors, "kinds.yaml:9:74: " + h + "[0].exec.env.HOOKBOX_X: HOOKBOX_* variables"));
  CHECK(HasLine(r.errors, "kinds.yaml:12:22: " + h +
                              "[1].http.sign.secret: unknown key \"vault\" (expected env, file or "
                              "value)"));
  CHECK(HasLine(r.errors, "kinds.yaml:13:25: " + h + "[1].http.headers.Host: is set by hookbox"));
  CHECK(HasLine(r.errors,
                "kinds.yaml:14:32: " + h + "[2].sql.statements[0]: unknown parameter :nope"));
  CHECK(HasLine(r.errors, "kinds.yaml:14:48: " + h + "[2].sql.statements[1]: expected an SQL"));
  CHECK(HasLine(r.errors, "kinds.yaml:14:55: " + h + "[2].sql: unknown key \"concurrency\""));
  CHECK(HasLine(r.errors, "kinds.yaml:15:20: " + h + "[3].file.dir: expected a directory path"));
  CHECK(HasLine(r.errors, "kinds.yaml:16:13: " + h + "[4].exec: command is required"));
  CHECK(HasLine(r.errors,
                "kinds.yaml:16:43: " + h +
                    "[4].exec.permanent_exit_codes[0]: expected an exit code from 1 to 255"));
  CHECK(r.errors.size() == 10);
}

TEST_CASE("a handler kind's values of the wrong shape: 'expected …' at their key or item",
          "[config]") {
  // Every kind names only what it expected; the reader words it, placed as every other
  // mistake of the kind's: at the key, the list item, or (for a name the operator chose, a
  // repeat included) that entry's own key.
  LoadResult r = LoadConfigText(R"(
endpoints:
  - name: a
    path: /a
    verify: none
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: /bin/true, permanent_exit_codes: 3, workdir: tmp, concurrency: 0}
          - exec: {command: [/bin/true, [a]], env: [A]}
          - exec:
              command: [/bin/true]
              env: {A: [x], B: ok, A: {y: z}}
          - http: {url: [a], headers: [a], sign: secret}
          - http: {url: "http://127.0.0.1:1/", headers: {X-A: [a], X-B: "b"}}
          - sql: {setup: x, statements: []}
          - sql: {statements: {a: b}}
)",
                                "shapes.yaml", {.kinds = &KindReaders()});
  INFO(Dump(r));
  CHECK_FALSE(r.config);
  const std::string h = "endpoints[0].routes[0].handlers";
  // Each: the position, then the rest after "endpoints[0].routes[0].handlers".
  const std::pair<const char*, const char*> lines[] = {
      {"shapes.yaml:9:20:",
       "[0].exec.command: expected a non-empty list: the program, then its arguments"},
      {"shapes.yaml:9:40:", "[0].exec.permanent_exit_codes: expected a list of exit codes (1-255)"},
      {"shapes.yaml:9:65:", "[0].exec.workdir: expected an absolute path"},
      {"shapes.yaml:9:79:",
       "[0].exec.concurrency: expected a whole number of attempts at once, 1 to 1024"},
      {"shapes.yaml:10:41:", "[1].exec.command[1]: expected text"},
      {"shapes.yaml:10:47:", "[1].exec.env: expected a mapping of NAME: value"},
      {"shapes.yaml:13:21:", "[2].exec.env.A: expected text"},
      {"shapes.yaml:13:36:", "[2].exec.env.A: expected text"},
      {"shapes.yaml:14:20:", "[3].http.url: expected a URL"},
      {"shapes.yaml:14:30:", "[3].http.headers: expected a mapping of Name: value"},
      {"shapes.yaml:14:44:", "[3].http.sign: expected {secret: {env: NAME}}"},
      {"shapes.yaml:15:58:", "[4].http.headers.X-A: expected a single-line text value"},
      {"shapes.yaml:16:19:", "[5].sql.setup: expected a list of SQL statements"},
      {"shapes.yaml:16:29:", "[5].sql.statements: expected a non-empty list of SQL statements"},
      {"shapes.yaml:17:19:", "[6].sql.statements: expected a non-empty list of SQL statements"},
  };
  for (const auto& [position, rest] : lines) {
    CHECK(HasLine(r.errors, std::string(position) + " " + h + rest));
  }
  CHECK(r.errors.size() == 15);
}

TEST_CASE("retention shorter than 3 days is a warning, not an error", "[config]") {
  LoadResult r =
      Load("retention: {processed: 1d, dead: 72h, sequences: 48h}\n" + std::string(kOpen));
  INFO(Dump(r));
  REQUIRE(r.config);
  CHECK(r.errors.empty());
  REQUIRE(r.warnings.size() == 2);
  CHECK(HasLine(r.warnings,
                "retention.processed: 1d is shorter than 3 days; producers retry for "
                "up to 3 days"));
  CHECK(HasLine(r.warnings, "retention.sequences: 2d is shorter than 3 days"));
  CHECK(r.config->retention.processed == hours(24));
}

TEST_CASE("dedupe: [id] by default, [id, body] on request, nothing else", "[config]") {
  LoadResult by_default = Load(WithEndpoint("verify: none"));
  REQUIRE(by_default.config);
  CHECK_FALSE(by_default.config->endpoints[0].dedupe_body);
  for (const char* id_only : {"[id]", "[\"id\"]"}) {
    LoadResult r = Load(WithEndpoint(std::string("verify: none, dedupe: ") + id_only));
    INFO(Dump(r));
    REQUIRE(r.config);
    CHECK_FALSE(r.config->endpoints[0].dedupe_body);
  }
  for (const char* with_body : {"[id, body]", "[body, id]"}) {
    LoadResult r = Load(WithEndpoint(std::string("verify: none, dedupe: ") + with_body));
    INFO(Dump(r));
    REQUIRE(r.config);
    CHECK(r.config->endpoints[0].dedupe_body);
  }
  const std::pair<const char*, const char*> bad[] = {
      {"[body]", "endpoints[0].dedupe: must include id"},
      {"[id, headers]", "endpoints[0].dedupe[1]: \"headers\" is not one of id, body"},
      {"[id, body, body]", "endpoints[0].dedupe[2]: \"body\" appears twice"},
      {"[]", "endpoints[0].dedupe: expected a non-empty list"},
      {"body", "endpoints[0].dedupe: expected a list"},
      {"[id, [body]]", "endpoints[0].dedupe[1]: expected a single value, found a list"},
  };
  for (const auto& [value, error] : bad) {
    INFO(value);
    LoadResult r = Load(WithEndpoint(std::string("verify: none, dedupe: ") + value));
    INFO(Dump(r));
    CHECK_FALSE(r.config);
    CHECK(HasLine(r.errors, error));
  }
}

TEST_CASE("admin_listen may be empty to disable it", "[config]") {
  LoadResult r = Load("admin_listen: \"\"\n" + std::string(kOpen));
  REQUIRE(r.config);
  CHECK(r.config->admin_listen.empty());
}

TEST_CASE("JSON pointers and headers", "[config]") {
  LoadResult r =
      Load(WithEndpoint("verify: none, event_id: \"body:\", event_type: \"body:/a~0b/c~1d/0\", "
                        "resource: header:X-Resource, sequence: \"body:/\""));
  INFO(Dump(r));
  REQUIRE(r.config);
  const Endpoint& e = r.config->endpoints[0];
  CHECK(e.event_id.from == FieldRef::From::kBody);
  CHECK(e.event_id.name.empty());
  CHECK(e.event_type.name == "/a~0b/c~1d/0");
  CHECK(e.resource.from == FieldRef::From::kHeader);
  CHECK(e.resource.name == "X-Resource");
  CHECK(e.sequence.name == "/");
}

TEST_CASE("form fields", "[config]") {
  LoadResult r = Load(
      WithEndpoint("verify: none, event_id: \"form:MessageSid\", event_type: \"form:Event Type\""));
  INFO(Dump(r));
  REQUIRE(r.config);
  const Endpoint& e = r.config->endpoints[0];
  CHECK(e.event_id.from == FieldRef::From::kForm);
  CHECK(e.event_id.name == "MessageSid");
  CHECK(e.event_type.name == "Event Type");
}

TEST_CASE("a YAML syntax error is reported with its line and column", "[config]") {
  LoadResult r = Load("listen: 127.0.0.1:8080\nendpoints:\n  - name: a\n   path: [/a\n");
  INFO(Dump(r));
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].starts_with("test.yaml:4:"));
  CHECK_FALSE(r.config);

  LoadResult tabs = Load("endpoints: {a: 1, b}\n  c: [\n");
  REQUIRE(tabs.errors.size() == 1);
  CHECK(tabs.errors[0].starts_with("test.yaml:"));
}

TEST_CASE("LoadConfigFile reads the file and names it", "[config]") {
  testing::TempFile file(kOpen);
  LoadResult r = LoadConfigFile(file.path());
  INFO(Dump(r));
  REQUIRE(r.config);
  CHECK(r.config->path == file.path());

  LoadResult missing = LoadConfigFile("/nonexistent/hookbox.yaml");
  REQUIRE(missing.errors.size() == 1);
  CHECK(missing.errors[0] == "/nonexistent/hookbox.yaml: cannot read: No such file or directory");

  testing::TempFile broken("endpoints: [\n");
  LoadResult syntax = LoadConfigFile(broken.path());
  REQUIRE(syntax.errors.size() == 1);
  CHECK(syntax.errors[0].starts_with(broken.path() + ":"));
}

TEST_CASE(
    "admin_token and admin_hosts: read like secrets and names; a console open to the "
    "network without a token is warned about",
    "[config]") {
  const std::string endpoints = R"(
endpoints:
  - {name: open, path: /open, verify: none}
)";
  LoadResult with = Load(
      "admin_token: {value: s3cret-token-0123}\nadmin_hosts: [hookbox.internal]\n" + endpoints);
  INFO(Dump(with));
  REQUIRE(with.config);
  REQUIRE(with.config->admin_token);
  CHECK(with.config->admin_token->value == "s3cret-token-0123");
  CHECK(with.config->admin_hosts == std::vector<std::string>{"hookbox.internal"});
  CHECK(InlineSecretPlaces(*with.config) == std::vector<std::string>{"admin_token"});
  CHECK(with.warnings.empty());

  LoadResult bad = Load("admin_token: {value: \"\"}\n" + endpoints);
  CHECK_FALSE(bad.config);
  CHECK(HasLine(bad.errors, "admin_token: value is empty"));
  LoadResult unknown = Load("admin_token: {vault: x}\n" + endpoints);
  CHECK(HasLine(unknown.errors, "admin_token: unknown key \"vault\""));

  LoadResult open = Load("admin_listen: 0.0.0.0:9464\n" + endpoints);
  REQUIRE(open.config);
  CHECK(HasLine(open.warnings,
                "admin_listen: 0.0.0.0:9464 is not a loopback address and no "
                "admin_token is set"));
  LoadResult guarded =
      Load("admin_listen: 0.0.0.0:9464\nadmin_token: {value: 0123456789abcdef}\n" + endpoints);
  CHECK(guarded.warnings.empty());
  // A token shorter than 16 characters loads, with a warning that names its source only.
  LoadResult weak = Load("admin_listen: 0.0.0.0:9464\nadmin_token: {value: hunter2}\n" + endpoints);
  REQUIRE(weak.config);
  CHECK(HasLine(weak.warnings,
                "admin_token: the token from value is only 7 characters: a client may try "
                "tokens as fast as it can"));
  CHECK(Dump(weak).find("hunter2") == std::string::npos);
  LoadResult loopback = Load("admin_listen: 127.0.0.1:9464\n" + endpoints);
  CHECK(loopback.warnings.empty());
}

// A job names its handler, so the name must survive edits that do not change what the
// handler does. A positional name ("r0.h0.exec") would send a waiting retry to another
// route's handler once a route is added above it.
TEST_CASE("an unnamed handler's name comes from its kind and target, not its position") {
  const std::string first = R"(
listen: 127.0.0.1:0
database: /tmp/x.db
endpoints:
  - name: shop
    path: /shop
    verify: none
    routes:
      - events: ["order.*"]
        handlers:
          - exec: {command: ["/usr/local/bin/on-order", "--live"], timeout: 30s}
          - http: {url: "https://user:pw@downstream.example:8443/hooks?x=1"}
          - file: {dir: /var/lib/hookbox/events/}
          - sql: {statements: ["SELECT 1"]}
)";
  // A route added above, the handlers reordered, timeouts and concurrency edited.
  const std::string second = R"(
listen: 127.0.0.1:0
database: /tmp/x.db
endpoints:
  - name: shop
    path: /shop
    verify: none
    routes:
      - events: ["customer.*"]
        handlers:
          - exec: {command: ["/usr/local/bin/on-customer"]}
      - events: ["order.*"]
        handlers:
          - sql: {statements: ["SELECT 1"]}
          - file: {dir: /var/lib/hookbox/events/, concurrency: 2}
          - http: {url: "https://user:pw@downstream.example:8443/hooks?x=1", timeout: 3s}
          - exec: {command: ["/usr/local/bin/on-order", "--live"], timeout: 10s}
)";
  // The names alone, so without the kinds' readers: the http kind refuses a URL with user info
  // (which the name must never show).
  LoadResult a = LoadConfigText(first, "test.yaml"), b = LoadConfigText(second, "test.yaml");
  REQUIRE(a.config);
  REQUIRE(b.config);
  std::set<std::string> before, after;
  for (const HandlerSpec& h : a.config->endpoints[0].routes[0].handlers) before.insert(h.name);
  for (const HandlerSpec& h : b.config->endpoints[0].routes[1].handlers) after.insert(h.name);
  CHECK(before == after);
  CHECK(before.count(b.config->endpoints[0].routes[0].handlers[0].name) == 0);

  const auto& hs = a.config->endpoints[0].routes[0].handlers;
  CHECK(hs[0].name.starts_with("exec.on-order."));
  CHECK(hs[1].name.starts_with("http.downstream.example-8443."));  // never the user info
  CHECK(hs[1].name.find("pw") == std::string::npos);
  CHECK(hs[2].name.starts_with("file.events."));
  CHECK(hs[3].name.starts_with("sql."));
  for (const HandlerSpec& h : hs) {
    CHECK(h.name.size() <= h.kind.size() + 1 + 32 + 1 + 8);
  }
  // What the name is made of, case by case: handler_names_test.cc.
}

TEST_CASE("the same handler in two routes is one handler with one name") {
  LoadResult r = Load(WithEndpoint(
      "verify: none, routes: [{events: [a], handlers: [{exec: {command: [/bin/true]}}]}, "
      "{events: [b], handlers: [{exec: {command: [/bin/true]}}]}]"));
  INFO(Dump(r));
  REQUIRE(r.config);
  CHECK(r.config->endpoints[0].routes[0].handlers[0].name ==
        r.config->endpoints[0].routes[1].handlers[0].name);
}

}  // namespace
}  // namespace hookbox
