// libFuzzer harness, differential: the listener's one request parser (RequestParser: Beast
// plus hookbox's stricter rules) against a second, independent reading of the same bytes by
// nodejs http-parser 2.9.4 (Debian's libhttp-parser, built lenient). A request is smuggled
// where two parsers read it differently, so whenever RequestParser accepts a request,
// http-parser must accept it too, end it at the same byte and read the same method, target,
// version, headers (in order, byte for byte), body, keep-alive and Expect. Where only
// RequestParser refuses, the refusal must be one of its stricter rules, seen in http-parser's
// reading (JustifiedRefusal). Where http-parser is the stricter one for a harmless reason,
// the part it refuses is replaced by one it takes and the rest compared
// (ReadTheirsRewritten), or, for a few, the case is skipped; each is commented where it is
// tested. Pipelined requests are followed as Serve() (src/http/server.cc) follows them: a
// new RequestParser on the rest while the connection is kept alive. And each request is also
// fed split in two at a point the fuzzer picks (the input's last two bytes, which stay part
// of it), the bytes not taken offered again with the rest, as Serve() does: RequestParser
// must read it the same (CheckSplit).
#include <http_parser.h>
#include <strings.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/request_parser.h"

using namespace hookbox;

namespace {

// Small enough that inputs of a few KiB reach every limit.
constexpr ParserLimits kLimits{/*max_head=*/1024, /*max_body=*/512, /*max_headers=*/16};

using Headers = std::vector<std::pair<std::string, std::string>>;

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view TrimOws(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

enum class State { kDone, kRefused, kIncomplete };
const char* Name(State s) {
  return s == State::kDone ? "done" : s == State::kRefused ? "refused" : "incomplete";
}

// ---- RequestParser's reading

struct Ours {
  State state = State::kIncomplete;
  HttpRefusal refusal{0, ""};
  size_t taken = 0;
  bool head_done = false;
  HttpRequest request;
};

// `bytes` offered whole (split 0), or its first `split` bytes and then, unless that ended
// the request, everything from the first byte not taken.
Ours ReadOurs(std::string_view bytes, size_t split) {
  RequestParser p(kLimits);
  Ours out;
  if (split > 0 && split < bytes.size()) {
    out.taken = p.Feed(bytes.substr(0, split));
    if (out.taken > split) __builtin_trap();
    if (!p.done() && !p.failed()) out.taken += p.Feed(bytes.substr(out.taken));
  } else {
    out.taken = p.Feed(bytes);
  }
  if (out.taken > bytes.size()) __builtin_trap();
  out.state = p.failed() ? State::kRefused : p.done() ? State::kDone : State::kIncomplete;
  if (p.failed()) out.refusal = p.refusal();
  out.head_done = p.head_done();
  out.request = p.request();
  return out;
}

// ---- http-parser's reading

struct Theirs {
  State state = State::kIncomplete;
  http_errno error = HPE_OK;
  size_t consumed = 0;
  bool headers_complete = false;
  std::string method;
  std::string target;
  int version = 0;
  Headers headers;  // values as http-parser gives them (trailing white space kept)
  std::string body;
  bool chunked = false;
  bool upgrade = false;
  uint64_t content_length = ULLONG_MAX;  // ULLONG_MAX: no Content-Length
  bool complete = false;                 // on_message_complete seen
  bool in_value = false;                 // the last header callback was a value
};

Theirs* Of(http_parser* p) { return static_cast<Theirs*>(p->data); }

int OnBegin(http_parser* p) {
  Theirs* t = Of(p);
  *t = Theirs{};
  return 0;
}
int OnUrl(http_parser* p, const char* at, size_t n) {
  Of(p)->target.append(at, n);
  return 0;
}
// The whole of a request is given to http_parser_execute() in one call, so each header
// name arrives in one piece: a name after a value (or after nothing) starts a header.
int OnField(http_parser* p, const char* at, size_t n) {
  Theirs* t = Of(p);
  if (t->headers_complete) return 0;  // a trailer: dropped, as RequestParser drops them
  if (t->in_value || t->headers.empty()) {
    t->headers.emplace_back(std::string(at, n), "");
  } else {
    t->headers.back().first.append(at, n);
  }
  t->in_value = false;
  return 0;
}
int OnValue(http_parser* p, const char* at, size_t n) {
  Theirs* t = Of(p);
  if (t->headers_complete) return 0;
  if (t->headers.empty()) __builtin_trap();
  t->headers.back().second.append(at, n);
  t->in_value = true;
  return 0;
}
int OnHeadersComplete(http_parser* p) {
  Theirs* t = Of(p);
  t->headers_complete = true;
  t->method = http_method_str(static_cast<http_method>(p->method));
  t->version = p->http_major * 10 + p->http_minor;
  t->chunked = (p->flags & F_CHUNKED) != 0;
  t->upgrade = p->upgrade != 0;
  t->content_length = (p->flags & F_CONTENTLENGTH) ? p->content_length : ULLONG_MAX;
  return 0;
}
int OnBody(http_parser* p, const char* at, size_t n) {
  Of(p)->body.append(at, n);
  return 0;
}
int OnComplete(http_parser* p) {
  Of(p)->complete = true;
  http_parser_pause(p, 1);  // execute() returns at the request's last byte
  return 0;
}

const http_parser_settings kSettings = [] {
  http_parser_settings s{};
  s.on_message_begin = OnBegin;
  s.on_url = OnUrl;
  s.on_header_field = OnField;
  s.on_header_value = OnValue;
  s.on_headers_complete = OnHeadersComplete;
  s.on_body = OnBody;
  s.on_message_complete = OnComplete;
  return s;
}();

// Reads the first request of `bytes` (a fresh parser, as for each request of a connection:
// http-parser built lenient starts each message anew the same way).
Theirs ReadTheirs(std::string_view bytes) {
  http_parser parser;
  http_parser_init(&parser, HTTP_REQUEST);
  Theirs t;
  parser.data = &t;
  t.consumed = http_parser_execute(&parser, &kSettings, bytes.data(), bytes.size());
  t.error = HTTP_PARSER_ERRNO(&parser);
  if (t.complete) {
    t.state = State::kDone;
  } else if (t.error != HPE_OK) {
    t.state = State::kRefused;
  }
  return t;
}

// ---- the checks

[[noreturn]] void Fail(const char* what, std::string_view bytes, const Ours& ours,
                       const Theirs& theirs) {
  std::fprintf(stderr, "\nfuzz_http: %s\n  RequestParser: %s, took %zu, status %d (%s)\n", what,
               Name(ours.state), ours.taken, ours.refusal.status, ours.refusal.message.c_str());
  std::fprintf(stderr, "  http-parser:   %s, took %zu, %s\n  request: \"", Name(theirs.state),
               theirs.consumed, http_errno_name(theirs.error));
  for (unsigned char c : bytes) {
    if (c == '\\' || c == '"')
      std::fprintf(stderr, "\\%c", c);
    else if (c >= 0x20 && c < 0x7f)
      std::fputc(c, stderr);
    else if (c == '\r')
      std::fputs("\\r", stderr);
    else if (c == '\n')
      std::fputs("\\n", stderr);
    else
      std::fprintf(stderr, "\\x%02x", c);
  }
  std::fputs("\"\n", stderr);
  __builtin_trap();
}

const char kBareLf[] = "a line of the head ends in LF without CR";
const char kObsFold[] = "a header line folded onto the next (obs-fold)";

bool IsLineRule(const HttpRefusal& r) { return r.message == kBareLf || r.message == kObsFold; }
bool IsHeadOver(const HttpRefusal& r) { return r.message.starts_with("request head larger"); }

// RequestParser's two readings of one request (whole, and split) must be the same.
void CheckSplit(std::string_view bytes, size_t at, const Ours& whole, const Ours& split,
                const Theirs& t) {
  auto fail = [&](const char* what) {
    std::fprintf(stderr, "\nsplit at %zu: %s, took %zu, status %d (%s)", at, Name(split.state),
                 split.taken, split.refusal.status, split.refusal.message.c_str());
    Fail(what, bytes, whole, t);
  };
  // After a call that ended inside the head, Beast reads it again only once a CRLF CRLF is
  // in past what it had (in a malformed head, one it had seen may not have ended it): a
  // fault in its first lines is then found when more comes, the head is never taken.
  if (whole.state == State::kRefused && split.state == State::kIncomplete && !split.head_done) {
    return;
  }
  // KNOWN BUG in RequestParser (reported; remove this once fixed). Its max_head limit
  // counts the bytes Beast leaves waiting (Feed: `rest.size() - n > max_head + 4`), and in
  // a chunked body Beast leaves a chunk line, or the trailers, until their end is in: a
  // chunk line or trailer section over max_head is refused (431, "request head larger")
  // when a read ended inside it, and taken when it came in one read.
  if (whole.state == State::kDone && whole.request.chunked && split.state == State::kRefused &&
      IsHeadOver(split.refusal) && split.taken >= bytes.find("\r\n\r\n") + 4 &&
      bytes.size() - split.taken > kLimits.max_head + 4) {
    return;
  }
  if (split.state != whole.state) fail("split: another outcome");
  if (whole.state == State::kRefused) {
    // What was taken before a refusal does not matter (the connection is answered and
    // closed; Beast takes a head line by line, so a split takes the lines before the bad
    // one). hookbox looks for bare LFs and obs-folds in all of the head it has, Beast's grammar
    // reads it line by line, and Beast measures the head before reading its lines only when
    // it had to wait for the head's end: in a request with two faults, which is seen first
    // depends on where the bytes were split. The status must be the same, but when one of
    // the two is a bare LF or obs-fold (400), or a head over max_head (431) that is: a
    // head, or a chunk line or trailers that Beast waits the end of (RequestParser counts
    // what Beast left, whatever part of the request it is).
    const size_t end = bytes.find("\r\n\r\n");
    const bool head_over =
        (end == std::string_view::npos ? bytes.size() : end + 4) > kLimits.max_head ||
        bytes.size() - std::min(whole.taken, split.taken) > kLimits.max_head + 4;
    auto either = [&](auto rule) { return rule(whole.refusal) || rule(split.refusal); };
    if (split.refusal.status != whole.refusal.status && !either(IsLineRule) &&
        !(head_over && either(IsHeadOver))) {
      fail("split: another refusal");
    }
    return;
  }
  if (split.head_done != whole.head_done) fail("split: head read differently");
  // Of a head still incomplete Beast takes the whole lines it has, or none after a call that
  // had no line end: what is left is offered again, and the head is read whole either way.
  if (!whole.head_done) return;
  if (split.taken != whole.taken) fail("split: another length");
  const HttpRequest& a = whole.request;
  const HttpRequest& b = split.request;
  if (a.method != b.method || a.target != b.target || a.version != b.version ||
      a.headers != b.headers || a.keep_alive != b.keep_alive ||
      a.expect_continue != b.expect_continue || a.chunked != b.chunked ||
      a.content_length != b.content_length) {
    fail("split: head read differently");
  }
  if (whole.state == State::kDone && a.body != b.body) fail("split: another body");
}

bool HasBareLf(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] == '\n' && (i == 0 || bytes[i - 1] != '\r')) return true;
  }
  return false;
}

