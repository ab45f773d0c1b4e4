// Tests for handlers/file: real files in a temp directory, hostile event ids.
#include "handlers/file/file.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "tests/handlers/testing.h"

namespace hookbox {
namespace {

namespace fs = std::filesystem;
using testing::Build;
using testing::Event;
using testing::Quoted;
using testing::ReadAll;
using testing::TempDir;

std::unique_ptr<Handler> FileHandlerIn(const std::string& dir) {
  auto built = Build("file", "{dir: " + Quoted(dir) + "}");
  INFO(built.Errors());
  REQUIRE(built.handler != nullptr);
  return std::move(built.handler);
}

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  return files;
}

TEST_CASE("file: writes the exact body, and a re-run overwrites the same file") {
  TempDir dir;
  auto handler = FileHandlerIn(dir.path());
  CHECK(handler->timeout() == std::chrono::seconds(30));
  const std::string body("{\"a\":1}\0\xff\n", 10);
  HandlerResult r = handler->Run(Event("evt_1", body));
  CHECK(r.outcome == Outcome::kOk);
  CHECK(ReadAll(dir / "ep/evt_1.json") == body);

  CHECK(handler->Run(Event("evt_1", "second")).outcome == Outcome::kOk);
  CHECK(ReadAll(dir / "ep/evt_1.json") == "second");
  CHECK(FilesIn(dir.path()).size() == 1);  // and no temp file left behind
}

TEST_CASE("file: attempts at once, sharing directory fsyncs, each write their whole file") {
  TempDir dir;
  auto handler = FileHandlerIn(dir.path());
  constexpr int kThreads = 16, kEach = 20;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < kEach; ++n) {
        const std::string id = "e" + std::to_string(t) + "-" + std::to_string(n);
        if (handler->Run(Event(id, "body of " + id)).outcome == Outcome::kOk) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(ok == kThreads * kEach);
  CHECK(FilesIn(dir.path()).size() == static_cast<size_t>(kThreads * kEach));  // no temp left
  for (int t = 0; t < kThreads; ++t) {
    for (int n = 0; n < kEach; ++n) {
      const std::string id = "e" + std::to_string(t) + "-" + std::to_string(n);
      CHECK(ReadAll(dir / ("ep/" + id + ".json")) == "body of " + id);
    }
  }
}

TEST_CASE("file: no event id escapes <dir>/<endpoint>/, and distinct ids stay distinct") {
  TempDir dir;
  auto handler = FileHandlerIn(dir / "out");
  const std::vector<std::string> ids = {"../../etc/passwd",
                                        "/abs",
                                        "a/b",
                                        ".",
                                        "..",
                                        std::string("x\0y", 3),
                                        "x%00y",
                                        "x",
                                        std::string(10 * 1024, 'a'),
                                        std::string(10 * 1024, 'a') + "b",
                                        std::string(300, '/'),
                                        "~",
                                        "%7E",
                                        ".hidden",
                                        "%2Ehidden",
                                        "",
                                        "evt .json",
                                        "\xff\xfe"};
  for (const std::string& id : ids) {
    INFO("id " << id);
    CHECK(handler->Run(Event(id, "body of " + id)).outcome == Outcome::kOk);
  }
  const fs::path folder = fs::canonical(dir / "out/ep");
  std::vector<fs::path> files = FilesIn(dir / "out");
  CHECK(files.size() == ids.size());
  std::set<std::string> bodies;
  for (const fs::path& file : files) {
    INFO(file);
    CHECK(fs::canonical(file).parent_path() == folder);
    CHECK(file.filename().string().front() != '.');
    CHECK(file.filename().string().size() <= 205);
    bodies.insert(ReadAll(file));
  }
  CHECK(bodies.size() == ids.size());
}

TEST_CASE("file: SafeFileName") {
  CHECK(SafeFileName("evt_1.A-b") == "evt_1.A-b");
  CHECK(SafeFileName(".") == "%2E");
  CHECK(SafeFileName("..") == "%2E.");
  CHECK(SafeFileName("a/b") == "a%2Fb");
  CHECK(SafeFileName(std::string("x\0y", 3)) == "x%00y");
  CHECK(SafeFileName("x%00y") == "x%2500y");
  CHECK(SafeFileName("") == "%");
  CHECK(SafeFileName("~") == "%7E");

  const std::string long_id(500, '/');
  const std::string name = SafeFileName(long_id);
  CHECK(name.size() <= 200);
  CHECK(name.find('~') != std::string::npos);
  CHECK(name.find("%2F~") != std::string::npos);  // the prefix ends on a whole %XX
  CHECK(SafeFileName(long_id + "x") != name);
}

TEST_CASE("file: the factory creates dir with its parents and reports problems") {
  TempDir dir;
  const std::string nested = dir / "a/b/c";
  CHECK(Build("file", "{dir: " + Quoted(nested) + "}").handler != nullptr);
  CHECK(fs::is_directory(nested));

  std::ofstream(dir / "plain") << "x";
  CHECK(Build("file", "{dir: " + Quoted(dir / "plain/sub") + "}").HasError("h.dir: cannot create"));
  CHECK(Build("file", "{}").HasError("h: dir is required"));
  CHECK(Build("file", "{dir: ''}").HasError("h.dir: expected a directory path"));
  CHECK(Build("file", "{dir: [a]}").HasError("h.dir: expected a directory path"));
  auto built = Build("file", "{dir: " + Quoted(dir.path()) + ", mode: 0600}");
  CHECK(built.handler == nullptr);
  CHECK(built.HasError("h: unknown key \"mode\""));
}

}  // namespace
}  // namespace hookbox

TEST_CASE("file: temp files left by a dead process are swept at load", "[file]") {
  hookbox::testing::TempDir dir;
  const std::string folder = dir.path() + "/ep";
  std::filesystem::create_directories(folder);
  // A pid that cannot be running: a child we started and reaped.
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::string stale = folder + "/.tmp-" + std::to_string(dead) + "-0-123";
  const std::string mine = folder + "/.tmp-" + std::to_string(getpid()) + "-0-456";
  std::ofstream(stale) << "half";
  std::ofstream(mine) << "in progress";
  std::ofstream(folder + "/evt.json") << "{}";
  auto built = hookbox::testing::Build("file", "{dir: " + dir.path() + "}");
  REQUIRE(built.handler);
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(mine));
  CHECK(std::filesystem::exists(folder + "/evt.json"));
}
