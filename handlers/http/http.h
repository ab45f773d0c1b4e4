// The `http` handler kind: POSTs each event's body to a downstream URL with an
// Idempotency-Key (<endpoint>:<event_id>, the same on every attempt), the event named in
// X-Hookbox-Event-Type, X-Hookbox-Event-Id and X-Hookbox-Endpoint, and the stored request's
// Content-Type, optionally re-signed as a Standard Webhook with its own secret.
// Config: {url: "http(s)://host[:port]/path", timeout: 10s, headers: {Name: value},
// sign: {secret: {env: NAME} | {file: PATH} | {value: TEXT}}}.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "handlers/handler.h"

namespace hookbox {

// The kind's reader (handlers/registry.cc, at load) and factory. A sign secret is read once,
// by the reader (with resolve_secrets).
std::shared_ptr<const KindSettings> ReadHttpSettings(YamlReader& reader, const YamlTree& settings,
                                                     const std::string& where,
                                                     const LoadOptions& options);
std::unique_ptr<Handler> MakeHttpHandler(const KindSettings& settings, const std::string& where,
                                         std::vector<std::string>* errors);

// A Retry-After value (delta-seconds or an HTTP-date, any year to 9999) as a delay from
// `now`, at most one hour; nullopt when it is malformed or asks for no delay.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value,
                                                         std::chrono::system_clock::time_point now);

}  // namespace hookbox
