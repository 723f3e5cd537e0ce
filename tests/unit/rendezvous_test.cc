// Rendezvous: the freeze-tolerant wait, the frame format, and the coordinator
// with 3 ranks as threads (or forked processes where a rank must really die or
// really be stopped) on 127.0.0.1.
#include "trainer/rendezvous/rendezvous.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <latch>
#include <thread>

#include "tests/unit/rendezvous_test_util.h"
#include "trainer/rendezvous/peer_wait.h"
#include "trainer/rendezvous/rendezvous_server.h"
#include "trainer/rendezvous/rendezvous_wire.h"

namespace dmlp {
namespace {

using namespace std::chrono_literals;
using testing::FreePort;
using testing::ManualClock;
using testing::RendezvousTestOptions;
using testing::RunRanks;

// ---- PeerWait -------------------------------------------------------------

TEST(PeerWaitTest, SilentPeerExpiresAfterBudgetOfRunningTime) {
  ManualClock clock;
  PeerWait wait(1000ms, clock);
  int slices = 0;
  while (!wait.Expired()) {
    int slice = wait.BeginSlice();
    ASSERT_GT(slice, 0);
    clock.Advance(std::chrono::milliseconds(slice));  // poll() ran its full slice: nothing arrived
    wait.EndSlice();
    ASSERT_LT(++slices, 100);
  }
  EXPECT_EQ(slices, 5);  // 5 x 200 ms
  EXPECT_EQ(wait.counted(), 1000ms);
  EXPECT_EQ(wait.BeginSlice(), 0);
}

TEST(PeerWaitTest, FreezeOfTenTimesTheBudgetDoesNotExpire) {
  ManualClock clock;
  PeerWait wait(1000ms, clock);
  int slice = wait.BeginSlice();
  clock.Advance(10s);  // SIGSTOP during poll(): the process did not run for 10 x budget
  wait.EndSlice();
  EXPECT_FALSE(wait.Expired());
  EXPECT_EQ(wait.counted(), std::chrono::milliseconds(slice));
  EXPECT_EQ(wait.freezes_seen(), 1);
  // A real silence afterwards still times out, after the rest of the budget.
  int slices = 0;
  while (!wait.Expired()) {
    clock.Advance(std::chrono::milliseconds(wait.BeginSlice()));
    wait.EndSlice();
    ++slices;
  }
  EXPECT_EQ(slices, 4);
}

TEST(PeerWaitTest, FreezeBetweenSlicesIsNotCountedEither) {
  ManualClock clock;
  PeerWait wait(1000ms, clock);
  clock.Advance(50ms);  // work before the first slice
  wait.BeginSlice();
  clock.Advance(200ms);
  wait.EndSlice();
  clock.Advance(30s);  // stopped while handling a frame, outside poll()
  wait.BeginSlice();
  clock.Advance(200ms);
  wait.EndSlice();
  EXPECT_FALSE(wait.Expired());
  EXPECT_EQ(wait.freezes_seen(), 1);
  EXPECT_EQ(wait.counted(), 250ms + 200ms);
}

TEST(PeerWaitTest, SlowSliceOnALoadedMachineCountsInFull) {
  ManualClock clock;
  PeerWait wait(1000ms, clock);
  wait.BeginSlice();
  clock.Advance(900ms);  // late wake-up, but well under the freeze threshold
  wait.EndSlice();
  EXPECT_EQ(wait.counted(), 900ms);
  EXPECT_EQ(wait.freezes_seen(), 0);
}

TEST(PeerWaitTest, LastSliceIsClampedToTheRemainingBudget) {
  ManualClock clock;
  PeerWait wait(250ms, clock);
  EXPECT_EQ(wait.BeginSlice(), 200);
  clock.Advance(200ms);
  wait.EndSlice();
  EXPECT_EQ(wait.BeginSlice(), 50);
}

// ---- frames ---------------------------------------------------------------

// What a rank of a 4-rank job accepts (values included).
FrameLimits RankLimits() { return FrameLimits{kMaxControlBytes, MaxValueBytes(4)}; }

Message RoundTrip(const Message& message) {
  std::string buffer = EncodeMessage(message);
  Result<std::optional<Message>> taken = TakeMessage(buffer, RankLimits());
  EXPECT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_TRUE(buffer.empty());
  return taken.ok() && taken.value() ? *taken.value() : Message{};
}

TEST(RendezvousWireTest, EveryMessageTypeRoundTrips) {
  Message hello = RoundTrip(Message{MessageType::kHello, 2, 3, {}, std::string("A=1\0B", 5), "job-7"});
  EXPECT_EQ(hello.type, MessageType::kHello);
  EXPECT_EQ(hello.rank, 2u);
  EXPECT_EQ(hello.world_size, 3u);
  EXPECT_EQ(hello.payload, std::string("A=1\0B", 5));
  EXPECT_EQ(hello.job_id, "job-7");
  Message watch = RoundTrip(Message{MessageType::kWatch, 1, 0, {}, {}, "job-7"});
  EXPECT_EQ(watch.rank, 1u);
  EXPECT_EQ(watch.job_id, "job-7");
  Message set = RoundTrip(Message{MessageType::kSet, 0, 0, "key", std::string("\0\xff", 2)});
  EXPECT_EQ(set.name, "key");
  EXPECT_EQ(set.payload, std::string("\0\xff", 2));
  EXPECT_EQ(RoundTrip(Message{MessageType::kGet, 0, 0, "k", {}}).name, "k");
  EXPECT_EQ(RoundTrip(Message{MessageType::kBarrier, 0, 0, "end", {}}).name, "end");
  EXPECT_EQ(RoundTrip(Message{MessageType::kValue, 0, 0, {}, "v"}).payload, "v");
  Message error = RoundTrip(Message{MessageType::kError, 0, 0, "PEER_LOST", "rank 2"});
  EXPECT_EQ(error.name, "PEER_LOST");
  for (MessageType type : {MessageType::kBye, MessageType::kWelcome, MessageType::kOk, MessageType::kByeAck,
                           MessageType::kPing, MessageType::kPong}) {
    EXPECT_EQ(RoundTrip(Message{type}).type, type);
  }
}

TEST(RendezvousWireTest, PartialFrameWaitsForMoreBytes) {
  std::string frame = EncodeMessage(Message{MessageType::kGet, 0, 0, "key", {}});
  for (size_t cut = 0; cut < frame.size(); ++cut) {
    std::string buffer = frame.substr(0, cut);
    Result<std::optional<Message>> taken = TakeMessage(buffer, RankLimits());
    ASSERT_TRUE(taken.ok()) << cut;
    EXPECT_FALSE(taken.value().has_value()) << cut;
  }
}

void ExpectProtocolError(std::string buffer, const std::string& why, const FrameLimits& limits = RankLimits()) {
  Result<std::optional<Message>> taken = TakeMessage(buffer, limits);
  ASSERT_FALSE(taken.ok()) << why;
  EXPECT_EQ(taken.status().code(), "PROTOCOL_ERROR") << why;
}

std::string Frame(std::string body) {
  std::string frame(4, '\0');
  uint32_t length = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return frame + body;
}

TEST(RendezvousWireTest, DamagedFramesAreProtocolErrors) {
  ExpectProtocolError(std::string(4, '\0'), "zero length");
  ExpectProtocolError(std::string("\xff\xff\xff\x7f", 4), "length over the limit");
  ExpectProtocolError(Frame("\x63"), "unknown type");
  ExpectProtocolError(Frame(std::string("\x03\x05\0\0\0ab", 7)), "string longer than the frame");
  ExpectProtocolError(Frame(std::string("\x03\x01\0\0\0kX", 7)), "trailing byte");
  ExpectProtocolError(Frame(std::string("\x01XXXXXXXX", 9)), "bad magic");
  ExpectProtocolError(Frame(std::string("\x01") + "DMLPRDV2" + std::string("\x01\0", 2)), "truncated HELLO");
  ExpectProtocolError(Frame(std::string("\x01") + "DMLPRDV1" + std::string(16, '\0')), "HELLO of the old protocol");
  ExpectProtocolError(Frame(std::string("\x13\x03\0\0\0bad\0\0\0\0", 12)), "lower-case error code");
  ExpectProtocolError(Frame(std::string("\x05x", 2)), "BYE with a payload");
}

// ---- plan fingerprints ----------------------------------------------------

TEST(PlanDifferenceTest, NamesTheFirstDifferingField) {
  EXPECT_EQ(DescribePlanDifference("BATCH=16\nSEED=1", "BATCH=8\nSEED=1"), "BATCH=8 (rank 0 has BATCH=16)");
  EXPECT_EQ(DescribePlanDifference("A=1;B=2", "A=1"), "B missing (rank 0 has B=2)");
  EXPECT_EQ(DescribePlanDifference("A=1", "A=1;C=3"), "C=3 (rank 0 has no C)");
  EXPECT_EQ(DescribePlanDifference("abc", "abd"), "fingerprint \"abd\" (rank 0 has \"abc\")");
  EXPECT_EQ(DescribePlanDifference("A=1\nA=2", "A=1"), "fingerprint \"A=1\" (rank 0 has \"A=1\nA=2\")");
  EXPECT_EQ(DescribePlanDifference("A=1", "A=2", "the checkpoint"), "A=2 (the checkpoint has A=1)");
}

// ---- the coordinator, 3 ranks ---------------------------------------------

TEST(RendezvousTest, SetGetBarrierWithThreeRanks) {
  const int port = FreePort();
  std::array<Status, 3> results;
  RunRanks(3, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 3));
    if (!joined.ok()) return void(results[rank] = joined.status());
    Rendezvous& rendezvous = **joined;
    EXPECT_EQ(rendezvous.local_address(), "127.0.0.1");
    // Get before the value exists blocks until rank 2 sets it.
    if (rank == 0) {
      auto early = rendezvous.Get("from-2");
      EXPECT_TRUE(early.ok() && *early == std::string("two\0", 4)) << early.status().ToString();
    }
    if (rank == 2) {
      std::this_thread::sleep_for(100ms);
      EXPECT_TRUE(rendezvous.Set("from-2", std::string("two\0", 4)).ok());
    }
    EXPECT_TRUE(rendezvous.Set("key-" + std::to_string(rank), "value-" + std::to_string(rank)).ok());
    for (int round = 0; round < 3; ++round) EXPECT_TRUE(rendezvous.Barrier("same-name").ok());
    for (int peer = 0; peer < 3; ++peer) {
      auto value = rendezvous.Get("key-" + std::to_string(peer));
      EXPECT_TRUE(value.ok() && *value == "value-" + std::to_string(peer)) << value.status().ToString();
    }
    results[rank] = rendezvous.Close();
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(RendezvousTest, PlanMismatchIsReportedByEveryRankIncludingALateOne) {
  const int port = FreePort();
  std::array<Status, 3> results;
  RunRanks(3, [&](int rank) {
    if (rank == 2) std::this_thread::sleep_for(500ms);  // joins after the mismatch was decided
    auto options = RendezvousTestOptions(port, rank, 3, 10, rank == 1 ? "BATCH=8\nSEED=1" : "BATCH=16\nSEED=1");
    auto joined = Rendezvous::Join(options);
    results[rank] = joined.status();
  });
  for (const Status& status : results) {
    EXPECT_EQ(status.ToString(), "PLAN_MISMATCH: rank 1: BATCH=8 (rank 0 has BATCH=16)");
  }
}

TEST(RendezvousTest, WorldSizeMismatchIsAPlanMismatch) {
  const int port = FreePort();
  std::array<Status, 2> results;
  RunRanks(2, [&](int rank) {
    results[rank] = Rendezvous::Join(RendezvousTestOptions(port, rank, rank == 0 ? 2 : 3)).status();
  });
  for (const Status& status : results) {
    EXPECT_EQ(status.ToString(), "PLAN_MISMATCH: rank 1: world size 3 (rank 0 has 2)");
  }
}

TEST(RendezvousTest, PortInUse) {
  const int port = FreePort();
  int holder = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(holder, 1), 0);
  auto joined = Rendezvous::Join(RendezvousTestOptions(port, 0, 2, 1));
  close(holder);
  EXPECT_EQ(joined.status().ToString(), "COORDINATOR_PORT_IN_USE: 127.0.0.1:" + std::to_string(port));
}

TEST(RendezvousTest, TimeoutWhenRankZeroNeverComes) {
  const int port = FreePort();
  auto joined = Rendezvous::Join(RendezvousTestOptions(port, 1, 3, 1));
  ASSERT_FALSE(joined.ok());
  EXPECT_EQ(joined.status().code(), "RENDEZVOUS_TIMEOUT");
  EXPECT_NE(joined.status().detail().find("rank 1: no coordinator at 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << joined.status().ToString();
}

TEST(RendezvousTest, TimeoutNamesTheRankThatNeverJoined) {
  const int port = FreePort();
  std::array<Status, 2> results;
  // Rank 1 would wait longer than rank 0, so it sees rank 0 give up.
  RunRanks(2, [&](int rank) {
    results[rank] = Rendezvous::Join(RendezvousTestOptions(port, rank, 3, rank == 0 ? 1 : 10)).status();
  });
  EXPECT_EQ(results[0].ToString(),
            "RENDEZVOUS_TIMEOUT: rank 0: waited 1s for all 3 ranks to join at 127.0.0.1:" + std::to_string(port) +
                " (missing ranks 2)");
  EXPECT_EQ(results[1].ToString(), "PEER_LOST: rank 0: left the rendezvous");
}

TEST(RendezvousTest, SilentPeerTimesOutInGetAndBarrier) {
  const int port = FreePort();
  std::array<Status, 2> results, closed;
  std::latch both_timed_out(2);
  RunRanks(2, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 2, 1));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    if (rank == 0) {
      results[0] = (*joined)->Barrier("lonely");  // rank 1 never arrives
    } else {
      results[1] = (*joined)->Get("never-set").status();  // rank 0 is alive but never sets it
    }
    both_timed_out.arrive_and_wait();  // leaving earlier would be PEER_LOST for the other
    // Goodbye still works after a timeout (the coordinator drops the stale request).
    closed[rank] = (*joined)->Close();
  });
  for (const Status& status : closed) EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(results[0].ToString(), "RENDEZVOUS_TIMEOUT: rank 0: waited 1s for barrier 'lonely' (missing ranks 1)");
  EXPECT_EQ(results[1].ToString(), "RENDEZVOUS_TIMEOUT: rank 1: waited 1s for key 'never-set'");
}

