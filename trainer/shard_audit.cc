#include "trainer/shard_audit.h"

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "common/env.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {
namespace {

bool Audits(const Plan& plan) { return plan.audit_every > 0 && plan.num_processes > 1; }

std::string DigestKey(int64_t update, const char* role) {
  return "shard-audit/" + std::to_string(update) + "/" + role;
}

/// DMLP_TEST_CORRUPT_SHARD (tests/e2e/trainer/test_shard_audit.py): the global
/// update at which this rank flips one bit of its first local shard's partial
/// before the reduction, the fault a bad GPU would cause. 0 when unset.
Result<int64_t> CorruptUpdateForTests() {
  if (std::getenv("DMLP_TEST_CORRUPT_SHARD") == nullptr) return int64_t{0};
  return RequireInteger(Environment::FromProcess(), "DMLP_TEST_CORRUPT_SHARD", 1, INT64_MAX);
}

}  // namespace

AuditAssignment AuditScheduleFor(const Plan& plan, int64_t step, int64_t microbatch) {
  AuditAssignment assignment;
  assignment.update = (step - 1) * plan.microbatches + microbatch + 1;
  if (!Audits(plan) || assignment.update % plan.audit_every != 0) return assignment;
  assignment.audited = true;
  assignment.shard = (assignment.update / plan.audit_every - 1) % plan.data_shards;
  assignment.owner = assignment.shard / plan.shards_per_rank();
  assignment.auditor = (assignment.owner + 1) % plan.num_processes;
  return assignment;
}

Status ShardAuditFailure(int64_t step, const AuditAssignment& assignment,
                         const std::string& owner_digest, const std::string& auditor_digest,
                         const std::string& owner_label, const std::string& auditor_label) {
  const std::string owner = std::to_string(assignment.owner);
  const std::string auditor = std::to_string(assignment.auditor);
  return Status::Error(kShardAuditFailed,
                       "step=" + std::to_string(step) + " update=" + std::to_string(assignment.update) +
                           " shard=" + std::to_string(assignment.shard) + " ranks=" + owner + "," +
                           auditor + " digests=" + owner_digest + "," + auditor_digest +
                           " device(s)=rank " + owner + ": " + owner_label + "; rank " + auditor +
                           ": " + auditor_label);
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

Result<std::unique_ptr<ShardAudit>> ShardAudit::Start(const Plan& plan, Backend& backend,
                                                     Rendezvous& rendezvous,
                                                     const std::vector<RankDevice>& devices) {
  DMLP_ASSIGN_OR_RETURN(int64_t corrupt_update, CorruptUpdateForTests());
  std::unique_ptr<ShardAudit> audit(
      new ShardAudit(plan, backend, rendezvous, devices, corrupt_update));
  if (!Audits(plan) || plan.process_id != 0) return audit;
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
  if (assignment.update == corrupt_update_)
    DMLP_RETURN_IF_ERROR(backend_.FlipPartialBitForTests(0));
  if (!assignment.audited) return Status::Ok();
  const RankDevice& owner = devices_[assignment.owner];
  const RankDevice& auditor = devices_[assignment.auditor];
  if (owner.name != auditor.name) return Status::Ok();  // warned about at the start
  const std::string owner_key = DigestKey(assignment.update, "owner");
  const std::string auditor_key = DigestKey(assignment.update, "auditor");
  if (plan_.process_id == assignment.owner) {
    DMLP_ASSIGN_OR_RETURN(std::string digest,
                          backend_.PartialDigest(assignment.shard - plan_.first_shard()));
    DMLP_RETURN_IF_ERROR(rendezvous_.Set(owner_key, digest));
  } else if (plan_.process_id == assignment.auditor) {
    DMLP_ASSIGN_OR_RETURN(std::string digest,
                          backend_.AuditShardDigest(step, microbatch, assignment.shard));
    DMLP_RETURN_IF_ERROR(rendezvous_.Set(auditor_key, digest));
  }
  // Every rank reads both digests, so every rank reaches the same verdict.
  DMLP_ASSIGN_OR_RETURN(std::string owner_digest, rendezvous_.Get(owner_key));
  DMLP_ASSIGN_OR_RETURN(std::string auditor_digest, rendezvous_.Get(auditor_key));
  if (owner_digest == auditor_digest) return Status::Ok();
  failed_update_ = assignment.update;
  return ShardAuditFailure(step, assignment, owner_digest, auditor_digest, owner.label,
                           auditor.label);
}

Status ShardAudit::AgreeToStop(Status verdict) {
  if (verdict.code() != kShardAuditFailed) return verdict;
  // The verdict stands whatever the barrier says: it is the cause.
  (void)rendezvous_.Barrier("shard-audit-failed/" + std::to_string(failed_update_));
  return verdict;
}

}  // namespace dmlp
