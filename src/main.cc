// The hookbox command line: one small function per verb. `serve` reads as the list of steps
// the daemon takes; the others are the operator's tools over the same inbox, safe to run
// while the daemon runs (SQLite WAL, BEGIN IMMEDIATE + a busy handler that retries for up to 5 s).
//
// Exit status: 0 success; 1 usage, config or lookup error (unknown endpoint or id);
// 2 the database cannot be opened.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/exposure.h"
#include "handlers/handler.h"
#include "http/client.h"
#include "http/server.h"
#include "inbox/inbox.h"
#include "inbox/postgres/pg.h"
#include "ops/clock.h"
#include "ops/daemon_metrics.h"
#include "ops/fdlimit.h"
#include "ops/log.h"
#include "ops/systemd.h"
#include "ops/terminal.h"
#include "receive/identify.h"
#include "receive/receiver.h"
#include "verify/verify.h"
#include "work/purge.h"
#include "work/dispatcher.h"

namespace hookbox {
namespace {

using nlohmann::json;

constexpr int kExitOk = 0;
constexpr int kExitUsage = 1;
constexpr int kExitDatabase = 2;

std::string DefaultConfigPath() {
  const char* env = std::getenv("HOOKBOX_CONFIG");
  return env && *env ? env : "/etc/hookbox/config.yaml";
}

std::string Dump(const json& j, int indent = -1) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

// Loads the config, printing every problem; nullopt when it has errors. Only `serve` and
// `check-config` read secrets: the operator's verbs work from a shell without them.
std::optional<Config> LoadOrReport(const std::string& path, bool resolve_secrets = false) {
  LoadResult r = LoadConfigFile(path, {.resolve_secrets = resolve_secrets});
  for (const std::string& w : r.warnings) std::cerr << path << ": warning: " << w << "\n";
  for (const std::string& e : r.errors) std::cerr << path << ": error: " << e << "\n";
  return std::move(r.config);
}

StatusOr<std::unique_ptr<Inbox>> Open(const Config& config, bool create,
                                      std::vector<std::string>* applied = nullptr) {
  return OpenInbox({config.database, config.durability == Durability::kFull, create}, applied);
}

// Builds every handler (each kind checks its config once) and runs the sql handlers' setup
// in the inbox; nullptr after logging every problem.
std::shared_ptr<const HandlerSet> BuildAndPrepare(const Config& c, Inbox& inbox) {
  std::vector<std::string> errors;
  auto handlers = std::make_shared<HandlerSet>(BuildHandlers(c, &errors));
  for (const auto& [endpoint, by_name] : handlers->by_endpoint) {
    for (const auto& [name, handler] : by_name) {
      if (!handler->sql()) continue;
      if (Status s = inbox.PrepareSql(*handler->sql()); !s.ok()) {
        errors.push_back(endpoint + "." + name + ": sql: " + s.ToString());
      }
    }
  }
  if (errors.empty()) return handlers;
  LogError({{"msg", "handlers are not valid"}, {"errors", errors}});
  return nullptr;
}

std::string BodyFieldOr(const std::string& body, const std::string& pointer) {
  return BodyField(body, pointer).value_or("");
}

int ReportOpenFailure(const Status& s) {
  std::cerr << "hookbox: " << s.ToString() << "\n";
  return kExitDatabase;
}

// ---------------------------------------------------------------------------------- serve

HttpLimits PublicLimits(const Config& c) {
  HttpLimits l;
  l.max_body = c.limits.max_body;
  l.read_timeout = c.limits.read_timeout;
  l.threads = c.limits.threads;
  l.max_headers = c.limits.max_headers;
  l.max_connections = c.limits.max_connections;
  return l;
}

// The inbox answers reads (Ping) and its write path commits: a lease expiry for an owner no
// process has (owner names start with a host name, never with '/') changes nothing, but a
// stuck group commit or a dead disk makes it fail or hang.
Status InboxAlive(Inbox& inbox) {
  if (Status s = inbox.Ping(); !s.ok()) return s;
  return inbox.ExpireLeases("/hookbox-liveness-probe/", std::chrono::system_clock::now());
}

// What /readyz and the systemd watchdog both ask: is the daemon taking deliveries?
struct Liveness {
  Inbox& inbox;
  const HttpServer& hooks;
  const std::atomic<bool>& draining;

