// Structured logs: one JSON object per line on stderr, which journald keeps. Every field is
// JSON-escaped, so an event id with control characters cannot forge a log line. Callers
// never pass secrets or bodies. Thread-safe: each line is written with a single write().
#pragma once

#include <nlohmann/json.hpp>

namespace hookbox {

// Adds "time" (RFC 3339 UTC, ms) and "level", then writes the line.
void Log(const char* level, const nlohmann::json& fields);
inline void LogInfo(const nlohmann::json& fields) { Log("info", fields); }
inline void LogWarn(const nlohmann::json& fields) { Log("warn", fields); }
inline void LogError(const nlohmann::json& fields) { Log("error", fields); }

}  // namespace hookbox
