// The console's pages and actions (see console.h), and its refusals as pages. Which request
// reaches which of them is the admin listener's route table (admin/routes.cc), and the guards
// it asks first are guards.cc. The pages' HTML is in pages/, rendered by render.cc.
#include "console/console.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "base/ascii.h"
#include "base/http_status.h"
#include "base/status_macros.h"
#include "base/trace.h"
#include "console/render.h"
#include "inbox/bulk_pace.h"
#include "inbox/filter.h"
#include "ops/clock.h"
#include "ops/daemon_metrics.h"
#include "ops/log.h"

namespace hookbox::console {
namespace {

using nlohmann::json;

constexpr int kPageRows = 50;
constexpr std::array<const char*, 6> kRowStatuses = {"pending", "processing", "processed",
                                                     "stale",   "dead",       "ignored"};

// The headers of every console answer: no script at all, styles from /style.css only, no
// framing, no sniffing, never cached, and the referrer (event ids are in the URLs) sent to
// this origin only. Not `no-referrer`: with it, browsers send `Origin: null` on the
// console's own form posts, which the Origin check must refuse.
Headers SecurityHeaders(const char* content_type) {
  return {{"Content-Type", content_type},
          {"Content-Security-Policy",
           "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
           "frame-ancestors 'none'; base-uri 'none'"},
          {"X-Content-Type-Options", "nosniff"},
          {"X-Frame-Options", "DENY"},
          {"Referrer-Policy", "same-origin"},
          {"Cache-Control", "no-store"}};
}

// A page that cannot be rendered (its template missing or broken: a fault of the build) is a
// 500 in plain text, since no template can be trusted to word it, and an error line.
Answer Html(int status, std::string_view page, const json& view) {
  auto html = RenderPage(page, view);
  if (!html.ok()) {
    LogError({{"msg", "console page not rendered"},
              {"page", std::string(page)},
              {"error", html.status().ToString()}});
    return {500, "500: the console could not render this page; the daemon's log says why.\n",
            SecurityHeaders("text/plain; charset=utf-8")};
  }
  return {status, std::move(*html), SecurityHeaders("text/html; charset=utf-8")};
}

Answer Message(int status, const std::string& heading, const std::string& message) {
  return Html(status, "message.html",
              {{"title", heading}, {"heading", heading}, {"message", message}});
}

// A filter (the list's, or a bulk form's) that cannot be used, the same page for each.
Answer BadFilter(const Status& s) {
  return Message(HttpStatusFor(s), "This filter cannot be used", s.ToString());
}

Answer Redirect(const std::string& location) {
  Answer a{303, "", SecurityHeaders("text/plain; charset=utf-8")};
  a.headers.emplace("Location", location);
  return a;
}

// A failed inbox call as a page. Its status is HttpStatusFor's (base/http_status.h), the
// one mapping the receiver answers by too: 503 when storage is unavailable, 404 for an
// event that is not there, 500 for a fault.
Answer Failed(const Status& s) {
  const bool missing = s.code() == Status::Code::kNotFound;
  return Message(HttpStatusFor(s), missing ? "No such event" : "The inbox did not answer",
                 s.ToString());
}

std::string EventHref(const std::string& endpoint, const std::string& id) {
  return "/event?endpoint=" + UrlEncode(endpoint) + "&id=" + UrlEncode(id);
}

// "45 s", "12 min", "3 h 5 min", "2 d 4 h".
std::string AgeText(int64_t seconds) {
  char buf[48];
  if (seconds < 60) {
    snprintf(buf, sizeof buf, "%lld s", static_cast<long long>(seconds));
  } else if (seconds < 3600) {
    snprintf(buf, sizeof buf, "%lld min", static_cast<long long>(seconds / 60));
  } else if (seconds < 86400) {
    snprintf(buf, sizeof buf, "%lld h %lld min", static_cast<long long>(seconds / 3600),
             static_cast<long long>(seconds % 3600 / 60));
  } else {
    snprintf(buf, sizeof buf, "%lld d %lld h", static_cast<long long>(seconds / 86400),
             static_cast<long long>(seconds % 86400 / 3600));
  }
  return buf;
}

// The list's filter as `hookbox inbox list` takes it (inbox/filter.h), for the same
// ParseFilter, so the same mistakes are refused with the same words. `where` is a text
// area, one POINTER=VALUE per line, or repeated (the next page's links repeat it); its
// lines go to *where_lines too.
std::vector<FilterOption> FilterOptions(const FormFields& query,
                                        std::vector<std::string>* where_lines) {
  std::vector<FilterOption> options;
  for (const auto& [name, value] : query) {
    if (name == "where") {
      size_t start = 0;
      while (start <= value.size()) {
        size_t end = value.find('\n', start);
        if (end == std::string::npos) end = value.size();
        std::string line = value.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) {
          options.emplace_back("where", line);
          where_lines->push_back(line);
        }
        start = end + 1;
      }
    } else if ((name == "endpoint" || name == "status" || name == "type" || name == "handler" ||
                name == "since" || name == "until") &&
               !value.empty()) {
      options.emplace_back(name, value);
    }
  }
  return options;
}

// The filter again, for the pager: every value escaped, and a relative time as the instant
// it meant (EventFilter holds it so), so that the next page does not slide with the clock.
std::string FilterHref(const EventFilter& ef, const std::string& event_id,
                       const std::vector<std::string>& where_lines) {
  std::string href = "/?endpoint=" + UrlEncode(ef.endpoint) + "&status=" + UrlEncode(ef.status) +
                     "&id=" + UrlEncode(event_id);
  if (!ef.type_glob.empty()) href += "&type=" + UrlEncode(ef.type_glob);
  if (!ef.handler.empty()) href += "&handler=" + UrlEncode(ef.handler);
  if (!ef.since.empty()) href += "&since=" + UrlEncode(ef.since);
  if (!ef.until.empty()) href += "&until=" + UrlEncode(ef.until);
  for (const std::string& line : where_lines) href += "&where=" + UrlEncode(line);
  return href;
}

json RowView(const InboxRow& r) {
  return {{"received_at", r.received_at},
          {"endpoint", r.endpoint},
          {"event_id", r.event_id},
          {"id_source", r.id_source},
          {"event_type", r.event_type},
          {"status", r.status},
          {"processed_at", r.processed_at},
          {"resource_id", r.resource_id},
          {"sequence", r.sequence},
          {"duplicates", r.duplicates},
          {"last_duplicate_at", r.last_duplicate_at},
          {"body_sha256", r.body_sha256},
          {"href", EventHref(r.endpoint, r.event_id)}};
}

// The numbers at the top of the list: jobs by state, the oldest waiting event, and the last
// hour's deliveries by outcome (this process's, since it started).
json SummaryView(const QueueStats& q) {
  auto count = [&](const char* status) {
    auto it = q.jobs_by_status.find(status);
    return it == q.jobs_by_status.end() ? int64_t{0} : it->second;
  };
  std::string oldest = "none";
  if (auto micros = ParseRfc3339Micros(q.oldest_unfinished_received_at)) {
    const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    oldest = AgeText(std::max<int64_t>(0, (now - *micros) / 1000000));
  }
  json last_hour = json::array();
  for (const auto& [outcome, n] :
       Metrics().recent_deliveries.LastHour(std::chrono::system_clock::now())) {
    last_hour.push_back({{"outcome", outcome}, {"count", n}});
  }
  return {{"dead", count("dead")},
          {"pending", count("pending")},
          {"processing", count("processing")},
          {"oldest", oldest},
          {"last_hour", last_hour}};
}

// The body as the page shows it: JSON pretty-printed, anything else as text.
void AddBody(const std::string& body, json& view) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  const bool is_json = !body.empty() && !parsed.is_discarded();
  view["body_kind"] = is_json ? "JSON" : "text";
  view["body"] = is_json ? parsed.dump(2, ' ', false, json::error_handler_t::replace) : body;
  view["body_size"] = body.size();
}