  // Empty when alive, else what is wrong.
  std::string Problem() const {
    if (draining) return "draining";
    if (!hooks.Serving()) return "not accepting connections";
    if (!InboxAlive(inbox).ok()) return "database unavailable";
    return "";
  }
};

Answer AdminAnswer(const Delivery& d, const Liveness& liveness) {
  if (d.path == "/healthz") return {200, R"({"status":"ok"})", {}};
  if (d.path == "/readyz") {
    std::string problem = liveness.Problem();
    if (!problem.empty()) return {503, Dump(json{{"status", problem}}), {}};
    return {200, R"({"status":"ready"})", {}};
  }
  if (d.path == "/metrics") {
    return {200, Metrics().registry.Render(),
            {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}}};
  }
  return {404, R"({"error":"not found"})", {}};
}

// hookbox_jobs{status} and hookbox_queue_oldest_age_seconds, asked of the inbox at each
// scrape. Registered once: a process serves once.
void AddQueueGauges(Inbox& inbox) {
  Metrics().registry.AddGauge(
      "hookbox_jobs", "Jobs in the inbox, by status.", {"status"}, [&inbox] {
        std::vector<GaugeSample> out;
        auto q = inbox.Queue();
        if (!q.ok()) return out;
        std::map<std::string, int64_t> by_status = {
            {"pending", 0}, {"processing", 0}, {"done", 0}, {"dead", 0}};
        for (const auto& [status, n] : q->jobs_by_status) by_status[status] = n;
        for (const auto& [status, n] : by_status) {
          out.push_back({{status}, static_cast<double>(n)});
        }
        return out;
      });
  Metrics().registry.AddGauge(
      "hookbox_queue_oldest_age_seconds",
      "Age of the oldest event with a pending or processing job; 0 when there is none.", {},
      [&inbox] {
        std::vector<GaugeSample> out;
        auto q = inbox.Queue();
        if (!q.ok()) return out;
        double age = 0;
        if (auto micros = ParseRfc3339Micros(q->oldest_unfinished_received_at)) {
          TimePoint oldest{std::chrono::microseconds(*micros)};
          age = std::max(0.0, std::chrono::duration<double>(std::chrono::system_clock::now() -
                                                            oldest).count());
        }
        out.push_back({{}, age});
        return out;
      });
}

// Blocks the signals serve handles, so that only the waiting thread receives them.
sigset_t BlockServeSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Webhooks on the socket systemd passed (socket activation), else on `listen`. Returns the
// address for the log.
StatusOr<std::string> ListenForWebhooks(HttpServer& hooks, const Config& c,
                                        const std::vector<int>& activated) {
  if (!activated.empty()) {
    for (size_t i = 1; i < activated.size(); ++i) close(activated[i]);
    if (activated.size() > 1) {
      LogWarn({{"msg", "systemd passed several sockets; serving webhooks on the first only"}});
    }
    return hooks.Adopt(activated.front());
  }
  auto listen = ParseHostPort(c.listen);
  auto port = hooks.Bind(listen->host, listen->port);
  if (!port.ok()) return port.status();
  return listen->host + ":" + std::to_string(*port);
}

// Logs a warning (and the daemon still starts) when others can read inline secrets in the
// config file (config/exposure.h).
void WarnIfSecretsExposed(const Config& c) {
  if (auto exposed = CheckInlineSecretsExposure(c)) {
    LogWarn({{"msg", "config file readable by others holds inline secrets"},
             {"file", exposed->path}, {"mode", exposed->ModeText()}, {"owner", exposed->owner},
             {"inline_secrets", exposed->places},
             {"fix", "chmod 600 the file and chown it to the service user, or use file:/env: "
                     "secrets"}});
  }
}

// SIGHUP: re-reads the config and swaps endpoints, secrets and handlers everywhere at once;
// an invalid config is logged and the old one stays.
void Reload(const std::string& config_path, const Config& running, Inbox& inbox,
            Dispatcher& dispatcher, Receiver& receiver, PurgeSchedule& purge) {
  LoadResult r = LoadConfigFile(config_path);
  if (!r.config) {
    LogError({{"msg", "reload refused: the config has errors; the old one stays"},
              {"errors", r.errors}});
    return;
  }
  WarnIfSecretsExposed(*r.config);
  auto new_config = std::make_shared<const Config>(std::move(*r.config));
  auto new_handlers = BuildAndPrepare(*new_config, inbox);
  if (!new_handlers) {
    LogError({{"msg", "reload refused: the old config stays"}});
    return;
  }
  if (new_config->listen != running.listen || new_config->database != running.database ||
      new_config->admin_listen != running.admin_listen) {
    LogWarn({{"msg", "listen, admin_listen and database changes take effect at the next restart"}});
  }
  dispatcher.Swap(new_config, new_handlers);
  receiver.Swap({new_config, new_handlers});
  purge.Swap(new_config);
  LogInfo({{"msg", "reloaded"}, {"endpoints", new_config->endpoints.size()}});
}

// Raises the soft open-file limit to the hard one, then lowers limits.max_connections to
// what fits under it beside the descriptors the rest of the daemon needs (ops/fdlimit.h).
// False, after saying why, when not even the minimum fits.
bool FitDescriptors(Config& c) {
  auto limit = RaiseNofileLimit();
  if (!limit.ok()) {
    LogWarn({{"msg", "cannot read the open-file limit"}, {"error", limit.status().ToString()}});
    return true;
  }
  if (limit->soft != limit->before) {
    LogInfo({{"msg", "raised the open-file limit"}, {"from", limit->before}, {"to", limit->soft}});
  }
  // The handlers are built here only to count their slots (each kind's concurrency); serve
  // builds them again once the inbox is open, for the sql kind's setup.
  std::vector<std::string> ignored;
  const int slots = c.workers == 0 ? 0 : BuildHandlers(c, &ignored).total_concurrency;
  const DescriptorNeeds needs{slots, c.limits.threads, pg::IsPostgresUrl(c.database)};
  auto fit = FitConnections(limit->soft, c.limits.max_connections, needs);
  if (!fit.ok()) {
    std::cerr << "hookbox: " << fit.status().ToString() << "\n";
    LogError({{"msg", "limits.max_connections does not fit the open-file limit"},
              {"error", fit.status().ToString()}});
    return false;
  }
  if (fit->lowered) {
    LogWarn({{"msg", "limits.max_connections lowered to fit the open-file limit"},
             {"configured", c.limits.max_connections},
             {"max_connections", fit->max_connections},
             {"open_file_limit", limit->soft},
             {"reserved", fit->reserve}});
    c.limits.max_connections = fit->max_connections;
  }
  return true;
}

int Serve(const std::string& config_path) {
  sigset_t signals = BlockServeSignals();
  // Take the sockets systemd may have passed before anything could inherit them.
  const std::vector<int> activated = TakeListenFds();
  // Load and check the config; every problem is reported before stopping.
  std::optional<Config> loaded = LoadOrReport(config_path, /*resolve_secrets=*/true);
  if (!loaded) return kExitUsage;
  WarnIfSecretsExposed(*loaded);
  // Raise the open-file limit; fit max_connections under it.
  if (!FitDescriptors(*loaded)) return kExitUsage;
  auto config = std::make_shared<const Config>(std::move(*loaded));
  const Config& c = *config;
  // Open the inbox and bring its schema up to date.
  std::vector<std::string> applied;
  auto inbox = Open(c, /*create=*/true, &applied);
  if (!inbox.ok()) return ReportOpenFailure(inbox.status());
  for (const std::string& m : applied) LogInfo({{"msg", "migrated"}, {"migration", m}});
  // Build the handlers; run the sql handlers' setup.
  auto handlers = BuildAndPrepare(c, **inbox);
  if (!handlers) return kExitUsage;
  // Start the dispatcher, then the receive pipeline that feeds it, and the daily purge.
  SystemClock clock;
  Dispatcher dispatcher(**inbox, config, handlers, clock);
  dispatcher.Start(c.workers != 0);
  Receiver receiver({config, handlers}, **inbox, clock, [&] { dispatcher.Wake(); });
  PurgeSchedule purge(**inbox, config, clock);
  purge.Start();
  std::atomic<bool> draining{false};
  // Listen: webhooks on `listen` (or systemd's socket); health and metrics on `admin_listen`.
  HttpServer hooks(
      PublicLimits(c), [&](const Delivery& d) { return receiver.Receive(d); },
      [&](const Delivery& head) { return receiver.CheckHead(head); });
  const Liveness liveness{**inbox, hooks, draining};
  HttpLimits admin_limits;
  admin_limits.threads = 2;
  HttpServer admin(admin_limits, [&](const Delivery& d) { return AdminAnswer(d, liveness); });
  AddQueueGauges(**inbox);
  auto hooks_address = ListenForWebhooks(hooks, c, activated);
  if (!hooks_address.ok()) {
    LogError({{"msg", "cannot listen"}, {"error", hooks_address.status().ToString()}});
    return kExitUsage;
  }
  std::optional<int> admin_port;
  if (!c.admin_listen.empty()) {
    auto admin_addr = ParseHostPort(c.admin_listen);
    auto bound = admin.Bind(admin_addr->host, admin_addr->port);
    if (!bound.ok()) {
      LogError({{"msg", "cannot listen"}, {"error", bound.status().ToString()}});
      return kExitUsage;
    }
    admin_port = *bound;
  }
  std::thread hooks_thread([&] { hooks.Run(); });
  std::thread admin_thread([&] {
    if (admin_port) admin.Run();
  });
  json ready = {{"msg", "listening"},
                {"listen", *hooks_address},
                {"database", DatabaseForLogs(c.database)},
                {"endpoints", c.endpoints.size()},
                {"workers", c.workers}};
  if (!activated.empty()) ready["socket_activated"] = true;
  if (admin_port) {
    ready["admin"] = ParseHostPort(c.admin_listen)->host + ":" + std::to_string(*admin_port);
  }
  LogInfo(ready);
  // Tell systemd we are up, and ping its watchdog while deliveries can be taken.
  NotifySystemd("READY=1\nSTATUS=listening on " + *hooks_address);
  std::optional<Watchdog> watchdog;
  if (auto timeout = WatchdogTimeout()) {
    watchdog.emplace(*timeout, [&] {
      std::string problem = liveness.Problem();
      if (!problem.empty()) LogWarn({{"msg", "not alive"}, {"problem", problem}});
      return problem.empty();
    });
  }
  // Wait for SIGTERM/SIGINT; SIGHUP reloads endpoints, secrets and handlers.
  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGHUP) {
      LogInfo({{"msg", "stopping"}, {"signal", strsignal(sig)}});
      break;
    }
    NotifySystemd("RELOADING=1\n" + MonotonicUsec());
    Reload(config_path, c, **inbox, dispatcher, receiver, purge);
    NotifySystemd("READY=1\nSTATUS=listening on " + *hooks_address);
  }
  // Drain: tell systemd, stop accepting and finish in-flight requests; let running jobs
  // finish within shutdown_grace; then close the inbox.
  if (watchdog) watchdog->Stop();
  NotifySystemd("STOPPING=1");
  draining = true;
  hooks.Stop();
  admin.Stop();
  hooks_thread.join();
  admin_thread.join();
  purge.Stop();
  if (!dispatcher.Stop(c.shutdown_grace)) {
    // Everything committed is on disk; the unfinished attempts' leases will expire and
    // their jobs run again after the restart.
    LogWarn({{"msg", "stopped with attempts still running; they will be retried"},
             {"shutdown_grace", FormatDuration(c.shutdown_grace)}});
    std::_Exit(kExitOk);
  }
  inbox->reset();
  LogInfo({{"msg", "stopped"}});
  return kExitOk;
}

