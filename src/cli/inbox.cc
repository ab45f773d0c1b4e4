// `hookbox inbox list|show|clear|retry`: the operator's look at the inbox's rows, safe to
// run while the daemon runs. Tables and text are for a terminal, so every field is escaped
// (ops/terminal.h); `--json` and `--raw-body` are exact (a field that is not UTF-8 gets a
// `<field>_base64` beside it, see SetText).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "base/crypto.h"
#include "base/trace.h"
#include "base/utf8.h"
#include "cli/cli.h"
#include "inbox/filter.h"
#include "ops/clock.h"
#include "ops/terminal.h"
#include "receive/receiver.h"
#include "work/held.h"

namespace hookbox::cli {
namespace {

using nlohmann::json;

bool IsUtf8(std::string_view s) {
  while (!s.empty()) {
    const size_t n = DecodeOne(s).length;
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

// Sets out[key] to `text`, exactly: JSON strings are Unicode, so text that is not UTF-8
// (SQLite stores ids, types and bodies as the producer sent them) also gets out[key +
// "_base64"], its exact bytes, beside the string (where Dump shows each bad byte as U+FFFD).
void SetText(json& out, const std::string& key, const std::string& text) {
  out[key] = text;
  if (!IsUtf8(text)) out[key + "_base64"] = Base64Encode(text);
}

json RowJson(const InboxRow& r) {
  auto or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  json headers = json::parse(r.headers_json, nullptr, /*allow_exceptions=*/false);
  json out = {{"id", r.id}, {"endpoint", r.endpoint}};
  SetText(out, "event_id", r.event_id);
  out["id_source"] = r.id_source;
  SetText(out, "event_type", r.event_type);
  SetText(out, "resource_id", r.resource_id);
  SetText(out, "sequence", r.sequence);
  out["body_sha256"] = r.body_sha256;
  out["headers"] = headers.is_discarded() ? json(r.headers_json) : headers;
  out["status"] = r.status;
  out["received_at"] = r.received_at;
  out["processed_at"] = or_null(r.processed_at);
  out["duplicates"] = r.duplicates;
  out["last_duplicate_at"] = or_null(r.last_duplicate_at);
  return out;
}

// A failed lookup of a row the operator named: its message escaped for the terminal.
int ReportLookupFailure(const Status& s) {
  std::cerr << "hookbox: " << TerminalSafe(s.ToString()) << "\n";
  return ExitCodeFor(s);
}

// `text` escaped, padded with spaces to `width` bytes (longer text pushes the next column).
std::string Cell(const std::string& text, size_t width) {
  std::string out = TerminalSafe(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

// The columns every table of rows starts with: when, where, which event, its type.
std::string RowCells(const InboxRow& r) {
  return Cell(r.received_at, 24) + "  " + Cell(r.endpoint, 12) + "  " + Cell(r.event_id, 40) +
         "  " + Cell(r.event_type, 24);
}

std::string HeaderCells() {
  InboxRow header;
  header.received_at = "RECEIVED";
  header.endpoint = "ENDPOINT";
  header.event_id = "EVENT ID";
  header.event_type = "TYPE";
  return RowCells(header);
}

void PrintRowTable(const std::vector<InboxRow>& rows) {
  // "processing", the longest status, fits its column.
  std::printf("%s  %-10s  %s\n", HeaderCells().c_str(), "STATUS", "DUPS");
  for (const InboxRow& r : rows) {
    std::printf("%s  %-10s  %lld\n", RowCells(r).c_str(), TerminalSafe(r.status).c_str(),
                static_cast<long long>(r.duplicates));
  }
}

// A job's last error in one column of at most kErrorColumn characters: each run of
// whitespace (newlines too) one space, escaped for the terminal, and when too long its start
// and its end around "…": an exec handler's "exit 3; output: " and the output's last words.
constexpr size_t kErrorColumn = 60;

std::string ErrorCell(const std::string& error) {
  std::string flat;
  for (char c : error) {
    const bool space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
    if (space && (flat.empty() || flat.back() == ' ')) continue;
    flat += space ? ' ' : c;
  }
  if (!flat.empty() && flat.back() == ' ') flat.pop_back();
  std::string safe = TerminalSafe(flat);  // valid UTF-8: cut between characters
  std::vector<size_t> starts;
  for (size_t i = 0; i < safe.size(); ++i) {
    if ((static_cast<unsigned char>(safe[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  if (starts.size() <= kErrorColumn) return safe;
  const size_t head = kErrorColumn / 3, tail = kErrorColumn - head - 1;
  return safe.substr(0, starts[head]) + "\u2026" + safe.substr(starts[starts.size() - tail]);
}

// `inbox list --status dead`: what died and why, each row with its dead jobs' handlers and
// last errors (a row with several dead jobs gets a line for each after the first).
void PrintDeadTable(const std::vector<InboxRow>& rows, const std::vector<DeadJob>& dead) {
  std::printf("%s  %-24s  %s\n", HeaderCells().c_str(), "HANDLER", "LAST ERROR");
  std::map<int64_t, std::vector<const DeadJob*>> by_row;
  for (const DeadJob& j : dead) by_row[j.row.id].push_back(&j);
  const std::string blank(RowCells(InboxRow{}).size(), ' ');
  for (const InboxRow& r : rows) {
    const std::vector<const DeadJob*>& jobs = by_row[r.id];
    if (jobs.empty()) std::printf("%s  %-24s\n", RowCells(r).c_str(), "-");  // retried since
    for (size_t i = 0; i < jobs.size(); ++i) {
      std::printf("%s  %s  %s\n", i == 0 ? RowCells(r).c_str() : blank.c_str(),
                  Cell(jobs[i]->handler, 24).c_str(), ErrorCell(jobs[i]->last_error).c_str());
    }
  }
}

// Under a page the limit cut short: how many rows match beyond it (one count, asked only
// when the page came back full), and how to see them.
int PrintMoreRows(Inbox& inbox, const ListFilter& list, int limit) {
  auto all = inbox.Count(list);
  if (!all.ok()) return ReportFailure(all.status());
  const int64_t more = std::max<int64_t>(*all - limit, 1);  // at least the row past the page
  std::printf("\u2026 %lld more %s; --limit %lld shows them all (or narrow the filter)\n",
              static_cast<long long>(more), more == 1 ? "row matches" : "rows match",
              static_cast<long long>(more) + limit);
  return kExitOk;
}

// The exact body bytes and nothing else, for a pipe.
int WriteRawBody(const std::string& body) {
  return std::fwrite(body.data(), 1, body.size(), stdout) == body.size() && std::fflush(stdout) == 0
             ? kExitOk
             : kExitUsage;
}

// A job that has not finished and whose handler the config lacks is held (work/held.h).
bool IsHeld(const JobRow& j, const Config& config, const std::string& endpoint) {
  if (j.status != "pending" && j.status != "processing") return false;
  return !IsConfigured(config, endpoint, j.handler);
}

// The routes of the loaded config that the stored event takes (receive/receiver.h,
// RouteMatches): its type and body against each route's `events:` and `where:`. The jobs
// say what the accept made; this says why, as the config reads now (after a reload that
// changed the routes, the two can differ, and that difference is worth seeing).
json MatchedRoutes(const InboxRow& row, const Config& config) {
  json routes = json::array();
  const Endpoint* ep = config.FindByName(row.endpoint);
  if (!ep) return routes;
  for (size_t i = 0; i < ep->routes.size(); ++i) {
    const Route& route = ep->routes[i];
    if (!RouteMatches(route, row.event_type, row.body)) continue;
    json where = json::array();
    for (const FieldMatch& m : route.where) where.push_back(FieldMatchText(m));
    json handlers = json::array();
    for (const HandlerSpec& h : route.handlers) handlers.push_back(h.name);
    routes.push_back(
        {{"route", i}, {"events", route.events}, {"where", where}, {"handlers", handlers}});
  }
  return routes;
}

// One matched route on a line: "routes[0]  events invoice.*  where /a=b  -> billing".
void PrintRoutesText(const json& routes) {
  if (routes.empty()) {
    std::printf("%-18s none (under the config loaded now)\n", "routes");
    return;
  }
  for (const auto& r : routes) {
    std::string line = "events " + Dump(r["events"]);
    if (!r["where"].empty()) line += "  where " + Dump(r["where"]);
    line += "  -> " + Dump(r["handlers"]);
    std::printf("%-18s %s\n", ("routes[" + std::to_string(r["route"].get<size_t>()) + "]").c_str(),
                TerminalSafeText(line).c_str());
  }
}

json DetailJson(const InboxDetail& detail, const Config& config) {
  json out = RowJson(detail.row);
  SetText(out, "body", detail.row.body);
  out["routes"] = MatchedRoutes(detail.row, config);
  // The event's trace (base/trace.h), as the delivery's and each attempt's log line name it.
  out["trace_id"] = EventTrace(detail.row.endpoint, detail.row.event_id,
                               TraceparentOfStoredHeaders(detail.row.headers_json))
                        .trace_id;
  out["jobs"] = json::array();
  for (const JobRow& j : detail.jobs) {
    json attempts = json::array();
    for (const AttemptRow& a : j.attempt_rows) {
      json attempt = {{"number", a.number},
                      {"generation", a.generation},
                      {"started_at", a.started_at},
                      {"finished_at", a.finished_at},
                      {"outcome", a.outcome}};
      // Stored as UTF-8 (StorableText); rows an older hookbox wrote on SQLite may not be.
      SetText(attempt, "detail", a.detail);
      attempts.push_back(std::move(attempt));
    }
    out["jobs"].push_back({{"id", j.id},
                           {"handler", j.handler},
                           {"status", j.status},
                           {"generation", j.generation},
                           {"next_attempt_at", j.next_attempt_at},
                           {"lease_owner", j.lease_owner},
                           {"lease_until", j.lease_until},
                           {"last_error", j.last_error},
                           {"held", IsHeld(j, config, detail.row.endpoint)},
                           {"attempts", attempts}});
    if (!IsUtf8(j.last_error)) out["jobs"].back()["last_error_base64"] = Base64Encode(j.last_error);
  }
  return out;
}

// The end of an attempt's detail (a handler's stderr ends with its error), at most
// kDetailTail bytes, cut at a character's start.
constexpr size_t kDetailTail = 200;

std::string DetailTail(const std::string& detail) {
  if (detail.size() <= kDetailTail) return detail;
  size_t from = detail.size() - kDetailTail;
  while (from < detail.size() && (static_cast<unsigned char>(detail[from]) & 0xC0) == 0x80) ++from;
  return "..." + detail.substr(from);
}

// One attempt under its job: number (and the replay it belongs to), when it started and
// ended ("ended -" while it runs), its outcome and the end of its detail, as --json has them.
void PrintAttemptText(const json& a) {
  const int64_t generation = a["generation"].get<int64_t>();
  const std::string finished = a["finished_at"].get<std::string>();
  const std::string detail = a.contains("detail") && a["detail"].is_string()
                                 ? DetailTail(a["detail"].get<std::string>())
                                 : "";
  std::printf(
      "  attempt %lld%s  started %s  ended %s  %-9s %s\n",
      static_cast<long long>(a["number"].get<int64_t>()),
      generation > 0 ? (" (replay " + std::to_string(generation) + ")").c_str() : "",
      TerminalSafe(a["started_at"].get<std::string>()).c_str(),
      TerminalSafe(finished.empty() ? std::string("-") : finished).c_str(),
      TerminalSafe(a["outcome"].get<std::string>().empty() ? std::string("running")
                                                           : a["outcome"].get<std::string>())
          .c_str(),
      TerminalSafe(detail).c_str());
}

// The text is for a terminal: every field escaped (ops/terminal.h), the body keeping its
// newlines and tabs.
void PrintDetailText(const json& out, const InboxDetail& detail) {
  json row = out;
  row.erase("body");
  row.erase("jobs");
  row.erase("headers");
  row.erase("routes");
  for (auto& [k, v] : row.items()) {
    if (k.ends_with("_base64")) continue;  // for scripts; TerminalSafe shows each byte (\xNN)
    std::printf("%-18s %s\n", k.c_str(),
                TerminalSafe(v.is_string() ? v.get<std::string>() : Dump(v)).c_str());
  }
  // JSON text on one line: its backslashes are its own escapes, not doubled.
  std::printf("%-18s %s\n", "headers", TerminalSafeText(Dump(out["headers"])).c_str());
  std::printf("%-18s %zu bytes\n", "body", detail.row.body.size());
  PrintRoutesText(out["routes"]);
  for (const auto& j : out["jobs"]) {
    // A replayed job says which run it is in (generation n: its n-th replay).
    const int64_t generation = j["generation"].get<int64_t>();
    std::printf("job %-14s %s (%zu attempts%s)%s\n",
                TerminalSafe(j["handler"].get<std::string>()).c_str(),
                TerminalSafe(j["status"].get<std::string>()).c_str(), j["attempts"].size(),
                generation > 0 ? (", replay " + std::to_string(generation)).c_str() : "",
                j["held"].get<bool>()
                    ? " held: its handler is not configured (hookbox inbox reassign / drop)"
                    : "");
    // A job waiting in backoff: when its next try is due (`inbox retry --waiting` brings it
    // forward); a held job's far-future time is not one.
    if (j["status"] == "pending" && !j["held"].get<bool>() &&
        j["next_attempt_at"] != std::string(kHeldUntil) && !j["attempts"].empty()) {
      std::printf("  next attempt at %s\n",
                  TerminalSafe(j["next_attempt_at"].get<std::string>()).c_str());
    }
    for (const auto& a : j["attempts"]) PrintAttemptText(a);
  }
  std::printf("\n%s\n", TerminalSafeText(detail.row.body).c_str());
}

}  // namespace

int InboxList(const std::string& path, const ListArgs& args) {
  ListFilter list;
  list.limit = args.limit + 1;  // one past the page: whether the limit left rows out
  if (auto filter = FilterOrReport(args.filter)) {
    list.filter = *std::move(filter);
  } else {
    return kExitBadFilter;
  }
  Opened opened = LoadAndOpen(path, {.endpoint = list.filter.endpoint});
  if (!opened.inbox) return opened.exit_code;
  if (int code = kExitOk;
      !ResolveFilterHandler(*opened.config, *opened.inbox, list.filter, &code)) {
    return code;
  }
  auto rows = opened.inbox->List(list);
  if (!rows.ok()) return ReportFailure(rows.status());
  const bool cut = rows->size() > static_cast<size_t>(args.limit);
  if (cut) rows->pop_back();
  if (args.json) {
    json out = json::array();
    for (const InboxRow& r : *rows) out.push_back(RowJson(r));
    std::cout << Dump(out, 2) << "\n";
    return kExitOk;
  }
  if (list.filter.status == "dead") {
    std::vector<int64_t> ids;
    for (const InboxRow& r : *rows) ids.push_back(r.id);
    auto dead = opened.inbox->DeadJobsOf(ids);
    if (!dead.ok()) return ReportFailure(dead.status());
    PrintDeadTable(*rows, *dead);
  } else {
    PrintRowTable(*rows);
  }
  return cut ? PrintMoreRows(*opened.inbox, list, args.limit) : kExitOk;
}

int InboxShow(const std::string& path, const std::string& endpoint, const std::string& id,
              ShowAs as) {
  Opened opened = LoadAndOpen(path, {.endpoint = endpoint});
  if (!opened.inbox) return opened.exit_code;
  auto detail = opened.inbox->Show(endpoint, id);
  if (!detail.ok()) return ReportLookupFailure(detail.status());
  if (as == ShowAs::kRawBody) return WriteRawBody(detail->row.body);
  json out = DetailJson(*detail, *opened.config);
  if (as == ShowAs::kJson) {
    std::cout << Dump(out, 2) << "\n";
    return kExitOk;
  }
  PrintDetailText(out, *detail);
  return kExitOk;
}

int InboxClear(const std::string& path, const std::string& endpoint, const std::string& id) {
  Opened opened = LoadAndOpen(path, {.endpoint = endpoint});
  if (!opened.inbox) return opened.exit_code;
  // A row whose job is running is refused (exit 3), never cleared under the attempt.
  if (Status s = opened.inbox->Clear(endpoint, id, std::chrono::system_clock::now()); !s.ok()) {
    return ReportLookupFailure(s);
  }
  std::cout << "cleared " << TerminalSafe(endpoint) << " " << TerminalSafe(id)
            << ": the next delivery of this event will be processed as new\n";
  return kExitOk;
}

int InboxRetry(const std::string& path, const std::string& endpoint, const std::string& id) {
  Opened opened = LoadAndOpen(path, {.endpoint = endpoint});
  if (!opened.inbox) return opened.exit_code;
  auto rearmed = opened.inbox->Retry(endpoint, id, std::chrono::system_clock::now());
  if (!rearmed.ok()) return ReportLookupFailure(rearmed.status());
  std::cout << "re-armed " << *rearmed << " dead job(s) of " << TerminalSafe(endpoint) << " "
            << TerminalSafe(id) << "\n";
  return kExitOk;
}

}  // namespace hookbox::cli
