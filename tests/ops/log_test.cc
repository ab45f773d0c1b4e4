// The logger's level threshold and its journal priority prefix (ops/log.h): stderr is
// pointed at a real file, and JOURNAL_STREAM at that file's device:inode as systemd would
// set it, or at another stream, or left unset.
#include "ops/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace hookbox;

namespace {

// For its lifetime, stderr writes to a fresh file; the logger's state is put back after.
class CapturedStderr {
 public:
  CapturedStderr() {
    path_ = std::filesystem::temp_directory_path() /
            ("hookbox-log-test-" + std::to_string(getpid()) + ".txt");
    saved_ = dup(STDERR_FILENO);
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  ~CapturedStderr() {
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    unsetenv("JOURNAL_STREAM");
    DetectJournal();
    SetLogLevel(LogLevel::kInfo);
    std::filesystem::remove(path_);
  }
  // "DEVICE:INODE" of the file stderr now writes to, as systemd sets JOURNAL_STREAM.
  std::string Stream() const {
    struct stat st {};
    fstat(STDERR_FILENO, &st);
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  std::vector<std::string> Lines() const {
    std::ifstream in(path_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

 private:
  std::filesystem::path path_;
  int saved_ = -1;
};

}  // namespace

TEST_CASE("log: on the journal each line starts with its priority", "[log]") {
  CapturedStderr err;
  setenv("JOURNAL_STREAM", err.Stream().c_str(), 1);
  DetectJournal();
  SetLogLevel(LogLevel::kDebug);
  LogDebug({{"msg", "d"}});
  LogInfo({{"msg", "i"}});
  LogWarn({{"msg", "w"}});
  LogError({{"msg", "e"}});
  const auto lines = err.Lines();
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].rfind("<7>{", 0) == 0);
  CHECK(lines[1].rfind("<6>{", 0) == 0);
  CHECK(lines[2].rfind("<4>{", 0) == 0);
  CHECK(lines[3].rfind("<3>{", 0) == 0);
  // After the prefix, the same JSON as anywhere else.
  auto j = nlohmann::json::parse(lines[2].substr(3));
  CHECK(j["level"] == "warn");
  CHECK(j["msg"] == "w");
}

TEST_CASE("log: plain JSON when stderr is not the journal's stream", "[log]") {
  CapturedStderr err;
  SECTION("JOURNAL_STREAM names another stream (stderr was redirected since)") {
    setenv("JOURNAL_STREAM", "8:12345", 1);
  }
  SECTION("JOURNAL_STREAM unset") { unsetenv("JOURNAL_STREAM"); }
  SECTION("JOURNAL_STREAM malformed") { setenv("JOURNAL_STREAM", "journal", 1); }
  DetectJournal();
  LogWarn({{"msg", "w"}});
  const auto lines = err.Lines();
  REQUIRE(lines.size() == 1);
  auto j = nlohmann::json::parse(lines[0]);  // throws if anything precedes the object
  CHECK(j["level"] == "warn");
}

TEST_CASE("log: the level lets through its own lines and those above it", "[log]") {
  CapturedStderr err;
  DetectJournal();
  SetLogLevel(LogLevel::kWarn);
  LogDebug({{"msg", "d"}});
  LogInfo({{"msg", "i"}});
  LogWarn({{"msg", "w"}});
  LogError({{"msg", "e"}});
  LogLifecycle({{"msg", "listening"}});  // whatever the level
  SetLogLevel(LogLevel::kError);
  LogWarn({{"msg", "w2"}});
  SetLogLevel(LogLevel::kInfo);
  LogDebug({{"msg", "d2"}});
  LogInfo({{"msg", "i2"}});
  std::vector<std::string> msgs;
  for (const auto& line : err.Lines()) msgs.push_back(nlohmann::json::parse(line)["msg"]);
  CHECK(msgs == std::vector<std::string>{"w", "e", "listening", "i2"});
}

TEST_CASE("log: level names", "[log]") {
  CHECK(ParseLogLevel("debug") == LogLevel::kDebug);
  CHECK(ParseLogLevel("info") == LogLevel::kInfo);
  CHECK(ParseLogLevel("warn") == LogLevel::kWarn);
  CHECK(ParseLogLevel("error") == LogLevel::kError);
  CHECK_FALSE(ParseLogLevel("warning").has_value());
  CHECK_FALSE(ParseLogLevel("INFO").has_value());
  CHECK(LogLevelName(LogLevel::kWarn) == "warn");
}

TEST_CASE("log: a line is the fields' JSON object with time and level, byte for byte", "[log]") {
  // Written member by member (ops/log.cc), the line must read exactly as nlohmann's dump of
  // the merged object would: keys in byte order, "level" and "time" among them, a caller's
  // own "time" kept, strings with quotes, control characters and invalid UTF-8 escaped or
  // replaced, numbers, booleans, null and nested values as they print.
  CapturedStderr err;
  DetectJournal();
  const nlohmann::json cases[] = {
      {{"msg", "delivery"}, {"a", 1}, {"latency_ms", 0.25}, {"zz", true}, {"m", nullptr}},
      {{"msg", "q\"uote\\back\nline\x01"}, {"bad", "\xff\xfe ok"}, {"ünï", "cödé"}},
      {{"time", "the caller's"}, {"level", "its own"}, {"nested", {{"b", {1, 2}}, {"a", "x"}}}},
      {{"tima", 1}, {"timz", 2}, {"leve", 3}, {"levelz", 4}, {"", 5}, {"~", "last"}},
      nlohmann::json::object()};
  for (const nlohmann::json& fields : cases) LogInfo(fields);
  const auto lines = err.Lines();
  REQUIRE(lines.size() == std::size(cases));
  for (size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json expected = {{"level", "info"}};
    // The line's own time (it is taken when the line is written).
    expected["time"] = nlohmann::json::parse(lines[i])["time"];
    expected.update(cases[i]);
    CHECK(lines[i] == expected.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}