// ------------------------------------------------------------------- check-config, migrate

// `read_secrets` false: secrets are checked for shape only, for a shell that lacks the
// service's environment and credentials (/run/credentials/... exists only inside it).
int CheckConfig(const std::string& path, bool read_secrets) {
  LoadResult r = LoadConfigFile(path, {.resolve_secrets = read_secrets});
  if (r.config) (void)BuildHandlers(*r.config, &r.errors);  // each kind checks its config
  if (!r.errors.empty()) r.config.reset();
  if (r.config) {
    if (auto exposed = CheckInlineSecretsExposure(*r.config)) {
      std::cerr << "hookbox: warning: " << exposed->Message() << "\n";
    }
  }
  for (const std::string& w : r.warnings) std::cout << path << ": warning: " << w << "\n";
  for (const std::string& e : r.errors) std::cout << path << ": error: " << e << "\n";
  if (!r.config) {
    std::cout << r.errors.size() << " error(s)\n";
    return kExitUsage;
  }
  std::cout << path << ": ok (" << r.config->endpoints.size() << " endpoint(s))\n";
  return kExitOk;
}

int Migrate(const std::string& path) {
  std::optional<Config> config = LoadOrReport(path);
  if (!config) return kExitUsage;
  std::vector<std::string> applied;
  auto inbox = Open(*config, /*create=*/true, &applied);
  if (!inbox.ok()) return ReportOpenFailure(inbox.status());
  for (const std::string& m : applied) std::cout << "applied " << m << "\n";
  if (applied.empty()) std::cout << "schema is up to date\n";
  return kExitOk;
}

