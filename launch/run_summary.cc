#include "launch/run_summary.h"

#include <signal.h>

#include <cstdio>

#include "launch/hardware_suspect.h"
#include "launch/proc_stat.h"

namespace dmlp {
namespace {

std::string KillReason(const JobReport& report) {
  if (report.killed_at_once) return "at once (second signal)";
  if (report.grace_seconds == 0) return "at once (--grace 0)";
  return "after the " + FormatSeconds(report.grace_seconds) + " grace period";
}

std::string DescribeEnding(const JobReport& report, const RankReport& rank) {
  switch (rank.ending) {
    case RankEnding::kRunning: return "still running";
    case RankEnding::kOnItsOwn: return rank.status.ToString();
    case RankEnding::kAfterStopSignal:
      return "torn down by " + SignalName(rank.stop_signal) + " (" + rank.status.ToString() + ")";
    case RankEnding::kAfterKill:
      if (rank.status == ExitStatus::Signaled(SIGKILL))
        return "killed by SIGKILL " + KillReason(report);
      return rank.status.ToString() + " after SIGKILL was sent " + KillReason(report);
    case RankEnding::kNotReaped:
      return "still alive after SIGKILL (" + ProcessStateName(rank.stuck_state) + ")";
  }
  return "?";
}

std::string RankLine(const JobReport& report, const RankReport& rank) {
  std::string line = "  rank " + std::to_string(rank.rank) + " (pid " + std::to_string(rank.pid) +
                     "): " + DescribeEnding(report, rank);
  if (rank.ending != RankEnding::kNotReaped && rank.ending != RankEnding::kRunning)
    line += " at " + FormatSeconds(rank.end_seconds);
  return line;
}

// "rank 1 failed first: ...", "all 3 ranks exited with code 0 in 1.2 s", "stopped by SIGTERM; ...".
std::string Headline(const JobReport& report) {
  std::string whose = std::to_string(report.ranks.size()) + " ranks";
  if (static_cast<int>(report.ranks.size()) != report.world_size)
    whose += " of this node (of " + std::to_string(report.world_size) + ")";
  switch (report.cause) {
    case JobCause::kAllSucceeded:
      return "all " + whose + " exited with code 0 in " + FormatSeconds(report.elapsed_seconds);
    case JobCause::kRankFailed: {
      const RankReport& failed = report.ranks.at(static_cast<size_t>(report.failed_index));
      return "rank " + std::to_string(failed.rank) + " failed first: " + failed.status.ToString() +
             " at " + FormatSeconds(failed.end_seconds) + " (pid " + std::to_string(failed.pid) +
             ")";
    }
    case JobCause::kLauncherSignal: {
      std::string from =
          report.signal_sender > 0 ? " from pid " + std::to_string(report.signal_sender) : "";
      return "stopped by " + SignalName(report.launcher_signal) + from + "; " + whose;
    }
  }
  return "?";
}

// The attempt's first line, then what its divergence line said (if it had one).
void AppendHeadline(const std::string& name, const JobReport& report,
                    std::vector<std::string>* lines) {
  lines->push_back(name + Headline(report));
  if (report.divergence)
    lines->push_back("  " + DescribeDivergence(*report.divergence) + ", on " +
                     DescribeDevices(*report.divergence));
}

// How every rank but the first failure ended (only when the attempt did not succeed), then notes.
void AppendDetails(const JobReport& report, std::vector<std::string>* lines) {
  if (report.cause != JobCause::kAllSucceeded) {
    for (size_t i = 0; i < report.ranks.size(); ++i) {
      if (static_cast<int>(i) != report.failed_index)
        lines->push_back(RankLine(report, report.ranks[i]));
    }
  }
  for (const std::string& note : report.notes) lines->push_back(note);
}

// "attempt 2 of 3 (4.5 s)": the attempt's own running time, first start to last reap.
std::string AttemptName(const JobReport& attempt, int number, int max_attempts) {
  return "attempt " + std::to_string(number) + " of " + std::to_string(max_attempts) + " (" +
         FormatSeconds(attempt.elapsed_seconds) + ")";
}

}  // namespace

int JobReport::ExitCode() const {
  switch (cause) {
    case JobCause::kAllSucceeded: return 0;
    case JobCause::kRankFailed:
      return ranks.at(static_cast<size_t>(failed_index)).status.ShellCode();
    case JobCause::kLauncherSignal: return 128 + launcher_signal;
  }
  return 125;
}

std::string FormatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", seconds);
  std::string value = text;
  // "30.00" -> "30", "1.50" -> "1.5": integers read as integers.
  while (value.back() == '0') value.pop_back();
  if (value.back() == '.') value.pop_back();
  return value + " s";
}

std::vector<std::string> SummaryLines(const JobReport& report) {
  std::vector<std::string> lines;
  AppendHeadline("", report, &lines);
  AppendDetails(report, &lines);
  if (report.cause != JobCause::kAllSucceeded)
    lines.push_back("exit code " + std::to_string(report.ExitCode()));
  return lines;
}

std::vector<std::string> AttemptLines(const JobReport& attempt, int number, int max_attempts) {
  std::vector<std::string> lines;
  AppendHeadline(AttemptName(attempt, number, max_attempts) + ": ", attempt, &lines);
  AppendDetails(attempt, &lines);
  return lines;
}

std::vector<std::string> SummaryLines(const LaunchReport& report) {
  const JobReport& last = report.attempts.back();
  int count = static_cast<int>(report.attempts.size());
  if (count == 1) {
    // One attempt reads exactly as a launch without --restarts, plus why no restart followed.
    std::vector<std::string> lines = SummaryLines(last);
    if (!report.not_restarted.empty())
      lines.insert(lines.end() - 1, "not restarted: " + report.not_restarted);
    return lines;
  }
  std::vector<std::string> lines;
  for (int i = 0; i + 1 < count; ++i) {
    const JobReport& attempt = report.attempts[static_cast<size_t>(i)];
    AppendHeadline(AttemptName(attempt, i + 1, report.max_attempts) + ": ", attempt, &lines);
  }
  for (std::string& line : AttemptLines(last, count, report.max_attempts))
    lines.push_back(std::move(line));
  for (std::string& line : HardwareSuspectLines(report.attempts)) lines.push_back(std::move(line));
  if (!report.not_restarted.empty()) lines.push_back("not restarted: " + report.not_restarted);
  lines.push_back("exit code " + std::to_string(report.ExitCode()) + " after " +
                  std::to_string(count) + " attempts in " + FormatSeconds(report.elapsed_seconds));
  return lines;
}

}  // namespace dmlp
