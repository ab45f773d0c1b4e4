// `hookbox serve`: the daemon. Serve() reads as the list of steps it takes — process, config,
// descriptors, open and migrate, handlers, heartbeat, dispatcher, receiver, purge, listeners,
// READY, then wait for signals — and Daemon holds the running parts. Here too: what /readyz
// asks (Liveness; the admin port's routes are admin/routes.h), the queue gauges, SIGHUP's
// reload, and the fitting of limits.max_connections under the open-file limit.
#include <openssl/rand.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "admin/routes.h"
#include "base/status_macros.h"
#include "cli/cli.h"
#include "config/exposure.h"
#include "console/console.h"
#include "handlers/exec/children.h"
#include "handlers/handler.h"
#include "hookbox_version.h"
#include "http/client.h"
#include "http/server.h"
#include "inbox/inbox.h"
#include "ops/clock.h"
#include "ops/daemon_metrics.h"
#include "ops/fdlimit.h"
#include "ops/log.h"
#include "ops/process.h"
#include "ops/spans.h"
#include "ops/storage_health.h"
#include "ops/systemd.h"
#include "receive/receiver.h"
#include "work/alert_watch.h"
#include "work/dispatcher.h"
#include "work/held.h"
#include "work/liveness.h"
#include "work/purge.h"

