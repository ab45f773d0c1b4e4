// The open-file limit and the connections that fit under it (see fdlimit.h).
#include "ops/fdlimit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace hookbox {

uint64_t DescriptorReserve(const DescriptorNeeds& needs) {
  const uint64_t threads = static_cast<uint64_t>(std::max(needs.handler_slots, 0)) +
                           static_cast<uint64_t>(std::max(needs.http_threads, 0));
  return kFdBase + kFdPerHandlerThread * threads + (needs.postgres ? kFdPostgres : 0);
}

StatusOr<ConnectionFit> FitConnections(uint64_t soft_limit, size_t configured,
                                       const DescriptorNeeds& needs) {
  ConnectionFit fit;
  fit.reserve = DescriptorReserve(needs);
  if (soft_limit == static_cast<uint64_t>(RLIM_INFINITY)) {
    fit.max_connections = configured;
    return fit;
  }
  const uint64_t room = soft_limit > fit.reserve ? soft_limit - fit.reserve : 0;
  if (room < kMinConnections) {
    return Status::InvalidArgument(
        "the open-file limit (" + std::to_string(soft_limit) + ") leaves room for " +
        std::to_string(room) + " connections after the " + std::to_string(fit.reserve) +
        " descriptors kept for the database, listeners and handlers; at least " +
        std::to_string(kMinConnections) +
        " are needed: raise LimitNOFILE (ulimit -n), or lower the handlers' concurrency or "
        "limits.threads");
  }
  fit.max_connections = static_cast<size_t>(std::min<uint64_t>(configured, room));
  fit.lowered = fit.max_connections < configured;
  return fit;
}

StatusOr<NofileLimit> RaiseNofileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Status::Internal(std::string("cannot read RLIMIT_NOFILE: ") + std::strerror(errno));
  }
  NofileLimit result{limit.rlim_cur, limit.rlim_cur, limit.rlim_max};
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) result.soft = raised.rlim_cur;
  }
  return result;
}

}  // namespace hookbox
