// Named to positional parameters for PostgreSQL (see named_params.h).
#include "inbox/postgres/named_params.h"

#include <algorithm>
#include <cctype>

namespace hookbox::pg {
namespace {

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsWordStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

// The end (one past) of the quoted text that starts at i with `quote`; a doubled quote
// stays inside, and with `backslashes` (E'...') so does a backslash-escaped character.
size_t QuotedEnd(std::string_view sql, size_t i, char quote, bool backslashes) {
  for (size_t j = i + 1; j < sql.size(); ++j) {
    if (backslashes && sql[j] == '\\') {
      ++j;
    } else if (sql[j] == quote) {
      if (j + 1 < sql.size() && sql[j + 1] == quote) {
        ++j;
      } else {
        return j + 1;
      }
    }
  }
  return sql.size();
}

// The end (one past) of the comment that starts at i: "--" to the line's end, or a
// /* */ block (they nest in PostgreSQL).
size_t CommentEnd(std::string_view sql, size_t i) {
  if (sql[i] == '-') {
    size_t eol = sql.find('\n', i);
    return eol == std::string_view::npos ? sql.size() : eol;
  }
  size_t j = i + 2;
  int depth = 1;
  while (j < sql.size() && depth > 0) {
    if (sql.compare(j, 2, "/*") == 0) {
      ++depth;
      j += 2;
    } else if (sql.compare(j, 2, "*/") == 0) {
      --depth;
      j += 2;
    } else {
      ++j;
    }
  }
  return std::min(j, sql.size());
}

// The end of $tag$ ... $tag$ starting at i; of the `$word` alone when no `$` closes the tag.
size_t DollarQuotedEnd(std::string_view sql, size_t i) {
  size_t tag_end = i + 1;
  while (tag_end < sql.size() && IsWordChar(sql[tag_end])) ++tag_end;
  if (tag_end >= sql.size() || sql[tag_end] != '$') return tag_end;
  std::string_view tag = sql.substr(i, tag_end - i + 1);
  size_t close = sql.find(tag, tag_end + 1);
  return close == std::string_view::npos ? sql.size() : close + tag.size();
}

// The end of the text starting at i that is copied as it is: a comment, a quoted string or
// identifier, a dollar-quoted text, a `::` cast, a whole word (so that `a:b` inside an
// identifier-like run is not split), or one character.
size_t VerbatimEnd(std::string_view sql, size_t i) {
  const char c = sql[i];
  const char next = i + 1 < sql.size() ? sql[i + 1] : '\0';
  if ((c == '-' && next == '-') || (c == '/' && next == '*')) return CommentEnd(sql, i);
  if (c == '\'') {
    const bool escape =
        i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') && (i < 2 || !IsWordChar(sql[i - 2]));
    return QuotedEnd(sql, i, '\'', escape);
  }
  if (c == '"') return QuotedEnd(sql, i, '"', false);
  // (A `$` inside an identifier, like a$b, is not a quote.)
  if (c == '$' && (next == '$' || IsWordStart(next)) && (i == 0 || !IsWordChar(sql[i - 1]))) {
    return DollarQuotedEnd(sql, i);
  }
  if (c == ':' && next == ':') return i + 2;
  size_t end = i + 1;
  if (IsWordChar(c)) {
    while (end < sql.size() && IsWordChar(sql[end])) ++end;
  }
  return end;
}

}  // namespace

PositionalSql ToPositional(std::string_view sql) {
  PositionalSql out;
  size_t i = 0;
  while (i < sql.size()) {
    if (sql[i] == ':' && i + 1 < sql.size() && IsWordStart(sql[i + 1])) {
      size_t end = i + 1;
      while (end < sql.size() && IsWordChar(sql[end])) ++end;
      std::string name(sql.substr(i, end - i));
      auto found = std::find(out.names.begin(), out.names.end(), name);
      size_t index = static_cast<size_t>(found - out.names.begin());
      if (found == out.names.end()) out.names.push_back(name);
      out.sql += "$" + std::to_string(index + 1);
      i = end;
      continue;
    }
    const size_t end = VerbatimEnd(sql, i);
    out.sql.append(sql.substr(i, end - i));
    i = end;
  }
  return out;
}

}  // namespace hookbox::pg
