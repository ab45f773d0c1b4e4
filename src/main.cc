// The hookbox command line: the table of verbs, each with its options, mapped onto the
// functions of src/cli/ (one file per verb family; cli/cli.h lists them). `serve` is the
// daemon; the others are the operator's tools over the same inbox, safe to run while the
// daemon runs (SQLite WAL, BEGIN IMMEDIATE + a busy handler that retries for up to 5 s).
//
// Exit status: 0 success; 1 usage, config or lookup error (unknown endpoint or id);
// 2 the database cannot be opened, or an inbox filter that cannot be evaluated
// (cli/cli.h: ExitCodeFor, kExitBadFilter).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <string>

#include "cli/cli.h"
#include "hookbox_version.h"
#include "ops/log.h"

namespace hookbox::cli {
namespace {

std::string DefaultConfigPath() {
  const char* env = std::getenv("HOOKBOX_CONFIG");
  return env && *env ? env : "/etc/hookbox/config.yaml";
}

// Every option of every verb, and the exit status the verb that ran returned.
struct Args {
  std::string config_path = DefaultConfigPath();
  bool no_secrets = false;
  ListArgs list;
  std::string endpoint, event_id;
  std::string handler, to_handler;  // inbox reassign / drop
  BulkArgs bulk;                    // inbox retry --dead, inbox replay
  bool bulk_dead = false;
  bool bulk_waiting = false;
  bool show_json = false, show_raw_body = false;
  SendArgs send;
  bool stats_json = false;
  bool purge_dry_run = false, purge_json = false;
  std::string handler_target, pause_reason;  // handler pause / resume
  std::string alert_name;                    // alerts test
  bool handlers_json = false;
  std::string backup_file;
  int rc = kExitOk;
};

// A verb: its -c/--config option, and `run` as what it does.
CLI::App* Verb(CLI::App* parent, const char* name, const char* about, Args& a,
               std::function<int()> run) {
  CLI::App* cmd = parent->add_subcommand(name, about);
  cmd->add_option("-c,--config", a.config_path,
                  "config file ($HOOKBOX_CONFIG, else /etc/hookbox/config.yaml)");
  cmd->callback([&a, run = std::move(run)] { a.rc = run(); });
  return cmd;
}

// ENDPOINT EVENT_ID, the row an inbox verb is about.
void AddRowArgs(CLI::App* cmd, Args& a) {
  cmd->add_option("ENDPOINT", a.endpoint)->required();
  cmd->add_option("EVENT_ID", a.event_id)->required();
}

// The filter's options (README, "Finding events"): checked by ParseFilter, not here, so that
// a bad part is named the same way by every verb and by the console.
void AddFilterOptions(CLI::App* cmd, FilterArgs& f, const char* handler_help) {
  cmd->add_option("--endpoint", f.endpoint, "only this endpoint");
  cmd->add_option("--status", f.status,
                  "only this row status: pending processing processed stale dead ignored");
  cmd->add_option("--type", f.type, "event type, a glob: * any run, ? one character");
  cmd->add_option("--handler", f.handler, handler_help);
  cmd->add_option("--since", f.since,
                  "received at or after: RFC 3339 time, date, or age (90m, 2h, 7d)");
  cmd->add_option("--until", f.until, "received before: as --since");
  cmd->add_option("--where", f.where,
                  "POINTER=VALUE (a JSON body field, /data/object/customer=cus_123) or "
                  "form:NAME=VALUE; repeatable, all must match")
      ->take_all()
      ->expected(1);
}

// The bulk verbs' options: the filter, then their own.
void AddBulkOptions(CLI::App* cmd, Args& a) {
  AddFilterOptions(cmd, a.bulk.filter,
                   "only this handler's jobs (replay: the handler to run again)");
  cmd->add_option("--rate", a.bulk.rate,
                  "spread the re-armed jobs' due times: N/s or N/min (default: all due now)");
  cmd->add_flag("--dry-run", a.bulk.dry_run, "print the plan, change nothing");
  cmd->add_flag("--yes", a.bulk.yes, "act on more than one row");
  cmd->add_flag("--json", a.bulk.json, "the plan and result as JSON");
}

// `inbox retry ENDPOINT EVENT_ID` (one row), or `inbox retry --dead|--waiting [FILTER]`
// (bulk).
int RetryVerb(const Args& a) {
  const BulkArgs& b = a.bulk;
  const FilterArgs& f = b.filter;
  const bool bulk_options = !f.endpoint.empty() || !f.status.empty() || !f.type.empty() ||
                            !f.handler.empty() || !f.since.empty() || !f.until.empty() ||
                            !f.where.empty() || !b.rate.empty() || b.dry_run || b.yes || b.json;
  if (a.bulk_dead || a.bulk_waiting) {
    const char* flag = a.bulk_dead ? "--dead" : "--waiting";
    if (!a.endpoint.empty()) {
      std::cerr << "hookbox: inbox retry " << flag
                << " takes a filter (--endpoint ...), not ENDPOINT EVENT_ID\n";
      return kExitUsage;
    }
    return InboxBulk(a.config_path, a.bulk_dead ? BulkVerb::kRetryDead : BulkVerb::kRetryWaiting,
                     b);
  }
  if (a.event_id.empty() || bulk_options) {
    std::cerr << "hookbox: inbox retry takes ENDPOINT EVENT_ID (one row), or --dead or "
                 "--waiting with a filter (every matching row)\n";
    return kExitUsage;
  }
  return InboxRetry(a.config_path, a.endpoint, a.event_id);
}

void AddDaemonVerbs(CLI::App& app, Args& a) {
  Verb(&app, "serve", "run the daemon", a, [&a] { return Serve(a.config_path); });
  Verb(&app, "check-config", "report every problem of the config file", a,
       [&a] { return CheckConfig(a.config_path, !a.no_secrets); })
      ->add_flag("--no-secrets", a.no_secrets,
                 "do not read secrets (a shell without the service's credentials)");
  Verb(&app, "migrate", "create or update the inbox schema", a,
       [&a] { return Migrate(a.config_path); });
}

void AddInboxVerbs(CLI::App& app, Args& a) {
  CLI::App* inbox = app.add_subcommand("inbox", "look after inbox rows");
  inbox->require_subcommand(1);
  CLI::App* list = Verb(inbox, "list", "list rows, newest first", a,
                        [&a] { return InboxList(a.config_path, a.list); });
  AddFilterOptions(list, a.list.filter, "only rows with a job of this handler");
  list->add_option("--limit", a.list.limit, "at most N rows (default 100)")
      ->check(CLI::Range(1, 1000000));
  list->add_flag("--json", a.list.json, "JSON array for scripts");

  CLI::App* show = Verb(inbox, "show", "one row with its jobs and attempts", a, [&a] {
    return InboxShow(a.config_path, a.endpoint, a.event_id,
                     a.show_raw_body ? ShowAs::kRawBody
                     : a.show_json   ? ShowAs::kJson
                                     : ShowAs::kText);
  });
  AddRowArgs(show, a);
  auto* show_json_flag = show->add_flag("--json", a.show_json, "JSON object for scripts");
  show->add_flag("--raw-body", a.show_raw_body,
                 "write the exact body bytes only (for a pipe; the text form escapes controls)")
      ->excludes(show_json_flag);

  AddRowArgs(Verb(inbox, "clear", "forget a row: the next delivery runs anew", a,
                  [&a] { return InboxClear(a.config_path, a.endpoint, a.event_id); }),
             a);
  CLI::App* retry = Verb(inbox, "retry",
                         "re-arm the dead jobs of a row, or with --dead of every row a filter "
                         "matches; --waiting: run jobs waiting in backoff now",
                         a, [&a] { return RetryVerb(a); });
  retry->add_option("ENDPOINT", a.endpoint);
  retry->add_option("EVENT_ID", a.event_id);
  auto* dead_flag = retry->add_flag(
      "--dead", a.bulk_dead, "bulk: the dead jobs of every row the filter matches (plan first)");
  retry
      ->add_flag("--waiting", a.bulk_waiting,
                 "bulk: make the jobs waiting in backoff of every row the filter matches due now "
                 "(plan first)")
      ->excludes(dead_flag);
  AddBulkOptions(retry, a);

  CLI::App* replay =
      Verb(inbox, "replay", "run a handler again for the rows a filter matches (plan first)", a,
           [&a] { return InboxBulk(a.config_path, BulkVerb::kReplay, a.bulk); });
  AddBulkOptions(replay, a);

  CLI::App* reassign =
      Verb(inbox, "reassign", "give the jobs of a handler the config no longer has to another", a,
           [&a] { return InboxReassign(a.config_path, a.endpoint, a.handler, a.to_handler); });
  reassign->add_option("ENDPOINT", a.endpoint)->required();
  reassign->add_option("FROM", a.handler, "the old handler name (inbox show, stats)")->required();
  reassign->add_option("TO", a.to_handler, "a handler of this endpoint in the config")->required();
  CLI::App* drop =
      Verb(inbox, "drop", "delete the waiting jobs of a handler the config no longer has", a,
           [&a] { return InboxDrop(a.config_path, a.endpoint, a.handler); });
  drop->add_option("ENDPOINT", a.endpoint)->required();
  drop->add_option("HANDLER", a.handler, "the old handler name (inbox show, stats)")->required();
}

void AddHandlerVerbs(CLI::App& app, Args& a) {
  CLI::App* handler =
      app.add_subcommand("handler", "the handlers' state: list, pause, resume, forget");
  handler->require_subcommand(1);
  Verb(handler, "list", "each handler: running, paused or circuit-open, its jobs, rate", a, [&a] {
    return HandlerList(a.config_path, a.handlers_json);
  })->add_flag("--json", a.handlers_json, "JSON array for scripts");
  CLI::App* pause =
      Verb(handler, "pause", "hold a handler's jobs (no try spent) until resumed", a, [&a] {
        return HandlerPause(a.config_path, a.handler_target, a.endpoint, a.pause_reason, true);
      });
  pause->add_option("ENDPOINT/HANDLER", a.handler_target, "as handler list shows it");
  pause->add_option("--endpoint", a.endpoint, "every handler of this endpoint");
  pause->add_option("--reason", a.pause_reason, "shown by handler list and the console");
  CLI::App* resume = Verb(handler, "resume", "let a paused handler's jobs run again", a, [&a] {
    return HandlerPause(a.config_path, a.handler_target, a.endpoint, "", false);
  });
  resume->add_option("ENDPOINT/HANDLER", a.handler_target,
                     "as handler list shows it (one the config no longer has: forget it)");
  resume->add_option("--endpoint", a.endpoint, "every handler of this endpoint");
  Verb(handler, "forget", "clear the state (pause, circuit) of a handler the config no longer has",
       a, [&a] { return HandlerForget(a.config_path, a.handler_target); })
      ->add_option("ENDPOINT/HANDLER", a.handler_target, "as handler list shows it")
      ->required();
}

void AddAlertVerbs(CLI::App& app, Args& a) {
  CLI::App* alerts = app.add_subcommand("alerts", "the failure alerts of `alerts:`");
  alerts->require_subcommand(1);
  Verb(alerts, "test", "send the alert's target a sample alert now, and say what it answered", a,
       [&a] { return AlertsTest(a.config_path, a.alert_name); })
      ->add_option("NAME", a.alert_name, "the alert's name")
      ->required();
}

void AddToolVerbs(CLI::App& app, Args& a) {
  CLI::App* send = Verb(&app, "send", "sign FILE as the endpoint's provider would and POST it", a,
                        [&a] { return Send(a.config_path, a.send); });
  send->add_option("ENDPOINT", a.send.endpoint)->required();
  send->add_option("FILE", a.send.file)->required();
  send->add_option("--url", a.send.url, "where to POST (default: this config's listen + path)");
  send->add_option("--type", a.send.type,
                   "the event type, where the endpoint reads it from a header (github: "
                   "X-GitHub-Event); else it belongs in FILE");
  send->add_option("--id", a.send.id,
                   "the event id, where the endpoint reads it from a header (github: "
                   "X-GitHub-Delivery); else it belongs in FILE");
  send->add_flag("--insecure", a.send.insecure,
                 "send the signature or token over plain http:// to a host that is not loopback");

  Verb(&app, "stats", "counts by endpoint and status", a, [&a] {
    return Stats(a.config_path, a.stats_json);
  })->add_flag("--json", a.stats_json, "JSON object for scripts");

  Verb(&app, "backup", "copy a live SQLite inbox to FILE, consistent and checked", a,
       [&a] { return Backup(a.config_path, a.backup_file); })
      ->add_option("FILE", a.backup_file, "a new file (never overwritten)")
      ->required();

  CLI::App* purge = Verb(&app, "purge", "delete what retention no longer keeps, now", a,
                         [&a] { return Purge(a.config_path, a.purge_dry_run, a.purge_json); });
  purge->add_flag("--dry-run", a.purge_dry_run, "count what would go, delete nothing");
  purge->add_flag("--json", a.purge_json, "JSON object for scripts");
}

int Main(int argc, char** argv) {
  CLI::App app{"hookbox: verify, store exactly once, and handle webhook deliveries"};
  app.set_version_flag("--version", std::string("hookbox ") + kVersion);
  app.require_subcommand(1);
  Args args;
  // Also before the verb (`hookbox -c FILE inbox show ...`), as after it.
  app.add_option("-c,--config", args.config_path,
                 "config file ($HOOKBOX_CONFIG, else /etc/hookbox/config.yaml); also after the "
                 "verb");
  AddDaemonVerbs(app, args);
  AddInboxVerbs(app, args);
  AddToolVerbs(app, args);
  AddHandlerVerbs(app, args);
  AddAlertVerbs(app, args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // CLI11's own message lists several last first ("1h --since"): the same words, with
    // them in the order given.
    const std::vector<std::string> extras = app.remaining(/*recurse=*/true);
    if (extras.size() < 2) return app.exit(e) == 0 ? kExitOk : kExitUsage;
    std::string text;
    for (const std::string& arg : extras) text += " " + arg;
    std::cerr << "The following arguments were not expected:" << text
              << "\nRun with --help for more information.\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  return args.rc;
}

}  // namespace
}  // namespace hookbox::cli

int main(int argc, char** argv) {
  // Before the first line: whether stderr is the journal (ops/log.h).
  hookbox::DetectJournal();
  try {
    return hookbox::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    // Every verb reports its own failures; this is the last guard against a bug.
    std::cerr << "hookbox: unexpected error: " << e.what() << "\n";
    return EXIT_FAILURE;
  }
}
