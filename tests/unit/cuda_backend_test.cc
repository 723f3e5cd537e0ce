// The CUDA backend as the trainer drives it (one rank): updates, losses,
// pipelined snapshots, against itself (bits) and the CPU backend (tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "audit_test_util.h"
#include "cuda_test_util.h"
#include "rendezvous_test_util.h"
#include "trainer/backend.h"
#include "trainer/math/init.h"
#include "trainer/plan.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {
namespace {

Plan SmallPlan(int64_t data_shards, Reduction reduction) {
  Plan plan;
  plan.steps = 2;
  plan.seed = 7;
  plan.batch = 96;
  plan.microbatches = 2;
  plan.learning_rate = 1e-3;
  plan.platform = Platform::kCuda;
  plan.num_processes = 1;
  plan.heartbeat_timeout_seconds = 10;
  plan.model = {20, 48, 2, 10};
  plan.data_shards = data_shards;
  plan.reduction = reduction;
  return plan;
}

struct TrainRun {
  std::vector<float> losses;
  std::vector<uint8_t> image;
};

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rendezvous = Rendezvous::Join(testing::RendezvousTestOptions(testing::FreePort(), 0, 1));
    ASSERT_TRUE(rendezvous.ok()) << rendezvous.status().ToString();
    rendezvous_ = std::move(rendezvous).value();
  }
  void TearDown() override {
    if (rendezvous_) {
      EXPECT_TRUE(rendezvous_->Close().ok());
    }
  }

  /// `updates` updates from the initial state; the losses and the final image.
  TrainRun Train(const Plan& plan, int updates, bool cpu = false) {
    TrainRun run;
    auto layout = StateLayout::Create(plan.model);
    EXPECT_TRUE(layout.ok());
    auto backend = cpu ? CreateCpuBackend(plan, *layout, *rendezvous_)
                       : CreateCudaBackend(plan, *layout, *rendezvous_);
    EXPECT_TRUE(backend.ok()) << backend.status().ToString();
    if (!backend.ok()) return run;
    std::vector<uint8_t> initial(layout->image_bytes(), 0);
    EXPECT_TRUE(
        InitParams(*layout, uint32_t(plan.seed), reinterpret_cast<float*>(initial.data())).ok());
    EXPECT_TRUE((*backend)->LoadState(initial.data()).ok());
    for (int update = 0; update < updates; ++update) {
      EXPECT_TRUE((*backend)->Update(1 + update / 2, update % 2).ok());
      auto loss = (*backend)->LastLoss();
      EXPECT_TRUE(loss.ok()) << loss.status().ToString();
      run.losses.push_back(loss.ok() ? *loss : NAN);
    }
    auto buffer = (*backend)->AllocateSnapshotBuffer();
    EXPECT_TRUE(buffer.ok());
    auto waiter = (*backend)->BeginSnapshot(buffer->get());
    EXPECT_TRUE(waiter.ok());
    EXPECT_TRUE((*waiter)().ok());
    run.image.assign(buffer->get(), buffer->get() + layout->image_bytes());
    return run;
  }

  std::unique_ptr<Rendezvous> rendezvous_;
};

TEST_F(CudaBackendTest, SameStateBitsEveryRunAndReductionWithOneRank) {
  DMLP_REQUIRE_GPU();
  const TrainRun first = Train(SmallPlan(4, Reduction::kOrdered), 4);
  const TrainRun second = Train(SmallPlan(4, Reduction::kOrdered), 4);
  ASSERT_EQ(first.image.size(), second.image.size());
  EXPECT_TRUE(first.image == second.image);
  EXPECT_EQ(std::memcmp(first.losses.data(), second.losses.data(), 4 * sizeof(float)), 0);
  // One rank: allreduce is the same in-order local fold, so the same bits.
  const TrainRun allreduce = Train(SmallPlan(4, Reduction::kAllreduce), 4);
  EXPECT_TRUE(first.image == allreduce.image);
  // The image's Adam count is the number of updates.
  auto layout = StateLayout::Create(SmallPlan(4, Reduction::kOrdered).model);
  int32_t count = 0;
  std::memcpy(&count, first.image.data() + layout->count_offset(), 4);
  EXPECT_EQ(count, 4);
}

