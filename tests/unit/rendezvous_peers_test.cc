// The coordinator among strangers and silent peers:
// per-type frame bounds, ranks of another job (JOB_MISMATCH, dropped, the job
// unaffected and its plan not told), a flood of idle and oversized
// connections (bounded memory), the freeze-discounted silence count, and a
// stopped rank declared lost by the liveness monitor, and a rank stuck past a
// heartbeat after the loss ended by its monitor's last resort.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/rendezvous_test_util.h"
#include "trainer/rendezvous/last_resort.h"
#include "trainer/rendezvous/peer_monitor.h"
#include "trainer/rendezvous/rendezvous.h"
#include "trainer/rendezvous/rendezvous_wire.h"
#include "trainer/rendezvous/silence_tracker.h"

namespace dmlp {
namespace {

using namespace std::chrono_literals;
using testing::ConnectTo;
using testing::FreePort;
using testing::ManualClock;
using testing::ReadToEnd;
using testing::RendezvousTestOptions;
using testing::RunRanks;

RendezvousOptions JobOptions(int port, int rank, int world_size, const std::string& job_id,
                             std::string fingerprint = "BATCH=16\nSEED=1", int timeout_seconds = 10) {
  RendezvousOptions options = RendezvousTestOptions(port, rank, world_size, timeout_seconds, std::move(fingerprint));
  options.job_id = job_id;
  return options;
}

long ResidentKiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// ---- frame bounds -----------------------------------------------------------

TEST(FrameLimitsTest, ControlFramesAreSmallAndValuesNeedARank) {
  FrameLimits stranger;  // what a connection that has not said HELLO may send
  FrameLimits rank{kMaxControlBytes, MaxValueBytes(2)};
  EXPECT_EQ(stranger.MaxBody(static_cast<uint8_t>(MessageType::kGet)), kMaxControlBytes);
  EXPECT_EQ(stranger.MaxBody(static_cast<uint8_t>(MessageType::kSet)), 0u);
  EXPECT_GT(rank.MaxBody(static_cast<uint8_t>(MessageType::kSet)), MaxValueBytes(2));
  EXPECT_EQ(rank.MaxBody(0x63), 0u);
  // Refused on the first five bytes: no body is ever buffered.
  std::string huge_get("\x01\x00\x01\x00\x03", 5);
  Result<std::optional<Message>> taken = TakeMessage(huge_get, rank);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.status().ToString(),
            "PROTOCOL_ERROR: frame length 65537 out of range for message type 3 (at most 65536)");
  std::string stranger_set("\x10\x00\x00\x00\x02", 5);
  taken = TakeMessage(stranger_set, stranger);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.status().ToString(), "PROTOCOL_ERROR: message type 2 not accepted here");
  std::string over_everything("\x00\x00\x00\x04", 4);  // 64 MiB, refused before even the type
  EXPECT_FALSE(TakeMessage(over_everything, rank).ok());
  // A value as large as the world size allows still fits.
  std::string set = EncodeMessage(Message{MessageType::kSet, 0, 0, "k", std::string(MaxValueBytes(2), 'v')});
  taken = TakeMessage(set, rank);
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  ASSERT_TRUE(taken.value().has_value());
}

// ---- strangers --------------------------------------------------------------

