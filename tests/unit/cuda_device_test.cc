// The CUDA platform's device selection and error reporting. The tests of the
// no-GPU path run on machines WITHOUT a GPU (CI) and skip where there is one;
// the layout test needs a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "cuda_test_util.h"
#include "device_plan_test_util.h"
#include "rendezvous_test_util.h"
#include "trainer/backend.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/device_select.h"
#ifdef DMLP_CUDA_VENDOR_LIBRARIES  // a build with cuBLAS and NCCL (tests/unit/cuda.cmake)
#include "trainer/cuda/cublas_check.h"
#include "trainer/cuda/nccl_check.h"
#endif
#include "trainer/memory_plan.h"
#include "trainer/plan.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {
namespace {

using testing::LocalRankPlan;

Status FailingCudaCall() {
  CUDA_CHECK(cudaErrorMemoryAllocation);
  return Status::Ok();
}

#ifdef DMLP_CUDA_VENDOR_LIBRARIES
Status FailingCublasCall() {
  CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED);
  return Status::Ok();
}

Status FailingNcclCall() {
  NCCL_CHECK(nullptr, ncclInvalidUsage);
  return Status::Ok();
}

Status InProgressNcclCall() {
  NCCL_CHECK(nullptr, ncclInProgress);  // a non-blocking communicator's "not yet"
  return Status::Ok();
}
#endif

// A build whose compiler launcher rewrites paths relative to the build folder
// (ccache with base_dir) must still name the file as it is in the tree.
TEST(CudaCheck, ErrorLocationNamesTheFileInTheTree) {
  for (const char* given : {"../../trainer/cuda/fold.cu", "./trainer/cuda/fold.cu"}) {
    EXPECT_EQ(cuda::ErrorLocation(given, 7).rfind(" at trainer/cuda/fold.cu:7 [rank ", 0), 0u)
        << given << " -> " << cuda::ErrorLocation(given, 7);
  }
}

TEST(CudaCheck, NamesCallErrorFileLineAndRank) {
  cuda::SetErrorRank(3);
  const Status status = FailingCudaCall();
  EXPECT_EQ(status.code(), "CUDA_ERROR");
  EXPECT_NE(
      status.detail().find("cudaErrorMemoryAllocation: out of memory (cudaErrorMemoryAllocation)"),
      std::string::npos)
      << status.ToString();
  EXPECT_NE(status.detail().find(" at tests/unit/cuda_device_test.cc:"), std::string::npos)
      << status.ToString();
  EXPECT_NE(status.detail().find("[rank 3 on host "), std::string::npos) << status.ToString();
  cuda::SetErrorRank(-1);
  EXPECT_NE(FailingCudaCall().detail().find("[rank ? on host "), std::string::npos);
}

#ifdef DMLP_CUDA_VENDOR_LIBRARIES
TEST(CudaCheck, CublasAndNcclCodes) {
  const Status cublas = FailingCublasCall();
  EXPECT_EQ(cublas.code(), "CUBLAS_ERROR");
  EXPECT_NE(cublas.detail().find("CUBLAS_STATUS_NOT_INITIALIZED: "), std::string::npos)
      << cublas.ToString();
  EXPECT_NE(cublas.detail().find("(CUBLAS_STATUS_NOT_INITIALIZED)"), std::string::npos)
      << cublas.ToString();
  const Status nccl = FailingNcclCall();
  EXPECT_EQ(nccl.code(), "NCCL_ERROR");
  EXPECT_NE(nccl.detail().find("ncclInvalidUsage: "), std::string::npos) << nccl.ToString();
  EXPECT_TRUE(InProgressNcclCall().ok());
}
#endif

TEST(CudaDevice, VersionText) {
  EXPECT_EQ(cuda::VersionText(12080), "12.8");
  EXPECT_EQ(cuda::VersionText(13000), "13.0");
  EXPECT_EQ(cuda::VersionText(12090), "12.9");
}

// On a machine without a GPU or driver: a clear error, not a crash.
TEST(CudaDevice, UuidTextIsNvidiaSmis) {
  const unsigned char bytes[16] = {0x8f, 0x3c, 0x2a, 0x1e, 0x00, 0x11, 0x22, 0x33,
                                   0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xff};
  EXPECT_EQ(cuda::UuidText(bytes), "GPU-8f3c2a1e-0011-2233-4455-66778899aaff");
}

