// RequestParser: Boost.Beast's basic_parser, with hookbox's rules on top (see the header).
// Beast does the grammar, the limits and the chunked decoding; this file turns its callbacks
// into an HttpRequest and its errors into the status a client is answered with.
#include "http/request_parser.h"

#include <algorithm>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <cctype>
#include <cstring>

#include "base/ascii.h"

namespace hookbox {
namespace {

namespace http = boost::beast::http;
using boost::beast::error_code;
using boost::beast::string_view;

// The rules hookbox adds to Beast's grammar, by the one a request broke (kNone: none); carried
// through Beast's error_code as generic errors and mapped back to a refusal.
enum class OwnRule {
  kNone = 0,
  kTooManyHeaders,
  kTransferCoding,
  kObsFold,
  kBareLf,
  kLengthRequired,
  kVersion,
  kTarget,
  kHost,
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// RFC 3986 §3.2.2-3 host [":" port]: an IP-literal in brackets, or a reg-name (an IPv4
// address is one) of unreserved, sub-delims and pct-encoded bytes; the port digits only.
// Empty is a valid Host value (RFC 9110 §7.2); an absolute-form target's authority may not
// be empty, and is checked for that where it is read.
bool ValidHostPort(std::string_view host) {
  size_t end = 0;
  if (!host.empty() && host.front() == '[') {
    end = host.find(']');
    if (end == std::string_view::npos || end == 1) return false;
    for (char c : host.substr(1, end - 1)) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.' && c != 'v' &&
          c != 'V') {
        return false;
      }
    }
    ++end;
  } else {
    static constexpr std::string_view kRegName = "-._~%!$&'()*+,;=";
    while (end < host.size() && (std::isalnum(static_cast<unsigned char>(host[end])) ||
                                 kRegName.find(host[end]) != std::string_view::npos)) {
      ++end;
    }
  }
  if (end == host.size()) return true;
  if (host[end] != ':') return false;
  return std::all_of(host.begin() + static_cast<ptrdiff_t>(end) + 1, host.end(), IsDigit);
}

// The scheme of an absolute-form target hookbox serves ("http://" or "https://", any case),
// or "" when the target is not in absolute form.
std::string_view AbsoluteScheme(std::string_view target) {
  for (std::string_view scheme : {std::string_view("http://"), std::string_view("https://")}) {
    if (EqualsIgnoringAsciiCase(target.substr(0, scheme.size()), scheme)) {
      return target.substr(0, scheme.size());
    }
  }
  return {};
}

// RFC 9112 §3.2: origin-form ("/path?query"), absolute-form with an http(s) authority that
// names a host and no user (RFC 9110 §4.2.1, §4.2.4), or asterisk-form for OPTIONS. Anything
// else (authority-form, another scheme, a relative path) names nothing hookbox serves.
bool ValidTarget(std::string_view method, std::string_view target) {
  if (!target.empty() && target.front() == '/') return true;
  if (target == "*") return method == "OPTIONS";
  const std::string_view scheme = AbsoluteScheme(target);
  if (scheme.empty()) return false;
  const std::string_view rest = target.substr(scheme.size());
  const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  return !authority.empty() && authority.front() != ':' && ValidHostPort(authority);
}

// Whether a Connection header lists the `close` option.
bool HasCloseOption(const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [name, value] : headers) {
    if (!EqualsIgnoringAsciiCase(name, "Connection")) continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view option = rest.substr(0, comma);
      while (!option.empty() && (option.front() == ' ' || option.front() == '\t')) {
        option.remove_prefix(1);
      }
      while (!option.empty() && (option.back() == ' ' || option.back() == '\t')) {
        option.remove_suffix(1);
      }
      if (EqualsIgnoringAsciiCase(option, "close")) return true;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return false;
}

// The most a body can grow to: its Content-Length, or max_body when chunked.
size_t BodyLimit(const HttpRequest& request, size_t max_body) {
  return request.chunked ? max_body : std::min(request.content_length, max_body);
}

// The capacity a body of `size` bytes grows to when `n` more are appended: doubled, never
// past what the body can grow to (BodyGrowth counts on it).
size_t GrownCapacity(size_t capacity, size_t size, size_t n, size_t limit) {
  const size_t need = size + n;
  if (need <= capacity) return capacity;
  return std::max(need, std::min(2 * capacity, limit));
}

// Appends to the body, growing its buffer to GrownCapacity exactly (std::string's reserve
// would round a growth under twice the old capacity up to twice).
void AppendBody(HttpRequest& request, std::string_view bytes, size_t max_body) {
  std::string& body = request.body;
  const size_t grown =
      GrownCapacity(body.capacity(), body.size(), bytes.size(), BodyLimit(request, max_body));
  if (grown > body.capacity()) {
    std::string larger;
    larger.reserve(grown);
    larger.append(body);
    body.swap(larger);
  }
  body.append(bytes);
}

}  // namespace

