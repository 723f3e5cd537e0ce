#include "launch/run_summary.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "tests/unit/launch_test_util.h"

namespace dmlp {
namespace {

using testing::RankReportOf;

TEST(RunSummary, AllSucceeded) {
  JobReport report;
  report.world_size = 2;
  report.elapsed_seconds = 1.234;
  report.ranks = {RankReportOf(0, RankEnding::kOnItsOwn, ExitStatus::Exited(0), 1.2),
                  RankReportOf(1, RankEnding::kOnItsOwn, ExitStatus::Exited(0), 1.1)};
  EXPECT_EQ(report.ExitCode(), 0);
  EXPECT_EQ(SummaryLines(report),
            std::vector<std::string>{"all 2 ranks exited with code 0 in 1.234 s"});
}

TEST(RunSummary, FirstFailureAndHowTheOthersEnded) {
  JobReport report;
  report.cause = JobCause::kRankFailed;
  report.failed_index = 1;
  report.world_size = 4;
  report.grace_seconds = 30;
  report.ranks = {
      RankReportOf(0, RankEnding::kAfterStopSignal, ExitStatus::Signaled(SIGTERM), 0.61, SIGTERM),
      RankReportOf(1, RankEnding::kOnItsOwn, ExitStatus::Exited(3), 0.5),
      RankReportOf(2, RankEnding::kOnItsOwn, ExitStatus::Exited(0), 0.25),
      RankReportOf(3, RankEnding::kAfterKill, ExitStatus::Signaled(SIGKILL), 30.6, SIGTERM)};
  EXPECT_EQ(report.ExitCode(), 3);
  EXPECT_EQ(SummaryLines(report),
            (std::vector<std::string>{
                "rank 1 failed first: exited with code 3 at 0.5 s (pid 101)",
                "  rank 0 (pid 100): torn down by SIGTERM (killed by signal SIGTERM) at 0.61 s",
                "  rank 2 (pid 102): exited with code 0 at 0.25 s",
                "  rank 3 (pid 103): killed by SIGKILL after the 30 s grace period at 30.6 s",
                "exit code 3",
            }));
}

TEST(RunSummary, SignalledRankGives128PlusSignal) {
  JobReport report;
  report.cause = JobCause::kRankFailed;
  report.failed_index = 0;
  report.world_size = 1;
  report.ranks = {RankReportOf(0, RankEnding::kOnItsOwn, ExitStatus::Signaled(SIGSEGV, true), 2)};
  EXPECT_EQ(report.ExitCode(), 139);
  EXPECT_EQ(SummaryLines(report).front(),
            "rank 0 failed first: killed by signal SIGSEGV (core dumped) at 2 s (pid 100)");
}

TEST(RunSummary, LauncherSignalSecondSignalAndStuckRank) {
  JobReport report;
  report.cause = JobCause::kLauncherSignal;
  report.launcher_signal = SIGINT;
  report.signal_sender = 77;
  report.killed_at_once = true;
  report.world_size = 4;  // two per node
  RankReport stuck = RankReportOf(3, RankEnding::kNotReaped, ExitStatus(), 0, SIGINT);
  stuck.stuck_state = 'D';
  report.ranks = {RankReportOf(2, RankEnding::kAfterKill, ExitStatus::Signaled(SIGKILL), 4, SIGINT), stuck};
  report.notes = {"pid 103 ... is still alive"};
  EXPECT_EQ(report.ExitCode(), 130);
  EXPECT_EQ(SummaryLines(report),
            (std::vector<std::string>{
                "stopped by SIGINT from pid 77; 2 ranks of this node (of 4)",
                "  rank 2 (pid 102): killed by SIGKILL at once (second signal) at 4 s",
                "  rank 3 (pid 103): still alive after SIGKILL (uninterruptible sleep)",
                "pid 103 ... is still alive",
                "exit code 130",
            }));
}

TEST(RunSummary, GraceZeroAndExitAfterKill) {
  JobReport report;
  report.cause = JobCause::kRankFailed;
  report.failed_index = 0;
  report.world_size = 2;
  report.grace_seconds = 0;
  report.ranks = {RankReportOf(0, RankEnding::kOnItsOwn, ExitStatus::Exited(1), 1),
                  RankReportOf(1, RankEnding::kAfterKill, ExitStatus::Exited(0), 1.01)};
  EXPECT_EQ(SummaryLines(report)[1],
            "  rank 1 (pid 101): exited with code 0 after SIGKILL was sent at once (--grace 0) at "
            "1.01 s");
}

TEST(RunSummary, FormatSeconds) {
  EXPECT_EQ(FormatSeconds(30), "30 s");
  EXPECT_EQ(FormatSeconds(1.5), "1.5 s");
  EXPECT_EQ(FormatSeconds(0.004), "0.004 s");
  EXPECT_EQ(FormatSeconds(0.0004), "0 s");
  EXPECT_EQ(FormatSeconds(12.3456), "12.346 s");
}

}  // namespace
}  // namespace dmlp
