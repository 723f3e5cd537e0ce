// The CPU platform's collectives through shared memory (collectives_shm.h),
// with 3 ranks as threads of this process: each opens rank 0's memfd through
// /proc, as ranks in separate processes do. How the transport is chosen, what
// the collectives deliver, and how a wait ends when a peer does not come.
#include "trainer/cpu/collectives_shm.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/unit/collectives_test_util.h"
#include "tests/unit/rendezvous_test_util.h"
#include "trainer/reduction/ordered_reduction.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {
namespace {

using namespace std::chrono_literals;
using testing::ExpectAllOk;
using testing::FreePort;
using testing::RendezvousTestOptions;
using testing::RunRanks;

constexpr int kRanks = 3;

bool IsShared(const Collectives& collectives) {
  return dynamic_cast<const SharedMemoryCollectives*>(&collectives) != nullptr;
}

// Joins, connects with each rank's transport and host identity, runs
// body(rank, collectives) on every rank; returns each rank's outcome.
std::array<Status, kRanks> WithCollectives(const std::function<Status(int, Collectives&)>& body,
                                           std::array<CpuTransport, kRanks> transports = {},
                                           std::array<std::string, kRanks> hosts = {"h", "h", "h"},
                                           SharedSizes sizes = {}) {
  return testing::WithConnectedRanks<kRanks>(
      [&](int rank, Rendezvous& rendezvous) {
        return ConnectCpuCollectives(rendezvous, transports[rank], sizes, hosts[rank]);
      },
      body);
}

float Value(int round, int from, int to, size_t i) {
  return static_cast<float>(round * 7919 + from * 1000003 + to * 100003 + static_cast<int>(i % 100000));
}

// Alternating all-to-alls and in-place all-gathers, growing and shrinking,
// many rounds: the two outboxes are reused every other operation, so a
// missing wait or a growth that moved an outbox under a reader shows here.
TEST(SharedMemoryCollectivesTest, AllToAllAndAllGatherDeliverEveryBlockAcrossManyRounds) {
  const size_t counts[] = {1, 5, 1000, 300000, 7, 4099, 300001};
  ExpectAllOk(WithCollectives([&](int rank, Collectives& collectives) {
    EXPECT_TRUE(IsShared(collectives));
    EXPECT_EQ(collectives.world_size(), kRanks);
    EXPECT_EQ(collectives.rank(), rank);
    for (int round = 0; round < 60; ++round) {
      const size_t count = counts[round % std::size(counts)];
      std::vector<float> send(count * kRanks), recv(count * kRanks, -1.0f);
      for (int q = 0; q < kRanks; ++q)
        for (size_t i = 0; i < count; ++i) send[q * count + i] = Value(round, rank, q, i);
      DMLP_RETURN_IF_ERROR(collectives.AllToAll(send.data(), recv.data(), count));
      for (int p = 0; p < kRanks; ++p)
        for (size_t i = 0; i < count; ++i)
          if (recv[p * count + i] != Value(round, p, rank, i))
            return Status::Error("TEST", "alltoall round " + std::to_string(round) + " block " + std::to_string(p));
      std::vector<float> gathered(count * kRanks, -1.0f);
      float* own = gathered.data() + static_cast<size_t>(rank) * count;
      for (size_t i = 0; i < count; ++i) own[i] = Value(round, rank, rank, i);
      DMLP_RETURN_IF_ERROR(collectives.AllGather(own, gathered.data(), count));  // in place
      for (int p = 0; p < kRanks; ++p)
        for (size_t i = 0; i < count; ++i)
          if (gathered[p * count + i] != Value(round, p, p, i))
            return Status::Error("TEST", "allgather round " + std::to_string(round) + " block " + std::to_string(p));
    }
    return Status::Ok();
  }));
}

TEST(SharedMemoryCollectivesTest, AllGatherFromASeparateBufferAndGrowth) {
  ExpectAllOk(WithCollectives([](int rank, Collectives& collectives) {
    auto& shared = dynamic_cast<SharedMemoryCollectives&>(collectives);
    EXPECT_EQ(shared.capacity(), 0u);
    for (size_t count : {size_t{3}, size_t{1} << 20, size_t{10}}) {
      std::vector<float> send(count, static_cast<float>(rank + 1)), recv(count * kRanks, 0.0f);
      DMLP_RETURN_IF_ERROR(collectives.AllGather(send.data(), recv.data(), count));
      for (int p = 0; p < kRanks; ++p) EXPECT_EQ(recv[p * count + count - 1], static_cast<float>(p + 1));
    }
    EXPECT_GE(shared.capacity(), (size_t{1} << 20) * sizeof(float));  // grown once, never shrunk
    for (int i = 0; i < 3; ++i) DMLP_RETURN_IF_ERROR(collectives.Barrier());
    return Status::Ok();
  }));
}

// The reduction area: every rank writes its own partials, reads everyone's
// after a barrier, writes its slice of the reduced vector, reads the whole
// after another; the addresses stay put while the outboxes grow.
TEST(SharedMemoryCollectivesTest, TheReductionAreaIsOneArraySharedByTheRanks) {
  constexpr size_t kPartial = 3000, kReduced = 999;  // not page multiples
  ExpectAllOk(WithCollectives(
      [&](int rank, Collectives& collectives) {
        auto& shared = dynamic_cast<SharedMemoryCollectives&>(collectives);
        float* mine = shared.Partials(rank);
        float* reduced = shared.Reduced();
        if (mine == nullptr || reduced == nullptr) return Status::Error("TEST", "no reduction area");
        EXPECT_EQ(shared.Partials(0) + static_cast<size_t>(rank) * kPartial, mine);
        EXPECT_EQ(shared.Partials(0) + kRanks * kPartial, reduced);
        for (int round = 0; round < 20; ++round) {
          for (size_t i = 0; i < kPartial; ++i) mine[i] = Value(round, rank, 0, i);
          DMLP_RETURN_IF_ERROR(collectives.Barrier());
          for (int p = 0; p < kRanks; ++p)
            for (size_t i = 0; i < kPartial; ++i)
              if (shared.Partials(p)[i] != Value(round, p, 0, i)) return Status::Error("TEST", "partial");
          for (size_t i = rank * kReduced / kRanks; i < (rank + 1) * kReduced / kRanks; ++i)
            reduced[i] = Value(round, 9, 9, i);
          DMLP_RETURN_IF_ERROR(collectives.Barrier());
          for (size_t i = 0; i < kReduced; ++i)
            if (reduced[i] != Value(round, 9, 9, i)) return Status::Error("TEST", "reduced");
          DMLP_RETURN_IF_ERROR(collectives.Barrier());  // nobody writes round + 1 while a peer still reads
          std::vector<float> send(10 << round % 12, 1.0f), all(send.size() * kRanks);
          DMLP_RETURN_IF_ERROR(collectives.AllGather(send.data(), all.data(), send.size()));  // grows
        }
        EXPECT_EQ(shared.Partials(rank), mine);
        EXPECT_EQ(shared.Reduced(), reduced);
        return Status::Ok();
      },
      {}, {"h", "h", "h"}, SharedSizes{0, kPartial, kReduced}));
}

class PlainFold final : public ShardFold {
 public:
  Status Fold(const float* partials, size_t shards, size_t stride, size_t length, float* out) override {
    FoldShardsInOrder(partials, shards, stride, length, out);
    return Status::Ok();
  }
};

// The ordered reduction (trainer/reduction/) with this transport in place in
// the reduction area and with Gloo's over TCP: each gives, on every rank, the
// bits of one left fold over all DATA_SHARDS partials.
TEST(SharedMemoryCollectivesTest, TheOrderedReductionGivesOneFoldsBitsInPlaceAndOverTcp) {
  const ReductionLayout layout{37, kRanks, 2};  // 6 shards; padded 39, slices of 13
  const size_t padded = layout.padded_length(), shards = kRanks * layout.shards_per_rank;
  auto shard_value = [](int round, size_t shard, size_t i) {
    return std::ldexp(Value(round, static_cast<int>(shard), 0, i), -static_cast<int>((shard * 7 + i) % 23));
  };
  for (CpuTransport transport : {CpuTransport::kSharedMemory, CpuTransport::kTcp}) {
    ExpectAllOk(WithCollectives(
        [&](int rank, Collectives& collectives) {
          EXPECT_EQ(IsShared(collectives), transport == CpuTransport::kSharedMemory);
          const ReductionArea area = collectives.Area();
          EXPECT_EQ(area.partials != nullptr, transport == CpuTransport::kSharedMemory);
          std::vector<float> own_partials(layout.shards_per_rank * padded), own_reduced(padded);
          const ReductionBuffers buffers{area.partials ? area.partials : own_partials.data(), padded,
                                         area.reduced ? area.reduced : own_reduced.data()};
          PlainFold fold;
          OrderedReduction schedule(Reduction::kOrdered, layout, rank, shards, fold, &collectives);
          for (int round = 0; round < 3; ++round) {
            std::vector<float> all(shards * padded, 0.0f), expected(padded);
            for (size_t shard = 0; shard < shards; ++shard)
              for (size_t i = 0; i <= layout.loss_index(); ++i) all[shard * padded + i] = shard_value(round, shard, i);
            FoldShardsInOrder(all.data(), shards, padded, padded, expected.data());
            std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(rank * layout.shards_per_rank * padded),
                        layout.shards_per_rank * padded, buffers.partials);
            DMLP_ASSIGN_OR_RETURN(const float* sum, schedule.Reduce(buffers, "test"));
            if (std::memcmp(sum, expected.data(), padded * sizeof(float)) != 0)
              return Status::Error("TEST", "other bits than one fold's, round " + std::to_string(round));
            DMLP_RETURN_IF_ERROR(collectives.Barrier());  // nobody writes round + 1 while a peer still reads
          }
          return Status::Ok();
        },
        {transport, transport, transport}, {"h", "h", "h"},
        SharedSizes{0, layout.shards_per_rank * padded, padded, layout.slice_length()}));
  }
}

