// The freeze tool's driver API wrapper (tests/gpu/cuda_freeze/cuda_freeze.h).
// Without a driver it must be a refusal naming why (the kit's freeze row then
// SKIPs quoting it), never a crash; with a GPU, freezing this process's own
// CUDA state cannot work (the lock waits for the caller), so the real freeze
// is the kit's freeze row.
#include "tests/gpu/cuda_freeze/cuda_freeze.h"

#include <gtest/gtest.h>

#include "trainer/cuda/device_select.h"

namespace dmlp {
namespace {

// Named NoGpu*: it skips where a GPU is, and the kit's unit-test row leaves out
// exactly that pattern (tests/gpu/gpu_check_rows.py: GPU_ABSENT_TESTS).
TEST(CudaFreeze, NoGpuIsARefusal) {
  if (cuda::VisibleDeviceCount().ok()) GTEST_SKIP() << "this machine has a GPU";
  const Result<freeze::CudaCheckpointApi> api = freeze::CudaCheckpointApi::Load();
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), "FREEZE_UNSUPPORTED") << api.status().ToString();
  EXPECT_FALSE(api.status().detail().empty());
}

TEST(CudaFreeze, StateNames) {
  EXPECT_EQ(freeze::ProcessStateName(CU_PROCESS_STATE_RUNNING), "running");
  EXPECT_EQ(freeze::ProcessStateName(CU_PROCESS_STATE_LOCKED), "locked");
  EXPECT_EQ(freeze::ProcessStateName(CU_PROCESS_STATE_CHECKPOINTED), "checkpointed");
  EXPECT_EQ(freeze::ProcessStateName(CU_PROCESS_STATE_FAILED), "failed");
}

}  // namespace
}  // namespace dmlp
