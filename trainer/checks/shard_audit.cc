#include "trainer/checks/shard_audit.h"

#include <cstdio>
#include <system_error>
#include <utility>
#include <vector>

#include "common/sha256.h"
#include "common/thread_start.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {
AuditAssignment AuditScheduleFor(const Plan& plan, int64_t step, int64_t microbatch) {
  AuditAssignment assignment;
  assignment.step = step;
  assignment.update = (step - 1) * plan.microbatches + microbatch + 1;
  if (!plan.audits() || assignment.update % plan.audit_every != 0) return assignment;
  assignment.audited = true;
  assignment.shard = (assignment.update / plan.audit_every - 1) % plan.data_shards;
  assignment.owner = assignment.shard / plan.shards_per_rank();
  assignment.auditor = (assignment.owner + 1) % plan.num_processes;
  return assignment;
}

int64_t AuditVerdictLag(const Plan& plan) {
  constexpr int64_t kLongestLag = 64;
  return plan.audit_every < kLongestLag ? plan.audit_every : kLongestLag;
}

Status ShardAuditFailure(const AuditAssignment& assignment, const std::string& owner_digest,
                         const std::string& auditor_digest, const std::string& owner_label,
                         const std::string& auditor_label) {
  const std::string owner = std::to_string(assignment.owner);
  const std::string auditor = std::to_string(assignment.auditor);
  return Status::Error(kShardAuditFailed,
                       "step=" + std::to_string(assignment.step) + " update=" +
                           std::to_string(assignment.update) + " shard=" +
                           std::to_string(assignment.shard) + " ranks=" + owner + "," + auditor +
                           " digests=" + owner_digest + "," + auditor_digest + " device(s)=rank " +
                           owner + ": " + owner_label + "; rank " + auditor + ": " + auditor_label);
}

std::string UnauditedPairs(const std::vector<std::string>& device_names) {
  const size_t world = device_names.size();
  std::string pairs;
  for (size_t owner = 0; world > 1 && owner < world; ++owner) {
    const size_t auditor = (owner + 1) % world;
    if (device_names[owner] == device_names[auditor]) continue;
    pairs += (pairs.empty() ? "" : "; ") + std::to_string(owner) + "," + std::to_string(auditor) +
             " (" + device_names[owner] + " / " + device_names[auditor] + ")";
  }
  return pairs;
}

std::unique_ptr<ShardAudit> ShardAudit::Start(const Plan& plan, Backend& backend, Rendezvous& rendezvous,
                                              const std::vector<RankDevice>& devices) {
  std::unique_ptr<ShardAudit> audit(new ShardAudit(plan, backend, rendezvous, devices));
  if (!plan.audits() || plan.process_id != 0) return audit;
  std::vector<std::string> names;
  for (const RankDevice& device : devices) names.push_back(device.name);
  const std::string pairs = UnauditedPairs(names);
  if (!pairs.empty())
    std::fprintf(stderr,
                 "dmlp-train: warning: AUDIT_EVERY: these rank pairs compute on devices of "
                 "different names, whose partials need not be bit-identical, so their shards "
                 "are not audited: %s\n",
                 pairs.c_str());
  return audit;
}

Status ShardAudit::Check(int64_t step, int64_t microbatch) {
  const AuditAssignment assignment = AuditScheduleFor(plan_, step, microbatch);
  if (pending_ && assignment.update >= pending_->update + AuditVerdictLag(plan_))
    DMLP_RETURN_IF_ERROR(Verdict());
  if (!assignment.audited) return Status::Ok();
  if (devices_[assignment.owner].name != devices_[assignment.auditor].name)
    return Status::Ok();  // warned about at the start
  // The lag is at most AUDIT_EVERY: the last audit's verdict came above, and
  // with it the end of its hash, which read the buffer this copy overwrites.
  DMLP_RETURN_IF_ERROR(BeginHash(assignment, microbatch));
  pending_ = assignment;
  return Status::Ok();
}

Status ShardAudit::EndOfStep(int64_t step) {
  const bool checkpoint = plan_.checkpoint_every > 0 && step % plan_.checkpoint_every == 0;
  return checkpoint && pending_ ? Verdict() : Status::Ok();
}

Status ShardAudit::Finish() { return pending_ ? Verdict() : Status::Ok(); }

Status ShardAudit::BeginHash(const AuditAssignment& assignment, int64_t microbatch) {
  const bool owner = plan_.process_id == assignment.owner;
  if (!owner && plan_.process_id != assignment.auditor) return Status::Ok();  // gives "" to the gather
  AuditedPartials* partials = backend_.audited_partials();
  if (partials == nullptr) return Status::Error("INTERNAL", "this backend has no shard audit");
  DMLP_ASSIGN_OR_RETURN(PartialCopy copy,
                        owner ? partials->CopyPartial(assignment.shard - plan_.first_shard())
                              : partials->CopyAuditShard(assignment.step, microbatch, assignment.shard));
  try {
    hash_ = std::async(std::launch::async, [copy = std::move(copy)]() -> Result<std::string> {
      DMLP_RETURN_IF_ERROR(copy.ready());
      return Sha256Hex(copy.bytes, copy.size);
    });
  } catch (const std::system_error& error) {  // std::async starts a thread (common/thread_start.h)
    return ThreadStartFailed("shard audit digest", error);
  }
  return Status::Ok();
}

Status ShardAudit::Verdict() {
  const AuditAssignment audit = *pending_;
  pending_.reset();
  std::string digest;  // "" from a rank that neither owns nor audits the shard
  if (hash_.valid()) {
    DMLP_ASSIGN_OR_RETURN(digest, hash_.get());
  }
  DMLP_ASSIGN_OR_RETURN(std::vector<std::string> digests,
                        rendezvous_.AllGather("shard-audit/" + std::to_string(audit.update), digest));
  const std::string& owner_digest = digests[static_cast<size_t>(audit.owner)];
  const std::string& auditor_digest = digests[static_cast<size_t>(audit.auditor)];
  if (owner_digest == auditor_digest) return Status::Ok();
  failed_update_ = audit.update;
  return ShardAuditFailure(audit, owner_digest, auditor_digest, devices_[audit.owner].label,
                           devices_[audit.auditor].label);
}

Status ShardAudit::AgreeToStop(Status verdict) {
  if (verdict.code() != kShardAuditFailed) return verdict;
  // The verdict stands whatever the barrier says: it is the cause.
  (void)rendezvous_.Barrier("shard-audit-failed/" + std::to_string(failed_update_));
  return verdict;
}

}  // namespace dmlp
