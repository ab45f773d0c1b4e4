// File descriptors for `hookbox serve`: raising the soft RLIMIT_NOFILE to the hard limit at
// start, and fitting limits.max_connections under it. Every connection the webhook listener
// keeps is a descriptor, and so is everything else the daemon opens while it runs: the
// database, the listening sockets, and each handler attempt's pipes, child and sockets. A
// max_connections the limit cannot hold would let a flood of idle connections take the
// descriptors the dispatcher needs to start handlers, so serve lowers it to what fits (with a
// warning) and refuses to start when not even kMinConnections fit.
//
// FitConnections is pure (numbers in, numbers out) so the reserve can be tested without
// touching the process's limits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace hookbox {

// What the daemon needs descriptors for, beside the webhook connections.
struct DescriptorNeeds {
  int handler_slots = 0;  // attempts that may run at once: every handler's concurrency, summed
  int http_threads = 0;   // webhook threads: each may run a sync endpoint's handlers
  bool postgres = false;  // the inbox is PostgreSQL (a pool of connections) rather than SQLite
};

// The reserve, kept out of max_connections:
//   kFdBase (64): stdio, the webhook and admin listeners and the admin's own connections,
//     the listener's epoll/event descriptors, SQLite's database, WAL and shared-memory files
//     (a few per connection), the systemd notify socket, the log, and a margin;
//   + kFdPerHandlerThread (8) for each handler slot and each webhook thread: an `exec` attempt
//     holds three pipes (6 descriptors) and a pidfd at its peak, an `http` attempt a socket,
//     a `file` attempt a file and its folder, and a webhook thread also its connection;
//   + kFdPostgres (26) with PostgreSQL: its connection pool (10) and the sync endpoints'
//     hold pool (16), as sized in inbox/postgres/postgres_inbox.cc.
inline constexpr uint64_t kFdBase = 64;
inline constexpr uint64_t kFdPerHandlerThread = 8;
inline constexpr uint64_t kFdPostgres = 26;
// Below this many connections the listener is not worth running: serve refuses to start.
inline constexpr uint64_t kMinConnections = 16;

uint64_t DescriptorReserve(const DescriptorNeeds& needs);

struct ConnectionFit {
  size_t max_connections = 0;  // what the listener gets: min(configured, limit - reserve)
  uint64_t reserve = 0;        // DescriptorReserve(needs)
  bool lowered = false;        // max_connections < configured
};

// Fits `configured` (limits.max_connections) under the soft open-file limit `soft_limit`
// (RLIM_INFINITY allowed). InvalidArgument, saying both numbers, when fewer than
// kMinConnections fit.
StatusOr<ConnectionFit> FitConnections(uint64_t soft_limit, size_t configured,
                                       const DescriptorNeeds& needs);

struct NofileLimit {
  uint64_t before = 0;  // the soft limit found at start
  uint64_t soft = 0;    // the soft limit now
  uint64_t hard = 0;
};

// Raises the soft RLIMIT_NOFILE to the hard one (a no-op when they are equal). When the
// kernel refuses, the soft limit stays as it was and that is what is returned; the error
// only when the limit cannot even be read.
StatusOr<NofileLimit> RaiseNofileLimit();

}  // namespace hookbox