json HeadersView(const std::string& headers_json) {
  json headers = json::array();
  json stored = json::parse(headers_json, nullptr, false);
  if (!stored.is_object()) return headers;
  for (const auto& [name, value] : stored.items()) {
    headers.push_back({{"name", name},
                       {"value", value.is_string() ? value.get<std::string>()
                                                   : value.dump(-1, ' ', false,
                                                                json::error_handler_t::replace)}});
  }
  return headers;
}

// "replay N" for a run after the first (generation N), "" for the first: the mark the CLI's
// `inbox show` gives a replayed job and each attempt of a replay.
std::string ReplayMark(int64_t generation) {
  return generation > 0 ? "replay " + std::to_string(generation) : "";
}

// Each job with its whole history: `attempts` counts the attempts rows shown under it (every
// run's, as `inbox show` counts them), not the tries of its current budget (jobs.attempts,
// which a retry or replay resets).
json JobsView(const std::vector<JobRow>& jobs) {
  json out = json::array();
  for (const JobRow& j : jobs) {
    json attempts = json::array();
    for (const AttemptRow& a : j.attempt_rows) {
      attempts.push_back({{"number", a.number},
                          {"replay", ReplayMark(a.generation)},
                          {"started_at", a.started_at},
                          {"finished_at", a.finished_at},
                          {"outcome", a.outcome},
                          {"detail", a.detail}});
    }
    out.push_back({{"handler", j.handler},
                   {"status", j.status},
                   {"attempts", j.attempt_rows.size()},
                   {"replay", ReplayMark(j.generation)},
                   {"next_attempt_at", j.status == "pending" ? j.next_attempt_at : ""},
                   {"lease_owner", j.status == "processing" ? j.lease_owner : ""},
                   {"lease_until", j.lease_until},
                   {"last_error", j.last_error},
                   {"attempt_rows", attempts}});
  }
  return out;
}

