// The pace of a purge (see purge_pace.h): the batch it takes and the pause after each.
#include "inbox/purge_pace.h"

#include <algorithm>

namespace hookbox {

PurgePace::PurgePace(int64_t most) : most_(std::max<int64_t>(1, most)), batch_(most_) {}

PurgePace::Duration PurgePace::After(Duration took) {
  if (took > kTransaction) {
    // The floor is the request's own batch when that is smaller: a purge asked for batches
    // of 5 never grows to 10 by halving.
    batch_ = std::max<int64_t>(std::min(kMinBatch, most_), batch_ / 2);
  } else if (took < kTransaction / 4) {
    batch_ = std::min<int64_t>(most_, batch_ * 2);
  }
  return std::max<Duration>(took, kPause);
}

}  // namespace hookbox
