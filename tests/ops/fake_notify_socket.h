// A stand-in for systemd's side of the notify protocol: a unix datagram socket in the temp
// directory, whose path tests put in NOTIFY_SOCKET (for this process, or a child's
// environment). Datagrams are read one by one, each wait bounded so a broken test fails
// instead of hanging.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace hookbox::testing {

class FakeNotifySocket {
 public:
  FakeNotifySocket() {
    static std::atomic<int> count{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("hookbox-notify-" + std::to_string(getpid()) + "-" + std::to_string(++count)))
                .string();
    ::unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("cannot bind " + path_);
    }
    timeval tv{20, 0};  // a bound on a broken test, not a timing assertion
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~FakeNotifySocket() {
    close(fd_);
    ::unlink(path_.c_str());
  }
  FakeNotifySocket(const FakeNotifySocket&) = delete;
  FakeNotifySocket& operator=(const FakeNotifySocket&) = delete;

  const std::string& path() const { return path_; }

  // The next datagram; "" when none came within the bound.
  std::string Receive() { return Read(0); }
  // The next datagram already queued; "" when there is none (after the sender exited:
  // everything it sent is queued).
  std::string ReceiveQueued() { return Read(MSG_DONTWAIT); }

 private:
  std::string Read(int flags) {
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, flags);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

  std::string path_;
  int fd_ = -1;
};

}  // namespace hookbox::testing
