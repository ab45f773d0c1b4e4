// W3C trace context (see trace.h): parsing a producer's traceparent, the trace hookbox
// starts when there is none, and the traceparent each attempt is given.
#include "base/trace.h"

#include <openssl/rand.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <random>

#include "base/ascii.h"
#include "base/crypto.h"

namespace hookbox {
namespace {

bool LowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool AllZero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

// 16 lowercase hex digits.
std::string Hex(uint64_t v) {
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = "0123456789abcdef"[v & 15];
  return out;
}

// `bytes` (8 or 16) random bytes as lowercase hex, never all zero. From a generator of each
// thread's own, seeded once from the system's CSPRNG: ids must be unique, not secret, and
// RAND_bytes for each took 2,400 instructions of a traced accept (bench/RESULTS.md).
std::string RandomHexId(size_t bytes) {
  thread_local std::mt19937_64 rng = [] {
    std::seed_seq::result_type seed[8] = {};
    if (RAND_bytes(reinterpret_cast<unsigned char*>(seed), sizeof seed) != 1) {
      std::random_device device;  // OpenSSL without entropy: the kernel's, through libstdc++
      for (auto& word : seed) word = device();
    }
    std::seed_seq sequence(std::begin(seed), std::end(seed));
    return std::mt19937_64(sequence);
  }();
  std::string hex;
  do {
    hex = Hex(rng());
    if (bytes == 16) hex += Hex(rng());
  } while (AllZero(hex));
  return hex;
}

// `00-` + 32 + `-` + 16 + `-` + 2.
constexpr size_t kVersion0Size = 55;

}  // namespace

std::optional<TraceContext> ParseTraceparent(std::string_view v) {
  if (v.size() < kVersion0Size) return std::nullopt;
  const std::string_view version = v.substr(0, 2);
  if (!LowerHex(version) || version == "ff") return std::nullopt;
  if (version == "00" ? v.size() != kVersion0Size
                      : v.size() > kVersion0Size && v[kVersion0Size] != '-') {
    return std::nullopt;
  }
  if (v[2] != '-' || v[35] != '-' || v[52] != '-') return std::nullopt;
  TraceContext t{std::string(v.substr(3, 32)), std::string(v.substr(36, 16)),
                 std::string(v.substr(53, 2))};
  if (!LowerHex(t.trace_id) || !LowerHex(t.parent_id) || !LowerHex(t.flags) ||
      AllZero(t.trace_id) || AllZero(t.parent_id)) {
    return std::nullopt;
  }
  return t;
}

TraceContext EventTrace(std::string_view endpoint, std::string_view event_id,
                        std::optional<std::string_view> producer) {
  if (producer) {
    if (auto t = ParseTraceparent(*producer)) return *std::move(t);
  }
  // FNV-1a, 128 bits for the trace id and 64 for the parent, over "endpoint\nevent id"
  // (endpoint names hold no newline, config.cc, so the pair reads back one way). Not
  // SHA-256: this runs on every accept, and a SHA-256 with its hex cost 6,800 instructions
  // here, 1.8% of an accept (bench/RESULTS.md); an id that needs to be unique, not secret,
  // has no use for it. A producer that chose colliding ids would only merge its own traces.
  using u128 = unsigned __int128;
  const u128 prime128 = (u128{1} << 88) + 0x13B;
  u128 h128 = (u128{0x6c62272e07bb0142} << 64) | 0x62b821756295c58d;
  uint64_t h64 = 0xcbf29ce484222325;
  auto mix = [&](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h128 = (h128 ^ c) * prime128;
      h64 = (h64 ^ c) * 0x100000001b3;
    }
  };
  mix(endpoint);
  mix("\n");
  mix(event_id);
  TraceContext t{Hex(static_cast<uint64_t>(h128 >> 64)) + Hex(static_cast<uint64_t>(h128)),
                 Hex(h64), "01"};
  // An all-zero id is invalid; FNV gives one for no input we know of, but never send one.
  if (AllZero(t.trace_id)) t.trace_id.back() = '1';
  if (AllZero(t.parent_id)) t.parent_id.back() = '1';
  return t;
}

std::optional<std::string_view> TraceparentHeader(const Headers& headers) {
  const auto [first, end] = headers.equal_range("traceparent");
  if (first == end || std::next(first) != end) return std::nullopt;
  return std::string_view(first->second);
}

std::optional<std::string> TraceparentOfStoredHeaders(std::string_view headers_json) {
  // A cheap look first: most events carry none, and the walk below costs a parse.
  constexpr std::string_view kName = "traceparent";
  const auto has = std::search(headers_json.begin(), headers_json.end(), kName.begin(), kName.end(),
                               [](char a, char b) { return AsciiLower(a) == b; });
  if (has == headers_json.end()) return std::nullopt;
  thread_local simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(headers_json);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object object;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(object) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return std::nullopt;
    if (!EqualsIgnoringAsciiCase(key, "traceparent")) continue;
    std::string_view value;
    if (field.value().get_string().get(value) != simdjson::SUCCESS) return std::nullopt;
    return std::string(value);
  }
  return std::nullopt;
}

std::string NewSpanId() { return RandomHexId(8); }

std::string NewTraceId() { return RandomHexId(16); }

std::string AcceptSpanId(std::string_view endpoint, std::string_view event_id) {
  // FNV-1a 64 (as EventTrace's), over what EventTrace hashes and a suffix of its own.
  uint64_t h = 0xcbf29ce484222325;
  auto mix = [&](std::string_view bytes) {
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3;
  };
  mix(endpoint);
  mix("\n");
  mix(event_id);
  mix("\naccept");
  return Hex(h == 0 ? 1 : h);
}

std::string Traceparent(const TraceContext& trace, std::string_view span_id) {
  std::string out = "00-";
  out += trace.trace_id;
  out += '-';
  out += span_id;
  out += '-';
  out += trace.flags;
  return out;
}

}  // namespace hookbox