TEST(CudaDevice, NoGpuIsCudaUnavailable) {
  const Result<int> count = cuda::VisibleDeviceCount();
  if (count.ok()) GTEST_SKIP() << "this machine has " << *count << " GPU(s)";
  EXPECT_EQ(count.status().code(), "CUDA_UNAVAILABLE");
  EXPECT_FALSE(count.status().detail().empty());
  const Result<cuda::DeviceFacts> selected =
      cuda::SelectDevice(LocalRankPlan(1, 0, CollectivesKind::kNccl));
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().code(), "CUDA_UNAVAILABLE");
}

// The whole factory on a machine without a GPU: CUDA_UNAVAILABLE, no crash.
TEST(CudaDevice, NoGpuBackendIsCudaUnavailable) {
  if (cuda::VisibleDeviceCount().ok()) GTEST_SKIP() << "this machine has a GPU";
  auto rendezvous = Rendezvous::Join(testing::RendezvousTestOptions(testing::FreePort(), 0, 1));
  ASSERT_TRUE(rendezvous.ok()) << rendezvous.status().ToString();
  Plan plan;
  plan.batch = 8;
  plan.num_processes = 1;
  plan.data_shards = 1;
  plan.model = {4, 8, 1, 3};
  plan.platform = Platform::kCuda;
  auto layout = StateLayout::Create(plan.model);
  ASSERT_TRUE(layout.ok());
  const auto backend = CreateCudaBackend(plan, *layout, **rendezvous);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), "CUDA_UNAVAILABLE") << backend.status().ToString();
  EXPECT_TRUE((*rendezvous)->Close().ok());
}

TEST(CudaDevice, MoreLocalRanksThanGpusIsLayoutInvalid) {
  DMLP_REQUIRE_GPU();
  const int count = *cuda::VisibleDeviceCount();
  const Result<cuda::DeviceFacts> selected =
      cuda::SelectDevice(LocalRankPlan(count + 1, count, CollectivesKind::kNccl));
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().code(), "DEVICE_LAYOUT_INVALID");
  EXPECT_NE(selected.status().detail().find("LOCAL_RANK " + std::to_string(count)),
            std::string::npos)
      << selected.status().ToString();
  const Result<cuda::DeviceFacts> first = cuda::SelectDevice(LocalRankPlan(1, 0, CollectivesKind::kNccl));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_GT(first->sm_count, 0);
  EXPECT_FALSE(first->name.empty());
  EXPECT_GE(first->driver_version, first->runtime_version / 1000 * 1000)
      << "driver older than the runtime should have failed";
}

TEST(CudaDevice, SharedDevicesWrapAroundTheVisibleOnes) {
  DMLP_REQUIRE_GPU();
  const int count = *cuda::VisibleDeviceCount();
  const Result<cuda::DeviceFacts> shared =
      cuda::SelectDevice(LocalRankPlan(count + 2, count, CollectivesKind::kGloo));
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(shared->index, 0);
  const Result<cuda::DeviceFacts> next =
      cuda::SelectDevice(LocalRankPlan(count + 2, count + 1, CollectivesKind::kGloo));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->index, 1 % count);
}

// The memory check before the backend selects as the backend does (rank
// 1 of a gloo job on one GPU used to fail here with DEVICE_LAYOUT_INVALID).
TEST(CudaDevice, MemoryCheckSelectsTheSharedDevice) {
  DMLP_REQUIRE_GPU();
  const int count = *cuda::VisibleDeviceCount();
  const Result<DeviceMemory> memory =
      CudaDeviceMemory(LocalRankPlan(2 * count, count, CollectivesKind::kGloo));
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  EXPECT_EQ(memory->slot.ordinal, 0);
  EXPECT_EQ(memory->slot.ranks_on_device, 2);
  EXPECT_GT(memory->free_bytes, 0u);
  Plan plan = LocalRankPlan(2 * count, count, CollectivesKind::kGloo);
  plan.data_shards = 2 * count;
  plan.batch = 4 * plan.data_shards;
  plan.model = {4, 8, 1, 3};
  EXPECT_TRUE(CheckPlanMemory(plan, 2).ok());
}

}  // namespace
}  // namespace dmlp