class RequestParser::Beast final : public http::basic_parser<true> {
 public:
  Beast(HttpRequest& request, ParserLimits limits) : request_(request), limits_(limits) {
    // max_head is enforced by Feed() on the whole head, however its bytes arrive; Beast's
    // own limit applies to what is left after the lines it took, so it is only a backstop.
    header_limit(
        static_cast<std::uint32_t>(std::min<size_t>(2 * limits.max_head + 64, UINT32_MAX)));
    body_limit(static_cast<std::uint64_t>(limits.max_body));
    eager(true);
  }

  OwnRule broken_rule = OwnRule::kNone;

 private:
  void Fail(OwnRule why, error_code& ec) {
    broken_rule = why;
    ec = make_error_code(boost::system::errc::protocol_error);
  }

  void on_request_impl(http::verb, string_view method, string_view target, int version,
                       error_code& ec) override {
    if (version != 10 && version != 11) return Fail(OwnRule::kVersion, ec);
    if (!ValidTarget({method.data(), method.size()}, {target.data(), target.size()})) {
      return Fail(OwnRule::kTarget, ec);
    }
    request_.method.assign(method.data(), method.size());
    request_.target.assign(target.data(), target.size());
    request_.version = version;
  }

  void on_response_impl(int, string_view, int, error_code& ec) override {
    ec = http::error::bad_version;  // never: this is a request parser
  }

  void on_field_impl(http::field, string_view name, string_view value, error_code& ec) override {
    if (is_header_done()) return;  // a trailer: read and dropped
    if (request_.headers.size() >= limits_.max_headers) return Fail(OwnRule::kTooManyHeaders, ec);
    request_.headers.emplace_back(std::string(name.data(), name.size()),
                                  std::string(value.data(), value.size()));
  }

  void on_header_impl(error_code& ec) override {
    bool has_te = false, expect = false;
    size_t hosts = 0;
    for (const auto& [name, value] : request_.headers) {
      if (EqualsIgnoringAsciiCase(name, "Host")) {
        if (++hosts > 1 || !ValidHostPort(value)) return Fail(OwnRule::kHost, ec);
      } else if (EqualsIgnoringAsciiCase(name, "Transfer-Encoding")) {
        has_te = true;
        // Beast marks the body chunked when `chunked` is the last coding; any other coding
        // (gzip, chunked twice, ...) is one hookbox cannot decode.
        if (!EqualsIgnoringAsciiCase(value, "chunked")) return Fail(OwnRule::kTransferCoding, ec);
      } else if (EqualsIgnoringAsciiCase(name, "Expect") &&
                 EqualsIgnoringAsciiCase(value, "100-continue")) {
        expect = true;
      }
    }
    // RFC 9112 §3.2: an HTTP/1.1 request names its host.
    if (hosts == 0 && request_.version == 11) return Fail(OwnRule::kHost, ec);
    request_.chunked = chunked();
    if (has_te && !request_.chunked) return Fail(OwnRule::kTransferCoding, ec);
    // RFC 9112 §9.3: `close` among the Connection options wins (Beast's keep_alive() lets
    // `keep-alive` win in an HTTP/1.0 request that has both). And §6.1: an HTTP/1.0
    // request's Transfer-Encoding is framing an HTTP/1.0 intermediary may not have read the
    // same, so nothing after it on the connection is trusted: it is the last request.
    request_.keep_alive =
        keep_alive() && !HasCloseOption(request_.headers) && !(has_te && request_.version == 10);
    request_.expect_continue = expect && request_.version == 11;
    auto length = content_length();
    request_.content_length = length ? static_cast<size_t>(*length) : 0;
    const std::string& m = request_.method;
    if (!request_.chunked && !length && (m == "POST" || m == "PUT" || m == "PATCH")) {
      return Fail(OwnRule::kLengthRequired, ec);
    }
  }

