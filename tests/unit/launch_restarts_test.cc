// --restarts: the restart rules and wording (restart_policy, run_summary), and
// the supervisor restarting /bin/sh stand-in ranks in-process.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "launch/proc_stat.h"
#include "launch/restart_policy.h"
#include "launch/run_summary.h"
#include "launch/supervisor.h"

#include "tests/unit/launch_test_util.h"

namespace dmlp {
namespace {

// A rank torn down by the launcher got SIGTERM.
RankReport Rank(int rank, RankEnding ending, ExitStatus status, double end_seconds) {
  return testing::RankReportOf(rank, ending, status, end_seconds,
                               ending == RankEnding::kAfterStopSignal ? SIGTERM : 0);
}

// Two ranks; rank 1 failed with `code` (or signal), rank 0 was torn down.
JobReport Failed(int code, double elapsed, int signal = 0) {
  JobReport report;
  report.cause = JobCause::kRankFailed;
  report.failed_index = 1;
  report.world_size = 2;
  report.grace_seconds = 30;
  report.elapsed_seconds = elapsed;
  ExitStatus status = signal != 0 ? ExitStatus::Signaled(signal) : ExitStatus::Exited(code);
  report.ranks = {Rank(0, RankEnding::kAfterStopSignal, ExitStatus::Signaled(SIGTERM), 0.6),
                  Rank(1, RankEnding::kOnItsOwn, status, 0.5)};
  return report;
}

JobReport Succeeded(double elapsed) {
  JobReport report;
  report.world_size = 2;
  report.elapsed_seconds = elapsed;
  report.ranks = {Rank(0, RankEnding::kOnItsOwn, ExitStatus::Exited(0), 1),
                  Rank(1, RankEnding::kOnItsOwn, ExitStatus::Exited(0), 1)};
  return report;
}

JobReport StoppedBy(int signal) {
  JobReport report;
  report.cause = JobCause::kLauncherSignal;
  report.launcher_signal = signal;
  report.world_size = 2;
  report.ranks = {Rank(0, RankEnding::kAfterStopSignal, ExitStatus::Signaled(signal), 0.2),
                  Rank(1, RankEnding::kAfterStopSignal, ExitStatus::Signaled(signal), 0.2)};
  return report;
}

TEST(RestartPolicy, OnlyARankFailureWithRestartsLeftIsRestarted) {
  EXPECT_TRUE(DecideRestart(Failed(3, 1), 1, 3, 0, 0, false).restart);
  EXPECT_TRUE(DecideRestart(Failed(0, 1, SIGKILL), 2, 3, 0, 0, false).restart);
  RestartDecision last = DecideRestart(Failed(3, 1), 3, 3, 0, 0, false);
  EXPECT_FALSE(last.restart);
  EXPECT_EQ(last.not_restarted, "no restarts left (--restarts 2)");
  // Nothing to say where nothing was to be restarted.
  for (const RestartDecision& quiet :
       {DecideRestart(Succeeded(1), 1, 3, 0, 0, false),
        DecideRestart(Failed(3, 1), 1, 1, 0, 0, false),
        DecideRestart(StoppedBy(SIGTERM), 1, 3, SIGTERM, 7, false)}) {
    EXPECT_FALSE(quiet.restart);
    EXPECT_EQ(quiet.not_restarted, "");
  }
}

TEST(RestartPolicy, LauncherSignalAfterTheFailureForbidsTheRestart) {
  RestartDecision decision = DecideRestart(Failed(3, 1), 1, 3, SIGINT, 77, false);
  EXPECT_FALSE(decision.restart);
  EXPECT_EQ(decision.not_restarted, "dmlp-launch received SIGINT from pid 77");
  EXPECT_EQ(DecideRestart(Failed(3, 1), 1, 3, SIGHUP, 0, false).not_restarted,
            "dmlp-launch received SIGHUP");
}

TEST(RestartPolicy, RankAliveAfterSigkillForbidsTheRestart) {
  JobReport attempt = Failed(3, 1);
  attempt.ranks[0].ending = RankEnding::kNotReaped;
  attempt.ranks[0].stuck_state = 'D';
  RestartDecision decision = DecideRestart(attempt, 1, 3, 0, 0, false);
  EXPECT_FALSE(decision.restart);
  EXPECT_EQ(decision.not_restarted,
            "a rank of attempt 1 is still alive after SIGKILL; new ranks must not start beside it");
}

TEST(RestartPolicy, Notice) {
  EXPECT_EQ(RestartNotice(Failed(3, 1), 2, 3),
            "attempt 2 of 3: restarting all 2 ranks with RESUME=1 after rank 1 failed (exited "
            "with code 3)");
  JobReport node = Failed(0, 1, SIGSEGV);
  node.world_size = 4;
  EXPECT_EQ(RestartNotice(node, 3, 5),
            "attempt 3 of 5: restarting this node's 2 ranks with RESUME=1 after rank 1 failed "
            "(killed by signal SIGSEGV)");
}

TEST(LaunchSummary, OneAttemptReadsAsWithoutRestarts) {
  for (const JobReport& attempt : {Succeeded(1.5), Failed(3, 1), StoppedBy(SIGTERM)}) {
    LaunchReport launch;
    launch.attempts = {attempt};
    launch.max_attempts = 3;
    EXPECT_EQ(SummaryLines(launch), SummaryLines(attempt));
    EXPECT_EQ(launch.ExitCode(), attempt.ExitCode());
  }
  LaunchReport refused;
  refused.attempts = {Failed(3, 1)};
  refused.max_attempts = 3;
  refused.not_restarted = "dmlp-launch received SIGTERM";
  std::vector<std::string> lines = SummaryLines(refused);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2], "not restarted: dmlp-launch received SIGTERM");
  EXPECT_EQ(lines.back(), "exit code 3");
}