bool HasBareCr(std::string_view bytes) {
  for (size_t i = bytes.find('\r'); i != std::string_view::npos; i = bytes.find('\r', i + 1)) {
    if (i + 1 == bytes.size() || bytes[i + 1] != '\n') return true;
  }
  return false;
}

// The chunk line that begins `rest` (after the CRLF that ends the chunk before it) has an
// odd number of double quotes.
bool OpenQuoteInChunkLine(std::string_view rest) {
  if (rest.starts_with("\r\n")) rest.remove_prefix(2);
  rest = rest.substr(0, rest.find("\r\n"));
  return std::count(rest.begin(), rest.end(), '"') % 2 == 1;
}

bool HasObsFold(std::string_view bytes) {
  for (size_t i = bytes.find('\n'); i != std::string_view::npos; i = bytes.find('\n', i + 1)) {
    if (i + 1 < bytes.size() && (bytes[i + 1] == ' ' || bytes[i + 1] == '\t')) return true;
  }
  return false;
}

// A CONNECT that http-parser took as a tunnel: it ends the request at its head and reads no
// body, whatever the head announces.
bool IsConnect(const Theirs& t) { return t.method == "CONNECT" && t.upgrade; }

// When http-parser read a request whole and RequestParser refused it, the refusal must be
// one of RequestParser's stricter rules (src/http/request_parser.h), seen in http-parser's
// reading of the same request. `bytes` is all that was offered, the request first.
bool JustifiedRefusal(const Ours& ours, const Theirs& t, std::string_view bytes) {
  const std::string_view request = bytes.substr(0, t.consumed);
  const std::string& m = t.method;
  const std::string& why = ours.refusal.message;
  size_t te = 0;
  bool te_other = false;
  for (const auto& [name, value] : t.headers) {
    if (IEquals(name, "Transfer-Encoding")) {
      ++te;
      te_other |= !IEquals(TrimOws(value), "chunked");
    }
  }
  switch (ours.refusal.status) {
    case 411:  // a POST, PUT or PATCH with neither Content-Length nor chunked
      return (m == "POST" || m == "PUT" || m == "PATCH") && !t.chunked &&
             t.content_length == ULLONG_MAX;
    case 413:  // a body over max_body; for a CONNECT, whose body http-parser does not read
               // (it tunnels), one announced by chunks or a Content-Length over max_body,
               // which RequestParser frames as any request's (RFC 9112 §6.3)
      return t.body.size() > kLimits.max_body ||
             (IsConnect(t) && (t.chunked || (t.content_length != ULLONG_MAX &&
                                             t.content_length > kLimits.max_body)));
    case 431:  // more than max_headers header lines, or a head over max_head; or more than
               // max_head bytes past the end of a chunk line or trailers that lenient
               // http-parser saw (a CR and any byte) and Beast waits for
      return t.headers.size() > kLimits.max_headers ||
             request.size() - t.body.size() > kLimits.max_head ||
             (IsHeadOver(ours.refusal) && bytes.size() - ours.taken > kLimits.max_head + 4);
    case 501:  // Transfer-Encoding other than exactly `chunked`
      return te_other || te > 1;
    case 505: {
      // A version other than HTTP/1.0 or HTTP/1.1; and Beast's answer to a request line
      // that is not `method SP target SP HTTP/1.x`, which lenient http-parser reads (it
      // skips extra spaces, and takes `H` and any four bytes for `HTTP/`).
      const std::string_view line = request.substr(0, request.find("\r\n"));
      const bool well_formed = (line.ends_with(" HTTP/1.0") || line.ends_with(" HTTP/1.1")) &&
                               std::count(line.begin(), line.end(), ' ') == 2 &&
                               line.front() != ' ' && line[line.size() - 10] != ' ';
      return (t.version != 10 && t.version != 11) || !well_formed;
    }
    case 400:
      // hookbox's own line rules, over the head as hookbox sees it (to its CRLF CRLF):
      // lenient http-parser takes CR and any byte for a line end, so its head may end sooner.
      if (why == kBareLf || why == kObsFold) {
        const size_t end = bytes.find("\r\n\r\n");
        const std::string_view head =
            bytes.substr(0, end == std::string_view::npos ? bytes.size() : end + 4);
        return why == kBareLf ? HasBareLf(head) : HasObsFold(head);
      }
      // Beast's grammar, stricter than lenient http-parser's: white space in names or around
      // the request line, control characters, Content-Length other than digits, chunk
      // extensions that are not `;token[=value]`, Transfer-Encoding sent twice.
      return true;
    default:
      return false;
  }
}

