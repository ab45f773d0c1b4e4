// The provider table (config/providers.h) as the fuzz harnesses read it, so that none of them
// names a provider: a new row is fuzzed as soon as it links. What an endpoint of a row needs
// (keys by ProviderSpec::keys, public_url by needs_public_url, an hmac block by hmac_block),
// and the header names a row's producer sends, learned once at start-up from what Sign()
// writes for it and from the sources its row names. Header-only, shared by the harnesses
// (each is one .cc file with its own main).
//
// What Sign() cannot show is not learned: the headers of a provider whose keys are public
// keys (Keys::kEd25519Hex: hookbox only verifies, so nothing here signs), and the other
// spellings a scheme also reads (a legacy signature header, another family of names, a
// settings header). The harnesses also take a header name from the input, and their seeds
// (tests/fuzz/make_receive_seeds.py) carry those names.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cctype>
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/headers.h"
#include "config/providers.h"
#include "config/secrets.h"
#include "verify/sign.h"

namespace hookbox::fuzz {

using Keys = ProviderSpec::Keys;
using BodyFormat = ProviderSpec::BodyFormat;

// RFC 8032's first test public key (section 7.1, TEST 1) as the two kinds of key entry that
// hold one: Keys::kEd25519Hex, and Keys::kStandard's whpk_.
inline constexpr std::string_view kEd25519Hex =
    "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
inline constexpr std::string_view kEd25519Whpk =
    "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";

// A whsec_ secret: a key every row that signs takes as it is, and Keys::kStandard decodes.
inline constexpr std::string_view kSigningSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// The header of the endpoints' hmac blocks (the block is the endpoint's, so any name).
inline constexpr std::string_view kHmacHeader = "X-Signature";

// Names every harness may also send: not any provider's.
inline constexpr std::string_view kGenericHeaders[] = {"Content-Type", "Authorization", "Cookie"};

// A secret entry as the config loader makes it: a public key parsed once (nullptr for the
// rows whose entries are shared secrets).
inline Secret Key(Provider provider, std::string value) {
  auto key = config_internal::PublicKeyOf(provider, value);
  return {"value", std::move(value), std::move(key)};
}

// True when the row's entries may be shared secrets, which Sign() signs with; false when they
// are public keys alone (only the producer, with the private key, signs).
inline bool RowSigns(const ProviderSpec& row) { return row.keys != Keys::kEd25519Hex; }

// An endpoint of the row as the loader would accept it, signed for with kSigningSecret: the
// hmac block when the row's scheme is one, public_url when the row signs the URL.
inline Endpoint EndpointOf(const ProviderSpec& row) {
  Endpoint endpoint;
  endpoint.name = "fuzz";
  endpoint.path = "/hooks/fuzz";
  endpoint.provider = row.provider;
  if (row.hmac_block) endpoint.hmac.header = std::string(kHmacHeader);
  if (row.needs_public_url) endpoint.public_url = "https://example.com/hooks/fuzz";
  return endpoint;
}

// Adds `name` unless it is there already (header names are case-insensitive).
inline void AddName(std::vector<std::string>& names, std::string_view name) {
  if (name.empty()) return;
  for (const std::string& known : names) {
    if (!CaseInsensitiveLess{}(known, name) && !CaseInsensitiveLess{}(name, known)) return;
  }
  names.emplace_back(name);
}

// The words of a row's `timestamp` text that read as header names (a letter, then letters,
// digits and '-', with a '-' in them: "X-Acme-Timestamp", "a-timestamp (b-timestamp)",
// "t= of Acme-Signature"). The text is written for people; what it yields only widens what
// the harnesses send.
inline std::vector<std::string_view> NamesInText(std::string_view text) {
  std::vector<std::string_view> names;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = i;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) != 0 || text[end] == '-')) {
      ++end;
    }
    const std::string_view word = text.substr(i, end - i);
    if (!word.empty() && std::isalpha(static_cast<unsigned char>(word.front())) != 0 &&
        word.find('-') != std::string_view::npos && word.back() != '-') {
      names.push_back(word);
    }
    i = end == i ? i + 1 : end;
  }
  return names;
}

// The header names `endpoint`'s producer sends, as far as the table and Sign() tell: what
// Sign() writes with `signer` (when it signs: a JSON and a form body, an id and a type), the
// row's id and type headers, its token header, the names its timestamp text gives, and the
// endpoint's own `header:` fields.
inline void AddHeaderNames(std::vector<std::string>& names, const Endpoint& endpoint,
                           const Secret* signer) {
  const ProviderSpec& row = SpecOf(endpoint.provider);
  if (signer != nullptr && CanSign(*signer)) {
    const TimePoint at{std::chrono::seconds(1'700'000'000)};
    for (std::string_view body : {std::string_view(R"({"id":"evt_1"})"), std::string_view("a=1")}) {
      for (const auto& [name, value] : Sign(endpoint, *signer, body, at, "evt_1", "type")) {
        AddName(names, name);
      }
    }
  }
  for (const ProviderSpec::Source& source : row.ids) {
    if (source.from == FieldFrom::kHeader) AddName(names, source.name);
  }
  if (row.type.from == FieldFrom::kHeader) AddName(names, row.type.name);
  AddName(names, row.token_header);
  for (std::string_view name : NamesInText(row.timestamp)) AddName(names, name);
  for (const FieldRef* field :
       {&endpoint.event_id, &endpoint.event_type, &endpoint.resource, &endpoint.sequence}) {
    if (field->from == FieldFrom::kHeader) AddName(names, field->name);
  }
}

// Every row's names (an endpoint of each as EndpointOf makes it), then kGenericHeaders.
inline std::vector<std::string> AllHeaderNames() {
  std::vector<std::string> names;
  const Secret signer("value", std::string(kSigningSecret));
  for (const ProviderSpec& row : Providers()) {
    AddHeaderNames(names, EndpointOf(row), RowSigns(row) ? &signer : nullptr);
  }
  for (std::string_view name : kGenericHeaders) AddName(names, name);
  return names;
}

// A header name from the input: one of `names` or (first byte odd) any string, so that the
// names nothing here learns (see the top of this file) are reachable from the seeds.
inline std::string PickHeaderName(FuzzedDataProvider& in, const std::vector<std::string>& names) {
  if (in.ConsumeBool()) return in.ConsumeRandomLengthString(40);
  return names[in.ConsumeIntegralInRange<size_t>(0, names.size() - 1)];
}

}  // namespace hookbox::fuzz