// Rank 2 is a real process that joins and then dies without a goodbye.
TEST(RendezvousTest, PeerLostIsReportedPromptly) {
  const int port = FreePort();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, 2, 3, 30));
    _exit(joined.ok() ? 0 : 1);  // no Close(): the connection just drops
  }
  std::array<Status, 2> results;
  RunRanks(2, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 3, 30));
    if (!joined.ok()) return void(results[rank] = joined.status());
    results[rank] = (*joined)->Barrier("after-join");  // can never complete; 30 s timeout would be the bug
  });
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  for (const Status& status : results) {
    EXPECT_EQ(status.ToString(), "PEER_LOST: rank 2: connection closed without goodbye");
  }
}

TEST(RendezvousTest, LateRankIsNotCutOffByRankZerosClose) {
  const int port = FreePort();
  std::array<Status, 3> results;
  RunRanks(3, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 3));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    if (rank == 0) {
      EXPECT_TRUE((*joined)->Set("result", "done").ok());
    }
    EXPECT_TRUE((*joined)->Barrier("end").ok());
    if (rank == 2) {
      std::this_thread::sleep_for(300ms);  // rank 0 is already closing by now
      auto value = (*joined)->Get("result");
      EXPECT_TRUE(value.ok() && *value == "done") << value.status().ToString();
    }
    results[rank] = (*joined)->Close();
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(RendezvousTest, MalformedClientFrameGetsProtocolErrorAndJobContinues) {
  const int port = FreePort();
  std::array<Status, 2> results;
  RunRanks(2, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, 2));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    if (rank == 1) {
      // A stranger connects and sends garbage: it is told so, and the job goes on.
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
      ASSERT_EQ(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
      std::string reply;
      char chunk[256];
      for (ssize_t got; (got = read(fd, chunk, sizeof(chunk))) > 0;) reply.append(chunk, got);
      close(fd);
      Result<std::optional<Message>> taken = TakeMessage(reply, FrameLimits{});
      ASSERT_TRUE(taken.ok() && taken.value().has_value());
      EXPECT_EQ(taken.value()->type, MessageType::kError);
      EXPECT_EQ(taken.value()->name, "PROTOCOL_ERROR");
    }
    results[rank] = (*joined)->Barrier("still-works");
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(RendezvousTest, MalformedReplyFromCoordinatorIsProtocolError) {
  const int port = FreePort();
  int server = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(server, 1), 0);
  std::thread fake([server] {
    int fd = accept(server, nullptr, nullptr);
    char chunk[256];
    (void)!read(fd, chunk, sizeof(chunk));
    (void)!write(fd, "\x03\0\0\0\x10zz", 7);  // WELCOME with a bad magic
    (void)!read(fd, chunk, sizeof(chunk));    // the goodbye, then EOF
    close(fd);
  });
  auto joined = Rendezvous::Join(RendezvousTestOptions(port, 1, 2, 2));
  fake.join();
  close(server);
  EXPECT_EQ(joined.status().code(), "PROTOCOL_ERROR") << joined.status().ToString();
}

