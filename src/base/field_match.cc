// One condition on a body (see field_match.h): read from the operator's text, and matched
// against a body the way the backends' SQL matches a stored row.
#include "base/field_match.h"

#include <simdjson.h>

#include <algorithm>
#include <set>

#include "base/utf8.h"

namespace hookbox {
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The value's bytes as a form encoder writes them: ASCII letters, digits and -._ literal,
// `~` and `*` literal when `keep_tilde` / `keep_star`, a space as `+` (or %20 when not
// `plus`), everything else %XX in upper- or lower-case hex.
std::string FormEncode(std::string_view s, bool plus, bool keep_tilde, bool keep_star, bool upper) {
  const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || (c == '~' && keep_tilde) || (c == '*' && keep_star)) {
      out += static_cast<char>(c);
    } else if (c == ' ' && plus) {
      out += '+';
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The JSON text of a number or literal as simdjson hands it: the token and the whitespace
// after it.
std::string_view TrimJsonSpace(std::string_view raw) {
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t')) {
    raw.remove_suffix(1);
  }
  return raw;
}

std::optional<std::string> Resolve(simdjson::ondemand::value v, std::span<const std::string> tokens,
                                   bool* failed);

// The value the pointer ends at: a string's text, a number's or literal's JSON text; null,
// objects and arrays are no value.
std::optional<std::string> Leaf(simdjson::ondemand::value v, simdjson::ondemand::json_type type,
                                bool* failed) {
  switch (type) {
    case simdjson::ondemand::json_type::string: {
      std::string_view s;
      if (v.get_string().get(s) != simdjson::SUCCESS) {
        *failed = true;
        return std::nullopt;
      }
      return std::string(s);
    }
    case simdjson::ondemand::json_type::number:
    case simdjson::ondemand::json_type::boolean:
      return std::string(TrimJsonSpace(v.raw_json_token()));
    default:
      return std::nullopt;
  }
}

// Of an object's members every one named `tokens[0]` is followed, and the last one's answer
// stands (a later duplicate replaces an earlier match, or an earlier miss).
std::optional<std::string> InObject(simdjson::ondemand::value v,
                                    std::span<const std::string> tokens, bool* failed) {
  simdjson::ondemand::object object;
  if (v.get_object().get(object) != simdjson::SUCCESS) {
    *failed = true;
    return std::nullopt;
  }
  std::optional<std::string> found;
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      *failed = true;
      return std::nullopt;
    }
    if (key != tokens.front()) continue;
    simdjson::ondemand::value member;
    if (field.value().get(member) != simdjson::SUCCESS) {
      *failed = true;
      return std::nullopt;
    }
    found = Resolve(member, tokens.subspan(1), failed);
    if (*failed) return std::nullopt;
  }
  return found;
}

// A decimal index without leading zeros (RFC 6901), as the PostgreSQL twin reads it.
std::optional<std::string> InArray(simdjson::ondemand::value v, std::span<const std::string> tokens,
                                   bool* failed) {
  const std::string& token = tokens.front();
  if (!AllDigits(token) || (token.size() > 1 && token[0] == '0') || token.size() > 9) {
    return std::nullopt;
  }
  const size_t index = std::stoul(token);
  simdjson::ondemand::array array;
  if (v.get_array().get(array) != simdjson::SUCCESS) {
    *failed = true;
    return std::nullopt;
  }
  size_t i = 0;
  for (auto element : array) {
    simdjson::ondemand::value item;
    if (element.get(item) != simdjson::SUCCESS) {
      *failed = true;
      return std::nullopt;
    }
    if (i++ == index) return Resolve(item, tokens.subspan(1), failed);
  }
  return std::nullopt;
}

// The walk of JsonPointerValue over an on-demand value; forward-only.
std::optional<std::string> Resolve(simdjson::ondemand::value v, std::span<const std::string> tokens,
                                   bool* failed) {
  simdjson::ondemand::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) {
    *failed = true;
    return std::nullopt;
  }
  if (tokens.empty()) return Leaf(v, type, failed);
  if (type == simdjson::ondemand::json_type::object) return InObject(v, tokens, failed);
  if (type == simdjson::ondemand::json_type::array) return InArray(v, tokens, failed);
  return std::nullopt;
}

}  // namespace

