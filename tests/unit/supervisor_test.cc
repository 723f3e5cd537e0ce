// The supervisor run in-process on /bin/sh stand-in ranks, checking the
// JobReport it returns (the e2e tests check the real binary's output).
#include "launch/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/unit/launch_test_util.h"

namespace dmlp {
namespace {

using testing::CapturingConsole;

// A launch without --restarts: exactly one attempt, whose report is returned.
Result<JobReport> RunOnce(const LaunchConfig& config, Console& console) {
  Result<LaunchReport> launch = RunJob(config, console);
  if (!launch.ok()) return launch.status();
  EXPECT_EQ(launch->attempts.size(), 1u);
  EXPECT_EQ(launch->max_attempts, 1);
  EXPECT_EQ(launch->not_restarted, "");
  return launch->attempts.back();
}

LaunchConfig ShellJob(int ranks, const std::string& script, double grace = 30) {
  LaunchConfig config;
  config.world_size = ranks;
  config.local_rank_count = ranks;
  config.grace_seconds = grace;
  config.command = {"/bin/sh", "-c", script};
  config.environment =
      Environment({{"PATH", "/usr/bin:/bin"}, {"NUM_PROCESSES", std::to_string(ranks)}});
  return config;
}

TEST(Supervisor, AllRanksSucceed) {
  CapturingConsole console;
  Result<JobReport> report = RunOnce(
      ShellJob(3, "echo out $PROCESS_ID of $NUM_PROCESSES; echo err $LOCAL_RANK >&2"), console);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->cause, JobCause::kAllSucceeded);
  EXPECT_EQ(report->ExitCode(), 0);
  ASSERT_EQ(report->ranks.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(report->ranks[rank].ending, RankEnding::kOnItsOwn);
    EXPECT_TRUE(report->ranks[rank].status.success());
    std::string r = std::to_string(rank);
    EXPECT_NE(console.out.find("[rank " + r + "] out " + r + " of 3\n"), std::string::npos)
        << console.out;
    EXPECT_NE(console.err.find("[rank " + r + "] err " + r + "\n"), std::string::npos)
        << console.err;
  }
}

TEST(Supervisor, FirstFailureTearsDownTheOthers) {
  CapturingConsole console;
  Result<JobReport> report =
      RunOnce(ShellJob(3, "if [ $PROCESS_ID = 1 ]; then echo dying >&2; exit 5; fi; exec sleep 30"),
              console);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->cause, JobCause::kRankFailed);
  EXPECT_EQ(report->failed_index, 1);
  EXPECT_EQ(report->ExitCode(), 5);
  const RankReport& failed = report->ranks[1];
  EXPECT_TRUE(
      console.HasNotice("RANK_EXIT_NONZERO: rank=1 pid=" + std::to_string(failed.pid) + " rc=5"));
  // The rank's last words were shown before the verdict was reached.
  EXPECT_NE(console.err.find("[rank 1] dying\n"), std::string::npos);
  for (int other : {0, 2}) {
    EXPECT_EQ(report->ranks[other].ending, RankEnding::kAfterStopSignal);
    EXPECT_EQ(report->ranks[other].stop_signal, SIGTERM);
    EXPECT_EQ(report->ranks[other].status, ExitStatus::Signaled(SIGTERM));
  }
}

// Rank 1 waits (bounded) until rank 0 has done its part, so the order does not depend on timing.
std::string AfterRankZero(const std::string& rank_zero, const std::string& rank_one,
                          const std::string& dir) {
  return "if [ $PROCESS_ID = 0 ]; then " + rank_zero + "; else n=0; while [ ! -e " + dir +
         "/ready ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; " + rank_one + "; fi";
}

class SupervisorSync : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dmlp-supervisor-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(SupervisorSync, RankIgnoringSigtermIsKilledAfterGrace) {
  CapturingConsole console;
  Result<JobReport> report = RunOnce(
      ShellJob(
          2,
          AfterRankZero("trap '' TERM; touch " + dir_ + "/ready; sleep 30", "kill -SEGV $$", dir_),
          0.2),
      console);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->ExitCode(), 128 + SIGSEGV);
  EXPECT_EQ(report->ranks[1].status.signal(), SIGSEGV);
  EXPECT_EQ(report->ranks[0].ending, RankEnding::kAfterKill);
  EXPECT_EQ(report->ranks[0].status, ExitStatus::Signaled(SIGKILL));
}

TEST(Supervisor, GraceZeroKillsAtOnce) {
  CapturingConsole console;
  Result<JobReport> report =
      RunOnce(ShellJob(2, "if [ $PROCESS_ID = 0 ]; then exit 1; fi; exec sleep 30", 0), console);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->ExitCode(), 1);
  EXPECT_EQ(report->ranks[1].ending, RankEnding::kAfterKill);
  EXPECT_EQ(report->ranks[1].stop_signal, 0);
  EXPECT_EQ(report->ranks[1].status, ExitStatus::Signaled(SIGKILL));
}

TEST(Supervisor, LeftoverChildrenOfSuccessfulRanksAreStopped) {
  CapturingConsole console;
  Result<JobReport> report = RunOnce(ShellJob(1, "sleep 30 >/dev/null 2>&1 & exit 0"), console);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->ExitCode(), 0);
  ASSERT_EQ(console.notices.size(), 2u);
  EXPECT_EQ(console.notices[0].rfind("rank 0 exited but left processes in its group (", 0), 0u)
      << console.notices[0];
  EXPECT_EQ(console.notices[1],
            "SIGTERM sent to 1 rank process group(s); SIGKILL to whatever remains after 30 s");
  EXPECT_EQ(kill(-report->ranks[0].pid, 0), -1);  // the group is gone
}

TEST_F(SupervisorSync, HiddenRankThatFailsFirstStillShowsItsLastLines) {
  CapturingConsole console;
  LaunchConfig config =
      ShellJob(2, AfterRankZero("echo visible-0; touch " + dir_ + "/ready",
                                "echo visible-1; echo reason-1 >&2; exit 1", dir_));
  config.shown_ranks = ParseRankFilter("0").value();
  Result<JobReport> report = RunOnce(config, console);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->ExitCode(), 1);
  EXPECT_NE(console.out.find("[rank 0] visible-0"), std::string::npos);
  EXPECT_EQ(console.out.find("visible-1"), std::string::npos);
  EXPECT_TRUE(console.HasNotice("rank 1 is hidden by --show-ranks; its last stderr lines:"));
  EXPECT_NE(console.err.find("[rank 1] reason-1\n"), std::string::npos);
}

TEST(Supervisor, MissingCommandStartsNothing) {
  CapturingConsole console;
  LaunchConfig config = ShellJob(2, "");
  config.command = {"dmlp-no-such-command"};
  Result<JobReport> report = RunOnce(config, console);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().ToString(),
            "COMMAND_NOT_FOUND: dmlp-no-such-command: not found in PATH");
  EXPECT_TRUE(console.notices.empty());
}

}  // namespace
}  // namespace dmlp
