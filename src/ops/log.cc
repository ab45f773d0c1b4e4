// Structured JSON log lines on stderr (see log.h): the level threshold and the journal's
// priority prefix.
#include "ops/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "ops/clock.h"

namespace hookbox {

namespace {

std::atomic<LogLevel> g_threshold{LogLevel::kInfo};
std::atomic<bool> g_journal{false};

// sd-daemon(3)'s priorities (syslog's numbers).
const char* JournalPrefix(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "<7>";
    case LogLevel::kInfo:
      return "<6>";
    case LogLevel::kWarn:
      return "<4>";
    case LogLevel::kError:
      return "<3>";
  }
  return "<6>";
}

}  // namespace

void SetLogLevel(LogLevel level) { g_threshold.store(level, std::memory_order_relaxed); }

LogLevel CurrentLogLevel() { return g_threshold.load(std::memory_order_relaxed); }

void DetectJournal() {
  // systemd.exec(5): JOURNAL_STREAM is "DEVICE:INODE" of the stream it connected; a process
  // whose stderr was redirected since (a child's log file) must not take it for the journal.
  bool journal = false;
  const char* env = std::getenv("JOURNAL_STREAM");
  struct stat st {};
  unsigned long long dev = 0;
  unsigned long long ino = 0;
  if (env && std::sscanf(env, "%llu:%llu", &dev, &ino) == 2 && ::fstat(STDERR_FILENO, &st) == 0) {
    journal = static_cast<unsigned long long>(st.st_dev) == dev &&
              static_cast<unsigned long long>(st.st_ino) == ino;
  }
  g_journal.store(journal, std::memory_order_relaxed);
}

namespace {

// The line's object: `fields` with "time" and "level" added (unless `fields` has its own),
// keys in byte order as a JSON object of them would print, written member by member from
// `fields` itself rather than from a merged copy.
void AppendObject(std::string& text, LogLevel level, const nlohmann::json& fields) {
  const std::string time = FormatTime(std::chrono::system_clock::now());
  const std::pair<std::string_view, std::string_view> added[] = {{"level", LogLevelName(level)},
                                                                 {"time", time}};
  text += '{';
  bool first = true;
  auto key = [&](std::string_view name) {
    if (!first) text += ',';
    first = false;
    AppendJsonString(text, name);
    text += ':';
  };
  size_t next = 0;  // the next of `added` not yet written
  auto add_before = [&](const std::string* name) {
    for (; next < std::size(added) && (name == nullptr || *name >= added[next].first); ++next) {
      if (name != nullptr && *name == added[next].first) continue;  // the caller's own
      key(added[next].first);
      AppendJsonString(text, added[next].second);
    }
  };
  if (fields.is_object()) {
    for (const auto& [name, value] : fields.items()) {
      add_before(&name);
      key(name);
      if (value.is_string()) {
        AppendJsonString(text, value.get_ref<const std::string&>());
      } else {
        text += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
    }
  }
  add_before(nullptr);
  text += '}';
}

void Write(LogLevel level, const nlohmann::json& fields) {
  std::string text = g_journal.load(std::memory_order_relaxed) ? JournalPrefix(level) : "";
  // Invalid UTF-8 from a client (an event id, a path) is replaced, never thrown on.
  AppendObject(text, level, fields);
  text += '\n';
  // One write() per line: concurrent lines never interleave (stderr is unbuffered).
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + off, text.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += nlohmann::json(std::string(text))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
  }
  out += '"';
  out += text;
  out += '"';
}

void Log(LogLevel level, const nlohmann::json& fields) {
  if (level >= CurrentLogLevel()) Write(level, fields);
}

void LogLifecycle(const nlohmann::json& fields) { Write(LogLevel::kInfo, fields); }

}  // namespace hookbox
