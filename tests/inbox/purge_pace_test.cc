// The pace of a purge (inbox/purge_pace.h): the batch halves while a transaction is slow and
// doubles while it is fast, within the request's batch and above the floor, and the pause
// after a transaction is as long as it took, at least kPause.
#include "inbox/purge_pace.h"

#include <catch2/catch.hpp>

namespace hookbox {
namespace {

using std::chrono::milliseconds;

// The batch after one transaction of `batch` rows (reached from `most` by slow ones) took
// `took`.
int64_t BatchAfter(int64_t most, int64_t batch, milliseconds took) {
  PurgePace pace(most);
  while (pace.batch() > batch) (void)pace.After(milliseconds(50));
  REQUIRE(pace.batch() == batch);
  (void)pace.After(took);
  return pace.batch();
}

TEST_CASE("purge pace: the batch halves while slow, doubles while fast, within the request's") {
  CHECK(PurgePace(1000).batch() == 1000);  // the first transaction takes the request's batch
  CHECK(BatchAfter(1000, 1000, milliseconds(50)) == 500);
  CHECK(BatchAfter(1000, 500, milliseconds(1)) == 1000);
  CHECK(BatchAfter(1000, 1000, milliseconds(1)) == 1000);  // never above the request's
  CHECK(BatchAfter(1000, 125, milliseconds(10)) == 125);   // between: kept
  CHECK(BatchAfter(1000, 15, milliseconds(50)) == PurgePace::kMinBatch);  // the floor
  // A request for batches under the floor keeps to its own size: halving 5 gave 10 before.
  CHECK(BatchAfter(5, 5, milliseconds(50)) == 5);
  CHECK(BatchAfter(1, 1, milliseconds(50)) == 1);
  CHECK(PurgePace(0).batch() == 1);  // a batch of 0 or less is one row at a time
  CHECK(PurgePace(-3).batch() == 1);
}

TEST_CASE("purge pace: the pause is as long as the transaction took, at least kPause") {
  PurgePace pace(500);
  CHECK(pace.After(milliseconds(0)) == PurgePace::kPause);
  CHECK(pace.After(milliseconds(2)) == PurgePace::kPause);
  CHECK(pace.After(milliseconds(40)) == milliseconds(40));
  CHECK(pace.After(milliseconds(7)) == milliseconds(7));
}

}  // namespace
}  // namespace hookbox
