// One condition on a delivery's body, `POINTER=VALUE` or `form:NAME=VALUE`, and how it is
// read and matched. The operator writes the same condition in two places and it means the
// same in both: `inbox list --where` and the bulk verbs select stored rows with it (the
// backends turn it into SQL: inbox/backend.cc, FilterCondition, with JsonPointerValue as
// SQLite's function and schema/postgres/0007_filter_pointer.sql its twin), and a route's
// `where:` (README, "Routes by content") decides at accept which handlers an event gets
// (FieldMatches, here). The parsing and the matching live here once so that the two cannot
// drift apart.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hookbox {

// An exact match on one field of the body. A JSON pointer (RFC 6901) matches a string
// member equal to VALUE, or a number, true, false as written in JSON; a body that is not
// JSON, or lacks the member, does not match (and is no error). `form:` matches a
// urlencoded body with a field NAME whose decoded value is VALUE.
struct FieldMatch {
  enum class Kind { kJsonPointer, kForm } kind = Kind::kJsonPointer;
  std::string field;                // the pointer as given ("/data/object/customer"), or NAME
  std::vector<std::string> tokens;  // kJsonPointer: the pointer's reference tokens, unescaped
  std::string value;
  // kForm: FormPairSpellings(field, value), made once by ParseFieldMatch, not per body.
  std::vector<std::string> spellings;
};

// `POINTER=VALUE` or `form:NAME=VALUE`, split at the first `=`. InvalidArgument, its what()
// the whole reason, for: no `=`, `form:` without a name, a malformed pointer, text that is
// not UTF-8 or holds a NUL (PostgreSQL's text takes nothing else, and the same condition
// must mean the same on both backends).
StatusOr<FieldMatch> ParseFieldMatch(std::string_view text);

// The condition as the operator writes it (ParseFieldMatch's input, rebuilt).
std::string FieldMatchText(const FieldMatch& m);

// Whether `body` meets the condition, exactly as the backends' SQL decides it for a stored
// row: JsonPointerValue(body) == value, or one of FormPairSpellings between `&`s.
bool FieldMatches(std::string_view body, const FieldMatch& m);

// A JSON pointer (RFC 6901) as its reference tokens, unescaped (`~1` is `/`, `~0` is `~`).
// InvalidArgument unless it starts with `/` and every `~` is `~0` or `~1`. (The empty
// pointer, the whole document, is refused too: a condition matches a member, never the
// body.)
StatusOr<std::vector<std::string>> ParseJsonPointer(std::string_view pointer);

// What a JSON pointer compares with its VALUE, the same on both backends: the member at
// `tokens` of `body` when body is one valid JSON document (RFC 8259, UTF-8), and the member
// is a string (its value, unescaped), a number (its JSON text as written: `1.50` stays
// `1.50`) or true/false (`true`, `false`). nullopt for null, an object, an array, a missing
// member, or a body that is not JSON. An array is indexed by a token that is a decimal
// number without leading zeros (`-`, `-1`, `01` never match); of an object's duplicate
// members the last one counts, as PostgreSQL's json operators have it. Every `\u0000` in the
// body's text is read as `\uFFFD` (PostgreSQL's text cannot hold NUL).
std::optional<std::string> JsonPointerValue(std::string_view body,
                                            std::span<const std::string> tokens);

// The bytes `NAME=VALUE` as a urlencoded form body may carry them, each spelling a
// `form:` match looks for between `&`s (README, "Finding events"): every byte but ASCII
// letters, digits and `-._` percent-encoded, a space as `+` or `%20`, `~` and `*` either
// literal or encoded, hex digits upper- or lower-case. No duplicates; at most 16 spellings.
std::vector<std::string> FormPairSpellings(std::string_view name, std::string_view value);

}  // namespace hookbox
