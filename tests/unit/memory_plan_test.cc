// The plan's memory estimate (trainer/memory_plan.h): exact bytes of a small
// plan, counted buffer by buffer here from the backends' own allocations, and
// needs past 64 bits saturating instead of wrapping into a small number.
#include "trainer/memory_plan.h"

#include <gtest/gtest.h>

#include <limits>

#include "common/state_layout.h"

namespace dmlp {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// The e2e tests' TINY plan: P = (12*16 + 16) + 2 (16*16 + 16) + (16*5 + 5) = 837.
Plan TinyPlan(Platform platform) {
  Plan plan;
  plan.platform = platform;
  plan.batch = 16;
  plan.data_shards = 4;
  plan.num_processes = 2;
  plan.model = ModelShape{12, 16, 3, 5};
  plan.audit_every = 0;  // the audit's buffer is counted apart (TheShardAuditAddsOnePartial)
  return plan;
}

TEST(MemoryPlanTest, CountParametersIsTheLayoutsWithoutBuildingIt) {
  for (const ModelShape& shape : {ModelShape{12, 16, 3, 5}, ModelShape{64, 128, 3, 10},
                                  ModelShape{7, 3, 1, 2}, ModelShape{5, 9, 0, 4}}) {
    EXPECT_EQ(StateLayout::CountParameters(shape), StateLayout::Create(shape)->parameter_count());
  }
}

TEST(MemoryPlanTest, ExactBytesOfASmallCpuPlan) {
  // image 12*837 + 4 = 10048; shard 4 samples, 2 local shards; padded 838, slice 419.
  const uint64_t image = 10048;
  const uint64_t backend = image          // the state
                           + 4 * 12 * 4   // one shard's inputs
                           + 4 * 4        // its labels
                           + 2 * 838 * 4  // partials, one per local shard
                           + 838 * 4      // reduced
                           + 2 * 838 * 4  // all-to-all send (2 local shards)
                           + 4 * 419 * 4  // all-to-all receive
                           + 4 * 53 * 4   // layer outputs: 3 x 16 + 5 per sample
                           + 2 * 4 * 16 * 4;  // delta, delta_below of the widest layer
  EXPECT_EQ(backend, 35080u);
  MemoryNeed need = EstimateMemory(TinyPlan(Platform::kCpu), 2);
  EXPECT_EQ(need.host_bytes, backend + 2 * image);
  EXPECT_EQ(need.device_bytes, 0u);
  // Each snapshot buffer is one more image; one process has no exchange buffers.
  EXPECT_EQ(EstimateMemory(TinyPlan(Platform::kCpu), 5).host_bytes, backend + 5 * image);
  Plan alone = TinyPlan(Platform::kCpu);
  alone.num_processes = 1;  // 4 local shards, padded 838
  EXPECT_EQ(EstimateMemory(alone, 2).host_bytes,
            image + 192 + 16 + 4 * 838 * 4 + 838 * 4 + 848 + 512 + 2 * image);
}

TEST(MemoryPlanTest, ExactBytesOfASmallCudaPlan) {
  const uint64_t device = 10048     // the state
                          + 192 + 16  // inputs, labels
                          + 2 * 896 * 4  // partials, stride 838 rounded up to 64 floats
                          + 838 * 4      // reduced
                          + 4 * 419 * 4  // receive
                          + 848 + 512    // layer outputs, deltas
                          + 4 * 4;       // row losses
  MemoryNeed need = EstimateMemory(TinyPlan(Platform::kCuda), 2);  // GEMM=ordered: no workspace
  EXPECT_EQ(need.device_bytes, device);
  EXPECT_EQ(need.host_bytes, 2 * 10048u);  // pinned snapshot buffers
  Plan cublas = TinyPlan(Platform::kCuda);
  cublas.gemm = GemmKind::kCublas;
  EXPECT_EQ(EstimateMemory(cublas, 2).device_bytes, device + (32u << 20));  // cuBLAS's fixed workspace
}

TEST(MemoryPlanTest, TheShardAuditAddsOnePartial) {
  // Any rank may audit: one more padded partial (838 floats) on the CPU; on
  // CUDA one more aligned partial (896) on the device and its pinned host copy.
  Plan cpu = TinyPlan(Platform::kCpu);
  const uint64_t unaudited = EstimateMemory(cpu, 2).host_bytes;
  cpu.audit_every = 100;
  EXPECT_EQ(EstimateMemory(cpu, 2).host_bytes, unaudited + 838 * 4);
  cpu.num_processes = 1;  // no second rank: no audit, no buffer
  Plan alone = cpu;
  alone.audit_every = 0;
  EXPECT_EQ(EstimateMemory(cpu, 2).host_bytes, EstimateMemory(alone, 2).host_bytes);
  Plan cuda = TinyPlan(Platform::kCuda);
  const MemoryNeed before = EstimateMemory(cuda, 2);
  cuda.audit_every = 1;
  const MemoryNeed after = EstimateMemory(cuda, 2);
  EXPECT_EQ(after.device_bytes, before.device_bytes + 896 * 4);
  EXPECT_EQ(after.host_bytes, before.host_bytes + 838 * 4);
}

TEST(MemoryPlanTest, NeedsPast64BitsSaturate) {
  Plan plan = TinyPlan(Platform::kCpu);
  plan.model = ModelShape{12, 65536, 2000000000, 5};  // 12 P overflows uint64
  EXPECT_EQ(EstimateMemory(plan, 2).host_bytes, kMax);
  plan.model = ModelShape{INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
  EXPECT_EQ(StateLayout::CountParameters(plan.model), kMax);
  EXPECT_EQ(EstimateMemory(plan, 2).host_bytes, kMax);
  plan.platform = Platform::kCuda;
  EXPECT_EQ(EstimateMemory(plan, 2).device_bytes, kMax);
  // Large but representable: WIDTH=1 LAYERS=2e9 is 4e9 parameters, 48 GB of image.
  plan.platform = Platform::kCpu;
  plan.model = ModelShape{12, 1, 2000000000, 5};
  EXPECT_EQ(StateLayout::CountParameters(plan.model), 12u + 1 + 1999999999u * 2 + 5 + 5);
  EXPECT_LT(EstimateMemory(plan, 2).host_bytes, kMax);
  EXPECT_GT(EstimateMemory(plan, 2).host_bytes, uint64_t{3} * 12 * 4000000000u);
}

TEST(MemoryPlanTest, RefusalText) {
  EXPECT_TRUE(CheckMemoryFits(100, 100, false).ok());
  EXPECT_EQ(CheckMemoryFits(101, 100, false).ToString(),
            "PLAN_TOO_LARGE: needs 101 bytes, 100 available");
  EXPECT_EQ(CheckMemoryFits(101, 100, true).ToString(),
            "PLAN_TOO_LARGE: needs 101 bytes of GPU memory, 100 available");
  // A saturated need is refused even where nothing limits what is available.
  EXPECT_EQ(CheckMemoryFits(kMax, kMax, false).ToString(),
            "PLAN_TOO_LARGE: needs more than 18446744073709551615 bytes, more than "
            "18446744073709551615 available");
  EXPECT_GT(HostMemoryAvailable().available, 0u);
  EXPECT_EQ(CheckMemoryFits(101, 100, false, "memory cgroup /job: memory.max 200 bytes, 100 in use").ToString(),
            "PLAN_TOO_LARGE: needs 101 bytes, 100 available (memory cgroup /job: memory.max 200 bytes, 100 in use)");
}

TEST(MemoryPlanTest, AbsurdPlanIsRefusedBeforeAnythingElse) {
  Plan plan = TinyPlan(Platform::kCpu);
  plan.model = ModelShape{12, 65536, 2000000000, 5};
  EXPECT_EQ(CheckPlanMemory(plan, 2).code(), "PLAN_TOO_LARGE");
  EXPECT_TRUE(CheckPlanMemory(TinyPlan(Platform::kCpu), 2).ok());
}

}  // namespace
}  // namespace dmlp