// Gloo's, so the bits are those of the TCP transport (collectives_gloo_test
// proves them identical on every rank).
TEST(SharedMemoryCollectivesTest, AllReduceSumIsGloosAndIdenticalOnAllRanks) {
  std::array<std::vector<float>, kRanks> results;
  ExpectAllOk(WithCollectives([&](int rank, Collectives& collectives) {
    EXPECT_EQ(collectives.Description().rfind("gloo ", 0), 0u);
    std::vector<float> data(1001);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((rank + 1) * static_cast<int>(i));
    DMLP_RETURN_IF_ERROR(collectives.AllReduceSum(data.data(), data.size()));
    results[rank] = data;
    return Status::Ok();
  }));
  for (size_t i = 0; i < results[0].size(); ++i) ASSERT_EQ(results[0][i], static_cast<float>(6 * i));
  for (int rank = 1; rank < kRanks; ++rank) EXPECT_EQ(results[rank], results[0]);
}

TEST(SharedMemoryCollectivesTest, AnyRanksTcpMakesEveryRankUseGloo) {
  ExpectAllOk(WithCollectives(
      [](int, Collectives& collectives) {
        EXPECT_FALSE(IsShared(collectives));
        std::vector<float> data(4, 1.0f), all(4 * kRanks);
        return collectives.AllGather(data.data(), all.data(), data.size());
      },
      {CpuTransport::kAuto, CpuTransport::kTcp, CpuTransport::kAuto}));
}

