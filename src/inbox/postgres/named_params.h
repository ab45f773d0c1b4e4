// The `sql` handler's named parameters (:event_id, :body, ...) in PostgreSQL's positional
// form ($1, $2, ...). PostgreSQL prepares only positional parameters, so each statement is
// rewritten once: every :name outside quotes ('...', E'...', "...", $tag$...$tag$) and
// comments becomes $n, the same name the same n; `::` casts are left alone.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hookbox::pg {

struct PositionalSql {
  std::string sql;                 // with $1..$n
  std::vector<std::string> names;  // names[i] (":event_id") is bound to $(i+1)
};

PositionalSql ToPositional(std::string_view sql);

}  // namespace hookbox::pg
