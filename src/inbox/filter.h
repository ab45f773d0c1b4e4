// The one filter over inbox rows (README, "Finding events"): `inbox list`, the bulk verbs
// (`inbox retry --dead`, `inbox replay`) and the console's list page all select rows with
// an EventFilter, parsed here from the operator's options and turned into SQL by the
// backends with bound parameters only (backend.h, FilterCondition). The inbox layer owns it
// because only the inbox can evaluate it; the CLI and the console only hand it options.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "ops/clock.h"

namespace hookbox {

// `--where POINTER=VALUE` or `--where form:NAME=VALUE`: an exact match on one field of the
// body. A JSON pointer (RFC 6901) matches a string member equal to VALUE, or a number,
// true, false as written in JSON; a body that is not JSON, or lacks the member, does not
// match (and is no error). `form:` matches a urlencoded body with a field NAME whose
// decoded value is VALUE.
struct FieldMatch {
  enum class Kind { kJsonPointer, kForm } kind = Kind::kJsonPointer;
  std::string field;                // the pointer as given ("/data/object/customer"), or NAME
  std::vector<std::string> tokens;  // kJsonPointer: the pointer's reference tokens, unescaped
  std::string value;
};

// Every part is optional ("" or empty = no condition); the parts are ANDed.
struct EventFilter {
  std::string endpoint;
  std::string status;     // an inbox row status: pending processing processed stale dead ignored
  std::string type_glob;  // event type; `*` any run of characters, `?` one character
  std::string handler;    // rows that have a job of this handler
  std::string since;      // received_at >= since (FormatTime text)
  std::string until;      // received_at < until (FormatTime text)
  std::vector<FieldMatch> where;

  bool Empty() const {
    return endpoint.empty() && status.empty() && type_glob.empty() && handler.empty() &&
           since.empty() && until.empty() && where.empty();
  }
};

// One filter option as the operator gave it: the name without dashes ("endpoint", "status",
// "type", "handler", "since", "until", "where") and its value.
using FilterOption = std::pair<std::string, std::string>;

// Parses the options into a filter. Times (`since`, `until`) are RFC 3339, a date
// (YYYY-MM-DD, midnight UTC), or an age before `now` (`90m`, `2h`, `3d`). InvalidArgument,
// naming the bad part, for: an unknown option, a repeated one other than `where`, an unknown
// status, a malformed time or pointer, a `where` without `=`, an inverted time range.
// Every value must be UTF-8 without NUL (PostgreSQL's text takes nothing else, and the same
// filter must mean the same on both backends); `where` may be given any number of times.
StatusOr<EventFilter> ParseFilter(std::span<const FilterOption> options, TimePoint now);

// A JSON pointer (RFC 6901) as its reference tokens, unescaped (`~1` is `/`, `~0` is `~`).
// InvalidArgument unless it starts with `/` and every `~` is `~0` or `~1`. (The empty
// pointer, the whole document, is refused too: a filter matches a member, never the body.)
StatusOr<std::vector<std::string>> ParseJsonPointer(std::string_view pointer);

// What a `where` compares with its VALUE, the same on both backends (the SQLite function
// hookbox_pointer is this; schema/postgres/0005_filter_pointer.sql is its PostgreSQL twin):
// the member at `tokens` of `body` when body is one valid JSON document (RFC 8259, UTF-8),
// and the member is a string (its value, unescaped), a number (its JSON text as written:
// `1.50` stays `1.50`) or true/false (`true`, `false`). nullopt for null, an object, an
// array, a missing member, or a body that is not JSON. An array is indexed by a token that
// is a decimal number without leading zeros (`-`, `-1`, `01` never match); of an object's
// duplicate members the last one counts, as PostgreSQL's json operators have it. Every
// `\u0000` in the body's text is read as `\uFFFD` (PostgreSQL's text cannot hold NUL).
std::optional<std::string> JsonPointerValue(std::string_view body,
                                            std::span<const std::string> tokens);

// The bytes `NAME=VALUE` as a urlencoded form body may carry them, each spelling a
// `form:` match looks for between `&`s (README, "Finding events"): every byte but ASCII
// letters, digits and `-._` percent-encoded, a space as `+` or `%20`, `~` and `*` either
// literal or encoded, hex digits upper- or lower-case. No duplicates; at most 16 spellings.
std::vector<std::string> FormPairSpellings(std::string_view name, std::string_view value);

}  // namespace hookbox