// The form's `verb`, as BulkVerbName spells it: "replay", "retry_waiting", else "retry" (the
// dead jobs).
BulkVerb BulkVerbOfForm(const std::string& verb) {
  if (verb == BulkVerbName(BulkVerb::kReplay)) return BulkVerb::kReplay;
  if (verb == BulkVerbName(BulkVerb::kRetryWaiting)) return BulkVerb::kRetryWaiting;
  return BulkVerb::kRetryDead;
}

// The bulk page's request from a query (GET) or form (POST): the filter, parsed as the CLI
// parses it and as the list's (FilterOptions: `where` one POINTER=VALUE or form:NAME=VALUE
// a line, and the form's hidden fields one a line each), the verb and the rate. The times, once
// parsed, are absolute: the form carries them so, and the POST acts on the rows the page showed.
struct BulkQuery {
  BulkRequest request;
  std::string rate_text;
  std::vector<std::string> where;
};

StatusOr<BulkQuery> ParseBulkQuery(const FormFields& fields) {
  BulkQuery q;
  const std::vector<FilterOption> options = FilterOptions(fields, &q.where);
  ASSIGN_OR_RETURN(q.request.filter, ParseFilter(options, std::chrono::system_clock::now()));
  q.request.verb = BulkVerbOfForm(FormText(fields, "verb"));
  q.rate_text = FormText(fields, "rate");
  if (!q.rate_text.empty()) {
    auto rate = ParseBulkRate(q.rate_text);
    if (!rate) return Status::InvalidArgument("bad rate", "the rate is N/s or N/min");
    q.request.rate = *rate;
  }
  q.request.now = std::chrono::system_clock::now();
  return q;
}

// The filter as the form carries it: endpoint, status, type, handler, since, until, each
// `where` line, then the rate.
json BulkFormFields(const BulkQuery& q) {
  const EventFilter& f = q.request.filter;
  json fields = json::array();
  auto add = [&](const char* name, const std::string& value) {
    if (!value.empty()) fields.push_back({{"name", name}, {"value", value}});
  };
  add("endpoint", f.endpoint);
  add("status", f.status);
  add("type", f.type_glob);
  add("handler", f.handler);
  add("since", f.since);
  add("until", f.until);
  for (const std::string& w : q.where) add("where", w);
  add("rate", q.rate_text);
  return fields;
}

// The page's and the POST's refusal of a rate over a paused handler (inbox/bulk_pace.h).
std::string PausedRefusal(const PlanHandler& paused) {
  return "Handler " + paused.name +
         " is paused: a spread at this rate starts now and would run out while it waits, and "
         "on resume every job would run at once. Resume it on the Handlers page first, then "
         "plan again; or leave the rate empty and give the handler a rate: in the config, "
         "which holds when it resumes. Nothing was changed.";
}

// What each verb's plan says: rows skipped for want of what, what acting does, the button.
struct BulkWords {
  const char* skipped;
  const char* what;
  const char* button;
};

BulkWords BulkWordsOf(BulkVerb verb) {
  switch (verb) {
    case BulkVerb::kReplay:
      return {"without a done job of the handler",
              "Each job runs again as a new run (a new idempotency key, "
              "<endpoint>/replay-<n>:<event_id>), with a fresh attempt budget; its earlier "
              "attempts stay in the history.",
              "Replay "};
    case BulkVerb::kRetryWaiting:
      return {"without a job waiting in backoff",
              "The jobs waiting in backoff are made due now (or spread by the rate), keeping "
              "their attempt counts and their idempotency keys.",
              "Run now "};
    case BulkVerb::kRetryDead:
      break;
  }
  return {"without a dead job",
          "The dead jobs are re-armed with a fresh attempt budget and run again in the worker "
          "pool, under their own idempotency keys.",
          "Retry "};
}

