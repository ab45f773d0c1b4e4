// What every verb of the command line shares (cli.h): the exit code of a Status, the report
// of a failure, and the one path from a config file to an open inbox.
#include "cli/cli.h"

#include <chrono>
#include <iostream>

#include "handlers/handler.h"
#include "ops/terminal.h"

namespace hookbox::cli {

using nlohmann::json;

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk:
      return kExitOk;
    case Status::Code::kNotFound:
    case Status::Code::kInvalidArgument:
      return kExitUsage;
    case Status::Code::kConflict:
      return kExitBusy;
    default:
      return kExitDatabase;
  }
}

int ReportFailure(const Status& s) {
  std::cerr << "hookbox: " << s.ToString() << "\n";
  return ExitCodeFor(s);
}

std::string Dump(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string Diagnostic(const std::string& path, std::string_view severity,
                       std::string_view message) {
  std::string_view where = path;
  if (message.starts_with(path) && message.size() > path.size() && message[path.size()] == ':') {
    const size_t end = message.find(": ", path.size());
    const std::string_view position = message.substr(path.size(), end - path.size());
    if (end != std::string_view::npos &&
        position.find_first_not_of(":0123456789") == std::string_view::npos) {
      where = message.substr(0, end);
      message.remove_prefix(end + 2);
    }
  }
  return std::string(where) + ": " + std::string(severity) + ": " + std::string(message);
}

LoadResult LoadConfig(const std::string& path, bool resolve_secrets, bool host_checks) {
  return LoadConfigFile(
      path,
      {.resolve_secrets = resolve_secrets, .host_checks = host_checks, .kinds = &KindReaders()});
}

std::optional<Config> LoadOrReport(const std::string& path, bool resolve_secrets,
                                   bool host_checks) {
  LoadResult r = LoadConfig(path, resolve_secrets, host_checks);
  for (const std::string& w : r.warnings) std::cerr << Diagnostic(path, "warning", w) << "\n";
  for (const std::string& e : r.errors) std::cerr << Diagnostic(path, "error", e) << "\n";
  return std::move(r.config);
}

bool KnownEndpoint(const Config& c, const std::string& name) {
  if (name.empty() || c.FindByName(name)) return true;
  std::cerr << "hookbox: unknown endpoint \"" << TerminalSafe(name) << "\" (not in " << c.path
            << ")\n";
  return false;
}

Opened LoadAndOpen(const std::string& path, const OpenRequest& request) {
  Opened out;
  out.config = LoadOrReport(path, request.resolve_secrets, request.host_checks);
  if (!out.config || !KnownEndpoint(*out.config, request.endpoint) ||
      (request.check && !request.check(*out.config))) {
    out.exit_code = kExitUsage;
    return out;
  }
  const Config& c = *out.config;
  auto inbox =
      OpenInbox({c.database, c.durability == Durability::kFull, request.create}, request.applied);
  // Both backends fail to open with Unavailable or Internal only: exit 2.
  if (!inbox.ok()) {
    out.exit_code = ReportFailure(inbox.status());
    return out;
  }
  out.inbox = std::move(*inbox);
  return out;
}

std::optional<EventFilter> FilterOrReport(const FilterArgs& args) {
  std::vector<FilterOption> options;
  auto add = [&](const char* name, const std::string& value) {
    if (!value.empty()) options.emplace_back(name, value);
  };
  add("endpoint", args.endpoint);
  add("status", args.status);
  add("type", args.type);
  add("handler", args.handler);
  add("since", args.since);
  add("until", args.until);
  for (const std::string& w : args.where) options.emplace_back("where", w);
  auto filter = ParseFilter(options, std::chrono::system_clock::now());
  if (!filter.ok()) {
    std::cerr << "hookbox: " << TerminalSafe(filter.status().ToString()) << "\n";
    return std::nullopt;
  }
  return *std::move(filter);
}

}  // namespace hookbox::cli