namespace hookbox::cli {
namespace {

using nlohmann::json;

// Builds every handler from the settings the load read and checked, and runs the setup of
// those whose work runs in the inbox's transaction (what only the database can refuse);
// nullptr after logging every problem.
std::shared_ptr<const HandlerSet> BuildAndPrepare(const Config& c, Inbox& inbox) {
  std::vector<std::string> errors;
  auto handlers = std::make_shared<HandlerSet>(BuildHandlers(c, &errors));
  for (const auto& [endpoint, by_name] : handlers->by_endpoint) {
    for (const auto& [name, handler] : by_name) {
      const TransactionalWork* work = handler->transactional();
      if (work == nullptr) continue;
      if (Status s = inbox.PrepareWork(*work); !s.ok()) {
        errors.push_back(endpoint + "." + name + ": " + std::string(work->kind()) + ": " +
                         s.ToString());
      }
    }
  }
  if (errors.empty()) return handlers;
  LogError({{"msg", "handlers are not valid"}, {"errors", errors}});
  return nullptr;
}

HttpLimits PublicLimits(const Config& c) {
  HttpLimits l;
  l.max_body = c.limits.max_body;
  l.read_timeout = c.limits.read_timeout;
  l.threads = c.limits.threads;
  l.max_headers = c.limits.max_headers;
  l.max_connections = c.limits.max_connections;
  l.max_connections_per_peer = c.limits.max_connections_per_peer;
  l.max_buffered = c.limits.max_buffered;
  return l;
}

HttpLimits AdminLimits() {
  HttpLimits l;
  l.threads = 2;
  return l;
}

// The inbox answers reads (Ping) and its write path commits: the removal of an instance that
// never exists (ids are hex, never '/') changes nothing, but a stuck group commit makes it
// fail or hang. It writes no row, so a disk whose fsync fails does not fail it: that is
// /readyz's storage health, which the watchdog does not ask (a restart mends no disk).
Status InboxAlive(Inbox& inbox) {
  RETURN_IF_ERROR(inbox.Ping());
  return inbox.RemoveInstance("/hookbox-liveness-probe/", std::chrono::system_clock::now())
      .status();
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

  // /readyz: alive, and no storage operation in a run of failures (ops/storage_health.h).
  // The watchdog asks only Problem(): restarting the daemon mends no disk.
  std::string ReadyProblem() const {
    std::string problem = Problem();
    if (problem.empty()) problem = Storage().Problem();
    return problem;
  }
};

console::ConsoleOptions ConsoleOptionsFor(const Config& c, std::function<void()> wake) {
  console::ConsoleOptions o;
  for (const Endpoint& e : c.endpoints) o.endpoints.push_back(e.name);
  o.wake = std::move(wake);
  for (const Endpoint& e : c.endpoints) {
    if (e.mode == Mode::kSync) continue;
    std::set<std::string> seen;
    for (const Route& r : e.routes) {
      for (const HandlerSpec& h : r.handlers) {
        if (seen.insert(h.name).second) o.handlers.push_back({e.name, h.name, h.rate_text});
      }
    }
  }
  return o;
}

// The console's key for its form tokens (console/guards.h), drawn once at start: a restart
// makes every open form out of date.
StatusOr<std::string> DrawCsrfKey() {
  std::string key(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    return Status::Internal("no random bytes for the console's CSRF key", "RAND_bytes failed");
  }
  return key;
}

// The handlers the config in use names, by endpoint: hookbox_jobs shows each at 0 when it
// has no job. Replaced at start and at each reload (NoteConfig).
struct ConfiguredHandlers {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> list;  // endpoint, handler
};

ConfiguredHandlers& Configured() {
  static ConfiguredHandlers* configured = new ConfiguredHandlers();  // gauges outlive Serve
  return *configured;
}

// What a config, once in use, tells the metrics: its series at 0 (ops/daemon_metrics.h),
// its handlers for hookbox_jobs, and the time it was loaded.
void NoteConfig(const Config& config, const HandlerSet& handlers) {
  KnownSeries known;
  for (const Endpoint& e : config.endpoints) {
    // hookbox.alerts takes no deliveries: its series are its handlers' attempts alone.
    if (e.name != kAlertsEndpoint)
      known.endpoints.emplace_back(e.name, e.provider != Provider::kNone);
  }
  for (const auto& [endpoint, by_name] : handlers.by_endpoint) {
    for (const auto& [name, handler] : by_name) known.handlers.emplace_back(endpoint, name);
  }
  StartSeries(known);
  {
    std::lock_guard lock(Configured().mu);
    Configured().list = known.handlers;
  }
  Metrics().last_reload.store(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
      std::memory_order_relaxed);
}

// hookbox_jobs{endpoint,handler,status}: the live queue (pending, processing, dead) of each
// handler, configured ones at 0 included, plus any other handler the inbox still has jobs
// for (held ones). Done jobs are one total, hookbox_jobs_done: labelling them would join
// every job to its row at each scrape.
std::vector<GaugeSample> JobsByHandler(Inbox& inbox) {
  std::vector<GaugeSample> out;
  auto all = inbox.Handlers(std::chrono::system_clock::now(), /*count_jobs=*/true);
  if (!all.ok()) return out;
  std::map<std::pair<std::string, std::string>, std::array<int64_t, 3>> counts;
  {
    std::lock_guard lock(Configured().mu);
    for (const auto& key : Configured().list) counts[key] = {0, 0, 0};
  }
  for (const HandlerStatus& h : *all) {
    if (h.pending + h.due + h.running + h.dead == 0 &&
        !counts.contains({h.state.endpoint, h.state.handler})) {
      continue;  // a state row (paused, circuit) of a handler with no jobs and no config
    }
    counts[{h.state.endpoint, h.state.handler}] = {h.pending + h.due, h.running, h.dead};
  }
  for (const auto& [key, n] : counts) {
    const char* statuses[] = {"pending", "processing", "dead"};
    for (size_t i = 0; i < 3; ++i) {
      out.push_back({{key.first, key.second, statuses[i]}, static_cast<double>(n[i])});
    }
  }
  return out;
}

// hookbox_jobs, hookbox_jobs_done, hookbox_build_info and hookbox_queue_oldest_age_seconds,
// asked of the inbox at each scrape. Registered once: a process serves once.
void AddQueueGauges(Inbox& inbox) {
  Metrics().registry.AddGauge(
      "hookbox_jobs", "Jobs waiting, running or dead, by endpoint, handler and status.",
      {"endpoint", "handler", "status"}, [&inbox] { return JobsByHandler(inbox); });
  Metrics().registry.AddGauge(
      "hookbox_jobs_done", "Jobs done and still in the inbox (until the purge removes them).", {},
      [&inbox] {
        std::vector<GaugeSample> out;
        auto q = inbox.Queue(true);
        if (!q.ok()) return out;
        auto done = q->jobs_by_status.find("done");
        out.push_back(
            {{}, static_cast<double>(done == q->jobs_by_status.end() ? 0 : done->second)});
        return out;
      });
  Metrics().registry.AddGauge("hookbox_build_info", "The running hookbox's version; always 1.",
                              {"version"}, [] {
                                return std::vector<GaugeSample>{{{kVersion}, 1.0}};
                              });
  Metrics().registry.AddGauge(
      "hookbox_queue_oldest_age_seconds",
      "Age of the oldest event with a pending or processing job; 0 when there is none.", {},
      [&inbox] {
        std::vector<GaugeSample> out;
        auto q = inbox.Queue(false);
        if (!q.ok()) return out;
        double age = 0;
        if (auto micros = ParseRfc3339Micros(q->oldest_unfinished_received_at)) {
          TimePoint oldest{std::chrono::microseconds(*micros)};
          age = std::max(
              0.0,
              std::chrono::duration<double>(std::chrono::system_clock::now() - oldest).count());
        }
        out.push_back({{}, age});
        return out;
      });
}

// hookbox_wal_bytes: the size of the SQLite inbox's `-wal` file at each scrape, which grows
// while checkpoints fail (ops/storage_health.h). Not registered on PostgreSQL, whose WAL is
// the server's.
void AddWalGauge(Inbox& inbox) {
  if (!inbox.WalBytes()) return;
  Metrics().registry.AddGauge(
      "hookbox_wal_bytes",
      "Size of the SQLite inbox's write-ahead log file; it grows while checkpoints fail.", {},
      [&inbox] {
        std::vector<GaugeSample> out;
        if (auto bytes = inbox.WalBytes()) out.push_back({{}, static_cast<double>(*bytes)});
        return out;
      });
}

// hookbox_handler_paused{endpoint,handler}: 1 while a handler is held, by hand (handler
// pause) or by its open circuit; 0 for the other handlers with a state row. Asked of the
// inbox at each scrape, so it shows what every replica honours.
void AddHandlerGauges(Inbox& inbox) {
  Metrics().registry.AddGauge(
      "hookbox_handler_paused",
      "1 while a handler is held by an operator's pause or its open circuit breaker.",
      {"endpoint", "handler"}, [&inbox] {
        std::vector<GaugeSample> out;
        auto all = inbox.Handlers(std::chrono::system_clock::now(), /*count_jobs=*/false);
        if (!all.ok()) return out;
        for (const HandlerStatus& h : *all) {
          const bool held = h.state.paused || h.state.circuit == Circuit::kOpen;
          out.push_back({{h.state.endpoint, h.state.handler}, held ? 1.0 : 0.0});
        }
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
  ASSIGN_OR_RETURN(auto port, hooks.Bind(listen->host, listen->port));
  return listen->host + ":" + std::to_string(port);
}

// Logs a warning (and the daemon still starts) when others can read inline secrets in the
// config file (config/exposure.h).
void WarnIfSecretsExposed(const Config& c) {
  if (auto exposed = CheckInlineSecretsExposure(c)) {
    LogWarn({{"msg", "config file readable by others holds inline secrets"},
             {"file", exposed->path},
             {"mode", exposed->ModeText()},
             {"owner", exposed->owner},
             {"inline_secrets", exposed->places},
             {"fix", kExposureFix}});
  }
}

// `handlers`: the built handlers, whose slots (each kind's concurrency) need descriptors.
DescriptorNeeds NeedsOf(const Config& c, const HandlerSet& handlers) {
  const int slots = c.workers == 0 ? 0 : handlers.total_concurrency;
  return DescriptorNeeds{slots, c.limits.threads, IsPostgresDatabase(c.database)};
}

// Raises the soft open-file limit to the hard one, then lowers limits.max_connections to
// what fits under it beside the descriptors the rest of the daemon needs (ops/fdlimit.h).
// False, after saying why, when not even the minimum fits.
bool FitDescriptors(Config& c, const HandlerSet& handlers) {
  auto limit = RaiseNofileLimit();
  if (!limit.ok()) {
    LogWarn({{"msg", "cannot read the open-file limit"}, {"error", limit.status().ToString()}});
    return true;
  }
  if (limit->soft != limit->before) {
    LogInfo({{"msg", "raised the open-file limit"}, {"from", limit->before}, {"to", limit->soft}});
  }
  auto fit = FitConnections(limit->soft, c.limits.max_connections, NeedsOf(c, handlers));
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

// A running daemon: its parts in the order they are made (and destroyed in reverse). Serve
// makes it once the inbox is open and the handlers are built.
class Daemon {
 public:
  // `csrf_key`: random bytes for the console's form tokens (console/guards.h).
  Daemon(std::string config_path, const std::shared_ptr<const Config>& config,
         const std::shared_ptr<const HandlerSet>& handlers, std::unique_ptr<Inbox> inbox,
         std::string csrf_key)
      : config_path_(std::move(config_path)),
        config_(config),
        started_config_(*config_),
        handlers_(handlers),
        inbox_(std::move(inbox)),
        instance_(*inbox_, clock_, started_config_.heartbeat_timeout),
        dispatcher_(*inbox_, *inbox_, *inbox_, config, handlers, clock_),
        receiver_({config, handlers}, *inbox_, *inbox_, clock_, [this] { dispatcher_.Wake(); }),
        purge_(*inbox_, config, clock_),
        alert_watch_(*inbox_, *inbox_, config, handlers, clock_,
                     [] { return Storage().Problem(); }),
        hooks_(
            PublicLimits(started_config_),
            [this](const Delivery& d) { return receiver_.Receive(d); },
            [this](const Delivery& head) { return receiver_.CheckHead(head); }),
        liveness_{*inbox_, hooks_, draining_},
        guards_(started_config_.admin_hosts,
                started_config_.admin_token ? started_config_.admin_token->value : "",
                std::move(csrf_key)),
        console_(*inbox_, *inbox_,
                 ConsoleOptionsFor(started_config_, [this] { dispatcher_.Wake(); }), guards_),
        admin_routes_(admin::AdminRoutes([this] { return liveness_.ReadyProblem(); }, console_),
                      guards_),
        admin_(AdminLimits(), [this](const Delivery& d) { return admin_routes_.Dispatch(d); }) {}

  // Starts the heartbeat, the dispatcher, the daily purge and the listeners, then tells the
  // log and systemd the daemon is up. False, after logging why, when it cannot listen.
  bool Start(const std::vector<int>& activated);
  // Waits for SIGTERM/SIGINT; SIGHUP reloads endpoints, secrets and handlers.
  void WaitForStop(const sigset_t& signals);
  // Stops taking deliveries, lets running jobs finish within shutdown_grace, closes the
  // inbox. The process's exit status.
  int Drain();

 private:
  bool Listen(const std::vector<int>& activated);
  void AnnounceReady(bool socket_activated);
  void Reload();

  const std::string config_path_;
  const std::shared_ptr<const Config> config_;        // as started: reloads do not change it
  const Config& started_config_;                      // *config_
  const std::shared_ptr<const HandlerSet> handlers_;  // as started, as config_
  std::unique_ptr<Inbox> inbox_;
  SystemClock clock_;
  InstanceLiveness instance_;  // the lease owners' heartbeat (work/liveness.h)
  Dispatcher dispatcher_;
  Receiver receiver_;
  PurgeSchedule purge_;
  AlertWatch alert_watch_;  // the backlog and storage_unavailable alerts (work/alert_watch.h)
  std::atomic<bool> draining_{false};
  HttpServer hooks_;  // webhooks, on `listen` (or systemd's socket)
  const Liveness liveness_;
  console::Guards guards_;          // Host, token, Origin, CSRF: every admin path's
  console::Console console_;        // the inbox in a browser, on `admin_listen`
  admin::RouteTable admin_routes_;  // every path of `admin_listen`: probes, metrics, console
  HttpServer admin_;                // the admin routes, on `admin_listen`
  std::string hooks_address_;
  std::optional<int> admin_port_;
  std::thread hooks_thread_;
  std::thread admin_thread_;
  std::optional<Watchdog> watchdog_;
};

bool Daemon::Start(const std::vector<int>& activated) {
  WarnAboutHeldJobs(*inbox_, *inbox_, started_config_, "start");
  NoteConfig(started_config_, *handlers_);
  // The heartbeat first: it ends the leases of processes whose heartbeat has expired before
  // the first claim, and beats for sync requests' leases too, dispatcher or not.
  instance_.Start();
  dispatcher_.Start(started_config_.workers != 0);
  purge_.Start();
  alert_watch_.Start();
  AddQueueGauges(*inbox_);
  AddHandlerGauges(*inbox_);
  AddWalGauge(*inbox_);
  if (!Listen(activated)) return false;
  hooks_thread_ = std::thread([this] { hooks_.Run(); });
  admin_thread_ = std::thread([this] {
    if (admin_port_) admin_.Run();
  });
  AnnounceReady(!activated.empty());
  return true;
}

bool Daemon::Listen(const std::vector<int>& activated) {
  auto cannot_listen = [](const Status& s) {
    LogError({{"msg", "cannot listen"}, {"error", s.ToString()}});
    return false;
  };
  auto hooks_address = ListenForWebhooks(hooks_, started_config_, activated);
  if (!hooks_address.ok()) return cannot_listen(hooks_address.status());
  hooks_address_ = *hooks_address;
  if (started_config_.admin_listen.empty()) return true;
  auto admin_addr = ParseHostPort(started_config_.admin_listen);
  auto bound = admin_.Bind(admin_addr->host, admin_addr->port);
  if (!bound.ok()) return cannot_listen(bound.status());
  admin_port_ = *bound;
  guards_.SetListener(admin_addr->host, *bound);
  return true;
}

// Logs "listening", tells systemd we are up, and pings its watchdog while deliveries can be
// taken.
void Daemon::AnnounceReady(bool socket_activated) {
  json ready = {{"msg", "listening"},
                {"version", kVersion},
                {"listen", hooks_address_},
                {"database", DatabaseForLogs(started_config_.database)},
                {"endpoints", started_config_.endpoints.size()},
                {"workers", started_config_.workers}};
  if (socket_activated) ready["socket_activated"] = true;
  if (admin_port_) {
    ready["admin"] =
        ParseHostPort(started_config_.admin_listen)->host + ":" + std::to_string(*admin_port_);
  }
  LogLifecycle(ready);
  NotifySystemd("READY=1\nSTATUS=listening on " + hooks_address_);
  if (auto timeout = WatchdogTimeout()) {
    watchdog_.emplace(*timeout, [this] {
      std::string problem = liveness_.Problem();
      if (!problem.empty()) LogWarn({{"msg", "not alive"}, {"problem", problem}});
      return problem.empty();
    });
  }
}

void Daemon::WaitForStop(const sigset_t& signals) {
  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGHUP) {
      LogLifecycle({{"msg", "stopping"}, {"signal", strsignal(sig)}});
      return;
    }
    NotifySystemd("RELOADING=1\n" + MonotonicUsec());
    Reload();
    NotifySystemd("READY=1\nSTATUS=listening on " + hooks_address_);
  }
}

// `tracing:` (ops/spans.h): the exporter follows the config, at the start and each reload.
// A collector gets 5 s a batch; what it does not take with a 2xx is dropped and counted.
void ConfigureSpans(const Config& config) {
  constexpr auto kExportTimeout = std::chrono::seconds(5);
  auto send = [kExportTimeout](const std::string& url, const std::string& body) -> Status {
    ASSIGN_OR_RETURN(HttpUrl parsed, ParseHttpUrl(url));
    ASSIGN_OR_RETURN(HttpReply reply,
                     HttpPost(parsed, {}, body, "application/json", kExportTimeout));
    if (reply.status < 200 || reply.status > 299) {
      return Status::Unavailable("the collector answered " + std::to_string(reply.status), url);
    }
    return Status::Ok();
  };
  Spans().Configure(config.tracing.otlp,
                    {config.tracing.service_name, std::string(kVersion), InstanceId()}, send);
}

// SIGHUP: re-reads the config and swaps endpoints, secrets and handlers everywhere at once;
// an invalid config is logged and the old one stays.
void Daemon::Reload() {
  LoadResult r = LoadConfig(config_path_, /*resolve_secrets=*/true, /*host_checks=*/true);
  if (!r.config) {
    LogError({{"msg", "reload refused: the config has errors; the old one stays"},
              {"errors", r.errors}});
    Metrics().reloads_refused.With({}).Inc();
    return;
  }
  WarnIfSecretsExposed(*r.config);
  auto new_config = std::make_shared<const Config>(std::move(*r.config));
  auto new_handlers = BuildAndPrepare(*new_config, *inbox_);
  if (!new_handlers) {
    LogError({{"msg", "reload refused: the old config stays"}});
    Metrics().reloads_refused.With({}).Inc();
    return;
  }
  SetLogLevel(new_config->log_level);
  ConfigureSpans(*new_config);
  if (new_config->listen != started_config_.listen ||
      new_config->database != started_config_.database ||
      new_config->admin_listen != started_config_.admin_listen) {
    LogWarn({{"msg", "listen, admin_listen and database changes take effect at the next restart"}});
  }
  dispatcher_.Swap(new_config, new_handlers);
  receiver_.Swap({new_config, new_handlers});
  purge_.Swap(new_config);
  alert_watch_.Swap(new_config, new_handlers);
  console_.Swap(ConsoleOptionsFor(*new_config, [this] { dispatcher_.Wake(); }));
  NoteConfig(*new_config, *new_handlers);
  LogLifecycle({{"msg", "reloaded"}, {"endpoints", new_config->endpoints.size()}});
  // A renamed or removed handler's waiting jobs are held, never run by another (held.h).
  WarnAboutHeldJobs(*inbox_, *inbox_, *new_config, "reload");
}

int Daemon::Drain() {
  // Tell systemd, stop accepting and finish in-flight requests.
  if (watchdog_) watchdog_->Stop();
  NotifySystemd("STOPPING=1");
  draining_ = true;
  hooks_.Stop();
  admin_.Stop();
  hooks_thread_.join();
  admin_thread_.join();
  purge_.Stop();
  alert_watch_.Stop();
  if (!dispatcher_.Stop(started_config_.shutdown_grace)) {
    // Everything committed is on disk; the unfinished attempts' leases end when this
    // instance's heartbeat expires (it is not removed: attempts ran until the exit), and
    // their jobs run again then, here after a restart or on another replica.
    LogWarn({{"msg", "stopped with attempts still running; they will be retried"},
             {"shutdown_grace", FormatDuration(started_config_.shutdown_grace)}});
    // Nothing an exec attempt started outlives the daemon.
    KillWatchedChildren();
    std::_Exit(kExitOk);
  }
  // The last spans go to the collector (each batch once), then the exporter stops.
  Spans().Stop();
  // Nothing of this process holds a lease any more: its instance goes, and any lease still
  // under its name ends at once.
  instance_.Stop();
  inbox_.reset();
  LogLifecycle({{"msg", "stopped"}});
  return kExitOk;
}

}  // namespace

int Serve(const std::string& config_path) {
  sigset_t signals = BlockServeSignals();
  // Non-dumpable before a secret is read; a subreaper before a handler starts
  // (ops/process.h).
  if (Status s = ProtectDaemonProcess(); !s.ok()) {
    LogError({{"msg", "cannot protect the process"}, {"error", s.ToString()}});
    return kExitUsage;
  }
  // Take the sockets systemd may have passed before anything could inherit them.
  const std::vector<int> activated = TakeListenFds();
  // Load and check the config (every problem is reported before stopping); open the inbox
  // and bring its schema up to date.
  std::vector<std::string> applied;
  Opened opened = LoadAndOpen(config_path, {.resolve_secrets = true,
                                            .host_checks = true,
                                            .create = true,
                                            .check =
                                                [](Config& c) {
                                                  WarnIfSecretsExposed(c);
                                                  return true;
                                                },
                                            .applied = &applied});
  if (!opened.inbox) return opened.exit_code;
  for (const std::string& m : applied) LogLifecycle({{"msg", "migrated"}, {"migration", m}});
  // Build the handlers (once); run their setup in the inbox. Then raise the open-file limit
  // and fit max_connections under it, beside what the handlers' slots need.
  Config& loaded = *opened.config;
  SetLogLevel(loaded.log_level);
  ConfigureSpans(loaded);
  auto handlers = BuildAndPrepare(loaded, *opened.inbox);
  if (!handlers) return kExitUsage;
  if (!FitDescriptors(loaded, *handlers)) return kExitUsage;
  auto config = std::make_shared<const Config>(std::move(loaded));
  // Start the heartbeat and the dispatcher, then the receive pipeline that feeds it, the daily
  // purge, and the listeners: webhooks on `listen` (or systemd's socket); health and metrics on
  // `admin_listen`, with the console's form key drawn for it.
  auto csrf_key = DrawCsrfKey();
  if (!csrf_key.ok()) {
    LogError({{"msg", "cannot draw the console's key"}, {"error", csrf_key.status().ToString()}});
    return kExitUsage;
  }
  Daemon daemon(config_path, config, handlers, std::move(opened.inbox), *std::move(csrf_key));
  if (!daemon.Start(activated)) return kExitUsage;
  daemon.WaitForStop(signals);
  // Drain: stop accepting, let running jobs finish within shutdown_grace, close the inbox.
  return daemon.Drain();
}

}  // namespace hookbox::cli
