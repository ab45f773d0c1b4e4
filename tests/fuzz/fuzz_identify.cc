// libFuzzer harness: identification (JSON pointers and form fields into hostile bodies,
// header sources, sequence parsing). The input picks a row of the provider table (or
// `verify: none`), whose default id and type sources then apply, and fills headers named as
// the table and Sign() show its producers' headers (fuzz_providers.h: no provider is named
// here). Identify must return an identity or InvalidArgument, never crash, and an identity
// always has an event id.
#include <fuzzer/FuzzedDataProvider.h>

#include "fuzz_providers.h"
#include "receive/identify.h"

using namespace hookbox;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> kHeaderNames = fuzz::AllHeaderNames();
  FuzzedDataProvider in(data, size);
  Endpoint ep;
  ep.name = "fuzz";
  // One past the last row: `verify: none`.
  const size_t row = in.ConsumeIntegralInRange<size_t>(0, Providers().size());
  ep.provider = row < Providers().size() ? Providers()[row].provider : Provider::kNone;
  auto field = [&](FieldRef::From from) {
    return FieldRef{from, in.PickValueInArray({std::string("/id"), std::string("/data/object/id"),
                                               std::string(""), std::string("/a~1b/0"),
                                               in.ConsumeRandomLengthString(32)})};
  };
  const auto from = [&] {
    return in.PickValueInArray({FieldRef::From::kBody, FieldRef::From::kForm});
  };
  if (in.ConsumeBool()) ep.event_id = field(from());
  if (in.ConsumeBool()) ep.event_type = field(from());
  if (in.ConsumeBool()) {
    ep.resource = field(from());
    ep.sequence = field(in.ConsumeBool() ? FieldRef::From::kBody : FieldRef::From::kHeader);
  }
  Headers headers;
  const int count = in.ConsumeIntegralInRange(0, 3);
  for (int i = 0; i < count; ++i) {
    std::string name = fuzz::PickHeaderName(in, kHeaderNames);
    headers.emplace(std::move(name), in.ConsumeRandomLengthString(64));
  }
  // What verification may leave besides the body (verify.h, Verified): the header of a
  // signed id (standard's, or any name: identity must hold for each) and a signed message
  // (twilio's, square's), whose hash stands in for the body's.
  const std::string id_header = in.ConsumeBool() ? fuzz::PickHeaderName(in, kHeaderNames) : "";
  const std::string signed_message = in.ConsumeBool() ? in.ConsumeRandomLengthString(128) : "";
  const std::string body = in.ConsumeRemainingBytesAsString();
  Verified verified;
  verified.body = body;
  verified.id_header = id_header;
  verified.signed_message = signed_message;
  auto id = Identify(ep, headers, verified);
  if (id.ok() && id->event_id.empty()) __builtin_trap();  // there is always an id
  (void)SequenceKey(body.substr(0, 64));
  return 0;
}
