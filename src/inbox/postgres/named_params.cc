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

}  // namespace

PositionalSql ToPositional(std::string_view sql) {
  PositionalSql out;
  size_t i = 0;
  auto copy_to = [&](size_t end) {
    out.sql.append(sql.substr(i, end - i));
    i = end;
  };
  while (i < sql.size()) {
    const char c = sql[i];
    const char next = i + 1 < sql.size() ? sql[i + 1] : '\0';
    if (c == '-' && next == '-') {
      size_t eol = sql.find('\n', i);
      copy_to(eol == std::string_view::npos ? sql.size() : eol);
    } else if (c == '/' && next == '*') {
      // Comments nest in PostgreSQL.
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
      copy_to(std::min(j, sql.size()));
    } else if (c == '\'') {
      const bool escape =
          i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') && (i < 2 || !IsWordChar(sql[i - 2]));
      copy_to(QuotedEnd(sql, i, '\'', escape));
    } else if (c == '"') {
      copy_to(QuotedEnd(sql, i, '"', false));
    } else if (c == '$' && (next == '$' || IsWordStart(next)) &&
               (i == 0 || !IsWordChar(sql[i - 1]))) {
      // $tag$ ... $tag$ (a `$` inside an identifier, like a$b, is not a quote).
      size_t tag_end = i + 1;
      while (tag_end < sql.size() && IsWordChar(sql[tag_end])) ++tag_end;
      if (tag_end < sql.size() && sql[tag_end] == '$') {
        std::string_view tag = sql.substr(i, tag_end - i + 1);
        size_t close = sql.find(tag, tag_end + 1);
        copy_to(close == std::string_view::npos ? sql.size() : close + tag.size());
      } else {
        copy_to(tag_end);
      }
    } else if (c == ':' && next == ':') {
      copy_to(i + 2);
    } else if (c == ':' && IsWordStart(next)) {
      size_t end = i + 1;
      while (end < sql.size() && IsWordChar(sql[end])) ++end;
      std::string name(sql.substr(i, end - i));
      auto found = std::find(out.names.begin(), out.names.end(), name);
      size_t index = static_cast<size_t>(found - out.names.begin());
      if (found == out.names.end()) out.names.push_back(name);
      out.sql += "$" + std::to_string(index + 1);
      i = end;
    } else if (IsWordChar(c)) {
      // A whole word at once, so `a:b` inside an identifier-like run is not split oddly.
      size_t end = i + 1;
      while (end < sql.size() && IsWordChar(sql[end])) ++end;
      copy_to(end);
    } else {
      copy_to(i + 1);
    }
  }
  return out;
}

}  // namespace hookbox::pg
