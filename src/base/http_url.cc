// An http(s) URL as hookbox's clients use it (see http_url.h).
#include "base/http_url.h"

#include <charconv>

namespace hookbox {
namespace {

Status BadUrl(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("\"" + std::string(text) + "\" is not an http(s) URL (" +
                                 std::string(why) + ")");
}

}  // namespace

std::string HttpUrl::ToString() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return (https ? "https://" : "http://") + h + ":" + std::to_string(port) + path;
}

StatusOr<HttpUrl> ParseHttpUrl(std::string_view text) {
  for (unsigned char c : text) {
    if (c <= ' ' || c == 0x7f) return BadUrl(text, "whitespace or control character");
  }
  HttpUrl url;
  std::string_view rest = text;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
    url.https = true;
    url.port = 443;
  } else {
    return BadUrl(text, "must start with http:// or https://");
  }
  if (rest.find('#') != std::string_view::npos) return BadUrl(text, "no #fragment");
  size_t end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, end);
  if (end != std::string_view::npos) {
    url.path = std::string(rest.substr(end));
    if (url.path.front() == '?')
      url.path = "/" + url.path;  // (insert(0, "/") trips gcc 12's -Wrestrict)
  }
  if (authority.find('@') != std::string_view::npos) {
    return BadUrl(text, "no user:password@; send credentials in headers");
  }
  std::string_view port;
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return BadUrl(text, "missing \"]\"");
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return BadUrl(text, "junk after \"]\"");
    if (!after.empty()) port = after.substr(1);
  } else {
    size_t colon = authority.find(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
    if (port.find(':') != std::string_view::npos) {
      return BadUrl(text, "put an IPv6 address in brackets");
    }
  }
  if (url.host.empty()) return BadUrl(text, "no host");
  if (port.data() != nullptr) {
    int value = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || p != port.data() + port.size() || value < 1 ||
        value > 65535) {
      return BadUrl(text, "port must be 1-65535");
    }
    url.port = value;
  }
  return url;
}

}  // namespace hookbox
