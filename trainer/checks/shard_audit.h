// defines: AuditAssignment, AuditScheduleFor, AuditVerdictLag, ShardAuditFailure,
//          UnauditedPairs, kShardAuditFailed, ShardAudit
//
// The shard audit (docs/reliability.md "Shard audit"). Comparing the ranks' state
// digests catches a rank whose copy of the state went wrong, but not a fault in
// one rank's gradient computation: the ordered reduction hands that rank's
// wrong shard partial to every rank alike, so all states agree. So, every
// AUDIT_EVERY updates, one shard (rotating over all of them) is computed a
// second time by another rank, from the same samples and parameters with the
// same code and shapes, and the SHA-256 digests of the two padded partials are
// compared. On devices of the same name the partials must be bit-identical.
//
// Off the step loop: at the audited update u the owner copies its partial and
// the auditor computes the shard once more and copies it (the only work the
// loop waits for: one shard and one copy); a thread hashes the copy while the
// updates go on. The verdict comes AuditVerdictLag(plan) updates later, before
// that update's reduction (sooner at the end of a checkpoint step, at the
// latest after the last update): every rank gives
// its digest (the owner's, the auditor's, "" from the others) to one gather,
// so every rank decides alike. A difference stops every rank with
//   SHARD_AUDIT_FAILED: step=s update=u shard=k ranks=a,b digests=<a's>,<b's>
//   device(s)=rank a: <label>; rank b: <label>
// (one line; dmlp-train exit code 5), s and u naming the audited update. The
// audit reads partials and adds one extra shard per audited update on one
// rank; it never changes a byte of any receipt or of the state.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/backend.h"
#include "trainer/checks/rank_devices.h"
#include "trainer/plan.h"

namespace dmlp {

class Rendezvous;

inline constexpr const char* kShardAuditFailed = "SHARD_AUDIT_FAILED";

/// What the schedule says about one update.
struct AuditAssignment {
  int64_t step = 0;       // the update's logged step
  int64_t update = 0;     // global update number: (step - 1) * MICROBATCHES + microbatch + 1
  bool audited = false;   // the rest is meaningful only when true
  int64_t shard = -1;     // the global shard computed twice
  int64_t owner = -1;     // the rank that computes it anyway
  int64_t auditor = -1;   // (owner + 1) mod NUM_PROCESSES
};

/// The schedule, a pure function of the plan: update u is audited when
/// AUDIT_EVERY > 0, NUM_PROCESSES > 1 and u % AUDIT_EVERY == 0; its shard is
/// (u / AUDIT_EVERY - 1) mod DATA_SHARDS, so the audits rotate over every shard.
AuditAssignment AuditScheduleFor(const Plan& plan, int64_t step, int64_t microbatch);

/// How many updates after an audited one its verdict comes: min(AUDIT_EVERY,
/// 64), so at most one audit is pending and its hash has had 64 updates' time
/// (spec.json's job: 38 MB of SHA-256, about 32 ms, against 64 updates of at
/// least 0.96 ms of GEMMs each: bench/audit_bench.py).
int64_t AuditVerdictLag(const Plan& plan);

/// The SHARD_AUDIT_FAILED status of `assignment`, naming both digests and both devices.
Status ShardAuditFailure(const AuditAssignment& assignment, const std::string& owner_digest,
                         const std::string& auditor_digest, const std::string& owner_label,
                         const std::string& auditor_label);

/// The (owner, auditor) pairs whose devices have different names, given each
/// rank's device name: "3,4 (NVIDIA L4 / NVIDIA A100); ..."; "" when none.
std::string UnauditedPairs(const std::vector<std::string>& device_names);

class ShardAudit {
 public:
  /// `devices`: every rank's (GatherRankDevices). When the plan audits,
  /// rank 0 prints one warning naming the rank pairs whose devices have
  /// different names: their partials need not be bit-identical, so they are
  /// not audited.
  static std::unique_ptr<ShardAudit> Start(const Plan& plan, Backend& backend, Rendezvous& rendezvous,
                                           const std::vector<RankDevice>& devices);
  /// Waits for a hash still running (it reads the backend's audit buffer).
  ~ShardAudit() = default;

  /// Between backend.ComputePartials(step, microbatch) and ReduceAndApply():
  /// the verdict of the pending audit when it is due (collective: every rank
  /// returns the same, OK or SHARD_AUDIT_FAILED), then, on an audited update,
  /// this rank's copy for the hashing thread.
  Status Check(int64_t step, int64_t microbatch);
  /// After step `step`'s last update, before its snapshot (collective): on a
  /// checkpoint step (CHECKPOINT_EVERY), the pending audit's verdict comes now,
  /// so no checkpoint ever holds an update whose audit has not passed and a
  /// resume after SHARD_AUDIT_FAILED redoes that audit.
  Status EndOfStep(int64_t step);
  /// After the last update (collective): the verdict of the audit still pending.
  Status Finish();

  /// For SHARD_AUDIT_FAILED: waits until every rank has read the verdict (a
  /// rank that left early would take the coordinator, or its connection,
  /// from under a slower one still in the gather), then returns it. Any other
  /// status is returned as it is.
  Status AgreeToStop(Status verdict);

 private:
  ShardAudit(const Plan& plan, Backend& backend, Rendezvous& rendezvous, std::vector<RankDevice> devices)
      : plan_(plan), backend_(backend), rendezvous_(rendezvous), devices_(std::move(devices)) {}

  /// The pending audit's verdict (collective); clears it.
  Status Verdict();
  /// This rank's copy of the partial of `assignment`, if it is owner or auditor,
  /// handed to a thread that hashes it.
  Status BeginHash(const AuditAssignment& assignment, int64_t microbatch);

  const Plan plan_;
  Backend& backend_;
  Rendezvous& rendezvous_;
  const std::vector<RankDevice> devices_;  // by rank; empty when the plan does not audit
  std::optional<AuditAssignment> pending_;  // audited, verdict not yet given
  std::future<Result<std::string>> hash_;   // this rank's digest of pending_ (owner, auditor)
  int64_t failed_update_ = 0;  // the update whose verdict was SHARD_AUDIT_FAILED
};

}  // namespace dmlp
