// Gloo collectives with 3 ranks as threads on 127.0.0.1, connected through
// our coordinator (GlooStore).
#include "trainer/cpu/collectives_gloo.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/unit/collectives_test_util.h"
#include "tests/unit/rendezvous_test_util.h"

namespace dmlp {
namespace {

using namespace std::chrono_literals;
using testing::ExpectAllOk;
using testing::FreePort;
using testing::RendezvousTestOptions;
using testing::RunRanks;

constexpr int kRanks = 3;

// Joins, connects Gloo, runs body(rank, collectives) on every rank; returns each rank's outcome.
std::array<Status, kRanks> WithCollectives(
    const std::function<Status(int, Collectives&)>& body, int timeout_seconds = 10) {
  return testing::WithConnectedRanks<kRanks>(
      [](int, Rendezvous& rendezvous) -> Result<std::unique_ptr<Collectives>> {
        DMLP_ASSIGN_OR_RETURN(std::unique_ptr<GlooCollectives> gloo, GlooCollectives::Connect(rendezvous));
        return std::unique_ptr<Collectives>(std::move(gloo));
      },
      body, timeout_seconds);
}

TEST(GlooCollectivesTest, AllToAllSendsBlockQToRankQ) {
  for (size_t count : {size_t{1}, size_t{5}, size_t{100000}}) {
    ExpectAllOk(WithCollectives([count](int rank, Collectives& collectives) {
      EXPECT_EQ(collectives.world_size(), kRanks);
      std::vector<float> send(count * kRanks), recv(count * kRanks, -1.0f);
      for (int q = 0; q < kRanks; ++q) {
        for (size_t i = 0; i < count; ++i) send[q * count + i] = static_cast<float>(rank * 1000000 + q * 100000 + i);
      }
      DMLP_RETURN_IF_ERROR(collectives.AllToAll(send.data(), recv.data(), count));
      for (int p = 0; p < kRanks; ++p) {
        for (size_t i = 0; i < count; ++i) {
          EXPECT_EQ(recv[p * count + i], static_cast<float>(p * 1000000 + rank * 100000 + i)) << p << " " << i;
        }
      }
      return Status::Ok();
    }));
  }
}

TEST(GlooCollectivesTest, AllGatherPutsRankPAtBlockP) {
  for (size_t count : {size_t{1}, size_t{7}, size_t{100000}}) {
    ExpectAllOk(WithCollectives([count](int rank, Collectives& collectives) {
      std::vector<float> send(count), recv(count * kRanks, -1.0f);
      for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(rank * 1000000 + i);
      DMLP_RETURN_IF_ERROR(collectives.AllGather(send.data(), recv.data(), count));
      for (int p = 0; p < kRanks; ++p) {
        for (size_t i = 0; i < count; ++i) EXPECT_EQ(recv[p * count + i], static_cast<float>(p * 1000000 + i));
      }
      return Status::Ok();
    }));
  }
}

// In place (send is this rank's own block of recv), back to back with an
// all-to-all on the same pairs, several times: no message lands in the wrong
// collective or the wrong block.
TEST(GlooCollectivesTest, AllGatherInPlaceBetweenAllToAlls) {
  const size_t count = 4099;
  ExpectAllOk(WithCollectives([count](int rank, Collectives& collectives) {
    for (int round = 0; round < 4; ++round) {
      std::vector<float> send(count * kRanks), exchanged(count * kRanks);
      for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(round * 1000 + rank * 100 + i % 97);
      DMLP_RETURN_IF_ERROR(collectives.AllToAll(send.data(), exchanged.data(), count));
      std::vector<float> gathered(count * kRanks, -1.0f);
      float* own = gathered.data() + static_cast<size_t>(rank) * count;
      for (size_t i = 0; i < count; ++i) own[i] = static_cast<float>(round * 7 + rank * 1000000 + i);
      DMLP_RETURN_IF_ERROR(collectives.AllGather(own, gathered.data(), count));
      for (int p = 0; p < kRanks; ++p) {
        for (size_t i = 0; i < count; ++i) {
          EXPECT_EQ(gathered[p * count + i], static_cast<float>(round * 7 + p * 1000000 + i));
          EXPECT_EQ(exchanged[p * count + i], static_cast<float>(round * 1000 + p * 100 + (rank * count + i) % 97));
        }
      }
    }
    return Status::Ok();
  }));
}

// Every rank's result, to compare bits across ranks after the threads joined.
using Gathered = std::array<std::vector<float>, kRanks>;

TEST(GlooCollectivesTest, AllReduceSumIsExactForIntegersAndIdenticalOnAllRanks) {
  for (size_t count : {size_t{1}, size_t{2}, size_t{1001}, size_t{300000}}) {
    Gathered results;
    ExpectAllOk(WithCollectives([&](int rank, Collectives& collectives) {
      std::vector<float> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 1000));
      DMLP_RETURN_IF_ERROR(collectives.AllReduceSum(data.data(), count));
      results[rank] = data;
      return Status::Ok();
    }));
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(results[0][i], static_cast<float>(6 * (i % 1000))) << i;
    for (int rank = 1; rank < kRanks; ++rank) EXPECT_EQ(results[rank], results[0]) << "count " << count;
  }
}

