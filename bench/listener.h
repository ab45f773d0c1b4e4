// The listener of the benchmark's own servers (bench/ceiling.cc, bench/durable_limit.cc): a
// cpp-httplib server set up as hookbox's listener is (src/http/server.cc: the defaults of
// HttpLimits and the config), so that what they do per request is the only difference, and
// the "listening" line the harness waits for.
#pragma once

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>

namespace bench {

// TCP_NODELAY, keep-alive 1000 requests / 5 s, 10 s read and write timeouts, 1 MiB payloads,
// `threads` workers, SO_REUSEADDR.
inline void SetUpLikeHookbox(httplib::Server& s, size_t threads) {
  s.set_tcp_nodelay(true);
  s.set_keep_alive_max_count(1000);
  s.set_keep_alive_timeout(5);
  s.set_read_timeout(std::chrono::seconds(10));
  s.set_write_timeout(std::chrono::seconds(10));
  s.set_payload_max_length(1 << 20);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_socket_options([](socket_t sock) {
    int on = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  });
}

// Binds 127.0.0.1:port, prints {"msg":"listening","listen":"127.0.0.1:PORT"} and serves
// until the process is stopped; 1 (with `who`'s perror) when it cannot bind.
inline int ListenAndServe(httplib::Server& s, int port, const char* who) {
  if (!s.bind_to_port("127.0.0.1", port)) {
    std::perror(who);
    return 1;
  }
  std::printf("{\"msg\":\"listening\",\"listen\":\"127.0.0.1:%d\"}\n", port);
  std::fflush(stdout);
  s.listen_after_bind();
  return 0;
}

}  // namespace bench
