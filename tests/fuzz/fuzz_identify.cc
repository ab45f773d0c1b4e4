// libFuzzer harness: identification (JSON pointers and form fields into hostile bodies,
// header sources, sequence parsing). Identify must return an identity or InvalidArgument,
// never crash.
#include <fuzzer/FuzzedDataProvider.h>

#include "receive/identify.h"

using namespace hookbox;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Endpoint ep;
  ep.name = "fuzz";
  ep.provider = in.PickValueInArray({Provider::kStripe, Provider::kGithub, Provider::kSlack,
                                     Provider::kStandard, Provider::kTwilio, Provider::kDiscord,
                                     Provider::kNone});
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
  headers.emplace("X-GitHub-Delivery", in.ConsumeRandomLengthString(64));
  headers.emplace(in.ConsumeRandomLengthString(16), in.ConsumeRandomLengthString(64));
  const std::string body = in.ConsumeRemainingBytesAsString();
  auto id = Identify(ep, headers, body);
  if (id.ok() && id->event_id.empty()) __builtin_trap();  // there is always an id
  (void)SequenceKey(body.substr(0, 64));
  return 0;
}