// The bulk page's plan: the numbers of `--dry-run`, each handler's state, the drain time,
// what acting does, and the form's fields (the CSRF token is the caller's to add). A rate
// over a paused handler is refused (inbox/bulk_pace.h): no button, and the choices.
json BulkPlanView(const BulkPlan& plan, const std::vector<PlanHandler>& handlers,
                  const BulkQuery& q) {
  const BulkWords words = BulkWordsOf(q.request.verb);
  json by_handler = json::array();
  for (const PlanHandler& h : handlers) {
    by_handler.push_back({{"name", h.name},
                          {"count", h.jobs},
                          {"state", HandlerStateName(h.state)},
                          {"reason", h.state.paused ? h.state.paused_reason : ""}});
  }
  std::string drain;
  if (plan.jobs > 0) {
    drain = q.request.rate > 0
                ? "about " + std::to_string(DrainSeconds(plan.jobs, q.request.rate)) +
                      " s at the rate (the handler's own rate: may slow it)"
                : "all due now: as fast as the handler's concurrency and rate: allow";
  }
  const PlanHandler* paused = PausedUnderRate(handlers, q.request.rate);
  const std::string refusal = paused ? PausedRefusal(*paused) : "";
  return {{"matched", plan.matched},
          {"rows", plan.rows},
          {"jobs", plan.jobs},
          {"by_handler", by_handler},
          {"oldest", plan.oldest},
          {"newest", plan.newest},
          {"skipped_stale", plan.skipped_stale},
          {"skipped_ignored", plan.skipped_ignored},
          {"skipped_no_job", plan.skipped_no_job},
          {"skipped_what", words.skipped},
          {"drain", drain},
          {"refusal", refusal},
          {"what", words.what},
          {"can_act", plan.jobs > 0 && refusal.empty()},
          {"verb", BulkVerbName(q.request.verb)},
          {"fields", BulkFormFields(q)},
          {"label", words.button + std::to_string(plan.jobs) + " job(s)"}};
}

// The config's endpoints for a page's select, `selected` marked.
json EndpointChoices(const ConsoleOptions& options, const std::string& selected) {
  json out = json::array();
  for (const std::string& name : options.endpoints) {
    out.push_back({{"name", name}, {"selected", name == selected}});
  }
  return out;
}

// The list's page position (before_at, before_id, the last row of the page before), into
// `f`; false when one is given and not valid. None given: the first page.
bool ReadPagePosition(const FormFields& query, ListFilter& f) {
  auto before = FormValue(query, "before_id");
  if (!before) return true;
  auto id = ParseAsciiDigits(*before);
  auto at = FormValue(query, "before_at");
  if (!id || !at || !ParseRfc3339Micros(*at)) return false;
  f.before_id = *id;
  f.before_received_at = *at;
  return true;
}

}  // namespace

Answer WrongHostPage() {
  return Message(403, "Wrong address",
                 "This console answers only to its own address (the listener's IP address, "
                 "localhost when it listens on loopback, or a name listed in admin_hosts).");
}

Answer SignInPage(const Delivery& d) {
  if (d.method == "GET" || d.method == "HEAD")
    return Html(401, "login.html", {{"title", "Sign in"}});
  return Message(401, "Sign in first", "This console needs the admin token.");
}

Answer NotAllowedPage(std::string_view allow) {
  Answer a = Message(405, "Method not allowed", "This address takes " + std::string(allow) + ".");
  a.headers.emplace("Allow", std::string(allow));
  return a;
}

Answer RefusedPage(std::string_view why) { return Message(403, "Refused", std::string(why)); }

Console::Console(InboxAdmin& admin, HandlerStates& states, ConsoleOptions options,
                 const Guards& guards)
    : admin_(admin),
      states_(states),
      options_(std::make_shared<const ConsoleOptions>(std::move(options))),
      guards_(guards) {}

void Console::Swap(ConsoleOptions options) {
  auto next = std::make_shared<const ConsoleOptions>(std::move(options));
  std::lock_guard lock(mu_);
  options_ = std::move(next);
}

std::shared_ptr<const ConsoleOptions> Console::Options() const {
  std::lock_guard lock(mu_);
  return options_;
}

Answer Console::StyleSheet() {
  return Answer{200, std::string(*PageFile("style.css")),
                SecurityHeaders("text/css; charset=utf-8")};
}

// Every method comes here (its row takes them all): without a token there is nothing to sign
// in to, and any request is sent to the list. With one, GET shows the form (or the list, to
// a signed-in browser) and POST, from this listener's own page (Origin), checks the token and
// sets the session cookie.
Answer Console::Login(const Delivery& d) {
  if (!guards_.HasToken()) return Redirect("/");
  if (d.method == "GET" || d.method == "HEAD") {
    if (guards_.Authorized(d)) return Redirect("/");
    return Html(200, "login.html", {{"title", "Sign in"}});
  }
  if (d.method != "POST") return NotAllowedPage("GET, HEAD, POST");
  const FormFields form = ParseUrlEncoded(d.body);
  if (auto refused = guards_.RefusedPost(d, form, FormToken::kNone)) return RefusedPage(*refused);
  if (!guards_.IsToken(FormText(form, "token"))) {
    return Html(401, "login.html", {{"title", "Sign in"}, {"failed", true}});
  }
  Answer a = Redirect("/");
  a.headers.emplace("Set-Cookie", guards_.SessionSetCookie());
  return a;
}