// Tolerance (fp32, 4 updates of a small model): losses within 1e-4 relative of
// the CPU backend's; parameters within 1e-4 absolute (Adam moves each by at
// most ~lr = 1e-3 per update, so a sign flip from rounding would show as ~2e-3).
TEST_F(CudaBackendTest, CloseToCpuBackend) {
  DMLP_REQUIRE_GPU();
  // One shard (the reduction is the shard's own bits) and three (the fold).
  for (int64_t data_shards : {1, 3}) {
    const Plan plan = SmallPlan(data_shards, Reduction::kOrdered);
    const TrainRun gpu = Train(plan, 4);
    Plan cpu_plan = plan;
    cpu_plan.platform = Platform::kCpu;
    const TrainRun cpu = Train(cpu_plan, 4, /*cpu=*/true);
    ASSERT_EQ(gpu.losses.size(), cpu.losses.size());
    for (size_t i = 0; i < gpu.losses.size(); ++i)
      EXPECT_NEAR(gpu.losses[i], cpu.losses[i], 1e-4 * std::abs(cpu.losses[i]))
          << "update " << i << ", " << data_shards << " shard(s)";
    auto layout = StateLayout::Create(plan.model);
    const auto* gpu_params = reinterpret_cast<const float*>(gpu.image.data());
    const auto* cpu_params = reinterpret_cast<const float*>(cpu.image.data());
    size_t far = 0;
    for (size_t i = 0; i < layout->parameter_count(); ++i)
      if (std::abs(gpu_params[i] - cpu_params[i]) > 1e-4f) ++far;
    EXPECT_EQ(far, 0u) << "parameters further than 1e-4 from the CPU platform's, " << data_shards
                       << " shard(s)";
  }
}

TEST_F(CudaBackendTest, SnapshotIsTheStateWhenBegunWhileUpdatesContinue) {
  DMLP_REQUIRE_GPU();
  const Plan plan = SmallPlan(2, Reduction::kOrdered);
  const TrainRun two_updates = Train(plan, 2);
  auto layout = StateLayout::Create(plan.model);
  auto backend = CreateCudaBackend(plan, *layout, *rendezvous_);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  std::vector<uint8_t> initial(layout->image_bytes(), 0);
  DMLP_ASSERT_OK(
      InitParams(*layout, uint32_t(plan.seed), reinterpret_cast<float*>(initial.data())));
  DMLP_ASSERT_OK((*backend)->LoadState(initial.data()));
  // LoadState then snapshot: the same image back.
  auto buffer = (*backend)->AllocateSnapshotBuffer();
  ASSERT_TRUE(buffer.ok());
  auto waiter = (*backend)->BeginSnapshot(buffer->get());
  ASSERT_TRUE(waiter.ok());
  DMLP_ASSERT_OK((*waiter)());
  EXPECT_EQ(std::memcmp(buffer->get(), initial.data(), initial.size()), 0);
  // Snapshot after 2 updates, begun before the 3rd and 4th are issued.
  DMLP_ASSERT_OK((*backend)->Update(1, 0));
  DMLP_ASSERT_OK((*backend)->Update(1, 1));
  waiter = (*backend)->BeginSnapshot(buffer->get());
  ASSERT_TRUE(waiter.ok());
  DMLP_ASSERT_OK((*backend)->Update(2, 0));
  DMLP_ASSERT_OK((*backend)->Update(2, 1));
  DMLP_ASSERT_OK((*waiter)());
  EXPECT_EQ(std::memcmp(buffer->get(), two_updates.image.data(), initial.size()), 0);
  EXPECT_TRUE((*backend)->LastLoss().ok());
}

TEST_F(CudaBackendTest, LastLossBeforeAnyUpdateIsAnError) {
  DMLP_REQUIRE_GPU();
  const Plan plan = SmallPlan(1, Reduction::kOrdered);
  auto layout = StateLayout::Create(plan.model);
  auto backend = CreateCudaBackend(plan, *layout, *rendezvous_);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  EXPECT_FALSE((*backend)->LastLoss().ok());
  const nlohmann::json fingerprint = (*backend)->Fingerprint();
  EXPECT_EQ(fingerprint["platform"], "cuda");
  EXPECT_GT(fingerprint["device"]["sm_count"].get<int>(), 0);
  // GEMM=ordered, the default: no library, so no version to record.
  EXPECT_EQ(fingerprint["gemm"], nlohmann::json({{"kind", "ordered"}}));
}

