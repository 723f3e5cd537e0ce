// The shard audit at the CPU backend (AuditedPartials::CopyPartial, CopyAuditShard):
// the shard a second rank recomputes is its owner's partial bit for bit, and
// auditing leaves the update as it was. The CUDA backend's twin runs in
// cuda_backend_test.cc; the whole audit, end to end, in test_shard_audit.py.
#include <gtest/gtest.h>

#include "audit_test_util.h"

namespace dmlp {
namespace {

Plan TwoRankCpuPlan() {
  Plan plan;
  plan.steps = 2;
  plan.seed = 7;
  plan.batch = 16;
  plan.microbatches = 2;
  plan.learning_rate = 1e-3;
  plan.platform = Platform::kCpu;
  plan.heartbeat_timeout_seconds = 10;
  plan.model = {12, 16, 3, 5};
  return plan;
}

TEST(ShardAuditBackendTest, TheAuditorsRecomputedShardIsTheOwnersPartialBitForBit) {
  const Plan plan = TwoRankCpuPlan();
  testing::ExpectTheAuditAgrees(testing::AuditPartialsOfTwoRanks(plan), plan);
}

}  // namespace
}  // namespace dmlp