Answer Console::ListPage(const Delivery& d) {
  const FormFields query = ParseUrlEncoded(d.query);
  std::vector<std::string> where_lines;
  const std::vector<FilterOption> options = FilterOptions(query, &where_lines);
  auto filter = ParseFilter(options, std::chrono::system_clock::now());
  if (!filter.ok()) return BadFilter(filter.status());
  ListFilter f;
  f.filter = *std::move(filter);
  f.event_id = FormText(query, "id");
  f.limit = kPageRows + 1;  // one more: is there a next page?
  if (!ReadPagePosition(query, f)) {
    return Message(400, "Bad page", "The page's position (before_at, before_id) is not valid.");
  }
  auto rows = Rows(f);
  if (!rows.ok()) return Failed(rows.status());
  auto queue = admin_.Queue(false);
  if (!queue.ok()) return Failed(queue.status());

  const EventFilter& ef = f.filter;
  std::string where_text;
  for (const std::string& line : where_lines) where_text += (where_text.empty() ? "" : "\n") + line;
  json view = {{"title", "Inbox"},
               {"id", f.event_id},
               {"type", ef.type_glob},
               {"handler", ef.handler},
               {"since", FormText(query, "since")},
               {"until", FormText(query, "until")},
               {"where", where_text},
               {"summary", SummaryView(*queue)}};
  view["filtered"] = !ef.Empty() || !f.event_id.empty();
  view["endpoints"] = EndpointChoices(*Options(), ef.endpoint);
  view["statuses"] = json::array();
  for (const char* status : kRowStatuses) {
    view["statuses"].push_back({{"name", status}, {"selected", ef.status == status}});
  }
  const bool more = rows->size() > static_cast<size_t>(kPageRows);
  if (more) rows->pop_back();
  view["rows"] = json::array();
  for (const InboxRow& r : *rows) view["rows"].push_back(RowView(r));
  const std::string filters = FilterHref(ef, f.event_id, where_lines);
  if (more) {
    view["next_href"] = filters + "&before_at=" + UrlEncode(rows->back().received_at) +
                        "&before_id=" + std::to_string(rows->back().id);
  }
  if (f.before_id != 0) view["first_href"] = filters;
  if (FormValue(query, "cleared")) {
    view["notice"] = "Cleared " + FormText(query, "cleared_endpoint") + " " +
                     FormText(query, "cleared_id") +
                     ": the next delivery of this event will be processed as new.";
  }
  return Html(200, "list.html", view);
}

// The list's rows. A search by id without an endpoint asks each configured endpoint in turn
// (one probe of the (endpoint, event_id) index each), not the whole table: so it finds the
// events of the endpoints in the config, at any size of the inbox.
StatusOr<std::vector<InboxRow>> Console::Rows(const ListFilter& f) {
  const std::shared_ptr<const ConsoleOptions> opts = Options();
  if (f.event_id.empty() || !f.filter.endpoint.empty()) return admin_.List(f);
  std::vector<InboxRow> rows;
  for (const std::string& endpoint : opts->endpoints) {
    ListFilter one = f;
    one.filter.endpoint = endpoint;
    ASSIGN_OR_RETURN(const std::vector<InboxRow> found, admin_.List(one));
    rows.insert(rows.end(), found.begin(), found.end());
  }
  std::sort(rows.begin(), rows.end(), [](const InboxRow& a, const InboxRow& b) {
    return std::tie(a.received_at, a.id) > std::tie(b.received_at, b.id);
  });
  return rows;
}