TEST(SharedMemoryCollectivesTest, AutoWithRanksOnTwoHostsUsesGloo) {
  ExpectAllOk(WithCollectives(
      [](int, Collectives& collectives) {
        EXPECT_FALSE(IsShared(collectives));
        return collectives.Barrier();
      },
      {}, {"host a", "host a", "host b"}));
}

TEST(SharedMemoryCollectivesTest, ShmWithRanksOnTwoHostsIsAnErrorOnEveryRank) {
  auto results = WithCollectives([](int, Collectives&) { return Status::Ok(); },
                                 {CpuTransport::kSharedMemory, CpuTransport::kAuto, CpuTransport::kSharedMemory},
                                 {"host a", "host a", "host b"});
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(results[rank].code(), "COLLECTIVE_ERROR") << results[rank].ToString();
    EXPECT_NE(results[rank].detail().find("DMLP_CPU_TRANSPORT=shm needs every rank on one host, and rank 2 "
                                          "runs elsewhere (host b; rank 0: host a)"),
              std::string::npos)
        << results[rank].ToString();
  }
}

TEST(SharedMemoryCollectivesTest, TcpAndShmTogetherIsAnError) {
  auto results = WithCollectives([](int, Collectives&) { return Status::Ok(); },
                                 {CpuTransport::kTcp, CpuTransport::kSharedMemory, CpuTransport::kAuto});
  for (int rank = 0; rank < kRanks; ++rank)
    EXPECT_EQ(results[rank].ToString(), "COLLECTIVE_ERROR: connect: ranks disagree on DMLP_CPU_TRANSPORT (tcp "
                                        "and shm) (rank " + std::to_string(rank) + ")");
}

TEST(SharedMemoryCollectivesTest, LocalHostIdentityNamesTheKernelHostAndNamespaces) {
  const std::string identity = LocalHostIdentity();
  EXPECT_EQ(identity.rfind("boot ", 0), 0u) << identity;
  EXPECT_NE(identity.find(" host "), std::string::npos) << identity;
  EXPECT_NE(identity.find(" pid-ns "), std::string::npos) << identity;
  EXPECT_NE(identity.find(" ipc-ns "), std::string::npos) << identity;
  EXPECT_EQ(identity.find("?"), std::string::npos) << identity;
  EXPECT_EQ(identity, LocalHostIdentity());
}

