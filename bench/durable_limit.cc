// The benchmark's durable limit: the least a receiver that keeps hookbox's promise must do
// for a delivery, and nothing more. It checks the GitHub signature (HMAC-SHA256 over the raw
// body, X-Hub-Signature-256, compared in constant time), appends the delivery id and body to
// one file, and answers 200 once an fdatasync covers the append. Appends are group-committed
// as LevelDB's writer does it: the first caller in the queue writes and syncs every record
// queued so far, one write and one fdatasync for the group, then hands the lead on. No
// dedupe, no index, no log line, no jobs: hookbox's cost above this server is what its
// inbox, its answers and its bookkeeping add (bench/RESULTS.md, issue 42). Its HTTP side is
// the ceiling's (bench/listener.h).
//
//   durable_limit PORT FILE SECRET [THREADS]
//       prints {"msg":"listening","listen":"127.0.0.1:PORT"}
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <unistd.h>

#include <array>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "listener.h"

namespace {

// The append-only file with group commit.
class GroupLog {
 public:
  explicit GroupLog(int fd) : fd_(fd) {}

  // Returns once `record` is written and fdatasync'ed (true), or failed (false).
  bool Append(const std::string& record) {
    Entry mine{&record};
    std::unique_lock lock(mu_);
    queue_.push_back(&mine);
    mine.cv.wait(lock, [&] { return mine.done || queue_.front() == &mine; });
    if (mine.done) return mine.ok;
    const std::vector<Entry*> group(queue_.begin(), queue_.end());
    lock.unlock();
    std::string batch;
    for (const Entry* e : group) batch += *e->record;
    const bool ok = WriteAll(batch) && ::fdatasync(fd_) == 0;
    lock.lock();
    for (Entry* e : group) {
      queue_.pop_front();
      e->ok = ok;
      e->done = true;
      if (e != &mine) e->cv.notify_one();
    }
    if (!queue_.empty()) queue_.front()->cv.notify_one();
    return ok;
  }

 private:
  struct Entry {
    explicit Entry(const std::string* r) : record(r) {}
    const std::string* record;
    bool done = false;
    bool ok = false;
    std::condition_variable cv;
  };

  bool WriteAll(std::string_view data) const {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  int fd_;
  std::mutex mu_;
  std::deque<Entry*> queue_;
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// X-Hub-Signature-256: "sha256=" and the lowercase hex HMAC-SHA256 of the body.
bool Verified(const std::string& secret, const std::string& body, const std::string& header) {
  constexpr std::string_view kPrefix = "sha256=";
  if (header.size() != kPrefix.size() + 64 || header.compare(0, kPrefix.size(), kPrefix) != 0) {
    return false;
  }
  std::array<unsigned char, 32> claimed{};
  for (size_t i = 0; i < claimed.size(); ++i) {
    const int hi = HexValue(header[kPrefix.size() + 2 * i]);
    const int lo = HexValue(header[kPrefix.size() + 2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    claimed[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  // One HMAC context per thread, the algorithm fetched once (as hookbox's base/crypto.cc).
  static EVP_MAC* const kHmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  struct Free {
    void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
  };
  thread_local std::unique_ptr<EVP_MAC_CTX, Free> ctx = [] {
    std::unique_ptr<EVP_MAC_CTX, Free> c(EVP_MAC_CTX_new(kHmac));
    std::array<OSSL_PARAM, 2> params = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
        OSSL_PARAM_construct_end()};
    EVP_MAC_CTX_set_params(c.get(), params.data());
    return c;
  }();
  std::array<unsigned char, 32> mac{};
  size_t len = 0;
  if (EVP_MAC_init(ctx.get(), reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
                   nullptr) != 1 ||
      EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(body.data()), body.size()) !=
          1 ||
      EVP_MAC_final(ctx.get(), mac.data(), &len, mac.size()) != 1 || len != mac.size()) {
    return false;
  }
  return CRYPTO_memcmp(mac.data(), claimed.data(), mac.size()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: durable_limit PORT FILE SECRET [THREADS]\n");
    return 1;
  }
  const int port = std::atoi(argv[1]);
  const std::string secret = argv[3];
  const size_t threads = argc > 4 ? static_cast<size_t>(std::atoi(argv[4])) : 16;
  const int fd = ::open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror("durable_limit: open");
    return 1;
  }
  GroupLog log(fd);

  httplib::Server s;
  bench::SetUpLikeHookbox(s, threads);  // the ceiling's listener
  s.Post(".*", [&](const httplib::Request& req, httplib::Response& res) {
    if (!Verified(secret, req.body, req.get_header_value("X-Hub-Signature-256"))) {
      res.status = 401;
      res.set_content(R"({"error":"signature does not match"})", "application/json");
      return;
    }
    std::string record = req.get_header_value("X-GitHub-Delivery");
    record += '\t';
    record += std::to_string(req.body.size());
    record += '\t';
    record += req.body;
    record += '\n';
    if (!log.Append(record)) {
      res.status = 503;
      res.set_content(R"({"error":"storage unavailable"})", "application/json");
      return;
    }
    res.set_content(R"({"status":"accepted"})", "application/json");
  });
  return bench::ListenAndServe(s, port, "durable_limit: bind");
}
