// Structured JSON log lines on stderr (see log.h).
#include "ops/log.h"

#include <unistd.h>

#include "ops/clock.h"

namespace hookbox {

void Log(const char* level, const nlohmann::json& fields) {
  nlohmann::json line = {{"time", FormatTime(std::chrono::system_clock::now())}, {"level", level}};
  line.update(fields);
  // Invalid UTF-8 from a client (an event id, a path) is replaced, never thrown on.
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text += '\n';
  // One write() per line: concurrent lines never interleave (stderr is unbuffered).
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + off, text.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

}  // namespace hookbox