#ifdef DMLP_CUDA_VENDOR_LIBRARIES
TEST_F(CudaBackendTest, TheFingerprintRecordsCublasWhereItRan) {
  DMLP_REQUIRE_GPU();
  Plan plan = SmallPlan(1, Reduction::kOrdered);
  plan.gemm = GemmKind::kCublas;
  auto layout = StateLayout::Create(plan.model);
  auto backend = CreateCudaBackend(plan, *layout, *rendezvous_);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  const nlohmann::json gemm = (*backend)->Fingerprint()["gemm"];
  EXPECT_EQ(gemm["kind"], "cublas");
  EXPECT_EQ(gemm["compute_type"], "CUBLAS_COMPUTE_32F");
  EXPECT_FALSE(gemm["version"].get<std::string>().empty());
  EXPECT_TRUE((*backend)->Fingerprint()["nccl"].is_string());
}
#endif

// COLLECTIVES=gloo: 2 and 4 ranks (threads) share this one GPU, staging their
// slices through host memory; with REDUCTION=ordered the collectives only move
// bytes, so every rank's state equals one rank's bit for bit (and, on a
// multi-GPU host, the NCCL path's: tests/gpu/run_gpu_checks.sh).
std::vector<std::vector<uint8_t>> TrainRanksSharingTheGpu(int world_size, Reduction reduction) {
  std::vector<std::vector<uint8_t>> images(world_size);
  const int port = testing::FreePort();
  testing::RunRanks(world_size, [&](int rank) {
    Plan plan = SmallPlan(4, reduction);
    plan.num_processes = world_size;
    plan.process_id = rank;
    plan.local_rank = rank;  // more local ranks than GPUs: shared with gloo
    plan.collectives = CollectivesKind::kGloo;
    auto layout = StateLayout::Create(plan.model);
    auto rendezvous = Rendezvous::Join(testing::RendezvousTestOptions(port, rank, world_size));
    ASSERT_TRUE(rendezvous.ok()) << rendezvous.status().ToString();
    {
      auto backend = CreateCudaBackend(plan, *layout, **rendezvous);
      ASSERT_TRUE(backend.ok()) << backend.status().ToString();
      EXPECT_NE((*backend)->Fingerprint()["collectives"].get<std::string>().find("gloo"),
                std::string::npos);
      std::vector<uint8_t> initial(layout->image_bytes(), 0);
      DMLP_ASSERT_OK(InitParams(*layout, uint32_t(plan.seed), reinterpret_cast<float*>(initial.data())));
      DMLP_ASSERT_OK((*backend)->LoadState(initial.data()));
      for (int update = 0; update < 4; ++update) {
        DMLP_ASSERT_OK((*backend)->Update(1 + update / 2, update % 2));
        ASSERT_TRUE((*backend)->LastLoss().ok());
      }
      auto buffer = (*backend)->AllocateSnapshotBuffer();
      ASSERT_TRUE(buffer.ok());
      auto waiter = (*backend)->BeginSnapshot(buffer->get());
      ASSERT_TRUE(waiter.ok());
      DMLP_ASSERT_OK((*waiter)());
      images[rank].assign(buffer->get(), buffer->get() + layout->image_bytes());
    }
    EXPECT_TRUE((*rendezvous)->Close().ok());
  });
  return images;
}

TEST_F(CudaBackendTest, GlooRanksSharingOneGpuGiveOneRanksBits) {
  DMLP_REQUIRE_GPU();
  const TrainRun one = Train(SmallPlan(4, Reduction::kOrdered), 4);
  for (int world_size : {2, 4}) {
    const auto images = TrainRanksSharingTheGpu(world_size, Reduction::kOrdered);
    for (int rank = 0; rank < world_size; ++rank)
      EXPECT_TRUE(images[rank] == one.image) << world_size << " ranks, rank " << rank;
  }
}

TEST_F(CudaBackendTest, GlooRanksSharingOneGpuAgreeWithAllreduce) {
  DMLP_REQUIRE_GPU();
  const auto images = TrainRanksSharingTheGpu(2, Reduction::kAllreduce);
  ASSERT_FALSE(images[0].empty());
  EXPECT_TRUE(images[0] == images[1]);
}

// The shard audit (AuditedPartials::CopyPartial, CopyAuditShard) on one GPU shared by
// two ranks: the shard rank 0 recomputes is rank 1's partial bit for bit
// (same kernels, same shapes, both partials 256-byte aligned), copied to the
// host off the step loop; auditing leaves the update as it was.
TEST_F(CudaBackendTest, TheAuditorsRecomputedShardIsTheOwnersPartialBitForBit) {
  DMLP_REQUIRE_GPU();
  Plan plan = SmallPlan(4, Reduction::kOrdered);
  plan.collectives = CollectivesKind::kGloo;
  testing::ExpectTheAuditAgrees(testing::AuditPartialsOfTwoRanks(plan), plan);
}

}  // namespace
}  // namespace dmlp
