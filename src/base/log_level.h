// The four levels of a log line, shared by the logger (ops/log.h) and the config's
// `log_level:` key (config/), which both depend only on base/.
#pragma once

#include <optional>
#include <string_view>

namespace hookbox {

// In rising order of severity: a level lets through its own lines and those above it.
enum class LogLevel { kDebug, kInfo, kWarn, kError };

// The name in `log_level:` and in a line's "level" field: debug, info, warn, error.
constexpr std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

constexpr std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (LogLevelName(l) == name) return l;
  }
  return std::nullopt;
}

}  // namespace hookbox
