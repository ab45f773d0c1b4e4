// The benchmark's ceiling: a bare cpp-httplib server that reads each request and answers
// 200 with a short JSON body, doing nothing else. It is set up like hookbox's listener
// (src/http/server.cc): the same Debian cpp-httplib, the same thread pool size, keep-alive
// count and timeout, read/write timeouts, payload limit and TCP_NODELAY, so the gap between
// it and hookbox is what hookbox itself costs (verify, identify, accept, log).
//
//   ceiling PORT [THREADS]      prints {"msg":"listening","listen":"127.0.0.1:PORT"}
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ceiling PORT [THREADS]\n");
    return 1;
  }
  const int port = std::atoi(argv[1]);
  const size_t threads = argc > 2 ? static_cast<size_t>(std::atoi(argv[2])) : 16;

  httplib::Server s;
  // The values of hookbox's HttpLimits defaults and config defaults.
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
  s.Post(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"accepted"})", "application/json");
  });
  if (!s.bind_to_port("127.0.0.1", port)) {
    std::perror("ceiling: bind");
    return 1;
  }
  std::printf("{\"msg\":\"listening\",\"listen\":\"127.0.0.1:%d\"}\n", port);
  std::fflush(stdout);
  s.listen_after_bind();
  return 0;
}