TEST(RendezvousStrangerTest, RankOfAnotherJobIsTurnedAwayAndTheJobJoins) {
  const int port = FreePort();
  std::array<Status, 2> results;
  Status stranger;
  RunRanks(3, [&](int thread) {
    if (thread == 2) {
      // Same world size and rank as a real rank, another job and plan: it must
      // neither take rank 1's place nor fail the join, nor learn rank 0's plan.
      std::this_thread::sleep_for(100ms);
      auto joined = Rendezvous::Join(JobOptions(port, 1, 2, "job-B", "BATCH=999\nSEED=1", 5));
      stranger = joined.status();
      return;
    }
    if (thread == 1) std::this_thread::sleep_for(600ms);  // the stranger comes first
    auto joined = Rendezvous::Join(JobOptions(port, thread, 2, "job-A"));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    results[thread] = (*joined)->Barrier("joined");
    if (results[thread].ok()) results[thread] = (*joined)->Close();
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(stranger.ToString(), "JOB_MISMATCH: rank 1: the coordinator at 127.0.0.1:" + std::to_string(port) +
                                     " serves another job (two jobs need two ports)");
  EXPECT_EQ(stranger.ToString().find("BATCH"), std::string::npos);
}

TEST(RendezvousStrangerTest, SameJobWithAnotherPlanIsStillPlanMismatch) {
  const int port = FreePort();
  std::array<Status, 2> results;
  RunRanks(2, [&](int rank) {
    auto joined = Rendezvous::Join(JobOptions(port, rank, 2, "job-A", rank == 0 ? "BATCH=16" : "BATCH=8"));
    results[rank] = joined.status();
  });
  for (const Status& status : results) {
    EXPECT_EQ(status.ToString(), "PLAN_MISMATCH: rank 1: BATCH=8 (rank 0 has BATCH=16)");
  }
}

TEST(RendezvousStrangerTest, FloodOfIdleAndOversizedConnectionsStaysBoundedAndTheJobCompletes) {
  const int port = FreePort();
  std::array<Status, 2> results;
  long grown_kib = 0;
  int refused_frames = 0;
  RunRanks(2, [&](int rank) {
    auto joined = Rendezvous::Join(JobOptions(port, rank, 2, "job-A"));
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    if (rank == 1) {
      const long before = ResidentKiB();
      std::vector<int> idle;
      for (int i = 0; i < 200; ++i) {  // over the cap of pending connections
        int fd = ConnectTo(port);
        if (fd >= 0) idle.push_back(fd);
      }
      // Each announces a 64 MiB frame and sends 1 MiB of it: before, the
      // coordinator buffered every such body whole.
      const std::string body(1 << 20, 'x');
      for (int i = 0; i < 8; ++i) {
        int fd = ConnectTo(port);
        ASSERT_GE(fd, 0);
        std::string frame("\x00\x00\x00\x04\x02", 5);
        (void)!send(fd, (frame + body).data(), frame.size() + body.size(), MSG_NOSIGNAL);
        std::string reply = ReadToEnd(fd);
        Result<std::optional<Message>> taken = TakeMessage(reply, FrameLimits{});
        if (taken.ok() && taken.value() && taken.value()->name == "PROTOCOL_ERROR") ++refused_frames;
        close(fd);
      }
      grown_kib = ResidentKiB() - before;
      for (int fd : idle) close(fd);
    }
    results[rank] = (*joined)->Barrier("after-the-flood");
    if (results[rank].ok()) results[rank] = (*joined)->Close();
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(refused_frames, 8);
  // 64 pending connections x (64 KiB inbox + 64 KiB chunk) is the worst case; before: 64 MiB per connection.
  EXPECT_LT(grown_kib, 32 * 1024) << "coordinator memory grew by " << grown_kib << " KiB";
}

// ---- silence ----------------------------------------------------------------

TEST(SilenceTrackerTest, SilentRankIsLostAfterTheBudgetOfRunningTime) {
  ManualClock clock;
  SilenceTracker tracker(2, 1000ms, clock);
  EXPECT_EQ(tracker.BeginSlice(), -1);  // nobody watched: the server may sleep
  tracker.EndSlice();
  tracker.Heard(0);
  tracker.Heard(1);
  int slices = 0;
  while (tracker.FirstSilent() < 0) {
    const int slice = tracker.BeginSlice();
    ASSERT_GT(slice, 0);
    clock.Advance(std::chrono::milliseconds(slice));
    tracker.EndSlice();
    tracker.Heard(0);  // rank 0 keeps pinging, rank 1 does not
    ASSERT_LT(++slices, 100);
  }
  EXPECT_EQ(tracker.FirstSilent(), 1);
  EXPECT_EQ(slices, 5);  // 5 x 200 ms
}

TEST(SilenceTrackerTest, FreezeOrClockJumpOfTheCoordinatorIsNobodysSilence) {
  ManualClock clock;
  SilenceTracker tracker(2, 1000ms, clock);
  tracker.Heard(1);
  tracker.BeginSlice();
  clock.Advance(60s);  // the whole job stopped for a minute (or CLOCK_MONOTONIC jumped)
  tracker.EndSlice();
  EXPECT_EQ(tracker.FirstSilent(), -1);
  EXPECT_EQ(tracker.freezes_seen(), 1);
  tracker.Forget(1);
  for (int i = 0; i < 20; ++i) {
    tracker.BeginSlice();
    clock.Advance(200ms);
    tracker.EndSlice();
  }
  EXPECT_EQ(tracker.FirstSilent(), -1);  // forgotten ranks are never lost
}

TEST(PeerLossTest, HooksRunOnceAndLateHooksRunAtOnce) {
  PeerLoss loss;
  int early = 0, late = 0;
  loss.AddHook([&] { ++early; });
  EXPECT_TRUE(loss.failure().ok());
  loss.Declare(Status::Error("PEER_LOST", "rank 1: silent"));
  loss.Declare(Status::Error("PEER_LOST", "rank 2: second"));
  loss.AddHook([&] { ++late; });
  EXPECT_EQ(early, 1);
  EXPECT_EQ(late, 1);
  EXPECT_EQ(loss.failure().ToString(), "PEER_LOST: rank 1: silent");
}

// Rank 1 (a forked process, so that it can really be stopped) is SIGSTOPped
// while rank 0 waits on it: rank 0 must get PEER_LOST from the liveness rule,
// not wait forever (its own wait's bound is long here: 60 s).
// The forked rank ends with the test whichever way the test ends (a failed
// ASSERT returns early): a rank left behind would keep ctest's output pipe
// open and turn a failure into a two-minute timeout.
class ChildRank {
 public:
  explicit ChildRank(pid_t pid) : pid_(pid) {}
  ~ChildRank() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  ChildRank(const ChildRank&) = delete;
  ChildRank& operator=(const ChildRank&) = delete;
  /// Kills and reaps it now; true when it was reaped.
  bool KillAndReap() {
    kill(pid_, SIGKILL);
    const bool reaped = waitpid(pid_, nullptr, 0) == pid_;
    pid_ = -1;
    return reaped;
  }

 private:
  pid_t pid_;
};

// Rank 1 of a 2-rank job (heartbeat 2 s) in a child process that dies with
// the test: it joins and starts its liveness monitor, then either stops
// itself at once (`stop_itself`) or says so through the key "monitoring" and
// waits to be stopped by the parent.
pid_t ForkWatchedRank1(int port, bool stop_itself) {
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child != 0) return child;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(12);
  auto joined = Rendezvous::Join(JobOptions(port, 1, 2, "job-A", "BATCH=16\nSEED=1", 2));
  if (!joined.ok() || !(*joined)->StartPeerMonitor().ok()) _exit(10);
  if (stop_itself) {
    raise(SIGSTOP);  // every thread of this rank, its monitor's too, stops here
  } else if (!(*joined)->Set("monitoring", "").ok()) {
    _exit(11);
  }
  pause();  // stopped, then killed
  _exit(0);
}

/// Rank 0 of that job declares rank 1 lost within 30 s, by the liveness rule.
void ExpectRank1Lost(Rendezvous& rank0) {
  for (int i = 0; i < 300 && !rank0.peer_loss()->lost(); ++i) std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(rank0.peer_loss()->lost());
  EXPECT_EQ(rank0.peer_loss()->failure().ToString(),
            "PEER_LOST: rank 1: silent for 2s (HEARTBEAT_TIMEOUT_SECONDS) while rank 0 kept running");
}

TEST(PeerMonitorTest, StoppedRankIsLostForItsRunningPeer) {
  const int port = FreePort();
  const pid_t child = ForkWatchedRank1(port, false);
  ASSERT_GE(child, 0);
  ChildRank rank1(child);
  auto joined = Rendezvous::Join(JobOptions(port, 0, 2, "job-A", "BATCH=16\nSEED=1", 2));
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  ASSERT_TRUE((*joined)->StartPeerMonitor().ok());
  ASSERT_TRUE((*joined)->Get("monitoring").ok());
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  // Rank 1 is stopped: the barrier ends by the liveness rule (or by its own
  // bound, which is the same heartbeat); the loss is declared either way.
  Status waited = (*joined)->Barrier("never");
  ExpectRank1Lost(**joined);
  EXPECT_FALSE(waited.ok());
  ASSERT_TRUE(rank1.KillAndReap());
}

// A rank frozen the moment StartPeerMonitor returned is still watched: the
// monitor's WATCH was sent by its thread, so a rank stopped before that thread
// ran was never watched and its peers waited for their own bounds instead
// (seen once under ASan on the loaded 2-core machine). StartPeerMonitor now
// returns only once the coordinator answered a PING after the WATCH.
TEST(PeerMonitorTest, RankFrozenAsSoonAsItsMonitorStartedIsLost) {
  const int port = FreePort();
  const pid_t child = ForkWatchedRank1(port, true);
  ASSERT_GE(child, 0);
  ChildRank rank1(child);
  auto joined = Rendezvous::Join(JobOptions(port, 0, 2, "job-A", "BATCH=16\nSEED=1", 2));
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  ASSERT_TRUE((*joined)->StartPeerMonitor().ok());
  ExpectRank1Lost(**joined);
  ASSERT_TRUE(rank1.KillAndReap());
}

// The whole job (both ranks, monitors and coordinator) stopped for 3 x the
// heartbeat and continued: nobody is lost.
TEST(PeerMonitorTest, WholeJobStoppedLongerThanTheHeartbeatGoesOn) {
  const int port = FreePort();
  pid_t job = fork();
  ASSERT_GE(job, 0);
  if (job == 0) {
    setpgid(0, 0);
    std::array<int, 2> codes{};
    RunRanks(2, [&](int rank) {
      auto joined = Rendezvous::Join(JobOptions(port, rank, 2, "job-A", "BATCH=16\nSEED=1", 1));
      if (!joined.ok() || !(*joined)->StartPeerMonitor().ok()) {
        codes[rank] = 10;
        return;
      }
      if (!(*joined)->Barrier("before").ok()) codes[rank] = 11;
      std::this_thread::sleep_for(4s);  // the parent stops and continues us meanwhile
      if (!(*joined)->Barrier("after").ok()) codes[rank] = 12;
      if ((*joined)->peer_loss()->lost()) codes[rank] = 13;
      if (!(*joined)->Close().ok()) codes[rank] = 14;
    });
    _exit(codes[0] != 0 ? codes[0] : codes[1]);
  }
  setpgid(job, job);
  std::this_thread::sleep_for(1500ms);  // joined and inside the sleep (generous under load)
  ASSERT_EQ(kill(-job, SIGSTOP), 0);
  std::this_thread::sleep_for(3s);
  ASSERT_EQ(kill(-job, SIGCONT), 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(job, &wstatus, 0), job);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "13: a peer was declared lost after the freeze";
}


// A rank stuck where the loss's hooks cannot reach it (here a plain sleep; in
// the field a Gloo wait after SIGCONT, tests/e2e/cluster fault_freeze) is
// ended by its monitor a heartbeat after the loss, through the process's last
// resort (last_resort.h): the trainer's own report of the first loss declared
// and its exit code for it, here a stand-in that says "reported" and gives 7.
// Before, the monitor printed a message of its own and called _exit(1).
TEST(PeerMonitorDeathTest, RankStuckAHeartbeatAfterTheLossEndsThroughTheLastResort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const int port = FreePort();
  auto stuck_rank1 = [port] {
    SetLastResort([](const Status& loss) {
      std::fprintf(stderr, "reported: %s\n", loss.ToString().c_str());
      return 7;
    });
    std::thread rank0([port] {
      auto joined = Rendezvous::Join(JobOptions(port, 0, 2, "job-A", "BATCH=16\nSEED=1", 1));
      if (!joined.ok() || !(*joined)->Get("monitoring").ok()) _exit(10);
      (*joined)->Abandon();  // rank 0 goes: its coordinator closes every connection
    });
    auto joined = Rendezvous::Join(JobOptions(port, 1, 2, "job-A", "BATCH=16\nSEED=1", 1));
    if (!joined.ok() || !(*joined)->StartPeerMonitor().ok() || !(*joined)->Set("monitoring", "").ok())
      _exit(11);
    rank0.join();
    std::this_thread::sleep_for(60s);  // stuck: nothing the hooks can end
    _exit(12);
  };
  EXPECT_EXIT(stuck_rank1(), ::testing::ExitedWithCode(7),
              "dmlp-train: rank 1 still waited 1s after the loss: ending it\n"
              "reported: PEER_LOST: rank 0: the coordinator closed the connection \\(seen by rank 1\\)");
}

}  // namespace
}  // namespace dmlp
