// Rendezvous::OpenLane: a second request connection of a joined rank. Each
// connection carries one request at a time, so two threads of one rank that
// wait on the coordinator at once (the digest pipeline's divergence gather and
// the step loop's shard-audit GET) deadlock on one connection across ranks;
// on two they do not. A lane is no voice of its rank: closing it is no
// departure, and only a joined rank of this job may open one.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/rendezvous_test_util.h"
#include "trainer/rendezvous/rendezvous.h"
#include "trainer/rendezvous/rendezvous_wire.h"

namespace dmlp {
namespace {

using testing::ConnectTo;
using testing::FreePort;
using testing::ReadToEnd;
using testing::RendezvousTestOptions;
using testing::RunRanks;

TEST(RendezvousLaneWireTest, LaneRoundTrips) {
  std::string frame = EncodeMessage(Message{MessageType::kLane, 3, 0, {}, {}, "job-7"});
  auto taken = TakeMessage(frame, FrameLimits{});
  ASSERT_TRUE(taken.ok() && taken.value()) << taken.status().ToString();
  EXPECT_EQ(taken.value()->type, MessageType::kLane);
  EXPECT_EQ(taken.value()->rank, 3u);
  EXPECT_EQ(taken.value()->job_id, "job-7");
}

// The trainer's pattern (the digest pipeline's sink gathers every step's
// digests while the step loop exchanges a shard audit), round after round:
//   rank 0: sink gathers at once;  loop sets "audit/r" a moment later
//   rank 1: loop gets "audit/r" at once;  sink gathers a moment later
// On one connection per rank, rank 0's SET queues behind its own GATHER, which
// waits for rank 1's, which queues behind rank 1's GET, which waits for rank
// 0's SET: every rank times out. With the sink on a lane, each round completes.
TEST(RendezvousLaneTest, AGatherOnALaneNeverHoldsUpTheStepLoopsRequests) {
  const int port = FreePort();
  std::array<Status, 2> results;
  RunRanks(2, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 2, 3));
    if (!joined.ok()) return void(results[rank] = joined.status());
    auto lane = (*joined)->OpenLane();
    if (!lane.ok()) return void(results[rank] = lane.status());
    const auto moment = std::chrono::milliseconds(20);
    Status sink_status, loop_status;
    for (int round = 0; round < 10 && sink_status.ok() && loop_status.ok(); ++round) {
      const std::string key = "audit/" + std::to_string(round);
      std::thread sink([&] {
        if (rank == 1) std::this_thread::sleep_for(moment);
        auto values = (*lane)->AllGather("step-digest/" + std::to_string(round), std::to_string(rank));
        sink_status = values.status();
        if (values.ok() && *values != std::vector<std::string>{"0", "1"})
          sink_status = Status::Error("WRONG", "gathered values");
      });
      if (rank == 0) {
        std::this_thread::sleep_for(moment);
        loop_status = (*joined)->Set(key, "from 0");
      } else {
        auto value = (*joined)->Get(key);
        loop_status = value.status();
        if (value.ok() && *value != "from 0") loop_status = Status::Error("WRONG", *value);
      }
      sink.join();
    }
    results[rank] = !sink_status.ok() ? sink_status : loop_status;
    if (results[rank].ok()) results[rank] = (*lane)->Close();
    if (results[rank].ok()) results[rank] = (*joined)->Close();
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(RendezvousLaneTest, ClosingALaneIsNoDepartureOfItsRank) {
  const int port = FreePort();
  std::array<Status, 2> results;
  std::latch lane_closed(2);
  RunRanks(2, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 2, 5));
    if (!joined.ok()) return void(results[rank] = joined.status());
    {
      auto lane = (*joined)->OpenLane();
      if (!lane.ok()) return void(results[rank] = lane.status());
      if (rank == 1) {
        // Says goodbye on the lane, and a second lane just drops.
        results[rank] = (*lane)->Close();
        auto dropped = (*joined)->OpenLane();
        if (!dropped.ok()) return void(results[rank] = dropped.status());
        (*dropped)->Abandon();
      }
    }
    lane_closed.arrive_and_wait();
    // The job goes on: both ranks still meet, neither sees PEER_LOST.
    Status barrier = (*joined)->Barrier("after-the-lanes");
    if (!barrier.ok()) return void(results[rank] = barrier);
    results[rank] = (*joined)->Close();
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(RendezvousLaneTest, AbandoningTheRendezvousEndsAWaitOnItsLaneAtOnce) {
  const int port = FreePort();
  auto joined = Rendezvous::Join(RendezvousTestOptions(port, 0, 1, 30));
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  auto lane = (*joined)->OpenLane();
  ASSERT_TRUE(lane.ok()) << lane.status().ToString();
  Status waited;
  std::thread waiter([&] { waited = (*lane)->Get("never-set").status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto abandoned = std::chrono::steady_clock::now();
  (*joined)->Abandon();
  waiter.join();
  EXPECT_FALSE(waited.ok());  // at once, not after the 30 s heartbeat
  EXPECT_LT(std::chrono::steady_clock::now() - abandoned, std::chrono::seconds(10));
}

// A LANE by hand, then everything the coordinator answers until it closes.
std::string LaneReply(int port, uint32_t rank, const std::string& job_id) {
  const int fd = ConnectTo(port);
  if (fd < 0) return "no coordinator";
  const std::string frame = EncodeMessage(Message{MessageType::kLane, rank, 0, {}, {}, job_id});
  if (write(fd, frame.data(), frame.size()) != static_cast<ssize_t>(frame.size())) return "write failed";
  shutdown(fd, SHUT_WR);  // the coordinator answers, then our end of file closes it
  std::string reply = ReadToEnd(fd);
  close(fd);
  return reply;
}

TEST(RendezvousLaneTest, OnlyAJoinedRankOfThisJobMayOpenALane) {
  const int port = FreePort();
  std::array<Status, 2> results;
  std::array<std::string, 3> replies;
  std::latch joined_all(2), checked(2);
  RunRanks(2, [&](int rank) {
    RendezvousOptions options = RendezvousTestOptions(port, rank, 2, 5);
    options.job_id = "job-a";
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (rank == 0) {
      // Before the join is complete: no rank has joined yet as far as a lane goes.
      std::thread early([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        replies[0] = LaneReply(port, 0, "job-a");
      });
      auto joined = Rendezvous::Join(options);
      early.join();
      if (!joined.ok()) return void(results[rank] = joined.status());
      joined_all.arrive_and_wait();
      replies[1] = LaneReply(port, 1, "job-b");  // another job's rank
      replies[2] = LaneReply(port, 5, "job-a");  // no such rank
      checked.arrive_and_wait();
      // None of it was a departure: the job meets and ends as usual.
      results[rank] = (*joined)->Barrier("after-strangers");
      if (results[rank].ok()) results[rank] = (*joined)->Close();
      return;
    }
    auto joined = Rendezvous::Join(options);
    if (!joined.ok()) return void(results[rank] = joined.status());
    joined_all.arrive_and_wait();
    checked.arrive_and_wait();
    results[rank] = (*joined)->Barrier("after-strangers");
    if (results[rank].ok()) results[rank] = (*joined)->Close();
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_NE(replies[0].find("PROTOCOL_ERROR"), std::string::npos) << replies[0];
  EXPECT_NE(replies[0].find("LANE from rank 0, which is not a joined rank"), std::string::npos);
  EXPECT_NE(replies[1].find("JOB_MISMATCH"), std::string::npos) << replies[1];
  EXPECT_NE(replies[2].find("LANE from rank 5, which is not a joined rank"), std::string::npos);
}

}  // namespace
}  // namespace dmlp
