// The handler interface: what runs for each stored event, once per event however many
// times the producer delivered it. A handler gets the stored event and answers ok, retry
// (failed / timeout) or permanent failure; the worker records the attempt and schedules
// the next one. Handlers know no provider and no HTTP request: only the stored event.
//
// Kinds live in handlers/<kind>/ (exec, http, file, sql), each with a reader and a factory
// (handlers/registry.cc). The reader validates the settings once, at load, with the loader's
// config/yaml_reader.h (a table of its keys; every mistake at its line and column, with the
// rest of the file's), into the kind's plain values (a KindSettings); the factory builds the
// handler from those, so nothing is re-parsed per event. This header names neither YAML nor
// the reader's types. The kinds are listed once, in config/handler_kinds.h: a kind is its
// folder plus a row there.
//
// The event a handler gets (HandlerEvent) and its Outcome are in base/job.h, which the inbox
// shares. A kind whose side effect must commit with the job's own record (sql) offers a
// TransactionalWork (base/transactional_work.h), which the inbox runs in its transaction.
//
// Thread-safety: Run() is called from several worker threads at once, for different events;
// a handler holds no per-event state.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/job.h"
#include "base/status.h"
#include "base/transactional_work.h"
#include "config/config.h"

namespace hookbox {

struct HandlerResult {
  Outcome outcome = Outcome::kOk;
  // For the attempts row: exit code, HTTP status, tail of output. Never secrets.
  std::string detail;
  // A delay the downstream asked for (HTTP Retry-After); the worker waits at least this.
  std::optional<std::chrono::milliseconds> retry_after;
  // With a failure: the handler could not even be started because the daemon itself ran
  // out of something (file descriptors or processes: EMFILE, ENFILE, EAGAIN), which says
  // nothing about the handler or the event. The worker retries it after a short backoff
  // without spending the job's attempt budget (work/backoff.h) and counts it in
  // hookbox_handler_infra_failures_total.
  bool infrastructure = false;
};

class Handler {
 public:
  virtual ~Handler() = default;
  // Runs the side effect outside the inbox. Must return within the kind's own timeout.
  virtual HandlerResult Run(const HandlerEvent& event) = 0;
  // How long one Run() may take at most (the kind's `timeout`). The worker's lease on the
  // job outlasts it, so no other worker starts the job while an attempt may still run.
  virtual std::chrono::milliseconds timeout() const = 0;
  // Non-null for a kind whose work runs inside the inbox's transaction instead of Run()
  // (base/transactional_work.h). It lives as long as the handler.
  virtual const TransactionalWork* transactional() const { return nullptr; }

  // How many attempts of this handler the dispatcher runs at once (the kind's
  // `concurrency`). Per handler, not per daemon: a handler that waits on a slow downstream
  // holds its own slots only.
  virtual int concurrency() const { return kDefaultConcurrency; }
  // Event-driven kinds (exec) start an attempt and return at once, without a thread that
  // waits for it: `done` is called exactly once, on another thread, with the result. `event`
  // need not outlive the call. False when the kind has no such path: the dispatcher then
  // calls Run() on a thread of its own.
  using Done = std::function<void(HandlerResult)>;
  // `done` by value, unused here: the overrides keep it (hence the NOLINT).
  virtual bool Start(const HandlerEvent& /*event*/, Done /*done*/) {  // NOLINT
    return false;
  }

  static constexpr int kDefaultConcurrency = 4;
  static constexpr int kMaxConcurrency = 1024;
};

class YamlReader;
struct YamlField;
// The `concurrency` key every kind but sql has: a whole number in
// 1..Handler::kMaxConcurrency, read into *concurrency, for a kind's table of keys.
YamlField ConcurrencyField(YamlReader& reader, int* concurrency);

// Builds the handler of a kind from what its reader read at load (HandlerSpec::settings, of
// that kind). A problem only construction meets is appended to *errors as "where: what";
// nullptr when there was one. Settings read without LoadOptions::host_checks or
// resolve_secrets (the operator's verbs) build handlers to look at, never to run.
using HandlerFactory = std::unique_ptr<Handler> (*)(const KindSettings& settings,
                                                    const std::string& where,
                                                    std::vector<std::string>* errors);

// A kind's factory's first step: the settings its reader made (`Spec`, the kind's
// KindSettings), or nullptr after appending "where: the settings are not <whose>" to *errors
// when they are another kind's. `whose` names the kind's handler, e.g. "an exec handler's".
template <typename Spec>
const Spec* KindSpec(const KindSettings& settings, const std::string& where, const char* whose,
                     std::vector<std::string>* errors) {
  const auto* spec = dynamic_cast<const Spec*>(&settings);
  if (spec == nullptr) errors->push_back(where + ": the settings are not " + whose);
  return spec;
}

// Every handler of a config, built once at load: endpoint name -> handler name -> handler.
struct HandlerSet {
  std::map<std::string, std::map<std::string, std::shared_ptr<Handler>>> by_endpoint;
  std::chrono::milliseconds longest_timeout{0};
  int total_concurrency = 0;  // the sum of every handler's concurrency()
  Handler* Find(const std::string& endpoint, const std::string& handler) const;
};

// Builds every endpoint's handlers with their kinds' factories from the settings the load
// read (a config loaded with KindReaders()); each problem goes to *errors as
// "endpoints[i].routes[j].handlers[k].<kind>: what". The settings were checked at load:
// what is left is what construction alone can meet (none of today's kinds has any), and a
// spec whose settings were never read.
HandlerSet BuildHandlers(const Config& config, std::vector<std::string>* errors);

// The kinds' readers, for LoadOptions::kinds: every load of a config whose handlers are to
// be built (or whose kinds' mistakes are to be reported) passes them.
const HandlerKindReaders& KindReaders();

// The kinds, from the one explicit table in registry.cc (built from config/handler_kinds.h).
// nullptr for an unknown kind.
HandlerFactory FindHandlerKind(const std::string& kind);
std::vector<std::string> HandlerKinds();

// One handler of `kind` from its settings as written, read (YamlReader::Plain: the load's
// words, no position) under `where` and built: what a load and BuildHandlers do for each
// handler, alone (the handler tests). nullptr after recording every problem in *errors.
std::unique_ptr<Handler> ReadAndBuildHandler(const std::string& kind, const YamlTree& settings,
                                             const std::string& where, const LoadOptions& options,
                                             std::vector<std::string>* errors);

}  // namespace hookbox