TEST(LaunchSummary, EveryAttemptThenTheLastInFull) {
  LaunchReport launch;
  launch.attempts = {Failed(3, 0.75), Failed(0, 2.5, SIGKILL), Succeeded(4.25)};
  launch.attempts[1].ranks[1].pid = 301;
  launch.max_attempts = 4;
  launch.elapsed_seconds = 7.5;
  EXPECT_EQ(launch.ExitCode(), 0);
  EXPECT_EQ(
      SummaryLines(launch),
      (std::vector<std::string>{
          "attempt 1 of 4 (0.75 s): rank 1 failed first: exited with code 3 at 0.5 s (pid 101)",
          "attempt 2 of 4 (2.5 s): rank 1 failed first: killed by signal SIGKILL at 0.5 s "
          "(pid 301)",
          "attempt 3 of 4 (4.25 s): all 2 ranks exited with code 0 in 4.25 s",
          "exit code 0 after 3 attempts in 7.5 s",
      }));
  launch.attempts = {Failed(3, 1), Failed(5, 2)};
  launch.max_attempts = 2;
  launch.not_restarted = "no restarts left (--restarts 1)";
  launch.elapsed_seconds = 3;
  EXPECT_EQ(launch.ExitCode(), 5);
  EXPECT_EQ(SummaryLines(launch),
            (std::vector<std::string>{
                "attempt 1 of 2 (1 s): rank 1 failed first: exited with code 3 at 0.5 s (pid 101)",
                "attempt 2 of 2 (2 s): rank 1 failed first: exited with code 5 at 0.5 s (pid 101)",
                "  rank 0 (pid 100): torn down by SIGTERM (killed by signal SIGTERM) at 0.6 s",
                "not restarted: no restarts left (--restarts 1)",
                "exit code 5 after 2 attempts in 3 s",
            }));
}

TEST(LaunchSummary, AttemptLines) {
  JobReport attempt = Failed(3, 1.25);
  attempt.notes = {"a note"};
  EXPECT_EQ(
      AttemptLines(attempt, 1, 2),
      (std::vector<std::string>{
          "attempt 1 of 2 (1.25 s): rank 1 failed first: exited with code 3 at 0.5 s (pid 101)",
          "  rank 0 (pid 100): torn down by SIGTERM (killed by signal SIGTERM) at 0.6 s",
          "a note",
      }));
}

TEST(ProcStat, ChildProcessesFindsOurChildren) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  std::vector<ProcStat> children = ChildProcesses(getpid());
  EXPECT_TRUE(std::any_of(children.begin(), children.end(),
                          [child](const ProcStat& stat) { return stat.pid == child; }));
  EXPECT_TRUE(ChildProcesses(child).empty());
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
}

using testing::CapturingConsole;

class SupervisorRestarts : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dmlp-restarts-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  LaunchConfig ShellJob(int ranks, int restarts, const std::string& script) {
    LaunchConfig config;
    config.world_size = ranks;
    config.local_rank_count = ranks;
    config.grace_seconds = 30;
    config.restarts = restarts;
    config.command = {"/bin/sh", "-c", script};
    config.environment = Environment(
        {{"PATH", "/usr/bin:/bin"}, {"NUM_PROCESSES", std::to_string(ranks)}, {"DIR", dir_}});
    return config;
  }
  std::string Read(const std::string& name) {
    std::ifstream file(dir_ + "/" + name);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }
  std::string dir_;
};

