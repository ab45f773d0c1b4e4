// PostgreSQL's SQLSTATEs as the inbox groups them (inbox/postgres/pg.h, namespace sqlstate):
// which codes mean a lost session, contention, a server that cannot serve now, text it
// cannot store, and which mean none of these; and, on the PostgreSQL run, the Status a
// lock timeout becomes.
#include <catch2/catch.hpp>
#include <string_view>

#include "inbox/postgres/pg.h"
#include "ops/storage_health.h"
#include "tests/inbox/test_inbox.h"
#include "tests/pg/pg_testing.h"

namespace sqlstate = hookbox::pg::sqlstate;

TEST_CASE("each SQLSTATE is in the group Conn::Error maps it by, and in no other") {
  enum Group { kLost, kContention, kUnavailable, kText, kNone };
  const std::pair<std::string_view, Group> rows[] = {
      {"08000", kLost},        {"08006", kLost},
      {"57P01", kLost},        {"57P02", kLost},
      {"57P03", kLost},        {"55P03", kContention},
      {"40001", kContention},  {"40P01", kContention},
      {"57014", kUnavailable}, {"25006", kUnavailable},
      {"53100", kUnavailable}, {"53300", kUnavailable},
      {"58030", kUnavailable}, {"22021", kText},
      {"22P05", kText},        {"", kNone},
      {"40000", kNone},        {"23505", kNone},
      {"25P02", kNone},        {"42P18", kNone},
      {"22P02", kNone},
  };
  for (const auto& [code, group] : rows) {
    INFO(code);
    CHECK(sqlstate::IsConnectionLost(code) == (group == kLost));
    CHECK(sqlstate::IsContention(code) == (group == kContention));
    CHECK(sqlstate::IsServerUnavailable(code) == (group == kUnavailable));
    CHECK(sqlstate::IsUnstorableText(code) == (group == kText));
  }
}

TEST_CASE("Conn::Error: a lock lock_timeout gave up on is storage busy, of kind busy") {
  if (!hookbox::OnPostgres()) return;  // the PostgreSQL run of this suite (inbox_postgres)
  hookbox::pgtest::TestDatabase db;
  auto holder = hookbox::pg::Conn::Connect(db.url(), {});
  auto waiter = hookbox::pg::Conn::Connect(db.url(), {"SET lock_timeout = '20ms'"});
  REQUIRE(holder.ok());
  REQUIRE(waiter.ok());
  REQUIRE((*holder)->Run("CREATE TABLE t (x int)").ok());
  REQUIRE((*holder)->Run("BEGIN; LOCK TABLE t").ok());
  const hookbox::Status s = (*waiter)->Run("BEGIN; LOCK TABLE t");
  INFO(s.ToString());
  CHECK(s.code() == hookbox::Status::Code::kUnavailable);
  CHECK(s.unavailable() == hookbox::Status::UnavailableKind::kBusy);
  CHECK(s.what() == "storage busy");
  CHECK(hookbox::IsStorageBusy(s));
  CHECK((*holder)->Run("ROLLBACK").ok());
}
