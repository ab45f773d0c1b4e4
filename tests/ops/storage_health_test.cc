// StorageHealth (ops/storage_health.h): which failures count, when /readyz turns unready
// and when it is ready again, and the counter each fault adds to.
#include "ops/storage_health.h"

#include <catch2/catch.hpp>

#include "ops/daemon_metrics.h"

namespace hookbox {
namespace {

uint64_t Errors(const std::string& op) { return Metrics().storage_errors.With({op}).Value(); }

const Status kFault = Status::Unavailable("storage unavailable", "COMMIT: disk I/O error");
const Status kBusy =
    Status::Unavailable(Status::UnavailableKind::kBusy, "storage busy", "step: database is locked");

}  // namespace

TEST_CASE("storage health: a run of faults makes it unready, the op's success ends it") {
  StorageHealth h;
  const uint64_t before = Errors("checkpoint");
  for (int i = 1; i < kStorageFailuresUnready; ++i) {
    h.Record(kStorageCheckpoint, kFault);
    CHECK(h.Problem().empty());
  }
  h.Record(kStorageCheckpoint, kFault);
  CHECK(h.Problem() ==
        "storage failing: checkpoint failed 3 times in a row (the log has each error)");
  CHECK(Errors("checkpoint") == before + kStorageFailuresUnready);
  // Another op's success says nothing of the checkpoint.
  h.Record(kStorageAccept, Status::Ok());
  CHECK_FALSE(h.Problem().empty());
  h.Record(kStorageCheckpoint, Status::Ok());
  CHECK(h.Problem().empty());
  // A new run starts from zero.
  h.Record(kStorageCheckpoint, kFault);
  CHECK(h.Problem().empty());
}

TEST_CASE("storage health: contention is quiet, and neither counts nor breaks a run") {
  StorageHealth h;
  CHECK(IsStorageBusy(kBusy));
  CHECK_FALSE(IsStorageBusy(kFault));
  CHECK_FALSE(IsStorageBusy(Status::Internal("storage error", "x")));
  // The kind decides, not the message.
  CHECK_FALSE(IsStorageBusy(Status::Unavailable("storage busy", "x")));
  const uint64_t before = Errors("claim");
  for (int i = 0; i < 2 * kStorageFailuresUnready; ++i) h.Record(kStorageClaim, kBusy);
  CHECK(h.Problem().empty());
  CHECK(Errors("claim") == before);
  for (int i = 0; i < kStorageFailuresUnready - 1; ++i) h.Record(kStorageClaim, kFault);
  h.Record(kStorageClaim, kBusy);  // not a success: the run goes on
  h.Record(kStorageClaim, kFault);
  CHECK_FALSE(h.Problem().empty());
  CHECK(Errors("claim") == before + kStorageFailuresUnready);
}

TEST_CASE(
    "storage health: the database's answers (a conflict, bad text) neither count nor end a run") {
  StorageHealth h;
  const Status conflict =
      Status::Conflict(Status::ConflictKind::kBodyDiffers, "body differs", "strict_body");
  const Status bad_text = Status::InvalidArgument("text the database cannot store");
  CHECK(IsStorageFault(kFault));
  CHECK(IsStorageFault(Status::Internal("storage error", "x")));
  CHECK_FALSE(IsStorageFault(kBusy));
  CHECK_FALSE(IsStorageFault(conflict));
  CHECK_FALSE(IsStorageFault(bad_text));
  CHECK_FALSE(IsStorageFault(Status::Ok()));
  const uint64_t before = Errors("accept");
  for (int i = 0; i < kStorageFailuresUnready - 1; ++i) h.Record(kStorageAccept, kFault);
  h.Record(kStorageAccept, conflict);  // not a success: the run goes on
  h.Record(kStorageAccept, bad_text);
  CHECK(h.Problem().empty());
  h.Record(kStorageAccept, kFault);
  CHECK_FALSE(h.Problem().empty());
  CHECK(Errors("accept") == before + kStorageFailuresUnready);
}

TEST_CASE("storage health: every op is a series at 0 from the start") {
  const std::string text = Metrics().registry.Render();
  for (const char* op : {"accept", "checkpoint", "purge", "claim", "finish", "heartbeat"}) {
    INFO(op);
    CHECK(text.find("hookbox_storage_errors_total{op=\"" + std::string(op) + "\"}") !=
          std::string::npos);
  }
}

}  // namespace hookbox