Answer Console::EventPage(const Delivery& d) {
  const FormFields query = ParseUrlEncoded(d.query);
  const std::string endpoint = FormText(query, "endpoint");
  const std::string id = FormText(query, "id");
  if (endpoint.empty() || id.empty()) {
    return Message(400, "Which event?", "An event's page needs its endpoint and id.");
  }
  auto detail = admin_.Show(endpoint, id);
  if (!detail.ok()) {
    if (detail.status().code() == Status::Code::kNotFound) {
      return Message(HttpStatusFor(detail.status()), "No such event",
                     "The inbox holds no event " + id + " at endpoint " + endpoint +
                         ": it may have been cleared or purged.");
    }
    return Failed(detail.status());
  }
  json view = {{"title", "Event " + id},
               {"row", RowView(detail->row)},
               // The event's trace (base/trace.h), as its log lines and `inbox show` name it.
               {"trace_id", EventTrace(detail->row.endpoint, detail->row.event_id,
                                       TraceparentOfStoredHeaders(detail->row.headers_json))
                                .trace_id},
               {"headers", HeadersView(detail->row.headers_json)},
               {"jobs", JobsView(detail->jobs)},
               {"csrf", guards_.CsrfToken(endpoint, id)}};
  view["can_retry"] = std::any_of(detail->jobs.begin(), detail->jobs.end(),
                                  [](const JobRow& j) { return j.status == "dead"; });
  AddBody(detail->row.body, view);
  if (auto n = ParseAsciiDigits(FormText(query, "retried"))) {
    view["notice"] = "Re-armed " + std::to_string(*n) +
                     " dead job(s): they run again with a fresh attempt budget.";
  }
  return Html(200, "event.html", view);
}

Answer Console::DeadPage(const Delivery& d) {
  const FormFields query = ParseUrlEncoded(d.query);
  int64_t before = 0;
  if (auto text = FormValue(query, "before")) {
    auto n = ParseAsciiDigits(*text);
    if (!n) return Message(400, "Bad page", "The page's position (before) is not valid.");
    before = *n;
  }
  auto dead = admin_.DeadJobs(before, kPageRows + 1);
  if (!dead.ok()) return Failed(dead.status());
  const bool more = dead->size() > static_cast<size_t>(kPageRows);
  if (more) dead->pop_back();
  json view = {{"title", "Dead letters"}, {"dead", json::array()}};
  for (const DeadJob& j : *dead) {
    json row = RowView(j.row);
    row["handler"] = j.handler;
    row["attempts"] = j.attempts;
    row["last_error"] = j.last_error;
    view["dead"].push_back(std::move(row));
  }
  if (more) view["next_href"] = "/dead?before=" + std::to_string(dead->back().job_id);
  return Html(200, "dead.html", view);
}

// Retry or Clear: the first POST answers a confirmation page that says what will happen;
// its button posts again with confirm=yes, which acts. The route table has checked the form's
// Origin and CSRF token (guards.h) before this runs, as for every action.
Answer Console::EventAction(const Delivery& d, bool retry) {
  const std::shared_ptr<const ConsoleOptions> opts = Options();
  const FormFields form = ParseUrlEncoded(d.body);
  const std::string endpoint = FormText(form, "endpoint");
  const std::string id = FormText(form, "id");
  if (FormText(form, "confirm") != "yes") {
    return Html(
        200, "confirm.html",
        {{"title", retry ? "Retry?" : "Clear?"},
         {"label", retry ? "Retry" : "Clear"},
         {"action", d.path},
         {"what", retry ? "Its dead jobs are re-armed with a fresh attempt budget and run again "
                          "in the worker pool, as `hookbox inbox retry` does."
                        : "The inbox forgets this event, with its jobs and their attempts: the "
                          "next delivery of it is accepted and processed as new, as `hookbox "
                          "inbox clear` does. Until the producer redelivers it, it is gone."},
         {"noun", "event"},
         {"endpoint", endpoint},
         {"id", id},
         {"csrf", FormText(form, "csrf")},
         {"danger", !retry},
         {"back_href", EventHref(endpoint, id)}});
  }
  if (retry) {
    auto rearmed = admin_.Retry(endpoint, id, std::chrono::system_clock::now());
    if (!rearmed.ok()) {
      const Status& s = rearmed.status();
      // A row without a dead job is refused as InvalidArgument: here it is the row's state
      // (409), not a bad request.
      if (s.code() == Status::Code::kInvalidArgument) {
        return Message(409, "Nothing to retry", "This event has no dead job.");
      }
      return Failed(s);
    }
    if (opts->wake) opts->wake();
    return Redirect(EventHref(endpoint, id) + "&retried=" + std::to_string(*rearmed));
  }
  if (Status s = admin_.Clear(endpoint, id, std::chrono::system_clock::now()); !s.ok()) {
    // A busy row (kEventBusy, 409): its own words, since Failed's are a failed inbox's.
    if (s.conflict() == Status::ConflictKind::kEventBusy) {
      return Message(HttpStatusFor(s), "Not cleared",
                     "A job of this event is running. Clear it once the "
                     "attempt has ended.");
    }
    return Failed(s);
  }
  return Redirect("/?cleared=1&cleared_endpoint=" + UrlEncode(endpoint) +
                  "&cleared_id=" + UrlEncode(id));
}