// ---------------------------------------------------------------------------- inbox verbs

json RowJson(const InboxRow& r) {
  auto or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  json headers = json::parse(r.headers_json, nullptr, /*allow_exceptions=*/false);
  return json{{"id", r.id},
              {"endpoint", r.endpoint},
              {"event_id", r.event_id},
              {"id_source", r.id_source},
              {"event_type", r.event_type},
              {"resource_id", r.resource_id},
              {"sequence", r.sequence},
              {"body_sha256", r.body_sha256},
              {"headers", headers.is_discarded() ? json(r.headers_json) : headers},
              {"status", r.status},
              {"received_at", r.received_at},
              {"processed_at", or_null(r.processed_at)},
              {"duplicates", r.duplicates},
              {"last_duplicate_at", or_null(r.last_duplicate_at)}};
}

// Checks an operator-named endpoint against the config: a typo is an error, not an empty list.
bool KnownEndpoint(const Config& c, const std::string& name) {
  if (name.empty() || c.FindByName(name)) return true;
  std::cerr << "hookbox: unknown endpoint \"" << TerminalSafe(name) << "\" (not in " << c.path
            << ")\n";
  return false;
}

std::optional<std::string> SinceBound(const std::string& since) {
  if (since.empty()) return std::string();
  auto now = std::chrono::system_clock::now();
  if (auto age = ParseDuration(since); age.ok()) return FormatTime(now - *age);
  std::string text = since.size() == 10 ? since + "T00:00:00Z" : since;
  if (auto micros = ParseRfc3339Micros(text)) {
    return FormatTime(TimePoint(std::chrono::microseconds(*micros)));
  }
  return std::nullopt;
}

