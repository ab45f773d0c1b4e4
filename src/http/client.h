// The small HTTP client the `http` handler POSTs events with. It lives in src/http/ because
// this folder is the only code that includes cpp-httplib; callers see a parsed URL and a
// plain reply struct, so a newer client library can replace client.cc alone.
//
// Bounds: the whole exchange (connect, send, headers, body) is cut off at `timeout` by a
// watchdog that shuts the socket down, so a downstream that trickles bytes cannot hold a
// worker longer than that (name resolution is the one step it cannot interrupt); the
// answer's head (status line and headers) may be at most kMaxReplyHead bytes and
// kMaxReplyHeaders header lines, and reading stops there (a downstream that sent 400,000
// headers once held 190 MB that the daemon never gave back); at most kMaxReplyBody bytes of
// the answer's body are kept, the rest is read and dropped.
// Thread-safe: every call uses its own connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "base/headers.h"
#include "base/http_url.h"
#include "base/status.h"

namespace hookbox {

inline constexpr size_t kMaxReplyHead = 64 * 1024;
inline constexpr size_t kMaxReplyHeaders = 256;
inline constexpr size_t kMaxReplyBody = 64 * 1024;

struct HttpReply {
  int status = 0;
  Headers headers;
  std::string body;  // the first kMaxReplyBody bytes
};

// POSTs `body` with `headers` plus Content-Type. Any answer, whatever its status, is a
// reply; failing to get one (refused, reset, TLS, timed out, a head over kMaxReplyHead
// bytes or kMaxReplyHeaders lines) is Status::Unavailable whose what() says why ("timed
// out", "cannot connect", "response head over 64 KiB") and whose ToString() adds the URL
// ("timed out: http://..."). Redirects are not followed.
StatusOr<HttpReply> HttpPost(const HttpUrl& url, const Headers& headers, std::string_view body,
                             const std::string& content_type, std::chrono::milliseconds timeout);

}  // namespace hookbox
