// A delivery as the pipeline sees it, and the answer it gets: plain data that the HTTP layer
// (src/http/) fills and sends and the pipeline (src/receive/) takes and returns. They live in
// base/ so that neither layer includes the other, and so that tests and fuzzers can drive the
// pipeline in-process.
#pragma once

#include <string>

#include "base/headers.h"

namespace hookbox {

struct Delivery {
  std::string method;
  std::string path;    // the target's path, not percent-decoded
  std::string query;   // what followed the target's '?', byte for byte; "" when none
  std::string remote;  // "ip:port", for logs
  std::string peer;    // the connection's IP address alone; "" for a unix socket
  Headers headers;
  std::string body;  // the raw bytes, exactly as received
};

struct Answer {
  int status = 200;
  std::string body;  // short JSON: {"status":..,"event_id":..} or {"error":..}
  Headers headers;   // extra response headers (Retry-After, ...)
};

}  // namespace hookbox
