// The finish path on its own (bench/RESULTS.md, "Finishing a batch"): how many finishes a
// second the inbox records when the dispatcher hands them over in batches (Inbox::FinishJobs,
// what the daemon does), against the same jobs finished one by one (Inbox::FinishJob, one
// transaction each: the peer) and against commits of one changed row, as many as there were
// batches (the ceiling: what a batch's commit costs before its statements). Each round accepts
// `events` events of one handler, claims them 64 at a time as the dispatcher does, and times
// only the finishes; the claims are not timed.
//
//   finish DATABASE [EVENTS] [ROUNDS]     DATABASE: a SQLite file (created) or a postgres URL
//
// Prints one JSON line per round and a summary line: finishes/s batched and one by one, and
// their ratio; one-row commits/s, and batches/s (batched finishes/s ÷ 64) to set beside it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/crypto.h"
#include "inbox/inbox.h"
#include "inbox/sql_inbox.h"

namespace {

using hookbox::ClaimedJob;
using hookbox::FinishRequest;
using hookbox::Inbox;
using hookbox::JobOutcome;
using Clock = std::chrono::steady_clock;

constexpr int kBatch = 64;  // the dispatcher's kMaxClaim

// Accepts `n` events of one handler, each its own id, under `prefix`.
bool Fill(Inbox& inbox, const std::string& prefix, int n) {
  for (int i = 0; i < n; ++i) {
    hookbox::Event e;
    e.endpoint = "bench";
    e.event_id = prefix + std::to_string(i);
    e.id_source = "body:/id";
    e.event_type = "bench.event";
    e.body = R"({"id":")" + e.event_id + R"(","type":"bench.event"})";
    e.body_sha256 = hookbox::Sha256Hex(e.body);
    e.headers_json = "{}";
    e.handlers = {"h"};
    e.received_at = std::chrono::system_clock::now();
    if (!inbox.Accept(e).ok()) return false;
  }
  return true;
}

JobOutcome Done() {
  JobOutcome o;
  o.outcome = hookbox::Outcome::kOk;
  o.detail = "exit 0";
  o.finished_at = std::chrono::system_clock::now();
  return o;
}

// Claims every due job, kBatch at a time, and finishes each claim's jobs: all at once
// (`batched`) or one by one. Returns the seconds spent finishing, or a negative on failure.
double Drain(Inbox& inbox, bool batched, int* finished) {
  double seconds = 0;
  for (;;) {
    auto claimed = inbox.ClaimJobs("bench", kBatch, std::chrono::system_clock::now(),
                                   std::chrono::seconds(60));
    if (!claimed.ok()) return -1;
    if (claimed->empty()) return seconds;
    const auto started = Clock::now();
    if (batched) {
      std::vector<FinishRequest> batch;
      for (const ClaimedJob& job : *claimed) batch.push_back({&job, Done(), nullptr, {}});
      for (const auto& r : inbox.FinishJobs(batch)) {
        if (!r.ok()) return -1;
      }
    } else {
      for (const ClaimedJob& job : *claimed) {
        if (!inbox.FinishJob(job, Done()).ok()) return -1;
      }
    }
    seconds += std::chrono::duration<double>(Clock::now() - started).count();
    *finished += static_cast<int>(claimed->size());
  }
}

// Write transactions that change one row and nothing else (its value stays), `n` of them, one
// after another: per second. What a durable commit costs, the most batches a second any path
// that commits each batch can record. (An empty transaction would not do: SQLite commits it
// without writing its log.)
double OneRowCommits(hookbox::SqlInbox& inbox, int n) {
  auto touch = [](hookbox::SqlTx& tx) {
    return tx.Run("UPDATE schema_migrations SET name = name WHERE version = 1");
  };
  const auto started = Clock::now();
  for (int i = 0; i < n; ++i) {
    if (!inbox.Transact(hookbox::SqlInbox::TxKind::kWrite, touch).ok()) return -1;
  }
  return n / std::chrono::duration<double>(Clock::now() - started).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: finish DATABASE [EVENTS] [ROUNDS]\n");
    return 1;
  }
  const int events = argc > 2 ? std::atoi(argv[2]) : 2000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  auto inbox = hookbox::OpenInbox({.database = argv[1]});
  if (!inbox.ok()) {
    std::fprintf(stderr, "finish: %s\n", inbox.status().ToString().c_str());
    return 1;
  }
  auto* sql = dynamic_cast<hookbox::SqlInbox*>(inbox->get());
  const std::string run =
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  std::vector<double> batched, alone, commits;
  for (int round = 0; round < rounds; ++round) {
    double rates[2];
    for (int way = 0; way < 2; ++way) {
      const std::string prefix =
          run + "-" + std::to_string(round) + "-" + std::to_string(way) + "-";
      int finished = 0;
      if (!Fill(**inbox, prefix, events)) return 2;
      const double seconds = Drain(**inbox, way == 0, &finished);
      if (seconds <= 0 || finished != events) {
        std::fprintf(stderr, "finish: drain failed (%d of %d finished)\n", finished, events);
        return 2;
      }
      rates[way] = finished / seconds;
    }
    const double ceiling = sql ? OneRowCommits(*sql, (events + kBatch - 1) / kBatch) : 0;
    batched.push_back(rates[0]);
    alone.push_back(rates[1]);
    commits.push_back(ceiling);
    std::printf(
        "{\"round\":%d,\"events\":%d,\"batched_per_s\":%.0f,\"one_by_one_per_s\":%.0f,"
        "\"commits_per_s\":%.0f}\n",
        round + 1, events, rates[0], rates[1], ceiling);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf(
      "{\"summary\":true,\"batched_per_s\":%.0f,\"one_by_one_per_s\":%.0f,\"ratio\":%.2f,"
      "\"commits_per_s\":%.0f,\"batches_per_s\":%.0f}\n",
      median(batched), median(alone), median(batched) / median(alone), median(commits),
      median(batched) / kBatch);
  return 0;
}
