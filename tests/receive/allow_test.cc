// The client's address and the allow list (receive/allow.h): the peer unless it is a trusted
// proxy; behind trusted proxies, the rightmost X-Forwarded-For entry that is not one, across
// repeated header lines; a client outside the proxies keeps its own address whatever it
// forwards; an address that is no IP address is allowed by no range.
#include "receive/allow.h"

#include <catch2/catch.hpp>

using namespace hookbox;

namespace {

std::vector<IpRange> Ranges(std::initializer_list<const char*> texts) {
  std::vector<IpRange> out;
  for (const char* t : texts) out.push_back(*ParseIpRange(t));
  return out;
}

Delivery From(const std::string& peer, std::initializer_list<const char*> forwarded = {}) {
  Delivery d;
  d.peer = peer;
  for (const char* f : forwarded) d.headers.emplace("X-Forwarded-For", f);
  return d;
}

}  // namespace

TEST_CASE("ClientOf: the peer, or the first untrusted address right to left") {
  Config none;
  CHECK(ClientOf(none, From("10.0.0.1", {"203.0.113.9"})).address == "10.0.0.1");

  Config proxied;
  proxied.trusted_proxies = Ranges({"10.0.0.0/8", "::1"});
  // Not a trusted proxy: its X-Forwarded-For is the client's own claim, not believed.
  Client direct = ClientOf(proxied, From("198.51.100.4", {"10.0.0.7"}));
  CHECK(direct.address == "198.51.100.4");
  CHECK_FALSE(direct.forwarded);
  // One proxy: the address it saw.
  Client one = ClientOf(proxied, From("10.0.0.1", {"203.0.113.9"}));
  CHECK(one.address == "203.0.113.9");
  CHECK(one.forwarded);
  // A spoofed entry on the left stays the client's claim: the rightmost untrusted one wins.
  CHECK(ClientOf(proxied, From("10.0.0.1", {"192.0.2.66, 203.0.113.9, 10.0.0.2"})).address ==
        "203.0.113.9");
  // A proxy that adds its own header line: the lines are one list, in order.
  CHECK(ClientOf(proxied, From("::1", {"192.0.2.66", "203.0.113.9 ,10.0.0.3"})).address ==
        "203.0.113.9");
  // Every entry trusted: the leftmost is the client.
  CHECK(ClientOf(proxied, From("10.0.0.1", {"10.0.0.9, 10.0.0.2"})).address == "10.0.0.9");
  // A trusted proxy that forwarded nothing: itself.
  Client bare = ClientOf(proxied, From("10.0.0.1"));
  CHECK(bare.address == "10.0.0.1");
  CHECK_FALSE(bare.forwarded);
  // Garbage is the client's, as written: no range allows it.
  CHECK(ClientOf(proxied, From("10.0.0.1", {"203.0.113.9, unknown"})).address == "unknown");
  // A dual-stack listener's mapped address of a trusted IPv4 proxy.
  CHECK(ClientOf(proxied, From("::ffff:10.0.0.1", {"203.0.113.9"})).address == "203.0.113.9");
}

TEST_CASE("AllowedFrom: no list allows all; a list allows its ranges only") {
  Endpoint open;
  CHECK(AllowedFrom(open, Client{"198.51.100.4", false}));
  CHECK(AllowedFrom(open, Client{"", false}));

  Endpoint listed;
  listed.allow_from = Ranges({"203.0.113.0/24", "::1"});
  CHECK(AllowedFrom(listed, Client{"203.0.113.9", true}));
  CHECK(AllowedFrom(listed, Client{"::ffff:203.0.113.9", false}));
  CHECK(AllowedFrom(listed, Client{"::1", false}));
  CHECK_FALSE(AllowedFrom(listed, Client{"127.0.0.1", false}));
  CHECK_FALSE(AllowedFrom(listed, Client{"unknown", true}));
  CHECK_FALSE(AllowedFrom(listed, Client{"", false}));  // a unix socket has no address
}
