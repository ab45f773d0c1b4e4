// The `file` handler: one file per event, <dir>/<endpoint>/<safe id>.json, holding the body
// bytes exactly. The write is atomic and durable: a temp file (an O_EXCL name that no safe
// name can take, since safe names never start with ".") is written and fsynced, renamed
// over the final name, and the directory fsynced, so after Run returns ok the file survives
// a crash, and at no point does a reader see part of a body. Event ids come from producers:
// SafeFileName makes sure none can name a path outside <dir>/<endpoint>/.
#include "handlers/file/file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/crypto.h"
#include "config/yaml_reader.h"

namespace hookbox {
namespace {

constexpr auto kTimeout = std::chrono::seconds(30);
constexpr size_t kMaxName = 200;
constexpr size_t kHashDigits = 32;
constexpr int kTempAttempts = 100;

bool IsKept(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// A name no other writer of this process or another one is using at the moment; O_EXCL
// settles the rest.
std::string TempName() {
  static std::atomic<uint64_t> counter{0};
  return ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

// Writes all of `data`, retrying short writes; false with errno set otherwise.
bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

HandlerResult Failed(const std::string& what, const std::string& path, int err) {
  return {Outcome::kFailed, what + " " + path + ": " + std::strerror(err), {}};
}

// A crash (kill -9, power loss) between writing a temp file and renaming it leaves the temp
// file behind. At load, temp files of processes that no longer run are removed, so the
// folders hold only whole event files. A pid reused by another process only delays this.
void SweepAbandonedTemps(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& folder : fs::directory_iterator(dir, ec)) {
    if (!folder.is_directory(ec)) continue;
    for (const auto& file : fs::directory_iterator(folder.path(), ec)) {
      const std::string name = file.path().filename().string();
      if (name.rfind(".tmp-", 0) != 0) continue;
      const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + 5));
      if (pid <= 0 || pid == ::getpid()) continue;
      if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
      fs::remove(file.path(), ec);
    }
  }
}

class FileHandler final : public Handler {
 public:
  FileHandler(std::string dir, int concurrency) : dir_(std::move(dir)), concurrency_(concurrency) {}

  HandlerResult Run(const HandlerEvent& event) override;
  std::chrono::milliseconds timeout() const override { return kTimeout; }
  int concurrency() const override { return concurrency_; }

 private:
  // Opens <dir>/<endpoint>/, creating it (and making its entry durable) the first time.
  int OpenFolder(const std::string& folder) const;