bool Listed(std::string_view method) {
  for (int i = 0; i <= HTTP_SOURCE; ++i) {
    if (method == http_method_str(static_cast<http_method>(i))) return true;
  }
  return false;
}

// http-parser's reading of bytes it refused for a harmless reason, with the part it refuses
// replaced by one it takes: the rest of the request must still be read the same.
struct Rewritten {
  Theirs theirs;
  bool method = false;        // the method was replaced (not compared)
  bool target = false;        // the target was replaced (not compared)
  ptrdiff_t shift = 0;        // bytes added by the replacements
  bool te_names = false;      // headers named Transfer-Encoding* renamed Xransfer-Encoding*
  bool framing_tabs = false;  // HTABs in Content-Length, Transfer-Encoding lines made SP
  int chunk_tabs = 0;         // HTABs after chunk sizes made SP
};

// In the head of `text`, the HTABs of each Content-Length and Transfer-Encoding line become
// SPs. False if there were none.
bool FramingTabsToSpaces(std::string& text) {
  const size_t head = text.find("\r\n\r\n");
  bool replaced = false;
  for (size_t line = text.find("\r\n"); line < head; line = text.find("\r\n", line + 2)) {
    const size_t start = line + 2;
    const std::string_view rest = std::string_view(text).substr(start);
    if (!IEquals(rest.substr(0, 15), "Content-Length:") &&
        !IEquals(rest.substr(0, 18), "Transfer-Encoding:")) {
      continue;
    }
    const size_t end = text.find("\r\n", start);
    for (size_t i = start; i < end; ++i) {
      if (text[i] == '\t') {
        text[i] = ' ';
        replaced = true;
      }
    }
  }
  return replaced;
}

