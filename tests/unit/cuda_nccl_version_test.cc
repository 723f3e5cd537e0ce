// NCCL header against library (trainer/cuda/nccl_version.h). No GPU needed:
// ncclGetVersion answers without a device.
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "trainer/cuda/nccl_version.h"

namespace dmlp {
namespace {

TEST(NcclVersion, DecodesBothEncodings) {
  EXPECT_EQ(cuda::NcclVersionText(22501), "2.25.1");
  EXPECT_EQ(cuda::NcclVersionText(22809), "2.28.9");
  EXPECT_EQ(cuda::NcclVersionText(2804), "2.8.4");  // before 2.9: major * 1000
}

TEST(NcclVersion, MismatchNamesBothVersionsAndTheLibrary) {
  EXPECT_TRUE(cuda::CompareNcclVersions(22501, 22501, "/lib/libnccl.so.2").ok());
  const Status status = cuda::CompareNcclVersions(22809, 22501, "/lib/libnccl.so.2");
  EXPECT_EQ(status.code(), "NCCL_VERSION_MISMATCH");
  EXPECT_NE(status.detail().find("header 2.28.9, library 2.25.1 (/lib/libnccl.so.2)"),
            std::string::npos)
      << status.ToString();
}

// The GPU kit (DMLP_GPU_KIT=1, set by tests/gpu/run_gpu_checks.sh --kit) meets
// whatever NCCL the device has, and none of its jobs needs it to match: a
// 1-rank or gloo job runs with any libnccl (docs/gpus.md). There the versions
// are reported (the unit-test row quotes the "nccl:" line), not compared.
bool InTheGpuKit() {
  const char* kit = std::getenv("DMLP_GPU_KIT");
  return kit != nullptr && std::string(kit) == "1";
}

TEST(NcclVersion, ThisBuildRunsWithItsOwnNccl) {
  if (InTheGpuKit()) {
    const Result<std::string> loaded = cuda::NcclLibraryVersion();
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    std::printf("nccl: header %s, library %s (the kit's jobs need no match)\n",
                cuda::NcclVersionText(NCCL_VERSION_CODE).c_str(), loaded->c_str());
    return;
  }
  const Result<std::string> version = cuda::CheckedNcclLibraryVersion();
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(*version, cuda::NcclVersionText(NCCL_VERSION_CODE));
  // The unchecked version (jobs without a communicator) names the same library.
  const Result<std::string> loaded = cuda::NcclLibraryVersion();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(*loaded, *version);
}

}  // namespace
}  // namespace dmlp
