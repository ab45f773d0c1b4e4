// Lease liveness, once for both dialects (see sql_inbox.h; DESIGN.md, "Lease liveness"): the
// instances' heartbeats, the release of the leases of instances whose heartbeat expired, and
// a clean stop's removal of its own instance. A lease owner is "<instance id>:<role>", so the
// jobs of an instance are those whose lease_owner starts with its id and a colon.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "inbox/sql_inbox.h"

namespace hookbox {
namespace {

// A job leased to an instance: its id and lease token (for the compare-and-swap).
struct LeasedJob {
  int64_t id = 0;
  std::string token;
};

// Ends the live leases of `jobs` (lease_until = `ended`), each only while its token still
// holds and it is still processing, in job id order (the order every writer locks jobs in).
// How many it ended.
StatusOr<int64_t> EndLeases(SqlTx& tx, std::vector<LeasedJob> jobs, const std::string& ended) {
  std::sort(jobs.begin(), jobs.end(),
            [](const LeasedJob& a, const LeasedJob& b) { return a.id < b.id; });
  int64_t n = 0;
  for (const LeasedJob& job : jobs) {
    ASSIGN_OR_RETURN(const SqlRows& up,
                     tx.Query("UPDATE jobs SET lease_until = $1::timestamptz WHERE id = $2"
                              " AND lease_token = $3 AND status = 'processing'",
                              {ended, job.id, job.token}));
    n += up.changed;
  }
  return n;
}

// The processing jobs with a live lease (lease_until >= `now`) of the instance `id`.
StatusOr<std::vector<LeasedJob>> LiveLeases(SqlTx& tx, const std::string& id,
                                            const std::string& now) {
  // The index jobs_unfinished holds the processing jobs; the owner's prefix is tested on them.
  ASSIGN_OR_RETURN(const SqlRows& q,
                   tx.Query("SELECT id, lease_token FROM jobs WHERE status = 'processing'"
                            " AND lease_until >= $1::timestamptz"
                            " AND substr(lease_owner, 1, length($2::text) + 1) = $2::text || ':'",
                            {now, id}));
  std::vector<LeasedJob> jobs;
  for (size_t i = 0; i < q.size(); ++i) jobs.push_back({q.Int(i, 0), q.Text(i, 1)});
  return jobs;
}

}  // namespace

Status SqlInbox::Heartbeat(const InstanceBeat& beat) {
  const std::string now = FormatTime(beat.now);
  const std::string until = FormatTime(beat.now + beat.timeout);
  return Transact(TxKind::kWrite, [&](SqlTx& tx) {
    return tx.Run(
        "INSERT INTO instances (id, host, pid, started_at, heartbeat_at, expires_at)"
        " VALUES ($1, $2, $3::bigint, $4::timestamptz, $4::timestamptz, $5::timestamptz)"
        " ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
        " heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at",
        {beat.id, beat.host, beat.pid, now, until});
  });
}

StatusOr<std::vector<ExpiredInstance>> SqlInbox::ReleaseExpiredLeases(TimePoint now,
                                                                      const std::string& self,
                                                                      TimePoint forget_before) {
  const std::string now_text = FormatTime(now);
  const std::string ended = FormatTime(now - std::chrono::milliseconds(1));
  return ReadInto<std::vector<ExpiredInstance>>(
      *this, TxKind::kWrite, [&](SqlTx& tx, std::vector<ExpiredInstance>& out) -> Status {
        // The expired instances that still hold a live lease: a few rows at most (one per
        // process that died within the last forget period), each with its jobs.
        ASSIGN_OR_RETURN(
            const SqlRows& dead,
            tx.Query("SELECT i.id, i.host, i.pid, " + d_.Time("i.heartbeat_at") +
                         " FROM instances i WHERE i.expires_at < $1::timestamptz AND i.id <> $2"
                         " AND EXISTS (SELECT 1 FROM jobs j WHERE j.status = 'processing'"
                         " AND j.lease_until >= $1::timestamptz"
                         " AND substr(j.lease_owner, 1, length(i.id) + 1) = i.id || ':')"
                         " ORDER BY i.id",
                     {now_text, self}));
        for (size_t i = 0; i < dead.size(); ++i) {
          ExpiredInstance e{dead.Text(i, 0), dead.Text(i, 1), dead.Int(i, 2), dead.Text(i, 3)};
          ASSIGN_OR_RETURN(std::vector<LeasedJob> jobs, LiveLeases(tx, e.id, now_text));
          ASSIGN_OR_RETURN(e.jobs, EndLeases(tx, std::move(jobs), ended));
          if (e.jobs > 0) out.push_back(std::move(e));
        }
        return tx.Run("DELETE FROM instances WHERE expires_at < $1::timestamptz AND id <> $2",
                      {FormatTime(forget_before), self});
      });
}

StatusOr<int64_t> SqlInbox::RemoveInstance(const std::string& id, TimePoint now) {
  const std::string now_text = FormatTime(now);
  const std::string ended = FormatTime(now - std::chrono::milliseconds(1));
  return ReadInto<int64_t>(*this, TxKind::kWrite, [&](SqlTx& tx, int64_t& out) -> Status {
    ASSIGN_OR_RETURN(std::vector<LeasedJob> jobs, LiveLeases(tx, id, now_text));
    ASSIGN_OR_RETURN(out, EndLeases(tx, std::move(jobs), ended));
    return tx.Run("DELETE FROM instances WHERE id = $1", {id});
  });
}

}  // namespace hookbox