// The whole rank is stopped with SIGSTOP for longer than the heartbeat
// timeout while it waits on a peer, then continued: it must not time out.
TEST(RendezvousTest, RankStoppedLongerThanTheTimeoutDoesNotTimeOut) {
  const int port = FreePort();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, 1, 2, 1));
    if (!joined.ok()) _exit(10);
    if (!(*joined)->Set("entering-get", "").ok()) _exit(14);
    auto value = (*joined)->Get("set-after-continue");
    if (!value.ok()) _exit(value.status().code() == "RENDEZVOUS_TIMEOUT" ? 11 : 12);
    _exit((*joined)->Close().ok() && *value == "late" ? 0 : 13);
  }
  auto joined = Rendezvous::Join(RendezvousTestOptions(port, 0, 2, 1));
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  ASSERT_TRUE((*joined)->Get("entering-get").ok());
  std::this_thread::sleep_for(200ms);  // rank 1 is inside its Get now
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  std::this_thread::sleep_for(3s);  // 3 x the heartbeat timeout
  ASSERT_EQ(kill(child, SIGCONT), 0);
  std::this_thread::sleep_for(500ms);  // a naive deadline would fire here
  EXPECT_TRUE((*joined)->Set("set-after-continue", "late").ok());
  EXPECT_TRUE((*joined)->Close().ok());
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "11: timed out after the freeze";
}