struct ListArgs {
  ListFilter filter;
  bool json = false;
};

int InboxList(const std::string& path, ListArgs args) {
  std::optional<Config> config = LoadOrReport(path);
  if (!config) return kExitUsage;
  if (!KnownEndpoint(*config, args.filter.endpoint)) return kExitUsage;
  auto since = SinceBound(args.filter.since);
  if (!since) {
    std::cerr << "hookbox: --since takes an RFC 3339 time, a date or an age like 2h\n";
    return kExitUsage;
  }
  args.filter.since = *since;
  auto inbox = Open(*config, /*create=*/false);
  if (!inbox.ok()) return ReportOpenFailure(inbox.status());
  auto rows = (*inbox)->List(args.filter);
  if (!rows.ok()) return ReportOpenFailure(rows.status());
  if (args.json) {
    json out = json::array();
    for (const InboxRow& r : *rows) out.push_back(RowJson(r));
    std::cout << Dump(out, 2) << "\n";
    return kExitOk;
  }
  // The table is for a terminal: every field escaped (ops/terminal.h); --json is exact.
  std::printf("%-24s  %-12s  %-40s  %-24s  %-9s  %s\n", "RECEIVED", "ENDPOINT", "EVENT ID",
              "TYPE", "STATUS", "DUPS");
  for (const InboxRow& r : *rows) {
    std::printf("%-24s  %-12s  %-40s  %-24s  %-9s  %lld\n", TerminalSafe(r.received_at).c_str(),
                TerminalSafe(r.endpoint).c_str(), TerminalSafe(r.event_id).c_str(),
                TerminalSafe(r.event_type).c_str(), TerminalSafe(r.status).c_str(),
                static_cast<long long>(r.duplicates));
  }
  return kExitOk;
}

enum class ShowAs { kText, kJson, kRawBody };