// A segment larger than the file size limit (ulimit -f; memfds obey it) is
// never made: auto falls back to TCP; with shm rank 0, which could not make
// it, says why, and the others wait until it leaves (abandons the rendezvous,
// as dmlp-train does after reporting), then say PEER_LOST: rank 0's error is
// the first, the one dmlp-launch reports.
TEST(SharedMemoryCollectivesTest, ASegmentPastTheFileSizeLimitIsRefusedAtConnect) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = 1 << 20;  // process-wide: every rank thread sees it
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &low), 0);
  for (CpuTransport transport : {CpuTransport::kAuto, CpuTransport::kSharedMemory}) {
    const int port = FreePort();
    std::array<Status, kRanks> results;
    std::array<bool, kRanks> shared{};
    RunRanks(kRanks, [&](int rank) {
      auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, kRanks));
      ASSERT_TRUE(joined.ok()) << joined.status().ToString();
      auto collectives = ConnectCpuCollectives(**joined, transport, {8 << 20}, "h");
      results[rank] = collectives.status();
      if (!collectives.ok()) return (*joined)->Abandon();
      shared[rank] = IsShared(**collectives);
      ASSERT_TRUE((*joined)->Barrier("connected").ok());
    });
    for (int rank = 0; rank < kRanks; ++rank) {
      if (transport == CpuTransport::kAuto) {
        EXPECT_TRUE(results[rank].ok()) << results[rank].ToString();
        EXPECT_FALSE(shared[rank]);
      } else if (rank == 0) {
        EXPECT_EQ(results[rank].ToString(),
                  "COLLECTIVE_ERROR: connect: DMLP_CPU_TRANSPORT=shm: rank 0 cannot share memory: the shared "
                  "segment's 50335744 bytes exceed RLIMIT_FSIZE (ulimit -f) of 1048576 bytes (rank 0)");
      } else {
        EXPECT_EQ(results[rank].code(), "PEER_LOST") << results[rank].ToString();
      }
    }
  }
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
}

// A peer that ends (its Gloo connections close, as when its process exits)
// while the others wait for it: they fail at once instead of waiting forever.
TEST(SharedMemoryCollectivesTest, PeerThatLeavesDuringAnAllGatherGivesCollectiveError) {
  const int port = FreePort();
  std::array<Status, kRanks> results;
  std::array<std::chrono::steady_clock::duration, kRanks> waited{};
  RunRanks(kRanks, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, kRanks));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    auto collectives = ConnectCpuCollectives(**joined, CpuTransport::kSharedMemory, {4096}, "h");
    ASSERT_TRUE(collectives.ok()) << collectives.status().ToString();
    ASSERT_TRUE((*joined)->Barrier("connected").ok());
    if (rank == 2) {
      std::this_thread::sleep_for(200ms);  // the others are waiting by now
      collectives.value().reset();
      return;
    }
    std::vector<float> data(100, 1.0f), all(100 * kRanks);
    const auto started = std::chrono::steady_clock::now();
    results[rank] = (*collectives)->AllGather(data.data(), all.data(), data.size());
    waited[rank] = std::chrono::steady_clock::now() - started;
    // Broken from now on, with the same error.
    EXPECT_EQ((*collectives)->Barrier().ToString(), results[rank].ToString());
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(results[rank].ToString(), "COLLECTIVE_ERROR: allgather: rank 2 is gone (its connection closed) (rank " +
                                            std::to_string(rank) + ")");
    EXPECT_LT(waited[rank], 5s);
  }
}

// A peer loss declared while a rank waits (the heartbeat monitor does this)
// ends the wait, naming the loss; a frozen peer is otherwise waited for.
TEST(SharedMemoryCollectivesTest, DeclaredPeerLossEndsAWait) {
  const int port = FreePort();
  std::array<Status, kRanks> results;
  RunRanks(kRanks, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, kRanks));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    auto collectives = ConnectCpuCollectives(**joined, CpuTransport::kAuto, {4096}, "h");
    ASSERT_TRUE(collectives.ok()) << collectives.status().ToString();
    ASSERT_TRUE(IsShared(**collectives));
    ASSERT_TRUE((*joined)->Barrier("connected").ok());
    if (rank == 0) {
      std::thread declare([&] {
        std::this_thread::sleep_for(300ms);  // longer than a wait slice: rank 0 sleeps on the futex
        (*joined)->peer_loss()->Declare(Status::Error("PEER_LOST", "rank 2: silent"));
      });
      results[rank] = (*collectives)->Barrier();
      declare.join();
    }
    ASSERT_TRUE((*joined)->Barrier("declared").ok());
  });
  EXPECT_EQ(results[0].ToString(),
            "COLLECTIVE_ERROR: barrier: a peer was lost: PEER_LOST: rank 2: silent (rank 0)");
}

}  // namespace
}  // namespace dmlp
