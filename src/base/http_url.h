// An http(s) URL, parsed once where it is configured: the http handler's `url:`, the OTLP
// collector's `tracing.otlp:`, `hookbox send`'s target. In base/ so that the config can
// check one at load; only http/client.cc speaks HTTP to it.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace hookbox {

// "http://host[:port][/path][?query]" or the same with https (certificates are verified
// against the system's CA store). Parsed once, at load.
struct HttpUrl {
  bool https = false;
  std::string host;  // without brackets for an IPv6 literal
  int port = 80;
  std::string path = "/";  // path and query, as given
  std::string ToString() const;
};

// Rejects other schemes, user:password@ (credentials belong in headers, which never reach
// logs), fragments, whitespace and control characters, and ports outside 1-65535.
StatusOr<HttpUrl> ParseHttpUrl(std::string_view text);

}  // namespace hookbox
