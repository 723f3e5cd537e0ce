// Which job a rank belongs to (trainer/checks/job_identity.h): the order of the
// sources, engines' quirks, damaged ids, and that the plan fingerprint never
// depends on it.
#include "trainer/checks/job_identity.h"

#include <gtest/gtest.h>

#include "trainer/plan.h"

namespace dmlp {
namespace {

JobIdentity Select(Environment::Map values, const std::string& out_dir = "/runs/a") {
  Result<JobIdentity> job = SelectJobIdentity(Environment(std::move(values)), out_dir);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : JobIdentity{};
}

TEST(JobIdentityTest, LauncherIdWinsOverEveryEngine) {
  JobIdentity job = Select({{"DMLP_JOB_ID", "0123abcd"}, {"SLURM_JOB_ID", "77"}, {"TORCHELASTIC_RUN_ID", "r"}});
  EXPECT_EQ(job.id, "0123abcd");
  EXPECT_EQ(job.source, "DMLP_JOB_ID");
}

TEST(JobIdentityTest, EnginesInOrder) {
  EXPECT_EQ(Select({{"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "3"}}).id, "77.3");
  EXPECT_EQ(Select({{"SLURM_JOB_ID", "77"}}).id, "77");
  EXPECT_EQ(Select({{"TORCHELASTIC_RUN_ID", "abc"}, {"PMIX_NAMESPACE", "prterun-x@1"}}).id, "abc");
  EXPECT_EQ(Select({{"PMIX_NAMESPACE", "prterun-x@1"}, {"OMPI_MCA_orte_ess_jobid", "9"}}).source, "PMIX_NAMESPACE");
  EXPECT_EQ(Select({{"OMPI_MCA_orte_ess_jobid", "9"}}).id, "9");
}

TEST(JobIdentityTest, TorchrunDefaultAndBlankValuesAreNoId) {
  // torchrun's default run id "none" is shared by every job; blank means unset.
  JobIdentity job = Select({{"TORCHELASTIC_RUN_ID", "none"}, {"DMLP_JOB_ID", " "}});
  EXPECT_EQ(job.source, "OUT_DIR");
}

TEST(JobIdentityTest, OutDirFallbackIsStableAndDiffersBetweenDirectories) {
  JobIdentity a = Select({}, "/runs/a");
  EXPECT_EQ(a.source, "OUT_DIR");
  EXPECT_EQ(a.id, Select({}, "/runs/a").id);
  EXPECT_NE(a.id, Select({}, "/runs/b").id);
  EXPECT_EQ(a.id.rfind("out-dir-", 0), 0u);
  EXPECT_EQ(a.id.size(), 8u + 32u);
}

TEST(JobIdentityTest, DamagedIdsAreEnvInvalid) {
  Result<JobIdentity> spaced = SelectJobIdentity(Environment(Environment::Map{{"DMLP_JOB_ID", "a b"}}), "/o");
  EXPECT_EQ(spaced.status().ToString(), "ENV_INVALID: DMLP_JOB_ID must be printable ASCII without spaces");
  Result<JobIdentity> control = SelectJobIdentity(Environment(Environment::Map{{"SLURM_JOB_ID", std::string("7\x01", 2)}}), "/o");
  EXPECT_EQ(control.status().code(), "ENV_INVALID");
  Result<JobIdentity> long_id = SelectJobIdentity(Environment(Environment::Map{{"DMLP_JOB_ID", std::string(257, 'a')}}), "/o");
  EXPECT_EQ(long_id.status().ToString(), "ENV_INVALID: DMLP_JOB_ID is longer than 256 bytes");
}

TEST(JobIdentityTest, IdIsNotPartOfThePlanFingerprint) {
  Environment::Map values = {{"STEPS", "2"}, {"SEED", "1"}, {"BATCH", "4"}, {"MICROBATCHES", "1"},
                             {"LEARNING_RATE", "0.1"}, {"OUT_DIR", "/tmp/x"}, {"PLATFORM", "cpu"},
                             {"NUM_PROCESSES", "2"}, {"PROCESS_ID", "0"}, {"COORDINATOR_PORT", "14300"},
                             {"FEATURES", "2"}, {"WIDTH", "2"}, {"LAYERS", "1"}, {"CLASSES", "2"},
                             {"HEARTBEAT_TIMEOUT_SECONDS", "5"}};
  Result<Plan> without = ReadPlan(Environment(values));
  values["DMLP_JOB_ID"] = "feedface";
  Result<Plan> with = ReadPlan(Environment(values));
  ASSERT_TRUE(without.ok() && with.ok()) << without.status().ToString() << with.status().ToString();
  EXPECT_EQ(with->job_id, "feedface");
  EXPECT_EQ(without->job_id_source, "OUT_DIR");
  EXPECT_EQ(PlanFingerprint(*with), PlanFingerprint(*without));
}

}  // namespace
}  // namespace dmlp