bool LongerTransferEncoding(std::string_view name) {
  return name.size() > 17 && IEquals(name.substr(0, 17), "Transfer-Encoding");
}

// In the head of `text`, each header RequestParser read with a name that begins with
// Transfer-Encoding and goes on gets its first letter replaced by `X`. False if none.
bool RenameLongerTransferEncodings(const HttpRequest& r, std::string& text) {
  const size_t head = text.find("\r\n\r\n");
  bool renamed = false;
  for (const auto& [name, value] : r.headers) {
    if (!LongerTransferEncoding(name)) continue;
    const size_t at = text.find("\r\n" + name + ":");
    if (at == std::string::npos || at >= head) return false;
    text[at + 2] = 'X';
    renamed = true;
  }
  return renamed;
}

Rewritten ReadTheirsRewritten(const Ours& ours, std::string_view bytes, Theirs theirs) {
  const HttpRequest& r = ours.request;
  Rewritten out{std::move(theirs)};
  std::string text(bytes);
  for (;;) {
    const Theirs& t = out.theirs;
    const size_t method_size = out.method ? 3 : r.method.size();
    if (t.state == State::kRefused && t.error == HPE_INVALID_METHOD && !out.method &&
        !Listed(r.method) && text.starts_with(r.method + " ")) {
      // http-parser knows a fixed list of methods, in upper case; an RFC 9110 method is any
      // token, and one hookbox does not serve is answered 405 or 404 once the request is read.
      text.replace(0, r.method.size(), "GET");
      out.method = true;
      out.shift += 3 - static_cast<ptrdiff_t>(r.method.size());
    } else if (t.state == State::kRefused && t.error == HPE_INVALID_URL && !out.target &&
               text.size() > method_size + 1 + r.target.size() &&
               text.compare(method_size + 1, r.target.size(), r.target) == 0 &&
               text[method_size + 1 + r.target.size()] == ' ') {
      // http-parser checks the target's URI syntax (an absolute form's host, ...); Beast
      // takes any visible bytes, and hookbox routes on the path alone (TargetPath), so a
      // target that is no URI finds no endpoint, or the endpoint of its path.
      const std::string_view good = r.method == "CONNECT" ? "h:1" : "/";
      text.replace(method_size + 1, r.target.size(), good);
      out.target = true;
      out.shift += static_cast<ptrdiff_t>(good.size()) - static_cast<ptrdiff_t>(r.target.size());
    } else if (t.state == State::kRefused && !out.te_names &&
               (t.error == HPE_INVALID_TRANSFER_ENCODING ||
                t.error == HPE_UNEXPECTED_CONTENT_LENGTH) &&
               RenameLongerTransferEncodings(r, text)) {
      // http-parser 2.9.4 takes any header whose name begins with `Transfer-Encoding`
      // (`Transfer-Encodings`, ...) for one; Beast and RFC 9110 do not.
      out.te_names = true;
    } else if (t.state == State::kRefused &&
               (t.error == HPE_INVALID_CONTENT_LENGTH ||
                t.error == HPE_INVALID_TRANSFER_ENCODING) &&
               !out.framing_tabs && FramingTabsToSpaces(text)) {
      // http-parser takes SP around a Content-Length or Transfer-Encoding value but not
      // HTAB; both are the optional white space RFC 9110 §5.5 has recipients strip, as
      // Beast does.
      out.framing_tabs = true;
    } else if (t.state == State::kRefused && t.error == HPE_INVALID_CHUNK_SIZE &&
               t.consumed < text.size() && text[t.consumed] == '\t' && out.chunk_tabs < 64) {
      // http-parser takes SP between a chunk size and its extensions but not HTAB; both are
      // the BWS of RFC 9112 §7.1.1, as Beast reads it.
      text[t.consumed] = ' ';
      ++out.chunk_tabs;
    } else {
      return out;
    }
    out.theirs = ReadTheirs(text);
  }
}