int InboxShow(const std::string& path, const std::string& endpoint, const std::string& id,
              ShowAs as) {
  std::optional<Config> config = LoadOrReport(path);
  if (!config) return kExitUsage;
  if (!KnownEndpoint(*config, endpoint)) return kExitUsage;
  auto inbox = Open(*config, /*create=*/false);
  if (!inbox.ok()) return ReportOpenFailure(inbox.status());
  auto detail = (*inbox)->Show(endpoint, id);
  if (!detail.ok()) {
    std::cerr << "hookbox: " << TerminalSafe(detail.status().ToString()) << "\n";
    return detail.status().code() == Status::Code::kNotFound ? kExitUsage : kExitDatabase;
  }
  if (as == ShowAs::kRawBody) {  // the exact bytes and nothing else, for a pipe
    const std::string& body = detail->row.body;
    return std::fwrite(body.data(), 1, body.size(), stdout) == body.size() &&
                   std::fflush(stdout) == 0
               ? kExitOk
               : kExitUsage;
  }
  json out = RowJson(detail->row);
  out["body"] = detail->row.body;
  out["jobs"] = json::array();
  for (const JobRow& j : detail->jobs) {
    json attempts = json::array();
    for (const AttemptRow& a : j.attempt_rows) {
      attempts.push_back({{"number", a.number}, {"started_at", a.started_at},
                          {"finished_at", a.finished_at}, {"outcome", a.outcome},
                          {"detail", a.detail}});
    }
    out["jobs"].push_back({{"id", j.id}, {"handler", j.handler}, {"status", j.status},
                           {"next_attempt_at", j.next_attempt_at},
                           {"lease_owner", j.lease_owner}, {"lease_until", j.lease_until},
                           {"last_error", j.last_error}, {"attempts", attempts}});
  }
  if (as == ShowAs::kJson) {
    std::cout << Dump(out, 2) << "\n";
    return kExitOk;
  }
  // The text is for a terminal: every field escaped (ops/terminal.h), the body keeping its
  // newlines and tabs; --json and --raw-body are exact.
  json row = out;
  row.erase("body");
  row.erase("jobs");
  row.erase("headers");
  for (auto& [k, v] : row.items()) {
    std::printf("%-18s %s\n", k.c_str(),
                TerminalSafe(v.is_string() ? v.get<std::string>() : Dump(v)).c_str());
  }
  // JSON text on one line: its backslashes are its own escapes, not doubled.
  std::printf("%-18s %s\n", "headers", TerminalSafeText(Dump(out["headers"])).c_str());
  std::printf("%-18s %zu bytes\n", "body", detail->row.body.size());
  for (const JobRow& j : detail->jobs) {
    std::printf("job %-14s %s (%zu attempts)\n", TerminalSafe(j.handler).c_str(),
                TerminalSafe(j.status).c_str(), j.attempt_rows.size());
  }
  std::printf("\n%s\n", TerminalSafeText(detail->row.body).c_str());
  return kExitOk;
}

int InboxClear(const std::string& path, const std::string& endpoint, const std::string& id) {
  std::optional<Config> config = LoadOrReport(path);
  if (!config) return kExitUsage;
  if (!KnownEndpoint(*config, endpoint)) return kExitUsage;
  auto inbox = Open(*config, /*create=*/false);
  if (!inbox.ok()) return ReportOpenFailure(inbox.status());
  Status s = (*inbox)->Clear(endpoint, id);
  if (!s.ok()) {
    std::cerr << "hookbox: " << TerminalSafe(s.ToString()) << "\n";
    return s.code() == Status::Code::kNotFound ? kExitUsage : kExitDatabase;
  }
  std::cout << "cleared " << TerminalSafe(endpoint) << " " << TerminalSafe(id)
            << ": the next delivery of this event will be processed as new\n";
  return kExitOk;
}

int InboxRetry(const std::string& path, const std::string& endpoint, const std::string& id) {
  std::optional<Config> config = LoadOrReport(path);
  if (!config) return kExitUsage;
  if (!KnownEndpoint(*config, endpoint)) return kExitUsage;
  auto inbox = Open(*config, /*create=*/false);
  if (!inbox.ok()) return ReportOpenFailure(inbox.status());
  auto rearmed = (*inbox)->Retry(endpoint, id, std::chrono::system_clock::now());
  if (!rearmed.ok()) {
    std::cerr << "hookbox: " << TerminalSafe(rearmed.status().ToString()) << "\n";
    return rearmed.status().code() == Status::Code::kUnavailable ? kExitDatabase : kExitUsage;
  }
  std::cout << "re-armed " << *rearmed << " dead job(s) of " << TerminalSafe(endpoint) << " "
            << TerminalSafe(id) << "\n";
  return kExitOk;
}

