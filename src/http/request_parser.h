// The one reading of a request's bytes: every byte a client sends on the webhook and admin
// ports goes through a RequestParser, and nothing else in hookbox parses HTTP requests.
// It is Boost.Beast's HTTP/1.1 parser (RFC 7230 grammar, header and body limits, chunked
// decoding), fed plain buffers, with the stricter rules hookbox adds on top (RFC 9112):
//
//   - a line ended by a bare LF, or a header folded over two lines (obs-fold)   -> 400
//   - Content-Length: digits only, one value (identical repeats are one value)  -> else 400
//   - Transfer-Encoding and Content-Length together                             -> 400
//   - Transfer-Encoding other than exactly `chunked`                            -> 501
//   - more than max_headers header lines, or a head over max_head bytes         -> 431
//   - a body over max_body, by Content-Length or as chunks arrive               -> 413
//   - a POST, PUT or PATCH with neither Content-Length nor chunked              -> 411
//   - a version other than HTTP/1.0 or HTTP/1.1                                 -> 505
//   - a target other than /path, http(s)://host[:port]/path, or * for OPTIONS  -> 400
//   - an HTTP/1.1 request without Host; Host twice; Host not host[:port]        -> 400
//   - HTTP/1.0 with Transfer-Encoding: read and answered, then the connection
//     closes (keep_alive false: RFC 9112 §6.1, the next bytes are not trusted)
//
// Header names and values are kept exactly as received (values without the optional white
// space around them, RFC 9110 §5.5): nothing is percent-decoded or folded. Chunk extensions
// are tolerated and trailers are read and dropped.
//
// Use: Feed() the bytes as they arrive (the same parser for one request); it consumes what
// belongs to this request and leaves the rest (a pipelined next request) to the caller.
// Once head_done(), head() is valid (for `Expect: 100-continue`); once done(), request()
// holds the body too. After an error the parser takes no more bytes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hookbox {

struct HttpRequest {
  std::string method;
  std::string target;                                        // the request-target, raw
  int version = 11;                                          // 10 or 11
  std::vector<std::pair<std::string, std::string>> headers;  // in order, as received
  std::string body;              // decoded (chunked) or as sent (Content-Length)
  bool keep_alive = true;        // by version and Connection
  bool expect_continue = false;  // Expect: 100-continue
  bool chunked = false;
  size_t content_length = 0;  // when not chunked
};

// A request the parser refused: the status to answer with and why.
struct HttpRefusal {
  int status = 400;
  std::string message;
};

struct ParserLimits {
  size_t max_head = 64 * 1024;  // request line + headers, in bytes
  size_t max_body = 1 << 20;
  size_t max_headers = 100;  // header lines
};

class RequestParser final {
 public:
  explicit RequestParser(ParserLimits limits);
  ~RequestParser();
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Reads from `bytes`; returns how many belong to this request and were taken. Bytes not
  // taken must be offered again with what arrives after them (a head is only read whole),
  // unless done() or failed().
  size_t Feed(std::string_view bytes);

  // Memory the request holds: its head's bytes and its body's buffer (which grows as the
  // body arrives, doubling, never past its Content-Length or max_body). For the listener's
  // budget of buffered bytes.
  size_t held() const;
  // The most the body's buffer can grow by when `n` more bytes are fed.
  size_t body_growth(size_t n) const;

  bool head_done() const;
  bool done() const;
  bool failed() const { return refusal_.status != 0; }
  const HttpRefusal& refusal() const { return refusal_; }
  // Valid once head_done() (the body once done()).
  const HttpRequest& request() const { return request_; }
  HttpRequest& request() { return request_; }

 private:
  class Beast;
  std::unique_ptr<Beast> beast_;
  HttpRequest request_;
  HttpRefusal refusal_{0, ""};
  ParserLimits limits_;
  size_t fold_checked_ = 0;  // bytes of the unread head already checked for obs-fold
  char tail_[3] = {};        // the last bytes of the head Beast took (its end may straddle)
  size_t tail_size_ = 0;
  size_t head_taken_ = 0;  // bytes of the head Beast took so far
};

// The request's path: the target without its query, and without scheme and authority when
// the target is in absolute form (RFC 9112 §3.2.2: the authority ends at the first '/', '?'
// or '#', and an empty path is "/"). Not percent-decoded.
std::string_view TargetPath(std::string_view target);
// The target's query: what follows its first '?', byte for byte ("" when there is none).
std::string_view TargetQuery(std::string_view target);

}  // namespace hookbox