// `digits` is a decimal number (leading zeros allowed) equal to `n`.
bool DecimalIs(std::string_view digits, uint64_t n) {
  if (digits.empty()) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || v > n) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v == n;
}

// Identical Content-Length values (the same decimal number), repeated or as a list: RFC 9110
// §8.6 lets a recipient take them as one, as Beast does; http-parser refuses any repeat. The
// length is the same.
bool IdenticalLengths(const Ours& ours, const Theirs& t) {
  if (t.state != State::kRefused ||
      (t.error != HPE_UNEXPECTED_CONTENT_LENGTH && t.error != HPE_INVALID_CONTENT_LENGTH)) {
    return false;
  }
  size_t values = 0;
  bool same = true;
  for (const auto& [name, value] : ours.request.headers) {
    if (!IEquals(name, "Content-Length")) continue;
    std::string_view rest = value;
    for (;;) {
      const size_t comma = rest.find(',');
      ++values;
      same &= DecimalIs(TrimOws(rest.substr(0, comma)), ours.request.content_length);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return values > 1 && same;
}

// Whether the connection persists after this request, by RFC 9112 §9.3, from the headers
// http-parser read: `close` ends it; else HTTP/1.1 keeps it, HTTP/1.0 with `keep-alive`;
// and never after an HTTP/1.0 request with Transfer-Encoding (§6.1).
// (http_should_keep_alive() is not used: http-parser 2.9.4 misses a Connection option after
// an empty list element or a one-letter one, `,close` or `u,close`, and before an HTAB.)
bool PersistsPerRfc(const Theirs& t) {
  bool close = false, keep_alive = false;
  for (const auto& [name, value] : t.headers) {
    close |= t.version == 10 && IEquals(name, "Transfer-Encoding");
    if (!IEquals(name, "Connection")) continue;
    std::string_view rest = value;
    for (;;) {
      const size_t comma = rest.find(',');
      const std::string_view option = TrimOws(rest.substr(0, comma));
      close |= IEquals(option, "close");
      keep_alive |= IEquals(option, "keep-alive");
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return !close && (t.version == 11 || keep_alive);
}

void CheckSameReading(std::string_view bytes, const Ours& ours, const Rewritten& w) {
  const Theirs& t = w.theirs;
  auto fail = [&](const char* what) { Fail(what, bytes, ours, t); };
  const HttpRequest& r = ours.request;
  if (static_cast<ptrdiff_t>(ours.taken) + w.shift != static_cast<ptrdiff_t>(t.consumed)) {
    fail("the request ends at another byte");
  }
  if (!w.method && r.method != t.method) fail("another method");
  if (!w.target && r.target != t.target) fail("another target");
  if (r.version != t.version) fail("another version");
  if (r.headers.size() != t.headers.size()) fail("another number of headers");
  bool expect = false;
  for (size_t i = 0; i < r.headers.size(); ++i) {
    const bool renamed = w.te_names && LongerTransferEncoding(r.headers[i].first);
    if (renamed ? r.headers[i].first.substr(1) != t.headers[i].first.substr(1)
                : r.headers[i].first != t.headers[i].first) {
      fail("another header name");
    }
    // http-parser keeps the white space after a value; RFC 9110 §5.5 excludes it.
    if (r.headers[i].second != TrimOws(t.headers[i].second)) fail("another header value");
    expect |= IEquals(t.headers[i].first, "Expect") &&
              IEquals(TrimOws(t.headers[i].second), "100-continue");
  }
  if (r.chunked != t.chunked) fail("chunked read differently");
  if (!r.chunked && r.content_length != (t.content_length == ULLONG_MAX ? 0 : t.content_length)) {
    fail("another Content-Length");
  }
  if (r.body != t.body) fail("another body");
  if (r.keep_alive != PersistsPerRfc(t)) fail("keep-alive read differently");
  if (r.expect_continue != (expect && t.version == 11)) fail("Expect read differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = size < 2 ? 0 : (size_t{data[size - 2]} << 8 | data[size - 1]) % (size + 1);

  for (size_t at = 0; at < input.size();) {
    const std::string_view bytes = input.substr(at);
    const Ours ours = ReadOurs(bytes, 0);
    const Theirs theirs = ReadTheirs(bytes);
    if (split > at) CheckSplit(bytes, split - at, ours, ReadOurs(bytes, split - at), theirs);

    if (ours.state != State::kDone) {
      if (theirs.state != State::kDone) return 0;  // both refuse or wait, or one of each
      if (ours.state == State::kRefused) {
        if (!JustifiedRefusal(ours, theirs, bytes)) {
          Fail("RequestParser refuses without a documented reason", bytes, ours, theirs);
        }
      } else if (const std::string_view waited = bytes.substr(
                     ours.taken, theirs.consumed > ours.taken ? theirs.consumed - ours.taken : 0);
                 !IsConnect(theirs) && !HasBareCr(waited) && !HasBareLf(waited) &&
                 !(ours.head_done && OpenQuoteInChunkLine(bytes.substr(ours.taken)))) {
        // (CONNECT: see below. A bare LF, or a CR and any byte, is a line end to lenient
        // http-parser, which may so end a chunk or trailer line that RequestParser waits the
        // end of; it refuses them once more comes. And http-parser skips a chunk line's
        // extensions to its CR, where Beast reads a quoted string to its closing quote, past
        // the CRLF, before it finds the line malformed.)
        Fail("RequestParser reads on past http-parser's end", bytes, ours, theirs);
      }
      return 0;
    }
    const Rewritten w = ReadTheirsRewritten(ours, bytes, theirs);
    if (IdenticalLengths(ours, w.theirs)) return 0;
    if (w.theirs.state != State::kDone) {
      Fail(w.theirs.state == State::kRefused ? "http-parser refuses what RequestParser accepts"
                                             : "http-parser reads on past RequestParser's end",
           bytes, ours, w.theirs);
    }
    // CONNECT: http-parser ends the request at its head (what follows is the tunnel's);
    // RFC 9112 §6.3 frames it by Content-Length like any request, and so does hookbox,
    // which never tunnels (it answers 404/405).
    if (IsConnect(w.theirs) && ours.request.method == "CONNECT" && w.theirs.body.empty() &&
        ours.taken > w.theirs.consumed) {
      return 0;
    }
    CheckSameReading(bytes, ours, w);
    // The next request on the connection, as Serve() reads it: only while kept alive, and
    // not after an Upgrade (http-parser hands the rest to another protocol).
    if (!ours.request.keep_alive || w.theirs.upgrade || ours.taken == 0) return 0;
    at += ours.taken;
  }
  return 0;
}
