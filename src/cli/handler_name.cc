// The one reading of a handler name the operator gives (`--handler` of `inbox list`, `inbox
// retry --dead`, `inbox replay`; the target of `handler pause|resume`): `ENDPOINT/HANDLER` as
// `handler list` shows it, or the bare `HANDLER` when one endpoint alone has a handler of that
// name. The config's handlers are asked first; a name the config does not settle is looked up
// among the handlers the inbox still has jobs or state of (a renamed handler's history). A
// name that matches none is an error naming the closest names, never an empty answer.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status_macros.h"
#include "cli/cli.h"
#include "ops/terminal.h"
#include "work/held.h"

namespace hookbox::cli {
namespace {

// What was asked: an endpoint ("" for a bare name without --endpoint) and a handler.
struct Asked {
  std::string endpoint, handler;
  std::string Text() const { return endpoint.empty() ? handler : endpoint + "/" + handler; }
};

StatusOr<Asked> ParseAsked(const std::string& name, const std::string& endpoint) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return Asked{endpoint, name};
  if (slash == 0 || slash + 1 == name.size() || name.find('/', slash + 1) != std::string::npos) {
    return Status::InvalidArgument(TerminalSafe(name) +
                                   " is neither ENDPOINT/HANDLER nor HANDLER (hookbox handler "
                                   "list shows the names)");
  }
  Asked asked{name.substr(0, slash), name.substr(slash + 1)};
  if (!endpoint.empty() && endpoint != asked.endpoint) {
    return Status::InvalidArgument("--handler " + TerminalSafe(name) + " names endpoint " +
                                   TerminalSafe(asked.endpoint) + ", but --endpoint is " +
                                   TerminalSafe(endpoint));
  }
  return asked;
}

std::vector<HandlerRef> Matching(const std::vector<HandlerRef>& all, const Asked& asked) {
  std::vector<HandlerRef> out;
  for (const HandlerRef& h : all) {
    if (h.handler == asked.handler && (asked.endpoint.empty() || h.endpoint == asked.endpoint)) {
      out.push_back(h);
    }
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// How far a handler is from what was asked: 0 when one name starts with the other (a name
// cut short, `http.127` for `http.127.0.0.1-9000.0b5e2d71`), else the edit distance of the
// handler's name, or of ENDPOINT/HANDLER when an endpoint was asked.
size_t Distance(const HandlerRef& h, const Asked& asked) {
  if (!asked.handler.empty() &&
      (h.handler.starts_with(asked.handler) || asked.handler.starts_with(h.handler))) {
    return asked.endpoint.empty() || asked.endpoint == h.endpoint ? 0 : 1;
  }
  const size_t bare = EditDistance(asked.handler, h.handler);
  if (asked.endpoint.empty()) return bare;
  return std::min(bare + (asked.endpoint == h.endpoint ? 0 : 1),
                  EditDistance(asked.Text(), h.endpoint + "/" + h.handler));
}

// "; the closest: a/b, c/d" (at most three), or why there is nothing to suggest.
std::string Closest(std::vector<HandlerRef> all, const Asked& asked) {
  if (all.empty()) return "; no handler is configured or has jobs";
  std::stable_sort(all.begin(), all.end(), [&](const HandlerRef& x, const HandlerRef& y) {
    return Distance(x, asked) < Distance(y, asked);
  });
  std::string out = "; the closest: ";
  for (size_t i = 0; i < all.size() && i < 3; ++i) {
    out += (i ? ", " : "") + TerminalSafe(all[i].endpoint + "/" + all[i].handler);
  }
  return out;
}

// `all` without the repeats of names both lists have.
std::vector<HandlerRef> Union(std::vector<HandlerRef> a, const std::vector<HandlerRef>& b) {
  for (const HandlerRef& h : b) {
    const bool seen = std::any_of(a.begin(), a.end(), [&](const HandlerRef& x) {
      return x.endpoint == h.endpoint && x.handler == h.handler;
    });
    if (!seen) a.push_back(h);
  }
  return a;
}

Status Unknown(const Config& config, const Asked& asked, const std::vector<HandlerRef>& all,
               bool inbox_asked) {
  const char* where = inbox_asked ? " in the config or the inbox" : " in the config";
  std::string what = !asked.endpoint.empty() && config.FindByName(asked.endpoint)
                         ? "endpoint " + TerminalSafe(asked.endpoint) + " has no handler named " +
                               TerminalSafe(asked.handler) + where
                         : "no handler " + TerminalSafe(asked.Text()) + where;
  return Status::NotFound(what + Closest(all, asked) + " (hookbox handler list shows the names)");
}

Status Ambiguous(const Asked& asked, const std::vector<HandlerRef>& matches) {
  std::string forms;
  for (const HandlerRef& h : matches) {
    forms += (forms.empty() ? "" : ", ") + TerminalSafe(h.endpoint + "/" + h.handler);
  }
  return Status::InvalidArgument("handler " + TerminalSafe(asked.handler) +
                                 " is on more than one endpoint: name one of " + forms);
}

// One match is the answer; more are ambiguous; none is nullopt.
std::optional<StatusOr<HandlerRef>> Decide(const std::vector<HandlerRef>& matches,
                                           const Asked& asked) {
  if (matches.empty()) return std::nullopt;
  if (matches.size() > 1) return StatusOr<HandlerRef>(Ambiguous(asked, matches));
  return StatusOr<HandlerRef>(matches.front());
}

}  // namespace

StatusOr<HandlerRef> ResolveHandler(const Config& config, Inbox* inbox, const std::string& name,
                                    const std::string& endpoint) {
  ASSIGN_OR_RETURN(const Asked asked, ParseAsked(name, endpoint));
  const std::vector<HandlerRef> configured = ConfiguredHandlers(config);
  if (auto decided = Decide(Matching(configured, asked), asked)) return *std::move(decided);
  if (!inbox) return Unknown(config, asked, configured, false);
  ASSIGN_OR_RETURN(const std::vector<HandlerRef> known, inbox->KnownHandlers());
  if (auto decided = Decide(Matching(known, asked), asked)) return *std::move(decided);
  return Unknown(config, asked, Union(configured, known), true);
}

bool ResolveFilterHandler(const Config& config, Inbox& inbox, EventFilter& filter, int* exit_code) {
  if (filter.handler.empty()) return true;
  auto ref = ResolveHandler(config, &inbox, filter.handler, filter.endpoint);
  if (!ref.ok()) {
    *exit_code = ReportFailure(ref.status());
    return false;
  }
  filter.endpoint = ref->endpoint;
  filter.handler = ref->handler;
  return true;
}

}  // namespace hookbox::cli
