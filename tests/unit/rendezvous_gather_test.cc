// Rendezvous::AllGather: every rank's value by rank, rounds that reuse one
// name, the coordinator forgetting a completed round, and a peer lost
// mid-gather (PEER_LOST at once, never a hang). Ranks are threads, or a forked
// process where a rank must really die.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <latch>
#include <string>
#include <vector>

#include "tests/unit/rendezvous_test_util.h"
#include "trainer/rendezvous/rendezvous.h"
#include "trainer/rendezvous/rendezvous_wire.h"

namespace dmlp {
namespace {

using testing::FreePort;
using testing::RendezvousTestOptions;
using testing::RunRanks;

TEST(RendezvousGatherWireTest, GatherAndItsReplyRoundTrip) {
  std::string frame = EncodeMessage(Message{MessageType::kGather, 0, 0, "step/7", "abc"});
  auto taken = TakeMessage(frame, FrameLimits{kMaxControlBytes, MaxValueBytes(3)});
  ASSERT_TRUE(taken.ok() && taken.value()) << taken.status().ToString();
  EXPECT_EQ(taken.value()->type, MessageType::kGather);
  EXPECT_EQ(taken.value()->name, "step/7");
  EXPECT_EQ(taken.value()->payload, "abc");
  auto values = DecodeGathered(EncodeGathered({"a", "", std::string("\0z", 2)}), 3);
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  EXPECT_EQ(*values, (std::vector<std::string>{"a", "", std::string("\0z", 2)}));
  EXPECT_EQ(DecodeGathered(EncodeGathered({"a", "b"}), 3).status().code(), "PROTOCOL_ERROR");
  EXPECT_EQ(DecodeGathered(EncodeGathered({"a"}) + "x", 1).status().code(), "PROTOCOL_ERROR");
  // A value over the bound is refused by the decoder, not buffered.
  std::string big = EncodeMessage(Message{MessageType::kGather, 0, 0, "n", std::string(kMaxGatherValueBytes + 1, 'x')});
  EXPECT_EQ(TakeMessage(big, FrameLimits{kMaxControlBytes, MaxValueBytes(3)}).status().code(), "PROTOCOL_ERROR");
  // The largest reply (every rank's largest value) fits a VALUE frame.
  std::vector<std::string> largest(64, std::string(kMaxGatherValueBytes, 'x'));
  const FrameLimits limits{kMaxControlBytes, MaxValueBytes(64)};
  const uint32_t value_bound = limits.MaxBody(static_cast<uint8_t>(MessageType::kValue));
  EXPECT_LE(EncodeGathered(largest).size() + 5, value_bound);  // type byte and payload length
}

TEST(RendezvousGatherTest, EveryRankGetsEveryValueInRankOrderRoundAfterRound) {
  const int port = FreePort();
  std::array<Status, 3> results;
  std::array<int, 3> rounds_right{};
  RunRanks(3, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 3));
    if (!joined.ok()) return void(results[rank] = joined.status());
    // One name for every round: a round the coordinator kept would answer the
    // next one with stale values (or at once); rank 1 gives an empty value.
    for (int round = 0; round < 200; ++round) {
      const std::string mine = rank == 1 ? "" : "r" + std::to_string(rank) + "-" + std::to_string(round);
      auto values = (*joined)->AllGather("digest", mine);
      if (!values.ok()) return void(results[rank] = values.status());
      const std::vector<std::string> expected = {"r0-" + std::to_string(round), "",
                                                 "r2-" + std::to_string(round)};
      if (*values == expected) ++rounds_right[rank];
    }
    results[rank] = (*joined)->Close();
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(rounds_right, (std::array<int, 3>{200, 200, 200}));
}

TEST(RendezvousGatherTest, ValueOverTheBoundIsRefusedBeforeSending) {
  const int port = FreePort();
  std::array<Status, 1> results;
  RunRanks(1, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 1));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    results[0] = (*joined)->AllGather("n", std::string(kMaxGatherValueBytes + 1, 'x')).status();
    auto alone = (*joined)->AllGather("n", "only");  // one rank: its own value at once
    EXPECT_TRUE(alone.ok() && *alone == std::vector<std::string>{"only"});
    EXPECT_TRUE((*joined)->Close().ok());
  });
  EXPECT_EQ(results[0].code(), "INVALID_ARGUMENT");
}

TEST(RendezvousGatherTest, TimeoutNamesTheRanksThatDidNotGive) {
  const int port = FreePort();
  std::array<Status, 2> results, closed;
  std::latch timed_out(2);
  RunRanks(2, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 2, 1));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    if (rank == 0) results[0] = (*joined)->AllGather("lonely", "x").status();  // rank 1 never gives
    timed_out.arrive_and_wait();
    closed[rank] = (*joined)->Close();
  });
  EXPECT_EQ(results[0].ToString(), "RENDEZVOUS_TIMEOUT: rank 0: waited 1s for gather 'lonely' (missing ranks 1)");
}

// Rank 2 is a real process: it gives its value to the first round, then dies without
// a goodbye while ranks 0 and 1 wait in the second. Waiting out the 30 s heartbeat
// would be the bug (and a RENDEZVOUS_TIMEOUT, not PEER_LOST).
TEST(RendezvousGatherTest, PeerLostMidGatherIsReportedPromptly) {
  const int port = FreePort();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, 2, 3, 30));
    if (!joined.ok()) _exit(1);
    auto first = (*joined)->AllGather("round", "two");
    _exit(first.ok() ? 0 : 2);  // no Close(): the connection just drops
  }
  std::array<Status, 2> first, second;
  RunRanks(2, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 3, 30));
    if (!joined.ok()) return void(first[rank] = joined.status());
    auto values = (*joined)->AllGather("round", std::to_string(rank));
    first[rank] = values.status();
    if (values.ok()) {
      EXPECT_EQ(*values, (std::vector<std::string>{"0", "1", "two"}));
    }
    second[rank] = (*joined)->AllGather("round", std::to_string(rank)).status();
  });
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  for (const Status& status : first) EXPECT_TRUE(status.ok()) << status.ToString();
  for (const Status& status : second)
    EXPECT_EQ(status.ToString(), "PEER_LOST: rank 2: connection closed without goodbye");
}

}  // namespace
}  // namespace dmlp