// Signs FILE with the endpoint's first secret exactly as its provider would and POSTs it.
int Send(const std::string& path, const std::string& endpoint_name, const std::string& file,
         std::string url_text) {
  std::optional<Config> config = LoadOrReport(path, /*resolve_secrets=*/true);
  if (!config) return kExitUsage;
  const Endpoint* ep = config->FindByName(endpoint_name);
  if (!ep) {
    (void)KnownEndpoint(*config, endpoint_name);  // prints the error
    return kExitUsage;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "hookbox: cannot read " << file << "\n";
    return kExitUsage;
  }
  std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (url_text.empty()) {
    auto listen = ParseHostPort(config->listen);
    std::string host = listen->host == "0.0.0.0" || listen->host == "::" ? "127.0.0.1"
                                                                          : listen->host;
    url_text = "http://" + host + ":" + std::to_string(listen->port) + ep->path;
  }
  auto url = ParseHttpUrl(url_text);
  if (!url.ok()) {
    std::cerr << "hookbox: --url: " << url.status().ToString() << "\n";
    return kExitUsage;
  }
  // The event id and type headers some providers send: taken from the body when present.
  std::string id = BodyFieldOr(body, "/id"), type = BodyFieldOr(body, "/type");
  if (id.empty()) id = "send-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  if (type.empty()) type = "hookbox.test";
  Headers headers = ep->secrets.empty()
                        ? Headers{}
                        : Sign(*ep, ep->secrets.front(), body, std::chrono::system_clock::now(),
                               id, type);
  headers.erase("Content-Type");
  auto reply = HttpPost(*url, headers, body, "application/json", std::chrono::seconds(30));
  if (!reply.ok()) {
    std::cerr << "hookbox: " << reply.status().ToString() << "\n";
    return kExitUsage;
  }
  std::cout << reply->status << " " << reply->body << "\n";
  return reply->status >= 200 && reply->status < 300 ? kExitOk : kExitUsage;
}

int Stats(const std::string& path, bool as_json) {
  std::optional<Config> config = LoadOrReport(path);
  if (!config) return kExitUsage;
  auto inbox = Open(*config, /*create=*/false);
  if (!inbox.ok()) return ReportOpenFailure(inbox.status());
  auto stats = (*inbox)->Stats();
  if (!stats.ok()) return ReportOpenFailure(stats.status());
  if (as_json) {
    json out = json::object();
    for (const auto& [endpoint, by_status] : *stats) out[endpoint] = by_status;
    std::cout << Dump(out, 2) << "\n";
    return kExitOk;
  }
  std::printf("%-16s %-10s %s\n", "ENDPOINT", "STATUS", "COUNT");
  for (const auto& [endpoint, by_status] : *stats) {
    for (const auto& [status, count] : by_status) {
      std::printf("%-16s %-10s %lld\n", TerminalSafe(endpoint).c_str(),
                  TerminalSafe(status).c_str(), static_cast<long long>(count));
    }
  }
  return kExitOk;
}

// Deletes (or, with --dry-run, counts) what retention no longer keeps, as the daily purge
// does, and prints how many rows of each kind.
int Purge(const std::string& path, bool dry_run, bool as_json) {
  std::optional<Config> config = LoadOrReport(path);
  if (!config) return kExitUsage;
  auto inbox = Open(*config, /*create=*/false);
  if (!inbox.ok()) return ReportOpenFailure(inbox.status());
  const PurgeRequest request =
      PurgeCutoffs(config->retention, std::chrono::system_clock::now(), dry_run);
  auto counts = (*inbox)->Purge(request);
  if (!counts.ok()) return ReportOpenFailure(counts.status());
  const std::tuple<const char*, int64_t, TimePoint> kinds[] = {
      {"processed", counts->processed, request.processed_before},
      {"stale", counts->stale, request.processed_before},
      {"ignored", counts->ignored, request.processed_before},
      {"dead", counts->dead, request.dead_before},
      {"sequences", counts->sequences, request.sequences_before}};
  if (as_json) {
    json out = {{"dry_run", dry_run}};
    for (const auto& [kind, n, before] : kinds) out[kind] = n;
    out["processed_before"] = FormatTime(request.processed_before);
    out["dead_before"] = FormatTime(request.dead_before);
    out["sequences_before"] = FormatTime(request.sequences_before);
    std::cout << Dump(out, 2) << "\n";
    return kExitOk;
  }
  std::printf("%s\n", dry_run ? "would purge (dry run, nothing deleted):" : "purged:");
  for (const auto& [kind, n, before] : kinds) {
    std::printf("  %-10s %8lld  (before %s)\n", kind, static_cast<long long>(n),
                FormatTime(before).c_str());
  }
  return kExitOk;
}

