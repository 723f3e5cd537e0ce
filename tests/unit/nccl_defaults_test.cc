// NCCL's transport defaults (trainer/nccl_defaults.h): set by main() before
// any thread, only for jobs that form an NCCL communicator, never over a
// value the user set.
#include "trainer/nccl_defaults.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace dmlp {
namespace {

Plan CudaPlan(int64_t processes, CollectivesKind collectives) {
  Plan plan;
  plan.platform = Platform::kCuda;
  plan.num_processes = processes;
  plan.collectives = collectives;
  return plan;
}

std::string Get(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "(unset)" : value;
}

TEST(NcclDefaultsTest, OnlyJobsWithACommunicatorUseNccl) {
  EXPECT_TRUE(UsesNccl(CudaPlan(2, CollectivesKind::kNccl)));
  EXPECT_FALSE(UsesNccl(CudaPlan(1, CollectivesKind::kNccl)));
  EXPECT_FALSE(UsesNccl(CudaPlan(2, CollectivesKind::kGloo)));
  Plan cpu = CudaPlan(2, CollectivesKind::kNccl);
  cpu.platform = Platform::kCpu;
  EXPECT_FALSE(UsesNccl(cpu));
}

TEST(NcclDefaultsTest, SetsWhatIsUnsetAndKeepsTheUsersValue) {
  unsetenv("NCCL_SHM_DISABLE");
  unsetenv("NCCL_NVLS_ENABLE");
  unsetenv("NCCL_IB_DISABLE");
  setenv("NCCL_P2P_DISABLE", "0", 1);
  DefaultToFreezableTransports(CudaPlan(1, CollectivesKind::kNccl));
  EXPECT_EQ(Get("NCCL_SHM_DISABLE"), "(unset)");  // 1 rank: nothing set
  DefaultToFreezableTransports(CudaPlan(2, CollectivesKind::kNccl));
  EXPECT_EQ(Get("NCCL_SHM_DISABLE"), "1");
  EXPECT_EQ(Get("NCCL_NVLS_ENABLE"), "0");
  EXPECT_EQ(Get("NCCL_IB_DISABLE"), "1");  // CRIU cannot dump InfiniBand's adapter state
  EXPECT_EQ(Get("NCCL_P2P_DISABLE"), "0");  // the user's
  for (const char* name : {"NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE"})
    unsetenv(name);
}

}  // namespace
}  // namespace dmlp
