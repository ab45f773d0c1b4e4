// The hookbox command line, shared by its verbs: the exit codes and the one mapping from a
// Status to them, the one way a verb loads its config and opens the inbox (or says why it
// cannot), the one reading of a handler name (handler_name.cc), and the verbs themselves, one
// file per family (serve.cc; inbox.cc; reassign.cc; send.cc; stats_purge.cc; check_config.cc
// for check-config and migrate; alert_sample.cc for alerts test). src/main.cc is the table that
// maps the command line onto them.
//
// Exit status: 0 success; 1 usage, config or lookup error (unknown endpoint or id, a row
// with no dead job); 2 the database cannot be opened or fails; 3 the row is busy (`inbox
// clear` of an event whose job is running: nothing changed, try again once it has ended).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "config/config.h"
#include "inbox/inbox.h"

namespace hookbox::cli {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 1;
constexpr int kExitDatabase = 2;
constexpr int kExitBusy = 3;
// A filter (inbox/filter.h) that cannot be evaluated: 2, the usual usage status of Unix
// tools, although hookbox's other usage errors are 1.
constexpr int kExitBadFilter = 2;

// 0 for ok; 1 when the operator named something that is not there or not in a state for
// the verb (NotFound, InvalidArgument); 3 when it is busy for now (Conflict: a running
// job); 2 for everything else, which is the database's.
int ExitCodeFor(const Status& s);

// Prints "hookbox: <s>" on stderr and returns ExitCodeFor(s).
int ReportFailure(const Status& s);

// JSON text for the operator; bytes that are not UTF-8 are replaced, never thrown on.
std::string Dump(const nlohmann::json& j, int indent = -1);

// One config message as a compiler writes it: "FILE:LINE:COLUMN: error: what" when the
// loader placed it in the file (its messages start with that position), "FILE: error: what"
// otherwise. `severity` is "error" or "warning".
std::string Diagnostic(const std::string& path, std::string_view severity,
                       std::string_view message);

// The config at `path` as every verb loads it: the handler kinds' settings read in the same
// pass as the rest (handlers/registry.cc, KindReaders). `host_checks` (check-config, serve):
// what those settings name on this host is checked, and file's folders are created
// (LoadOptions::host_checks).
LoadResult LoadConfig(const std::string& path, bool resolve_secrets, bool host_checks);

// Loads the config, printing every problem; nullopt when it has errors. Only `serve`,
// `check-config` and `send` read secrets: the operator's verbs work from a shell without them.
std::optional<Config> LoadOrReport(const std::string& path, bool resolve_secrets = false,
                                   bool host_checks = false);

// Checks an operator-named endpoint against the config: a typo is an error, not an empty
// list. True for "" (no endpoint named).
bool KnownEndpoint(const Config& c, const std::string& name);

// What a verb needs of LoadAndOpen.
struct OpenRequest {
  bool resolve_secrets = false;
  bool host_checks = false;  // serve: see LoadConfig
  // Create the database file or tables if missing, and migrate them (serve, migrate). The
  // operator's verbs only read at open: they never create, migrate or take the write lock,
  // so a wrong `database`, a schema they cannot find or one behind the binary is exit 2.
  bool create = false;
  // An endpoint the operator named, which must be in the config ("" = none named).
  std::string endpoint = {};
  // Runs once the config has loaded, before the inbox opens: the verb's own checks (and
  // serve's fitting of its limits). False, having said why, is exit 1.
  std::function<bool(Config&)> check = {};
  std::vector<std::string>* applied = nullptr;  // with `create`: the migrations applied
};

struct Opened {
  std::optional<Config> config;
  std::unique_ptr<Inbox> inbox;  // null when it could not be opened
  int exit_code = kExitOk;       // why not, when inbox is null
};

// Loads the config, checks the request against it and opens the inbox; every problem is
// reported on stderr, in that order, and the first one ends it.
Opened LoadAndOpen(const std::string& path, const OpenRequest& request);

// ---- the verbs: each returns the process's exit status

int Serve(const std::string& config_path);                            // serve.cc
int CheckConfig(const std::string& path, bool read_secrets);          // check_config.cc
int Migrate(const std::string& path);                                 // check_config.cc
int Backup(const std::string& config_path, const std::string& file);  // backup.cc
// `alerts test NAME`: one sample alert to the alert's target, now (alert_sample.cc). 0 when the
// target took it; 1 when it did not, or for a config problem or a name no alert has.
int AlertsTest(const std::string& path, const std::string& name);

// `inbox list`: the filter's options as given (ParseFilter checks them), the page size.
// The filter's options as given (README, "Finding events"): ParseFilter checks them, so a bad
// part is named the same way by every verb and by the console.
struct FilterArgs {
  std::string endpoint, status, type, handler, since, until;
  std::vector<std::string> where;
};
// The filter parsed; a bad part is reported on stderr (the caller exits kExitBadFilter).
std::optional<EventFilter> FilterOrReport(const FilterArgs& args);

// handler_name.cc: the handler an operator names, the one reading for every verb. `name` is
// ENDPOINT/HANDLER, or a bare HANDLER that one endpoint alone has; `endpoint` is the verb's
// --endpoint ("" for none), which a bare name is looked up in and an ENDPOINT/ must equal.
// The config's handlers first; with `inbox`, a name the config does not settle is looked up
// among those the inbox has jobs or state of (Inbox::KnownHandlers). NotFound naming the
// closest names for a name that matches none, InvalidArgument for a malformed or ambiguous
// one (listing its ENDPOINT/HANDLER forms): exit 1. Names in the messages are escaped.
StatusOr<HandlerRef> ResolveHandler(const Config& config, Inbox* inbox, const std::string& name,
                                    const std::string& endpoint);
// A filter's --handler resolved in place: its endpoint and bare name set from the answer.
// False, having reported why and set *exit_code, when it names no one handler.
bool ResolveFilterHandler(const Config& config, Inbox& inbox, EventFilter& filter, int* exit_code);

struct ListArgs {
  FilterArgs filter;
  int limit = 100;
  bool json = false;
};
enum class ShowAs { kText, kJson, kRawBody };
int InboxList(const std::string& path, const ListArgs& args);  // inbox.cc
int InboxShow(const std::string& path, const std::string& endpoint, const std::string& id,
              ShowAs as);
int InboxClear(const std::string& path, const std::string& endpoint, const std::string& id);
int InboxRetry(const std::string& path, const std::string& endpoint, const std::string& id);
// bulk.cc: `inbox retry --dead [FILTER]` and `inbox replay [FILTER] --handler NAME`. The
// filter's options as given (ParseFilter checks them), then the verb's own.
struct BulkArgs {
  FilterArgs filter;
  std::string rate;  // "N/s" or "N/min"; "" = every job due at once
  bool dry_run = false, yes = false, json = false;
};
int InboxBulk(const std::string& path, BulkVerb verb, const BulkArgs& args);
// reassign.cc: the jobs of a handler the config no longer has.
int InboxReassign(const std::string& path, const std::string& endpoint, const std::string& from,
                  const std::string& to);
int InboxDrop(const std::string& path, const std::string& endpoint, const std::string& handler);

// handler.cc: the handlers' state. `target` "ENDPOINT/HANDLER", or `endpoint`
// for all of an endpoint's handlers; `pause` false resumes.
int HandlerList(const std::string& path, bool as_json);
int HandlerPause(const std::string& path, const std::string& target, const std::string& endpoint,
                 const std::string& reason, bool pause);
// `handler forget ENDPOINT/HANDLER`: the state row of a handler the config no longer has.
int HandlerForget(const std::string& path, const std::string& target);

struct SendArgs {
  std::string endpoint, file;
  std::string url;        // "" = this config's listen address and the endpoint's path
  std::string id, type;   // "" = from FILE's /id and /type, else invented
  bool insecure = false;  // allow plain http:// to a host that is not loopback
};
int Send(const std::string& path, const SendArgs& args);  // send.cc

int Stats(const std::string& path, bool as_json);                // stats_purge.cc
int Purge(const std::string& path, bool dry_run, bool as_json);  // stats_purge.cc

}  // namespace hookbox::cli