  // Nothing is allocated for a body before its bytes arrive (a Content-Length is only a
  // claim): the buffer grows as they do, see AppendBody.
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}

  size_t on_body_impl(string_view body, error_code&) override {
    AppendBody(request_, {body.data(), body.size()}, limits_.max_body);
    return body.size();
  }

  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}

  size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code&) override {
    AppendBody(request_, {body.data(), body.size()}, limits_.max_body);
    return body.size();
  }

  void on_finish_impl(error_code&) override {}

  HttpRequest& request_;
  const ParserLimits limits_;
};

RequestParser::RequestParser(ParserLimits limits)
    : beast_(std::make_unique<Beast>(request_, limits)), limits_(limits) {}

RequestParser::~RequestParser() = default;

size_t RequestParser::held() const { return head_taken_ + request_.body.capacity(); }

size_t RequestParser::body_growth(size_t n) const {
  const std::string& body = request_.body;
  const size_t limit = head_done() ? BodyLimit(request_, limits_.max_body) : limits_.max_body;
  n = std::min(n, limit > body.size() ? limit - body.size() : 0);
  return GrownCapacity(body.capacity(), body.size(), n, limit) - body.capacity();
}

bool RequestParser::head_done() const { return !failed() && beast_->is_header_done(); }
bool RequestParser::done() const { return !failed() && beast_->is_done(); }

namespace {

// Two ways of ending a line that Beast does not refuse by itself, found by a look at the
// head's bytes before Beast reads them:
// - obs-fold (a header continued on a line starting with SP or HTAB): Beast unfolds it;
//   RFC 9112 §5.2 lets a server refuse it instead, and hookbox does (a folded line is how
//   one header hides inside another);
// - a bare LF: Beast refuses one inside a header line, but waits forever for the CRLF CRLF
//   of a head whose lines all end in LF.
// Looks at the line ends in head[from, end); `prev` is the byte before head[0] (0: none).
OwnRule LineEndingError(std::string_view head, size_t from, size_t end, char prev) {
  head = head.substr(0, end);
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  if (from == 0 && prev == '\n' && !head.empty() && blank(head[0])) return OwnRule::kObsFold;
  for (size_t at = head.find('\n', from); at != std::string_view::npos;
       at = head.find('\n', at + 1)) {
    if ((at == 0 ? prev : head[at - 1]) != '\r') return OwnRule::kBareLf;
    if (at + 1 < head.size() && blank(head[at + 1])) return OwnRule::kObsFold;
  }
  return OwnRule::kNone;
}

// Where the head ends in `rest` (just after its last line's CRLF; rest.size() when its end
// has not arrived), given the last bytes of the head Beast already took: the CRLF CRLF
// that ends a head may straddle the two reads.
size_t HeadEnd(std::string_view taken_tail, std::string_view rest, size_t from) {
  if (!taken_tail.empty()) {
    std::string edge(taken_tail);
    edge.append(rest.substr(0, 3));
    const size_t at = edge.find("\r\n\r\n");
    if (at != std::string::npos && at < taken_tail.size()) {
      return at + 2 > taken_tail.size() ? at + 2 - taken_tail.size() : 0;
    }
  }
  const size_t at = rest.find("\r\n\r\n", from);
  return at == std::string_view::npos ? rest.size() : at + 2;
}

HttpRefusal RefusalFor(const error_code& ec, int broken_rule, const ParserLimits& limits) {
  switch (static_cast<OwnRule>(broken_rule)) {
    case OwnRule::kTooManyHeaders:
      return {431, "too many request headers (limit " + std::to_string(limits.max_headers) + ")"};
    case OwnRule::kTransferCoding:
      return {501, "only Transfer-Encoding: chunked is supported"};
    case OwnRule::kObsFold:
      return {400, "a header line folded onto the next (obs-fold)"};
    case OwnRule::kBareLf:
      return {400, "a line of the head ends in LF without CR"};
    case OwnRule::kLengthRequired:
      return {411, "Content-Length or Transfer-Encoding: chunked required"};
    case OwnRule::kVersion:
      return {505, "only HTTP/1.0 and HTTP/1.1 are served"};
    case OwnRule::kTarget:
      return {400, "request target is neither /path nor http(s)://host/path"};
    case OwnRule::kHost:
      return {400, "one Host header with host[:port] required"};
    case OwnRule::kNone:
      break;
  }
  if (ec == http::error::header_limit) {
    return {431, "request head larger than " + std::to_string(limits.max_head) + " bytes"};
  }
  if (ec == http::error::body_limit) {
    return {413, "body larger than " + std::to_string(limits.max_body) + " bytes"};
  }
  if (ec == http::error::bad_version) return {505, "only HTTP/1.0 and HTTP/1.1 are served"};
  if (ec == http::error::bad_content_length) return {400, "bad Content-Length"};
  if (ec == http::error::multiple_content_length) return {400, "conflicting Content-Length values"};
  if (ec == http::error::bad_transfer_encoding) {
    return {400, "Transfer-Encoding repeated or sent with Content-Length"};
  }
  if (ec == http::error::bad_line_ending || ec == http::error::bad_value) {
    return {400, "malformed header line (lines end with CRLF; no control characters)"};
  }
  return {400, "malformed request: " + ec.message()};
}

}  // namespace