  const std::string dir_;  // absolute, exists since load
  const int concurrency_;
};

int FileHandler::OpenFolder(const std::string& folder) const {
  if (::mkdir(folder.c_str(), 0750) == 0) {
    int parent = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent >= 0) {
      ::fsync(parent);
      ::close(parent);
    }
  }
  return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

HandlerResult FileHandler::Run(const HandlerEvent& event) {
  const std::string folder = dir_ + "/" + SafeFileName(event.endpoint);
  const std::string name = SafeFileName(event.event_id) + ".json";
  int dir_fd = OpenFolder(folder);
  if (dir_fd < 0) return Failed("cannot open", folder, errno);

  std::string temp;
  int fd = -1;
  for (int i = 0; i < kTempAttempts && fd < 0; ++i) {
    temp = TempName();
    fd = ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int err = errno;
    ::close(dir_fd);
    return Failed("cannot create a temp file in", folder, err);
  }

  const char* step = nullptr;
  if (!WriteAll(fd, event.body))
    step = "cannot write";
  else if (::fsync(fd) != 0)
    step = "cannot fsync";
  int err = errno;
  if (::close(fd) != 0 && step == nullptr) {
    step = "cannot write";  // NFS and friends report write errors at close
    err = errno;
  }
  if (step == nullptr && ::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0) {
    step = "cannot rename into";
    err = errno;
  }
  if (step != nullptr) {
    ::unlinkat(dir_fd, temp.c_str(), 0);
    ::close(dir_fd);
    return Failed(step, folder + "/" + name, err);
  }
  // The rename is durable only once the directory is.
  if (::fsync(dir_fd) != 0) {
    err = errno;
    ::close(dir_fd);
    return Failed("cannot fsync", folder, err);
  }
  ::close(dir_fd);
  return {Outcome::kOk, "wrote " + folder + "/" + name, {}};
}

// What the reader read at load (a KindSettings, handlers/handler.h).
struct FileSpec final : KindSettings {
  // Absolute, created and writable when read with host_checks; as written otherwise.
  std::string dir;
  bool prepared = false;  // read with host_checks
  int concurrency = Handler::kDefaultConcurrency;
};

// The directory a handler writes under: with host_checks absolute, created if missing and
// writable; nullopt after an error.
std::optional<std::string> ReadDir(YamlReader& reader, const YAML::Node& node,
                                   const std::string& at, bool host_checks) {
  const auto path = reader.Scalar(node, at, "a directory path",
                                  [](std::string_view text) { return !text.empty(); });
  if (!path) return std::nullopt;
  const std::string& text = *path;
  if (text.find('\0') != std::string::npos) {
    reader.Error(at, "contains a NUL byte");
    return std::nullopt;
  }
  if (!host_checks) return text;
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(text, ec).lexically_normal();
  if (!ec) std::filesystem::create_directories(dir, ec);
  if (ec) {
    reader.Error(at, "cannot create " + text + ": " + ec.message());
    return std::nullopt;
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    reader.Error(at, text + " is not a directory");
    return std::nullopt;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    reader.Error(at, text + " is not writable: " + std::strerror(errno));
    return std::nullopt;
  }
  std::string result = dir.string();
  if (result.size() > 1 && result.back() == '/') result.pop_back();
  return result;
}

}  // namespace

std::string SafeFileName(std::string_view text) {
  if (text.empty()) return "%";
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string name;
  name.reserve(std::min(text.size(), kMaxName + 3));
  for (size_t i = 0; i < text.size() && name.size() <= kMaxName; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (IsKept(c) && !(i == 0 && c == '.')) {
      name += static_cast<char>(c);
    } else {
      name += '%';
      name += kHex[c >> 4];
      name += kHex[c & 15];
    }
  }
  if (name.size() <= kMaxName) return name;
  // Too long: a prefix that does not split a %XX, then the hash of the whole text.
  size_t cut = kMaxName - 1 - kHashDigits;
  if (name[cut - 1] == '%')
    cut -= 1;
  else if (name[cut - 2] == '%')
    cut -= 2;
  return name.substr(0, cut) + "~" + Sha256Hex(text).substr(0, kHashDigits);
}

std::shared_ptr<const KindSettings> ReadFileSettings(YamlReader& reader, const YamlTree& settings,
                                                     const std::string& where,
                                                     const LoadOptions& options) {
  const size_t before = reader.error_count();
  auto spec = std::make_shared<FileSpec>();
  spec->prepared = options.host_checks;
  std::optional<std::string> dir;
  const bool is_map = reader.ReadMapping(
      settings.node, where,
      {
          {"dir", [&](auto& n, auto& at) { dir = ReadDir(reader, n, at, options.host_checks); }},
          ConcurrencyField(reader, &spec->concurrency),
      });
  if (is_map) reader.Require(settings.node, where, {"dir"});
  if (reader.error_count() != before || !dir) return nullptr;
  spec->dir = std::move(*dir);
  return spec;
}

std::unique_ptr<Handler> MakeFileHandler(const KindSettings& settings, const std::string& where,
                                         std::vector<std::string>* errors) {
  const auto* spec = KindSpec<FileSpec>(settings, where, "a file handler's", errors);
  if (spec == nullptr) return nullptr;
  // Only a folder made ready for the daemon: an operator's verb that builds handlers to look
  // at them touches no file.
  if (spec->prepared) SweepAbandonedTemps(spec->dir);
  return std::make_unique<FileHandler>(spec->dir, spec->concurrency);
}

}  // namespace hookbox