// The handlers page: each worker-pool handler of the config with its state and
// job counts, and a Pause or Resume form (a confirmation first, as Retry and Clear).
Answer Console::HandlersPage(const Delivery& d) {
  const std::shared_ptr<const ConsoleOptions> opts = Options();
  const FormFields query = ParseUrlEncoded(d.query);
  auto all = states_.Handlers(std::chrono::system_clock::now(), /*count_jobs=*/true);
  if (!all.ok()) return Failed(all.status());
  json view = {{"title", "Handlers"}, {"handlers", json::array()}};
  for (const ConsoleOptions::PoolHandler& ph : opts->handlers) {
    HandlerStatus h;
    for (const HandlerStatus& s : *all) {
      if (s.state.endpoint == ph.endpoint && s.state.handler == ph.handler) h = s;
    }
    const HandlerState& st = h.state;
    view["handlers"].push_back({{"endpoint", ph.endpoint},
                                {"handler", ph.handler},
                                {"state", HandlerStateName(st)},
                                {"reason", st.paused_reason},
                                {"pending", h.pending},
                                {"due", h.due},
                                {"running", h.running},
                                {"dead", h.dead},
                                {"rate", ph.rate.empty() ? "-" : ph.rate},
                                {"action", st.paused ? "/handler/resume" : "/handler/pause"},
                                {"label", st.paused ? "Resume" : "Pause"},
                                {"pausable", !st.paused},
                                {"csrf", guards_.HandlerToken(ph.endpoint, ph.handler)}});
  }
  if (const std::string done = FormText(query, "done"); done == "paused" || done == "resumed") {
    view["notice"] = (done == "paused" ? "Paused " : "Resumed ") + FormText(query, "endpoint") +
                     " / " + FormText(query, "handler") + ".";
  }
  return Html(200, "handlers.html", view);
}

// Pause or Resume: the first POST answers a confirmation; its button posts again with
// confirm=yes, which acts (Inbox::SetPaused, as `hookbox handler pause` does).
Answer Console::HandlerAction(const Delivery& d, bool pause) {
  const std::shared_ptr<const ConsoleOptions> opts = Options();
  const FormFields form = ParseUrlEncoded(d.body);
  const std::string endpoint = FormText(form, "endpoint");
  const std::string handler = FormText(form, "id");
  const bool known = std::any_of(opts->handlers.begin(), opts->handlers.end(),
                                 [&](const ConsoleOptions::PoolHandler& h) {
                                   return h.endpoint == endpoint && h.handler == handler;
                                 });
  if (!known) {
    return Message(
        404, "No such handler",
        "The config has no worker-pool handler " + handler + " at endpoint " + endpoint + ".");
  }
  if (FormText(form, "confirm") != "yes") {
    return Html(200, "confirm.html",
                {{"title", pause ? "Pause?" : "Resume?"},
                 {"label", pause ? "Pause" : "Resume"},
                 {"action", d.path},
                 {"what", pause ? "Its jobs stay pending and are not attempted, on every "
                                  "replica, until it is resumed: no try is spent and nothing "
                                  "goes dead; deliveries are still accepted. An attempt already "
                                  "running finishes."
                                : "Its waiting jobs become due at once (at its rate, if it has "
                                  "one), and an open or half-open circuit closes."},
                 {"noun", "handler"},
                 {"endpoint", endpoint},
                 {"id", handler},
                 {"csrf", FormText(form, "csrf")},
                 {"ask_reason", pause},
                 {"danger", pause},
                 {"back_href", "/handlers"}});
  }
  std::string reason = FormText(form, "reason");
  if (reason.size() > 200) reason.resize(200);
  auto changed = states_.SetPaused({{endpoint, handler}}, pause, pause ? reason : "",
                                   std::chrono::system_clock::now());
  if (!changed.ok()) return Failed(changed.status());
  if (!pause && opts->wake) opts->wake();
  return Redirect(std::string("/handlers?done=") + (pause ? "paused" : "resumed") +
                  "&endpoint=" + UrlEncode(endpoint) + "&handler=" + UrlEncode(handler));
}

