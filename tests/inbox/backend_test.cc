// The backend-independent half of the inbox (inbox/backend.h) that needs no database: the
// mapping from the older per-backend migration numbers to the shared ones.
#include "inbox/backend.h"

#include <catch2/catch.hpp>

using namespace hookbox;

namespace {

const std::vector<Migration> kShared = {
    {1, "0001_inbox", ""}, {2, "0002_purge", ""}, {5, "0005_by_body", ""}, {7, "0007_state", ""}};

}  // namespace

TEST_CASE("recorded migrations are read in the shared numbers, by the name after the number") {
  CHECK(SchemaVersionOf({}, kShared) == 0);
  // Recorded by a binary that numbered its own: 0003_by_body is 5 now, 0004_state 7.
  const std::vector<RecordedMigration> old = {
      {1, "0001_inbox"}, {2, "0002_purge"}, {3, "0003_by_body"}, {4, "0004_state"}};
  CHECK(SchemaVersionOf(old, kShared) == 7);
  CHECK(SchemaVersionOf({{1, "0001_inbox"}, {3, "0003_by_body"}}, kShared) == 5);
  // A row of a name this binary does not know (a newer binary's) counts as recorded.
  CHECK(SchemaVersionOf({{1, "0001_inbox"}, {9, "0009_later"}}, kShared) == 9);
}

TEST_CASE("renumbering runs from the highest recorded row down, and skips rows in place") {
  const auto moves = Renumbered(
      {{2, "0002_purge"}, {3, "0003_by_body"}, {1, "0001_inbox"}, {4, "0004_state"}}, kShared);
  REQUIRE(moves.size() == 2);
  CHECK(moves[0].first.version == 4);
  CHECK(moves[0].second->version == 7);
  CHECK(std::string(moves[0].second->name) == "0007_state");
  CHECK(moves[1].first.version == 3);
  CHECK(moves[1].second->version == 5);
  // Already in the shared numbers, or unknown: nothing to move.
  CHECK(Renumbered({{1, "0001_inbox"}, {5, "0005_by_body"}, {9, "0009_later"}}, kShared).empty());
}

TEST_CASE("migrate has work when a migration is missing or a row has an old number") {
  const std::vector<RecordedMigration> current = {
      {1, "0001_inbox"}, {2, "0002_purge"}, {5, "0005_by_body"}, {7, "0007_state"}};
  CHECK_FALSE(MigrationDue(current, kShared));
  CHECK(MigrationDue({}, kShared));
  CHECK(MigrationDue({{1, "0001_inbox"}, {2, "0002_purge"}, {5, "0005_by_body"}}, kShared));
  // Up to date, but under the old numbers.
  CHECK(MigrationDue({{1, "0001_inbox"}, {2, "0002_purge"}, {3, "0003_by_body"}, {4, "0004_state"}},
                     kShared));
}
