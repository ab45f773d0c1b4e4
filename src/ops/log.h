// Structured logs: one JSON object per line on stderr, which journald keeps. Every field is
// JSON-escaped, so an event id with control characters cannot forge a log line. Callers
// never pass secrets or bodies. Thread-safe: each line is written with a single write().
//
// When stderr is the journal (systemd sets JOURNAL_STREAM to the stream's device:inode, and
// stderr still is that stream), each line starts with its sd-daemon priority, `<3>` error,
// `<4>` warn, `<6>` info, `<7>` debug, which journald strips and keeps as the entry's
// PRIORITY, so `journalctl -p warning` shows warnings and errors only. Anywhere else (a
// file, a pipe, a terminal) the line is plain JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/log_level.h"

namespace hookbox {

// Adds "time" (RFC 3339 UTC, ms) and "level", then writes the line, unless `level` is below
// the threshold (SetLogLevel).
void Log(LogLevel level, const nlohmann::json& fields);
inline void LogDebug(const nlohmann::json& fields) { Log(LogLevel::kDebug, fields); }
inline void LogInfo(const nlohmann::json& fields) { Log(LogLevel::kInfo, fields); }
inline void LogWarn(const nlohmann::json& fields) { Log(LogLevel::kWarn, fields); }
inline void LogError(const nlohmann::json& fields) { Log(LogLevel::kError, fields); }

// The daemon's lifecycle (migrated, listening, reloaded, stopping, stopped): info lines that
// every threshold lets through, so an operator at `log_level: warn` still sees the daemon
// start, reload and stop, and with which version.
void LogLifecycle(const nlohmann::json& fields);

// The lowest level written (`log_level:`; info until set). Safe beside Log on any thread:
// a reload changes it while workers log.
void SetLogLevel(LogLevel level);
LogLevel CurrentLogLevel();

// Appends `text` to `out` as a JSON string, exactly as nlohmann's dump() (with invalid UTF-8
// replaced) writes it. Printable ASCII other than '"' and '\\' -- every header, id, verdict
// and log field a real producer sends -- is copied as it is, without building a JSON value;
// anything else takes nlohmann's escaping. (The log lines, the stored headers, the answers.)
void AppendJsonString(std::string& out, std::string_view text);

// Decides, from JOURNAL_STREAM and stderr as they are now, whether lines carry the journal's
// priority prefix. Called once at start (main) and again by tests; until then, plain JSON.
void DetectJournal();

}  // namespace hookbox