int Main(int argc, char** argv) {
  CLI::App app{"hookbox: verify, store exactly once, and handle webhook deliveries"};
  app.require_subcommand(1);
  std::string config_path = DefaultConfigPath();
  auto add_config = [&](CLI::App* cmd) {
    cmd->add_option("-c,--config", config_path, "config file ($HOOKBOX_CONFIG, else "
                                                "/etc/hookbox/config.yaml)");
  };
  int rc = kExitOk;

  auto* serve = app.add_subcommand("serve", "run the daemon");
  add_config(serve);
  serve->callback([&] { rc = Serve(config_path); });

  bool no_secrets = false;
  auto* check = app.add_subcommand("check-config", "report every problem of the config file");
  add_config(check);
  check->add_flag("--no-secrets", no_secrets,
                  "do not read secrets (a shell without the service's credentials)");
  check->callback([&] { rc = CheckConfig(config_path, !no_secrets); });

  auto* migrate = app.add_subcommand("migrate", "create or update the inbox schema");
  add_config(migrate);
  migrate->callback([&] { rc = Migrate(config_path); });

  auto* inbox = app.add_subcommand("inbox", "look after inbox rows");
  inbox->require_subcommand(1);
  ListArgs list_args;
  auto* list = inbox->add_subcommand("list", "list rows, newest first");
  add_config(list);
  list->add_option("--endpoint", list_args.filter.endpoint, "only this endpoint");
  list->add_option("--status", list_args.filter.status, "only this status")
      ->check(CLI::IsMember({"pending", "processing", "processed", "stale", "dead", "ignored"}));
  list->add_option("--since", list_args.filter.since,
                   "received at or after: RFC 3339 time, date, or age (2h, 7d)");
  list->add_option("--limit", list_args.filter.limit, "at most N rows (default 100)")
      ->check(CLI::Range(1, 1000000));
  list->add_flag("--json", list_args.json, "JSON array for scripts");
  list->callback([&] { rc = InboxList(config_path, list_args); });

  std::string endpoint, event_id;
  bool show_json = false, show_raw_body = false;
  auto* show = inbox->add_subcommand("show", "one row with its jobs and attempts");
  add_config(show);
  show->add_option("ENDPOINT", endpoint)->required();
  show->add_option("EVENT_ID", event_id)->required();
  auto* show_json_flag = show->add_flag("--json", show_json, "JSON object for scripts");
  show->add_flag("--raw-body", show_raw_body,
                 "write the exact body bytes only (for a pipe; the text form escapes controls)")
      ->excludes(show_json_flag);
  show->callback([&] {
    rc = InboxShow(config_path, endpoint, event_id,
                   show_raw_body ? ShowAs::kRawBody : show_json ? ShowAs::kJson : ShowAs::kText);
  });

  auto* clear = inbox->add_subcommand("clear", "forget a row: the next delivery runs anew");
  add_config(clear);
  clear->add_option("ENDPOINT", endpoint)->required();
  clear->add_option("EVENT_ID", event_id)->required();
  clear->callback([&] { rc = InboxClear(config_path, endpoint, event_id); });

  auto* retry = inbox->add_subcommand("retry", "re-arm the dead jobs of a row");
  add_config(retry);
  retry->add_option("ENDPOINT", endpoint)->required();
  retry->add_option("EVENT_ID", event_id)->required();
  retry->callback([&] { rc = InboxRetry(config_path, endpoint, event_id); });

  std::string send_file, send_url;
  auto* send = app.add_subcommand("send", "sign FILE as the endpoint's provider would and POST it");
  add_config(send);
  send->add_option("ENDPOINT", endpoint)->required();
  send->add_option("FILE", send_file)->required();
  send->add_option("--url", send_url, "where to POST (default: this config's listen + path)");
  send->callback([&] { rc = Send(config_path, endpoint, send_file, send_url); });

  bool stats_json = false;
  auto* stats = app.add_subcommand("stats", "counts by endpoint and status");
  add_config(stats);
  stats->add_flag("--json", stats_json, "JSON object for scripts");
  stats->callback([&] { rc = Stats(config_path, stats_json); });

  bool purge_dry_run = false, purge_json = false;
  auto* purge = app.add_subcommand("purge", "delete what retention no longer keeps, now");
  add_config(purge);
  purge->add_flag("--dry-run", purge_dry_run, "count what would go, delete nothing");
  purge->add_flag("--json", purge_json, "JSON object for scripts");
  purge->callback([&] { rc = Purge(config_path, purge_dry_run, purge_json); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  return rc;
}

}  // namespace
}  // namespace hookbox

int main(int argc, char** argv) { return hookbox::Main(argc, argv); }