// The sum of {1e8, 1, -1e8} in float depends on the order: (1e8 + 1) - 1e8 = 0
// but (1e8 - 1e8) + 1 = 1. An allreduce where each rank adds in its own order
// (Gloo's legacy AllreduceRing) gives different bits on different ranks here.
TEST(GlooCollectivesTest, AllReduceSumOfOrderDependentValuesIsBitIdenticalOnAllRanks) {
  const size_t count = 30000;
  const std::array<float, 3> kValues = {1e8f, 1.0f, -1e8f};
  Gathered results;
  ExpectAllOk(WithCollectives([&](int rank, Collectives& collectives) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = kValues[(rank + i) % 3] * (1.0f + static_cast<float>(i % 7) / 8);
    DMLP_RETURN_IF_ERROR(collectives.AllReduceSum(data.data(), count));
    results[rank] = data;
    return Status::Ok();
  }));
  for (int rank = 1; rank < kRanks; ++rank) {
    ASSERT_EQ(results[rank].size(), count);
    EXPECT_EQ(std::memcmp(results[rank].data(), results[0].data(), count * sizeof(float)), 0) << "rank " << rank;
  }
  // And each element is one of the sums some order of addition gives.
  for (size_t i = 0; i < count; ++i) {
    float scale = 1.0f + static_cast<float>(i % 7) / 8;
    float big = 1e8f * scale, one = 1.0f * scale;
    float candidates[] = {(big + one) - big, (big - big) + one, (one - big) + big};
    bool found = false;
    for (float candidate : candidates) found = found || std::memcmp(&candidate, &results[0][i], sizeof(float)) == 0;
    ASSERT_TRUE(found) << i << ": " << results[0][i];
  }
}

TEST(GlooCollectivesTest, BarrierAndDescription) {
  ExpectAllOk(WithCollectives([](int, Collectives& collectives) {
    EXPECT_EQ(collectives.Description().rfind("gloo ", 0), 0u);
    for (int i = 0; i < 3; ++i) DMLP_RETURN_IF_ERROR(collectives.Barrier());
    return Status::Ok();
  }));
}

// A peer that is slow (or frozen) for longer than the heartbeat timeout must
// not fail a collective: only waits on the rendezvous are bounded.
TEST(GlooCollectivesTest, PeerSlowerThanTheHeartbeatDoesNotFailACollective) {
  Gathered results;
  ExpectAllOk(WithCollectives(
      [&](int rank, Collectives& collectives) {
        if (rank == 2) std::this_thread::sleep_for(2500ms);
        std::vector<float> data(10, static_cast<float>(rank));
        DMLP_RETURN_IF_ERROR(collectives.AllReduceSum(data.data(), data.size()));
        results[rank] = data;
        return Status::Ok();
      },
      /*timeout_seconds=*/1));
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_EQ(results[rank], std::vector<float>(10, 3.0f));
}

