// Small helpers shared by the config tests: load a YAML text (the handler kinds' settings
// read with the rest, as every verb loads it) and look for lines among the collected errors
// and warnings, plus a temp file that removes itself.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "handlers/handler.h"

namespace hookbox::testing {

inline LoadResult Load(const std::string& yaml) {
  return LoadConfigText(yaml, "test.yaml", {.kinds = &KindReaders()});
}

// True when one of `lines` contains `part`.
inline bool HasLine(const std::vector<std::string>& lines, std::string_view part) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return line.find(part) != std::string::npos; });
}

// Everything a load said, for failure messages.
inline std::string Dump(const LoadResult& r) {
  std::string text;
  for (const auto& e : r.errors) text += "error: " + e + "\n";
  for (const auto& w : r.warnings) text += "warning: " + w + "\n";
  return text;
}

// A uniquely named file under $TMPDIR (or /tmp) holding `content`; removed on destruction.
class TempFile final {
 public:
  explicit TempFile(std::string_view content) {
    const char* dir = getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/hookbox-config-test-XXXXXX";
    int fd = mkstemp(path_.data());
    if (fd >= 0) {
      ssize_t written = write(fd, content.data(), content.size());
      (void)written;
      close(fd);
    }
  }
  ~TempFile() { unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace hookbox::testing