StatusOr<FieldMatch> ParseFieldMatch(std::string_view text) {
  if (!IsTextWithoutNul(text)) {
    return Status::InvalidArgument("the condition is not UTF-8 text (or holds a NUL byte)");
  }
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return Status::InvalidArgument(
        "a condition is POINTER=VALUE or form:NAME=VALUE, and this has no =");
  }
  FieldMatch m;
  m.field = text.substr(0, eq);
  m.value = text.substr(eq + 1);
  if (m.field.starts_with("form:")) {
    m.kind = FieldMatch::Kind::kForm;
    m.field = m.field.substr(5);
    if (m.field.empty()) return Status::InvalidArgument("form: needs a field name before =");
    m.spellings = FormPairSpellings(m.field, m.value);
    return m;
  }
  auto tokens = ParseJsonPointer(m.field);
  if (!tokens.ok()) return Status::InvalidArgument(tokens.status().ToString());
  m.tokens = *std::move(tokens);
  return m;
}

std::string FieldMatchText(const FieldMatch& m) {
  return (m.kind == FieldMatch::Kind::kForm ? "form:" : "") + m.field + "=" + m.value;
}

bool FieldMatches(std::string_view body, const FieldMatch& m) {
  if (m.kind == FieldMatch::Kind::kJsonPointer) return JsonPointerValue(body, m.tokens) == m.value;
  // As the SQL does it: one of the spellings as a whole field, between `&`s or the body's ends.
  for (const std::string& pair : m.spellings) {
    for (size_t at = body.find(pair); at != std::string_view::npos; at = body.find(pair, at + 1)) {
      const size_t end = at + pair.size();
      if ((at == 0 || body[at - 1] == '&') && (end == body.size() || body[end] == '&')) return true;
    }
  }
  return false;
}

StatusOr<std::vector<std::string>> ParseJsonPointer(std::string_view pointer) {
  if (!pointer.starts_with('/')) {
    return Status::InvalidArgument("bad JSON pointer",
                                   "a JSON pointer starts with / (like /data/object/customer)");
  }
  std::vector<std::string> tokens(1);
  for (size_t i = 1; i < pointer.size(); ++i) {
    const char c = pointer[i];
    if (c == '/') {
      tokens.emplace_back();
    } else if (c == '~') {
      const char next = i + 1 < pointer.size() ? pointer[i + 1] : '\0';
      if (next != '0' && next != '1') {
        return Status::InvalidArgument("bad JSON pointer",
                                       "~ must be followed by 0 (for ~) or 1 (for /), at offset " +
                                           std::to_string(i) + " of " + std::string(pointer));
      }
      tokens.back() += next == '0' ? '~' : '/';
      ++i;
    } else {
      tokens.back() += c;
    }
  }
  return tokens;
}

std::optional<std::string> JsonPointerValue(std::string_view body,
                                            std::span<const std::string> tokens) {
  thread_local simdjson::ondemand::parser walker;
  thread_local simdjson::dom::parser validator;
  // PostgreSQL's json cannot turn the escape \u0000 into text, anywhere on the way to a
  // member; both backends read it as \uFFFD instead, so the same bodies match on both.
  constexpr std::string_view kNulEscape = "\\u0000";
  std::string replaced;
  if (body.find(kNulEscape) != std::string_view::npos) {
    replaced = body;
    for (size_t at = replaced.find(kNulEscape); at != std::string::npos;
         at = replaced.find(kNulEscape, at + kNulEscape.size())) {
      replaced.replace(at, kNulEscape.size(), "\\uFFFD");
    }
    body = replaced;
  }
  const simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  if (walker.iterate(padded).get(doc) != simdjson::SUCCESS) return std::nullopt;
  simdjson::ondemand::value root;
  if (doc.get_value().get(root) != simdjson::SUCCESS) return std::nullopt;
  bool failed = false;
  std::optional<std::string> found = Resolve(root, tokens, &failed);
  if (failed || !found) return std::nullopt;
  // The on-demand walk reads only what it needs; a match stands only in a body that is one
  // valid JSON document throughout, as PostgreSQL's json input demands. Checked only for
  // a match, so a body without the member costs one pass.
  simdjson::dom::element ignored;
  if (validator.parse(padded).get(ignored) != simdjson::SUCCESS) return std::nullopt;
  return found;
}

std::vector<std::string> FormPairSpellings(std::string_view name, std::string_view value) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (bool plus : {true, false}) {
    for (bool keep_tilde : {false, true}) {
      for (bool keep_star : {true, false}) {
        for (bool upper : {true, false}) {
          std::string pair = FormEncode(name, plus, keep_tilde, keep_star, upper) + "=" +
                             FormEncode(value, plus, keep_tilde, keep_star, upper);
          if (seen.insert(pair).second) out.push_back(std::move(pair));
        }
      }
    }
  }
  return out;
}

}  // namespace hookbox