TEST(GlooCollectivesTest, PeerThatLeavesDuringAnAllReduceGivesCollectiveError) {
  const int port = FreePort();
  std::array<Status, kRanks> results;
  RunRanks(kRanks, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, kRanks));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    auto collectives = GlooCollectives::Connect(**joined);
    ASSERT_TRUE(collectives.ok()) << collectives.status().ToString();
    ASSERT_TRUE((*joined)->Barrier("connected").ok());
    if (rank == 2) {
      collectives.value().reset();  // closes its TCP connections, as a dying process would
      return;
    }
    std::vector<float> data(1000, 1.0f);
    results[rank] = (*collectives)->AllReduceSum(data.data(), data.size());
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(results[rank].code(), "COLLECTIVE_ERROR") << results[rank].ToString();
    EXPECT_NE(results[rank].detail().rfind("allreduce: ", 0), std::string::npos) << results[rank].ToString();
    EXPECT_NE(results[rank].detail().find("(rank " + std::to_string(rank) + ")"), std::string::npos);
  }
}

// A rank that leaves instead of connecting: every other rank gets PEER_LOST
// from the rendezvous barrier before any Gloo socket exists (a Gloo pair torn
// down mid-handshake can abort the peer's process from Gloo's own thread).
TEST(GlooCollectivesTest, RankThatNeverConnectsIsPeerLostOnEveryRankBeforeGloo) {
  for (int attempt = 0; attempt < 20; ++attempt) {  // the abort was a race: try it often
    const int port = FreePort();
    std::array<Status, kRanks> results;
    RunRanks(kRanks, [&](int rank) {
      auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, kRanks, 5));
      ASSERT_TRUE(joined.ok()) << joined.status().ToString();
      if (rank == 2) {
        results[2] = (*joined)->Close();  // leaves instead of connecting Gloo
        return;
      }
      results[rank] = GlooCollectives::Connect(**joined).status();
    });
    EXPECT_TRUE(results[2].ok()) << results[2].ToString();
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(results[rank].ToString(), "PEER_LOST: rank 2: left the rendezvous") << "rank " << rank;
    }
  }
}

// Was COLLECTIVE_ERROR "Unable to find address for: 127.0.0.1": Gloo's address
// lookup swallows EMFILE (seen in CI, e2e.trainer.limits.DescriptorLimit). In
// a forked child, because the descriptor limit is the whole process's: every
// rank joins, then the limit leaves no number free, then every rank connects.
TEST(GlooCollectivesTest, OutOfDescriptorsWhileConnectingIsNamed) {
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizers' runtime needs descriptors of its own (a pipe to probe
  // memory before UBSan reads a vptr): with none left it reports false errors.
  GTEST_SKIP() << "runs in the build without sanitizers: this test leaves the process no descriptor";
#endif
  const int port = FreePort();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(60);
    std::array<std::unique_ptr<Rendezvous>, kRanks> joined;
    std::array<Status, kRanks> results;
    RunRanks(kRanks, [&](int rank) {
      auto join = Rendezvous::Join(RendezvousTestOptions(port, rank, kRanks, 10));
      if (join.ok()) joined[rank] = std::move(*join);
      results[rank] = join.status();
    });
    for (const Status& status : results) {
      if (!status.ok()) _exit(3);
    }
    // Fill every hole below the highest open descriptor, then allow no more.
    int highest = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      highest = std::max(highest, std::stoi(entry.path().filename().string()));
    }
    for (int fd = open("/dev/null", O_RDONLY | O_CLOEXEC); fd >= 0 && fd <= highest;
         fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) {
    }
    const rlim_t limit = static_cast<rlim_t>(highest + 1);
    struct rlimit none = {limit, limit};
    if (setrlimit(RLIMIT_NOFILE, &none) != 0) _exit(4);
    RunRanks(kRanks, [&](int rank) { results[rank] = GlooCollectives::Connect(*joined[rank]).status(); });
    const std::string expected = "too many open files (RLIMIT_NOFILE=" + std::to_string(limit) + ")";
    bool named = true;
    for (const Status& status : results) {
      if (status.code() != "RESOURCE_EXHAUSTED" || status.detail().find(expected) == std::string::npos) {
        fprintf(stderr, "got %s\n", status.ToString().c_str());
        named = false;
      }
    }
    _exit(named ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace dmlp
