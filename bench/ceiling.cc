// The benchmark's ceiling: a bare cpp-httplib server that reads each request and answers
// 200 with a short JSON body, doing nothing else. It is set up like hookbox's listener
// (bench/listener.h, src/http/server.cc): the same Debian cpp-httplib, the same thread pool size,
// keep-alive count and timeout, read/write timeouts, payload limit and TCP_NODELAY, so the gap
// between it and hookbox is what hookbox itself costs (verify, identify, accept, log).
//
//   ceiling PORT [THREADS]      prints {"msg":"listening","listen":"127.0.0.1:PORT"}
#include <cstdio>
#include <cstdlib>

#include "listener.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ceiling PORT [THREADS]\n");
    return 1;
  }
  const int port = std::atoi(argv[1]);
  const size_t threads = argc > 2 ? static_cast<size_t>(std::atoi(argv[2])) : 16;

  httplib::Server s;
  bench::SetUpLikeHookbox(s, threads);
  s.Post(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"accepted"})", "application/json");
  });
  return bench::ListenAndServe(s, port, "ceiling: bind");
}
