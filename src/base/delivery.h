// A delivery as the pipeline sees it, and the answer it gets: plain data, filled and sent by
// the HTTP layer (src/http/), so the pipeline can be driven in-process by tests and fuzzers.
#pragma once

#include <string>

#include "base/headers.h"
#include "ops/clock.h"

namespace hookbox {

struct Delivery {
  std::string method;
  std::string path;
  std::string remote;  // "ip:port", for logs
  Headers headers;
  std::string body;  // the raw bytes, exactly as received
};

struct Answer {
  int status = 200;
  std::string body;  // short JSON: {"status":..,"event_id":..} or {"error":..}
  Headers headers;   // extra response headers (Retry-After, ...)
};

}  // namespace hookbox
