// defines: AuditedPartials, AuditPartialsOfTwoRanks, ExpectTheAuditAgrees
//
// The shard audit at the backend seam (AuditedPartials::CopyPartial, CopyAuditShard),
// for either platform: two ranks (threads) where rank 0 recomputes the shard
// that rank 1 owns. Used by shard_audit_backend_test.cc (CPU, everywhere) and
// cuda_backend_test.cc (two ranks sharing one GPU through COLLECTIVES=gloo).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "rendezvous_test_util.h"
#include "trainer/backend.h"
#include "trainer/math/init.h"
#include "trainer/plan.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp::testing {

struct AuditedPartials {
  std::vector<uint8_t> owner_copy;         // rank 1: CopyPartial of its first shard (global 2)
  std::vector<uint8_t> auditor_copy;       // rank 0: CopyAuditShard of global shard 2
  std::vector<uint8_t> auditor_own_shard;  // rank 0: CopyPartial of its first shard (global 0)
  std::array<std::vector<uint8_t>, 2> images;  // every rank's state after the two updates
};

/// The bytes `copy` holds once it is ready; empty (and a test failure) on error.
inline std::vector<uint8_t> Bytes(Result<PartialCopy> copy) {
  EXPECT_TRUE(copy.ok()) << copy.status().ToString();
  if (!copy.ok()) return {};
  const Status ready = copy->ready();
  EXPECT_TRUE(ready.ok()) << ready.ToString();
  return ready.ok() ? std::vector<uint8_t>(copy->bytes, copy->bytes + copy->size) : std::vector<uint8_t>{};
}

/// `plan` with 2 ranks and 4 shards: update (1, 0), then at (1, 1) the copies
/// above between ComputePartials and ReduceAndApply, so the recomputed shard
/// starts from parameters that one update has already moved.
inline AuditedPartials AuditPartialsOfTwoRanks(Plan plan) {
  plan.num_processes = 2;
  plan.data_shards = 4;
  plan.audit_every = 1;
  AuditedPartials result;
  const int port = FreePort();
  RunRanks(2, [&](int rank) {
    Plan mine = plan;
    mine.process_id = rank;
    mine.local_rank = rank;  // CUDA: two local ranks on one GPU, with COLLECTIVES=gloo
    auto layout = StateLayout::Create(mine.model);
    ASSERT_TRUE(layout.ok());
    auto rendezvous = Rendezvous::Join(RendezvousTestOptions(port, rank, 2));
    ASSERT_TRUE(rendezvous.ok()) << rendezvous.status().ToString();
    {
      auto backend = mine.platform == Platform::kCpu ? CreateCpuBackend(mine, *layout, **rendezvous)
                                                     : CreateCudaBackend(mine, *layout, **rendezvous);
      ASSERT_TRUE(backend.ok()) << backend.status().ToString();
      std::vector<uint8_t> initial(layout->image_bytes(), 0);
      ASSERT_TRUE(InitParams(*layout, uint32_t(mine.seed), reinterpret_cast<float*>(initial.data())).ok());
      ASSERT_TRUE((*backend)->LoadState(initial.data()).ok());
      ASSERT_TRUE((*backend)->Update(1, 0).ok());
      ASSERT_TRUE((*backend)->ComputePartials(1, 1).ok());
      if (rank == 1) {
        result.owner_copy = Bytes((*backend)->audited_partials()->CopyPartial(0));
      } else {
        result.auditor_copy = Bytes((*backend)->audited_partials()->CopyAuditShard(1, 1, 2));
        result.auditor_own_shard = Bytes((*backend)->audited_partials()->CopyPartial(0));
      }
      ASSERT_TRUE((*backend)->ReduceAndApply().ok());
      auto buffer = (*backend)->AllocateSnapshotBuffer();
      ASSERT_TRUE(buffer.ok());
      auto waiter = (*backend)->BeginSnapshot(buffer->get());
      ASSERT_TRUE(waiter.ok());
      ASSERT_TRUE((*waiter)().ok());
      result.images[rank].assign(buffer->get(), buffer->get() + layout->image_bytes());
    }
    EXPECT_TRUE((*rendezvous)->Close().ok());
  });
  return result;
}

/// What both platforms promise: the recomputed shard is the owner's partial
/// bit for bit (the padded partial: P gradient values and the loss sum,
/// padded to a multiple of the 2 ranks), not equal by accident (another shard,
/// other samples, other bits), and auditing changed neither rank's update.
inline void ExpectTheAuditAgrees(const AuditedPartials& partials, const Plan& plan) {
  const size_t parameters = StateLayout::Create(plan.model)->parameter_count();
  EXPECT_EQ(partials.owner_copy.size(), 4 * ((parameters + 1 + 1) / 2 * 2));
  EXPECT_TRUE(partials.owner_copy == partials.auditor_copy);
  EXPECT_FALSE(partials.auditor_own_shard == partials.owner_copy);
  EXPECT_FALSE(partials.images[0].empty());
  EXPECT_TRUE(partials.images[0] == partials.images[1]);
}

}  // namespace dmlp::testing
