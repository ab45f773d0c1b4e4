// Event identity from headers and body (see identify.h).
#include "receive/identify.h"

#include <simdjson.h>

#include <charconv>

#include "base/crypto.h"
#include "base/form.h"
#include "base/status_macros.h"
#include "ops/clock.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

FieldRef FieldOf(const ProviderSpec::Source& source) {
  return {source.from, std::string(source.name)};
}

std::string Describe(const FieldRef& ref) {
  switch (ref.from) {
    case FieldRef::From::kHeader:
      return "header:" + ref.name;
    case FieldRef::From::kForm:
      return "form:" + ref.name;
    default:
      return "body:" + ref.name;
  }
}

// The body, padded for simdjson once per delivery, and only if some field needs it. Each
// field gets a fresh on-demand iteration: after an error (a pointer into a body that is
// not what it claims), a document's iterator must not be reused; the fuzzer found that
// rewinding one then can read through a null parser.
class BodyReader {
 public:
  explicit BodyReader(std::string_view body) : body_(body) {}

  std::optional<std::string> Field(const std::string& pointer) {
    if (!padded_) padded_.emplace(body_);
    simdjson::ondemand::document doc;
    if (Parser().iterate(*padded_).get(doc) != simdjson::SUCCESS) return std::nullopt;
    simdjson::ondemand::value v;
    if (doc.at_pointer(pointer).get(v) != simdjson::SUCCESS) return std::nullopt;
    simdjson::ondemand::json_type type;
    if (v.type().get(type) != simdjson::SUCCESS) return std::nullopt;
    if (type == simdjson::ondemand::json_type::string) {
      std::string_view s;
      if (v.get_string().get(s) != simdjson::SUCCESS) return std::nullopt;
      return std::string(s);
    }
    if (type == simdjson::ondemand::json_type::number) {
      std::string_view raw = v.raw_json_token();
      while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' ||
                              raw.back() == '\t')) {
        raw.remove_suffix(1);
      }
      return std::string(raw);
    }
    return std::nullopt;
  }

  // The first value of a form field, the body parsed as application/x-www-form-urlencoded
  // once (whatever its Content-Type: a `form:` field is the operator's statement).
  std::optional<std::string> FormField(const std::string& name) {
    if (!form_) form_ = ParseUrlEncoded(body_);
    return FormValue(*form_, name);
  }

 private:
  // One parser per thread: parsers are reusable but not shareable. A document lives only
  // inside Field(), so nested readers on one thread cannot invalidate each other.
  static simdjson::ondemand::parser& Parser() {
    thread_local simdjson::ondemand::parser parser;
    return parser;
  }

  std::string_view body_;
  std::optional<simdjson::padded_string> padded_;
  std::optional<FormFields> form_;
};

std::optional<std::string> Read(const FieldRef& ref, const Headers& headers, BodyReader& body) {
  if (ref.from == FieldRef::From::kHeader) {
    auto v = HeaderValue(headers, ref.name);
    if (!v) return std::nullopt;
    return std::string(*v);
  }
  if (ref.from == FieldRef::From::kBody) return body.Field(ref.name);
  if (ref.from == FieldRef::From::kForm) return body.FormField(ref.name);
  return std::nullopt;
}

Status CheckField(const char* what, const std::string& value) {
  if (value.size() > kMaxIdentityField) {
    return Status::InvalidArgument(std::string(what) + " is longer than " +
                                   std::to_string(kMaxIdentityField) + " bytes");
  }
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) {
      return Status::InvalidArgument(std::string(what) + " contains control characters");
    }
  }
  return Status::Ok();
}

}  // namespace

std::vector<FieldRef> DefaultIdSources(Provider provider) {
  std::vector<FieldRef> sources;
  for (const ProviderSpec::Source& source : SpecOf(provider).ids) {
    if (!source.empty()) sources.push_back(FieldOf(source));
  }
  return sources;
}

FieldRef DefaultTypeSource(Provider provider) { return FieldOf(SpecOf(provider).type); }

std::optional<int64_t> SequenceKey(std::string_view value) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec == std::errc() && end == value.data() + value.size() && !value.empty()) return n;
  return ParseRfc3339Micros(value);
}

std::optional<std::string> BodyField(std::string_view body, const std::string& pointer) {
  BodyReader reader(body);
  return reader.Field(pointer);
}

namespace {

// The event's id (and where it came from): the first source that has one, else the hash of
// what the signature covers. A provider that always sends its id (provider.id_required) has
// no event without one.
Status ReadEventId(const Endpoint& endpoint, const Headers& headers, std::string_view id_header,
                   BodyReader& reader, Identity& id) {
  const ProviderSpec& provider = SpecOf(endpoint.provider);
  std::vector<FieldRef> id_sources = endpoint.event_id.empty()
                                         ? DefaultIdSources(endpoint.provider)
                                         : std::vector<FieldRef>{endpoint.event_id};
  if (endpoint.event_id.empty() && !id_header.empty()) {
    // The id is the one the signature covers, where the scheme signs one (standard: from the
    // header family that was verified, never the other one).
    id_sources = {FieldRef{FieldRef::From::kHeader, std::string(id_header)}};
  }
  for (const FieldRef& ref : id_sources) {
    auto v = Read(ref, headers, reader);
    if (v && !v->empty()) {
      id.event_id = std::move(*v);
      id.id_source = Describe(ref);
      break;
    }
  }
  if (id.event_id.empty() && endpoint.event_id.empty() && provider.id_required) {
    // The producer always sends its id (square: its body's /event_id, read where Square's body
    // starts in its signed message, verify.h Verified::body): no event it sends. Refused rather
    // than stored under the hash, which would make a new event of a signature over anything
    // else.
    const ProviderSpec::Source& first = provider.ids.front();
    return Status::InvalidArgument(std::string(provider.name) + " delivery without a " +
                                   (first.from == FieldRef::From::kHeader ? "header " : "body ") +
                                   std::string(first.name));
  }
  if (id.event_id.empty()) {
    id.event_id = "sha256:" + id.body_sha256;
    id.id_source = "sha256";
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Identity> Identify(const Endpoint& endpoint, const Headers& headers,
                            const Verified& verified) {
  BodyReader reader(verified.body);
  Identity id;
  id.body_sha256 =
      Sha256Hex(verified.signed_message.empty() ? verified.body : verified.signed_message);

  RETURN_IF_ERROR(ReadEventId(endpoint, headers, verified.id_header, reader, id));
  const ProviderSpec& provider = SpecOf(endpoint.provider);
  FieldRef type_ref =
      endpoint.event_type.empty() ? DefaultTypeSource(endpoint.provider) : endpoint.event_type;
  id.event_type = Read(type_ref, headers, reader).value_or("");
  if (endpoint.event_type.empty() && !provider.type_constant.empty()) {
    // The producer names no event (twilio); route on a form:NAME to tell them apart.
    id.event_type = provider.type_constant;
  }

  if (!endpoint.resource.empty() && !endpoint.sequence.empty()) {
    id.resource_id = Read(endpoint.resource, headers, reader).value_or("");
    id.sequence = Read(endpoint.sequence, headers, reader).value_or("");
    if (!id.resource_id.empty() && !id.sequence.empty()) id.sequence_key = SequenceKey(id.sequence);
  }

  for (auto [what, value] :
       {std::pair{"event id", &id.event_id}, std::pair{"event type", &id.event_type},
        std::pair{"resource id", &id.resource_id}, std::pair{"sequence", &id.sequence}}) {
    RETURN_IF_ERROR(CheckField(what, *value));
  }
  return id;
}

}  // namespace hookbox
