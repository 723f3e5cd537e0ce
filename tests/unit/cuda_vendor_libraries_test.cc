// What a build without cuBLAS and NCCL (DMLP_CUDA_VENDOR_LIBRARIES=OFF) refuses
// at start-up, and that a build with them refuses nothing. No GPU needed: the
// check comes before any device is touched.
#include <gtest/gtest.h>

#include "common/format/error_codes.h"
#include "trainer/backend.h"
#include "trainer/cuda/vendor_libraries.h"
#include "trainer/plan.h"

namespace dmlp {
namespace {

Plan CudaPlan(GemmKind gemm, int64_t processes, CollectivesKind collectives) {
  Plan plan;
  plan.platform = Platform::kCuda;
  plan.gemm = gemm;
  plan.num_processes = processes;
  plan.collectives = collectives;
  return plan;
}

#ifdef DMLP_CUDA_VENDOR_LIBRARIES

TEST(CudaVendorLibraries, ABuildWithThemRefusesNothing) {
  EXPECT_TRUE(cuda::CheckVendorLibraries(CudaPlan(GemmKind::kCublas, 4, CollectivesKind::kNccl)).ok());
}

#else

TEST(CudaVendorLibraries, GemmCublasIsRefusedNamingTheBuild) {
  const Status status = cuda::CheckVendorLibraries(CudaPlan(GemmKind::kCublas, 1, CollectivesKind::kNccl));
  EXPECT_EQ(status.ToString(),
            "VENDOR_LIBRARY_ABSENT: GEMM=cublas needs cuBLAS, and this build of dmlp has none "
            "(configured with DMLP_CUDA_VENDOR_LIBRARIES=OFF)");
  // Before the device: the same refusal where no GPU is visible.
  EXPECT_EQ(CudaDeviceMemory(CudaPlan(GemmKind::kCublas, 1, CollectivesKind::kNccl)).status().code(),
            kVendorLibraryAbsent);
}

TEST(CudaVendorLibraries, NcclIsRefusedOnlyWhereACommunicatorWouldExist) {
  const Status status = cuda::CheckVendorLibraries(CudaPlan(GemmKind::kOrdered, 2, CollectivesKind::kNccl));
  EXPECT_EQ(status.ToString(),
            "VENDOR_LIBRARY_ABSENT: COLLECTIVES=nccl with NUM_PROCESSES > 1 (COLLECTIVES=gloo works "
            "without it) needs NCCL, and this build of dmlp has none (configured with "
            "DMLP_CUDA_VENDOR_LIBRARIES=OFF)");
  EXPECT_TRUE(cuda::CheckVendorLibraries(CudaPlan(GemmKind::kOrdered, 1, CollectivesKind::kNccl)).ok());
  EXPECT_TRUE(cuda::CheckVendorLibraries(CudaPlan(GemmKind::kOrdered, 2, CollectivesKind::kGloo)).ok());
}

TEST(CudaVendorLibraries, TheFingerprintClaimsNoNcclVersion) {
  auto version = cuda::NcclVersionForFingerprint(false);
  ASSERT_TRUE(version.ok());
  EXPECT_TRUE(version->is_null());
}

#endif

}  // namespace
}  // namespace dmlp
