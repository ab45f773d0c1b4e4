// The `sql` handler's named parameters in PostgreSQL's positional form: what is a parameter
// and what is quoted text, a comment or a cast.
#include "inbox/postgres/named_params.h"

#include <catch2/catch.hpp>

using hookbox::pg::ToPositional;

TEST_CASE("named parameters become $n, the same name the same n") {
  auto p = ToPositional("INSERT INTO t VALUES (:event_id, :body, :event_id)");
  CHECK(p.sql == "INSERT INTO t VALUES ($1, $2, $1)");
  CHECK(p.names == std::vector<std::string>{":event_id", ":body"});
}

TEST_CASE("casts, quotes, comments and dollar quotes are left alone") {
  auto p = ToPositional(
      "SELECT (:body)::jsonb->>'amount', ':not_a_param', E'it\\'s :no', \"col:x\","
      " $q$ :nor $q$, $$ :nor $$ -- :comment\n /* :c /* nested :d */ :e */ :type::text");
  CHECK(p.names == std::vector<std::string>{":body", ":type"});
  CHECK(p.sql ==
        "SELECT ($1)::jsonb->>'amount', ':not_a_param', E'it\\'s :no', \"col:x\","
        " $q$ :nor $q$, $$ :nor $$ -- :comment\n /* :c /* nested :d */ :e */ $2::text");
}

TEST_CASE("doubled quotes stay inside the text") {
  auto p = ToPositional("SELECT 'it''s :x', :sequence");
  CHECK(p.sql == "SELECT 'it''s :x', $1");
  CHECK(p.names == std::vector<std::string>{":sequence"});
}
