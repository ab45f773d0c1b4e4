// libFuzzer harness: the whole receive path in-process, request -> verdict, against a real
// SQLite inbox in a temp directory: routing, verification, identification, the accept
// transaction and the answer. Every answer must be one of the documented statuses.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <filesystem>

#include "inbox/inbox.h"
#include "receive/receiver.h"

using namespace hookbox;

namespace {

struct World {
  World() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-fuzz-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    LoadResult r = LoadConfigText(R"(
database: unused
endpoints:
  - {name: gh, path: /hooks/gh, provider: github, secrets: [{value: s}]}
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    resource: body:/obj
    sequence: body:/seq
    strict_body: true
    routes: [{events: ["*"], handlers: [{name: h, file: {dir: /nonexistent-not-used}}]}]
)",
                                  "fuzz.yaml", {.resolve_secrets = true});
    if (!r.config) __builtin_trap();
    config = std::make_shared<const Config>(std::move(*r.config));
    auto opened = OpenInbox({dir + "/inbox.db", /*durable=*/false, true});
    if (!opened.ok()) __builtin_trap();
    inbox = std::move(*opened);
    receiver = std::make_unique<Receiver>(
        ReceiverSetup{config, std::make_shared<const HandlerSet>()}, *inbox, clock);
  }
  ~World() {
    receiver.reset();
    inbox.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string dir;
  std::shared_ptr<const Config> config;
  std::unique_ptr<Inbox> inbox;
  SystemClock clock;
  std::unique_ptr<Receiver> receiver;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world_instance;  // one inbox for the whole run, as in the daemon
  World* world = &world_instance;
  FuzzedDataProvider in(data, size);
  Delivery d;
  d.method = in.PickValueInArray({"POST", "GET", "PUT"});
  d.path = in.PickValueInArray(
      {std::string("/hooks/gh"), std::string("/hooks/open"), in.ConsumeRandomLengthString(32)});
  d.remote = "127.0.0.1:1";
  const int count = in.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < count; ++i) {
    d.headers.emplace(in.PickValueInArray({"X-Hub-Signature-256", "X-GitHub-Delivery",
                                           "X-GitHub-Event", "Content-Type"}),
                      in.ConsumeRandomLengthString(80));
  }
  d.body = in.ConsumeRemainingBytesAsString();
  Answer a = world->receiver->Receive(d);
  switch (a.status) {
    case 200:
    case 400:
    case 401:
    case 404:
    case 405:
    case 413:
    case 422:
    case 503:
      break;
    default:
      __builtin_trap();
  }
  if (a.body.empty() || a.body.front() != '{') __builtin_trap();
  return 0;
}
