// --restarts after a divergence: whether it is restarted (restart_policy),
// what the summary says about it (run_summary), and which host is a suspect
// when it repeats (hardware_suspect). Pure: no processes.
#include "launch/hardware_suspect.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "launch/restart_policy.h"
#include "launch/run_summary.h"

#include "tests/unit/launch_test_util.h"

namespace dmlp {
namespace {

const char kL4[] = "NVIDIA L4 GPU-8f3c2a1e-0011-2233-4455-66778899aaff PCI 0000:3B:00.0";

std::string DivergedLine(int step, const std::string& ranks) {
  return "dmlp-train: error: RANK_DIVERGED: step=" + std::to_string(step) + " rank(s)=" + ranks +
         " digest=ab majority=cd device(s)=rank " + ranks + ": host h1 " + kL4;
}

// Two ranks; rank 1 failed first with `code` (its line, if any, in `line`); rank 0 torn down.
JobReport Attempt(int code, const std::string& line, double elapsed = 1) {
  JobReport report;
  report.cause = JobCause::kRankFailed;
  report.failed_index = 1;
  report.world_size = 2;
  report.grace_seconds = 30;
  report.elapsed_seconds = elapsed;
  report.ranks = {testing::RankReportOf(0, RankEnding::kAfterStopSignal,
                                        ExitStatus::Signaled(SIGTERM), 0.6, SIGTERM),
                  testing::RankReportOf(1, RankEnding::kOnItsOwn, ExitStatus::Exited(code), 0.5)};
  std::vector<std::string> lines;
  if (!line.empty()) lines.push_back(line);
  report.divergence = DivergenceOf(1, ExitStatus::Exited(code), lines, "h0");
  return report;
}

TEST(DivergenceRestart, NotRestartedUnlessAsked) {
  JobReport diverged = Attempt(4, DivergedLine(7, "1"));
  RestartDecision refused = DecideRestart(diverged, 1, 3, 0, 0, false);
  EXPECT_FALSE(refused.restart);
  EXPECT_EQ(refused.not_restarted,
            "rank 1 diverged at step 7 (RANK_DIVERGED); a restart replays the same steps — pass "
            "--restart-on-divergence to retry");
  EXPECT_TRUE(DecideRestart(diverged, 1, 3, 0, 0, true).restart);
  // Exit code 5 without a line counts as well; any other code is restarted as before.
  EXPECT_EQ(DecideRestart(Attempt(5, ""), 1, 3, 0, 0, false).not_restarted,
            "rank 1 failed the shard audit (exit code 5; no readable SHARD_AUDIT_FAILED line); a "
            "restart replays the same steps — pass --restart-on-divergence to retry");
  EXPECT_TRUE(DecideRestart(Attempt(3, DivergedLine(7, "1")), 1, 3, 0, 0, false).restart);
  // The earlier reasons keep their words: no restarts left, a signal, no --restarts at all.
  EXPECT_EQ(DecideRestart(diverged, 3, 3, 0, 0, false).not_restarted,
            "no restarts left (--restarts 2)");
  EXPECT_EQ(DecideRestart(diverged, 1, 3, SIGTERM, 0, false).not_restarted,
            "dmlp-launch received SIGTERM");
  EXPECT_EQ(DecideRestart(diverged, 1, 1, 0, 0, false).not_restarted, "");
}

TEST(DivergenceSummary, OneAttemptSaysWhereAndWhyNoRestart) {
  LaunchReport launch;
  launch.attempts = {Attempt(4, DivergedLine(7, "1"))};
  launch.max_attempts = 3;
  launch.not_restarted = DecideRestart(launch.attempts[0], 1, 3, 0, 0, false).not_restarted;
  EXPECT_EQ(SummaryLines(launch),
            (std::vector<std::string>{
                "rank 1 failed first: exited with code 4 at 0.5 s (pid 101)",
                std::string("  rank 1 diverged at step 7 (RANK_DIVERGED), on host h1 (") + kL4 +
                    ")",
                "  rank 0 (pid 100): torn down by SIGTERM (killed by signal SIGTERM) at 0.6 s",
                "not restarted: rank 1 diverged at step 7 (RANK_DIVERGED); a restart replays the "
                "same steps — pass --restart-on-divergence to retry",
                "exit code 4",
            }));
}

TEST(HardwareSuspect, SameStepAndRankInTwoAttemptsNamesTheHost) {
  LaunchReport launch;
  launch.attempts = {Attempt(4, DivergedLine(7, "1"), 1), Attempt(4, DivergedLine(7, "1"), 2)};
  launch.max_attempts = 2;
  launch.not_restarted = "no restarts left (--restarts 1)";
  launch.elapsed_seconds = 3;
  std::string on_h1 = std::string("on host h1 (") + kL4 + ")";
  EXPECT_EQ(
      SummaryLines(launch),
      (std::vector<std::string>{
          "attempt 1 of 2 (1 s): rank 1 failed first: exited with code 4 at 0.5 s (pid 101)",
          "  rank 1 diverged at step 7 (RANK_DIVERGED), " + on_h1,
          "attempt 2 of 2 (2 s): rank 1 failed first: exited with code 4 at 0.5 s (pid 101)",
          "  rank 1 diverged at step 7 (RANK_DIVERGED), " + on_h1,
          "  rank 0 (pid 100): torn down by SIGTERM (killed by signal SIGTERM) at 0.6 s",
          "hardware suspect: rank 1 diverged at step 7 in attempts 1 and 2, " + on_h1,
          "not restarted: no restarts left (--restarts 1)",
          "exit code 4 after 2 attempts in 3 s",
      }));
}

TEST(HardwareSuspect, ThreeAttemptsAndAnUnrelatedFailure) {
  std::vector<JobReport> attempts = {Attempt(4, DivergedLine(7, "1")), Attempt(3, ""),
                                     Attempt(4, DivergedLine(7, "1")),
                                     Attempt(4, DivergedLine(7, "1"))};
  EXPECT_EQ(HardwareSuspectLines(attempts),
            (std::vector<std::string>{std::string("hardware suspect: rank 1 diverged at step 7 in "
                                                  "attempts 1, 3 and 4, on host h1 (") +
                                      kL4 + ")"}));
}

TEST(HardwareSuspect, ADivergenceElsewhereIsNoSuspect) {
  std::vector<JobReport> attempts = {Attempt(4, DivergedLine(7, "1")),
                                     Attempt(4, DivergedLine(9, "1"))};
  EXPECT_EQ(HardwareSuspectLines(attempts),
            (std::vector<std::string>{"attempt 2: rank 1 diverged at step 9 (RANK_DIVERGED), not "
                                      "as in attempt 1 (rank 1 diverged at step 7): not a "
                                      "hardware suspect"}));
  attempts[1] = Attempt(4, DivergedLine(7, "0"));
  EXPECT_EQ(HardwareSuspectLines(attempts),
            (std::vector<std::string>{"attempt 2: rank 0 diverged at step 7 (RANK_DIVERGED), not "
                                      "as in attempt 1 (rank 1 diverged at step 7): not a "
                                      "hardware suspect"}));
  // Without a readable line the place is unknown: neither a suspect nor cleared.
  attempts[1] = Attempt(4, "");
  EXPECT_EQ(HardwareSuspectLines(attempts),
            (std::vector<std::string>{"attempt 2: rank 1 diverged (exit code 4; no readable "
                                      "RANK_DIVERGED line), not as in attempt 1 (rank 1 diverged "
                                      "at step 7): cannot tell whether it repeats (step or "
                                      "ranks unknown)"}));
  // One divergence alone says nothing across attempts.
  EXPECT_TRUE(HardwareSuspectLines({Attempt(4, DivergedLine(7, "1")), Attempt(3, "")}).empty());
}

TEST(HardwareSuspect, RepeatThenElsewhere) {
  std::vector<JobReport> attempts = {Attempt(4, DivergedLine(7, "1")),
                                     Attempt(4, DivergedLine(7, "1")),
                                     Attempt(4, DivergedLine(8, "1"))};
  std::vector<std::string> lines = HardwareSuspectLines(attempts);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("hardware suspect: rank 1 diverged at step 7 in attempts 1 and 2, ", 0),
            0u);
  EXPECT_EQ(lines[1],
            "attempt 3: rank 1 diverged at step 8 (RANK_DIVERGED), not as in attempt 2 (rank 1 "
            "diverged at step 7): not a hardware suspect");
}

}  // namespace
}  // namespace dmlp
