// The shard audit's pure parts (trainer/checks/shard_audit.h): the schedule (which
// update audits which shard, on which two ranks), the mixed-device rule and the
// exact SHARD_AUDIT_FAILED text. The rendezvous exchange and the exit code run
// in tests/e2e/trainer/test_shard_audit.py.
#include "trainer/checks/shard_audit.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace dmlp {
namespace {

Plan AuditPlan(int64_t processes, int64_t shards, int64_t microbatches, int64_t every) {
  Plan plan;
  plan.num_processes = processes;
  plan.data_shards = shards;
  plan.batch = shards * 4;
  plan.microbatches = microbatches;
  plan.audit_every = every;
  return plan;
}

TEST(ShardAuditTest, UpdatesAreNumberedAcrossStepsAndMicrobatches) {
  const Plan plan = AuditPlan(2, 4, 3, 0);
  EXPECT_EQ(AuditScheduleFor(plan, 1, 0).update, 1);
  EXPECT_EQ(AuditScheduleFor(plan, 1, 2).update, 3);
  EXPECT_EQ(AuditScheduleFor(plan, 2, 0).update, 4);
  EXPECT_EQ(AuditScheduleFor(plan, 5, 1).update, 14);
}

TEST(ShardAuditTest, OffWithZeroOrWithOneProcess) {
  for (const Plan& plan : {AuditPlan(2, 4, 2, 0), AuditPlan(1, 4, 2, 1), AuditPlan(1, 1, 1, 1)}) {
    for (int64_t step = 1; step <= 10; ++step)
      for (int64_t microbatch = 0; microbatch < plan.microbatches; ++microbatch)
        EXPECT_FALSE(AuditScheduleFor(plan, step, microbatch).audited);
  }
}

TEST(ShardAuditTest, EveryKthUpdateRotatingOverEveryShard) {
  // 3 ranks, 6 shards (2 per rank), 2 microbatches, AUDIT_EVERY=2.
  const Plan plan = AuditPlan(3, 6, 2, 2);
  std::vector<AuditAssignment> audits;
  for (int64_t step = 1; step <= 12; ++step)
    for (int64_t microbatch = 0; microbatch < 2; ++microbatch) {
      AuditAssignment assignment = AuditScheduleFor(plan, step, microbatch);
      EXPECT_EQ(assignment.audited, assignment.update % 2 == 0) << assignment.update;
      if (assignment.audited) audits.push_back(assignment);
    }
  ASSERT_EQ(audits.size(), 12u);
  std::set<int64_t> shards;
  for (size_t i = 0; i < audits.size(); ++i) {
    const AuditAssignment& a = audits[i];
    EXPECT_EQ(a.shard, static_cast<int64_t>(i % 6));  // u / AUDIT_EVERY - 1, mod DATA_SHARDS
    EXPECT_EQ(a.owner, a.shard / 2);                  // the rank that computes it anyway
    EXPECT_EQ(a.auditor, (a.owner + 1) % 3);          // the next rank, wrapping to 0
    shards.insert(a.shard);
  }
  EXPECT_EQ(shards.size(), 6u);
  // The e2e test's case: update 10 (step 5, microbatch 1) audits shard 4: ranks 2 and 0.
  const AuditAssignment last = AuditScheduleFor(plan, 5, 1);
  EXPECT_EQ((std::vector<int64_t>{last.update, last.shard, last.owner, last.auditor}),
            (std::vector<int64_t>{10, 4, 2, 0}));
}

TEST(ShardAuditTest, TheVerdictComesAtMost64UpdatesLaterAndBeforeTheNextAudit) {
  EXPECT_EQ(AuditVerdictLag(AuditPlan(2, 4, 2, 1)), 1);
  EXPECT_EQ(AuditVerdictLag(AuditPlan(2, 4, 2, 63)), 63);
  EXPECT_EQ(AuditVerdictLag(AuditPlan(2, 4, 2, 64)), 64);
  EXPECT_EQ(AuditVerdictLag(AuditPlan(2, 4, 2, 200)), 64);
  // The audited update's step is in the assignment, for the failure's text.
  EXPECT_EQ(AuditScheduleFor(AuditPlan(2, 4, 3, 1), 5, 1).step, 5);
}

TEST(ShardAuditTest, PairsOnDifferentDeviceModelsAreNamed) {
  EXPECT_EQ(UnauditedPairs({"NVIDIA L4", "NVIDIA L4", "NVIDIA L4"}), "");
  EXPECT_EQ(UnauditedPairs({"NVIDIA L4"}), "");  // one rank: nobody to pair with
  // Rank 2 is the odd one: it audits rank 1's shards and rank 0 audits its own.
  EXPECT_EQ(UnauditedPairs({"NVIDIA L4", "NVIDIA L4", "NVIDIA A100"}),
            "1,2 (NVIDIA L4 / NVIDIA A100); 2,0 (NVIDIA A100 / NVIDIA L4)");
}

TEST(ShardAuditTest, FailureTextIsExact) {
  const Plan plan = AuditPlan(2, 4, 2, 1);
  const AuditAssignment assignment = AuditScheduleFor(plan, 2, 0);  // update 3, shard 2
  const Status failure = ShardAuditFailure(assignment, "aa", "bb", "host h cpu X", "host g cpu X");
  EXPECT_EQ(failure.code(), kShardAuditFailed);
  EXPECT_EQ(failure.ToString(),
            "SHARD_AUDIT_FAILED: step=2 update=3 shard=2 ranks=1,0 digests=aa,bb "
            "device(s)=rank 1: host h cpu X; rank 0: host g cpu X");
}

}  // namespace
}  // namespace dmlp