TEST_F(SupervisorRestarts, RankThatFailsOnceIsRestartedWithResume) {
  CapturingConsole console;
  LaunchConfig config = ShellJob(
      2, 2,
      "echo \"$PROCESS_ID resume=${RESUME:-unset}\"; "
      "if [ $PROCESS_ID = 1 ] && [ ! -e $DIR/failed ]; then touch $DIR/failed; exit 3; fi");
  config.log_dir = dir_ + "/logs";
  Result<LaunchReport> launch = RunJob(config, console);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  ASSERT_EQ(launch->attempts.size(), 2u);
  EXPECT_EQ(launch->max_attempts, 3);
  EXPECT_EQ(launch->attempts[0].cause, JobCause::kRankFailed);
  EXPECT_EQ(launch->attempts[0].ExitCode(), 3);
  EXPECT_EQ(launch->attempts[1].cause, JobCause::kAllSucceeded);
  EXPECT_EQ(launch->ExitCode(), 0);
  EXPECT_EQ(launch->not_restarted, "");
  EXPECT_TRUE(console.HasNotice(
      "attempt 2 of 3: restarting all 2 ranks with RESUME=1 after rank 1 failed (exited with "
      "code 3)"));
  EXPECT_EQ(Read("logs/rank-1.stdout"), "1 resume=unset\n");
  EXPECT_EQ(Read("logs/rank-1.attempt-2.stdout"), "1 resume=1\n");
  EXPECT_EQ(Read("logs/rank-0.attempt-2.stdout"), "0 resume=1\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/logs/rank-0.attempt-3.stdout"));
}

TEST_F(SupervisorRestarts, EveryRestartIsUsedThenTheLastCodeIsTheExitCode) {
  CapturingConsole console;
  Result<LaunchReport> launch =
      RunJob(ShellJob(2, 2, "if [ $PROCESS_ID = 0 ]; then exit 7; fi; exec sleep 30"), console);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  ASSERT_EQ(launch->attempts.size(), 3u);
  for (const JobReport& attempt : launch->attempts) {
    EXPECT_EQ(attempt.failed_index, 0);
    EXPECT_EQ(attempt.ranks[1].ending, RankEnding::kAfterStopSignal);
  }
  EXPECT_EQ(launch->ExitCode(), 7);
  EXPECT_EQ(launch->not_restarted, "no restarts left (--restarts 2)");
  // Each attempt starts new processes.
  EXPECT_NE(launch->attempts[0].ranks[0].pid, launch->attempts[1].ranks[0].pid);
}

TEST_F(SupervisorRestarts, ProcessThatLeftItsGroupIsKilledBeforeTheRestart) {
  CapturingConsole console;
  Result<LaunchReport> launch = RunJob(
      ShellJob(1, 1,
               "if [ -e $DIR/escaped.pid ]; then "
               "  if kill -0 $(cat $DIR/escaped.pid) 2>/dev/null; then echo escaped-alive; fi; "
               "  exit 0; "
               "fi; "
               // The escaped process names itself once it has left the group; the rank
               // fails only then (bounded wait), or teardown would catch it still inside.
               "setsid sh -c 'echo $$ > $DIR/escaped.tmp; mv $DIR/escaped.tmp $DIR/escaped.pid; "
               "exec sleep 30' </dev/null >/dev/null 2>&1 & "
               "n=0; while [ ! -e $DIR/escaped.pid ] && [ $n -lt 1000 ]; do sleep 0.01; "
               "n=$((n+1)); done; exit 3"),
      console);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->attempts.size(), 2u);
  EXPECT_EQ(launch->ExitCode(), 0);
  pid_t escaped = std::stoi(Read("escaped.pid"));
  // "(PID sleep)", or "(PID sh)" if it is caught before its exec: the command name is not checked.
  std::string prefix = "attempt 1 left 1 process(es) outside its ranks' process groups (" +
                       std::to_string(escaped) + " ";
  std::string suffix = "); SIGKILL before the restart";
  EXPECT_TRUE(std::any_of(console.notices.begin(), console.notices.end(),
                          [&](const std::string& n) {
                            return n.rfind(prefix, 0) == 0 && n.size() > suffix.size() &&
                                   n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
                          }))
      << ::testing::PrintToString(console.notices);
  EXPECT_EQ(console.out.find("escaped-alive"), std::string::npos) << console.out;
  EXPECT_EQ(kill(escaped, 0), -1);  // killed and reaped (it was our child)
}

}  // namespace
}  // namespace dmlp
