// Shared by the verify tests: endpoints, clocks and a way to read a failure's reason.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "verify/verify.h"

namespace hookbox::testing {

inline TimePoint At(int64_t unix_seconds) { return TimePoint(std::chrono::seconds(unix_seconds)); }

inline Endpoint MakeEndpoint(Provider provider, std::vector<std::string> secrets) {
  Endpoint endpoint;
  endpoint.name = "test-endpoint";
  endpoint.path = "/hooks/test";
  endpoint.provider = provider;
  for (std::string& value : secrets) endpoint.secrets.push_back({"value", std::move(value)});
  return endpoint;
}

// "ok", or the failure's what() (one of the reason:: strings).
inline std::string Outcome(const Status& status) {
  if (status.ok()) return "ok";
  if (status.code() != Status::Code::kUnauthenticated) return "wrong code: " + status.ToString();
  return status.what();
}

// A copy of `headers` with `name` set to `value` (all earlier values of it removed).
inline Headers With(Headers headers, const std::string& name, const std::string& value) {
  headers.erase(name);
  headers.emplace(name, value);
  return headers;
}

inline Headers Without(Headers headers, const std::string& name) {
  headers.erase(name);
  return headers;
}

inline std::string First(const Headers& headers, const std::string& name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

}  // namespace hookbox::testing
