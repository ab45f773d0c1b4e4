// Who may deliver to an endpoint (README, "IP allow lists"): the client's address, and the
// endpoint's `allow_from:` ranges checked against it before any verification or lookup.
//
// The client is the connection's peer. When the peer is one of the top-level
// `trusted_proxies:`, the client is the rightmost `X-Forwarded-For` entry that is not a
// trusted proxy: each proxy appends the address it saw, so entries left of the first
// untrusted one may have been written by the client itself. A request from outside the
// trusted proxies keeps its own address, whatever `X-Forwarded-For` it sends.
#pragma once

#include <string>

#include "base/delivery.h"
#include "config/config.h"

namespace hookbox {

struct Client {
  std::string address;     // as seen or forwarded ("" for a unix socket), for logs
  bool forwarded = false;  // taken from X-Forwarded-For
};

// Parses nothing when there are no trusted proxies: the peer is the client.
Client ClientOf(const Config& config, const Delivery& d);

// True when `endpoint` takes deliveries from `client`: it has no allow list, or the client's
// address is in one of its ranges. An address that is no IP address is in none.
bool AllowedFrom(const Endpoint& endpoint, const Client& client);

}  // namespace hookbox