size_t RequestParser::Feed(std::string_view bytes) {
  if (failed() || done()) return 0;
  size_t taken = 0;
  // Beast reads a head only when it is whole, and trailers likewise: the bytes it leaves
  // are offered again with more. Beyond max_head of them, the client is not sending a head.
  while (taken < bytes.size() && !done()) {
    std::string_view rest = bytes.substr(taken);
    if (!head_done()) {
      // Checked from where the last call stopped (a head trickling in is scanned once).
      const size_t from = fold_checked_ > 3 ? fold_checked_ - 3 : 0;
      const std::string_view tail(tail_, tail_size_);
      const size_t end = HeadEnd(tail, rest, from);
      const char prev = tail.empty() ? '\0' : tail.back();
      if (OwnRule why = LineEndingError(rest, std::min(from, end), end, prev);
          why != OwnRule::kNone) {
        refusal_ = RefusalFor({}, static_cast<int>(why), limits_);
        return taken;
      }
      // The head's size, blank line included, against max_head: once its end is in, or as
      // soon as what has arrived of it is already longer.
      const bool ended = end < rest.size();
      if (head_taken_ + (ended ? end + 2 : rest.size()) > limits_.max_head) {
        refusal_ = RefusalFor(http::error::header_limit, 0, limits_);
        return taken;
      }
      fold_checked_ = end;
    }
    error_code ec;
    const bool in_head = !head_done();
    const size_t n = beast_->put(boost::asio::const_buffer(rest.data(), rest.size()), ec);
    taken += n;
    if (in_head) head_taken_ += n;
    for (size_t i = n > 3 ? n - 3 : 0; in_head && i < n; ++i) {  // the head's last 3 bytes
      if (tail_size_ == sizeof tail_) {
        tail_[0] = tail_[1];
        tail_[1] = tail_[2];
        tail_size_ = 2;
      }
      tail_[tail_size_++] = rest[i];
    }
    fold_checked_ = fold_checked_ > n ? fold_checked_ - n : 0;
    if (ec == http::error::need_more) {
      if (rest.size() - n > limits_.max_head + 4) {
        refusal_ = RefusalFor(http::error::header_limit, 0, limits_);
      }
      return taken;
    }
    if (ec) {
      refusal_ = RefusalFor(ec, static_cast<int>(beast_->broken_rule), limits_);
      return taken;
    }
    if (n == 0) break;
  }
  return taken;
}

std::string_view TargetPath(std::string_view target) {
  // Absolute form: the authority ends at the first '/', '?' or '#' (RFC 3986 §3.2), so a
  // '/' inside the query is never taken for the path's start.
  if (const std::string_view scheme = AbsoluteScheme(target); !scheme.empty()) {
    target.remove_prefix(scheme.size());
    const size_t path = target.find_first_of("/?#");
    target = path == std::string_view::npos ? std::string_view() : target.substr(path);
  }
  target = target.substr(0, target.find_first_of("?#"));
  return target.empty() ? std::string_view("/") : target;
}

std::string_view TargetQuery(std::string_view target) {
  size_t q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
}

}  // namespace hookbox