// Was: accept4 failing with EMFILE about 15,500 times a second until
// RENDEZVOUS_TIMEOUT (two heartbeats), and EMFILE never named. In a forked
// child, because the descriptor limit is the whole process's.
TEST(RendezvousTest, OutOfDescriptorsAtTheCoordinatorIsNamedNotSpun) {
  const int port = FreePort();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(60);  // heartbeats of 600 s: only the named failure ends the join in time
    Status joined;
    std::thread rank0([&] { joined = Rendezvous::Join(RendezvousTestOptions(port, 0, 2, 600)).status(); });
    std::this_thread::sleep_for(500ms);  // rank 0 has joined and waits for rank 1
    // Rank 1's socket takes the lowest free number; with the limit just above
    // it, the coordinator's end of the connection has no number left.
    const int rank1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const rlim_t limit = static_cast<rlim_t>(rank1 + 1);
    struct rlimit few = {limit, limit};
    if (rank1 < 0 || setrlimit(RLIMIT_NOFILE, &few) != 0) _exit(3);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (connect(rank1, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) _exit(4);
    rank0.join();
    close(rank1);
    const std::string expected = "too many open files (RLIMIT_NOFILE=" + std::to_string(limit) + ")";
    const bool named = joined.code() == "RESOURCE_EXHAUSTED" && joined.detail().find(expected) != std::string::npos;
    if (!named) fprintf(stderr, "got %s\n", joined.ToString().c_str());
    _exit(named ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace dmlp