// The bulk page: the plan of a retry of the dead jobs, of the jobs waiting in backoff, or a
// replay of one handler, over the filter in the query (the same numbers and handler states
// as `hookbox inbox retry --dead --dry-run`), and the form whose POST acts. GET changes
// nothing.
Answer Console::BulkPage(const Delivery& d) {
  const std::shared_ptr<const ConsoleOptions> opts = Options();
  const FormFields query = ParseUrlEncoded(d.query);
  json view = {{"title", "Bulk retry and replay"}};
  const std::string endpoint = FormText(query, "endpoint");
  view["endpoints"] = EndpointChoices(*opts, endpoint);
  const std::string status = FormText(query, "status");
  view["statuses"] = json::array();
  for (const char* name : kRowStatuses) {
    view["statuses"].push_back({{"name", name}, {"selected", status == name}});
  }
  std::vector<std::string> where_lines;
  FilterOptions(query, &where_lines);
  std::string where_text;
  for (const std::string& line : where_lines) where_text += (where_text.empty() ? "" : "\n") + line;
  view["filter"] = {{"handler", FormText(query, "handler")},
                    {"type", FormText(query, "type")},
                    {"since", FormText(query, "since")},
                    {"until", FormText(query, "until")},
                    {"where", where_text}};
  view["rate"] = FormText(query, "rate");
  const BulkVerb verb = BulkVerbOfForm(FormText(query, "verb"));
  view["verbs"] = json::array();
  for (auto [v, label] : {std::pair{BulkVerb::kRetryDead, "Retry dead jobs"},
                          std::pair{BulkVerb::kRetryWaiting, "Run waiting jobs now"},
                          std::pair{BulkVerb::kReplay, "Replay a handler"}}) {
    view["verbs"].push_back(
        {{"value", BulkVerbName(v)}, {"label", label}, {"selected", v == verb}});
  }
  if (auto n = ParseAsciiDigits(FormText(query, "done"))) {
    view["notice"] = "Re-armed " + std::to_string(*n) + " job(s): they run in the worker pool.";
  }
  if (FormValue(query, "verb")) {
    auto q = ParseBulkQuery(query);
    if (!q.ok()) return BadFilter(q.status());
    const bool replay = q->request.verb == BulkVerb::kReplay;
    if (replay && q->request.filter.handler.empty()) {
      view["error"] = "A replay runs one handler again: name it.";
      return Html(200, "bulk.html", view);
    }
    auto plan = admin_.PlanBulk(q->request);
    if (!plan.ok()) return Failed(plan.status());
    auto handlers = HandlersOfPlan(states_, *plan, q->request.now);
    if (!handlers.ok()) return Failed(handlers.status());
    view["plan"] = BulkPlanView(*plan, *handlers, *q);
    view["plan"]["csrf"] = guards_.BulkCsrfToken();
  }
  return Html(200, "bulk.html", view);
}

// The bulk page's POST: the confirmation of the plan the page showed. Guarded as Retry and
// Clear (Origin, Sec-Fetch-Site and the bulk form's CSRF token); acts on the rows the
// filter matches now (jobs that changed since the plan are left alone: inbox_admin.h).
Answer Console::BulkAction(const Delivery& d) {
  const std::shared_ptr<const ConsoleOptions> opts = Options();
  const FormFields form = ParseUrlEncoded(d.body);
  auto q = ParseBulkQuery(form);
  if (!q.ok()) return BadFilter(q.status());
  if (q->request.verb == BulkVerb::kReplay && q->request.filter.handler.empty()) {
    return Message(400, "Which handler?", "A replay runs one handler again: name it.");
  }
  // A rate's refusal again: the handler may have been paused since the page was shown.
  // Without a rate there is nothing to refuse, and no plan to make again.
  if (q->request.rate > 0) {
    auto plan = admin_.PlanBulk(q->request);
    if (!plan.ok()) return Failed(plan.status());
    auto handlers = HandlersOfPlan(states_, *plan, q->request.now);
    if (!handlers.ok()) return Failed(handlers.status());
    if (const PlanHandler* paused = PausedUnderRate(*handlers, q->request.rate)) {
      return Message(409, "Handler paused", PausedRefusal(*paused));
    }
  }
  auto done = ActBulk(admin_, q->request);
  if (!done.ok()) return Failed(done.status());
  Metrics()
      .bulk_jobs_rearmed.With({BulkVerbName(q->request.verb)})
      .Inc(static_cast<uint64_t>(*done));
  // The same line as the CLI's bulk verbs log (cli/bulk.cc): the journal has both.
  LogInfo({{"msg", "bulk re-armed"},
           {"by", "console"},
           {"verb", BulkVerbName(q->request.verb)},
           {"rearmed", *done},
           {"endpoint", q->request.filter.endpoint},
           {"handler", q->request.filter.handler}});
  if (opts->wake) opts->wake();
  std::string href = "/bulk?verb=" + std::string(BulkVerbName(q->request.verb));
  for (const json& field : BulkFormFields(*q)) {
    href +=
        "&" + field["name"].get<std::string>() + "=" + UrlEncode(field["value"].get<std::string>());
  }
  return Redirect(href + "&done=" + std::to_string(*done));
}

}  // namespace hookbox::console
