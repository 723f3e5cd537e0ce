// The ending half of the Supervisor: the phases after the first failure (or
// after the last rank), each with the one deadline the loop may wait on.
//
//   kRunning  --first failure / launcher signal-->  kStopping (SIGCONT+SIGTERM, deadline = grace)
//   kRunning  --all ranks exited 0, groups empty-->  kDraining
//   kStopping --deadline / second signal-------->  kKilling (SIGKILL, deadline = kReapAfterKill)
//   kStopping, kKilling --all groups empty------>  kDraining (deadline = kDrainLimit)
//   kKilling  --deadline: report what is stuck-->  kDraining
//   kDraining --all pipes at EOF or deadline---->  kDone
#include <signal.h>

#include <algorithm>

#include "launch/proc_stat.h"
#include "launch/supervisor.h"

namespace dmlp {

bool Supervisor::AllReaped() const {
  return std::none_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; });
}

bool Supervisor::AllStreamsClosed() const {
  return std::none_of(ranks_.begin(), ranks_.end(),
                      [](const Rank& r) { return r.out->open() || r.err->open(); });
}

int Supervisor::TimeoutMs() const {
  if (phase_ == Phase::kRunning) return -1;  // no wall-clock limit while nothing failed
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 24LL * 3600 * 1000));
}

void Supervisor::BeginStop(int signal) {
  if (config_.grace_seconds == 0) {
    KillAll("--grace 0");
    return;
  }
  phase_ = Phase::kStopping;
  deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(config_.grace_seconds));
  for (Rank& rank : ranks_) {
    if (rank.running) rank.report.stop_signal = signal;
  }
  std::vector<pid_t> groups = LiveGroups();
  if (groups.empty()) return;
  // SIGCONT first: a stopped rank would otherwise sit on its SIGTERM until killed.
  SignalRanks(SIGCONT, groups);
  SignalRanks(signal, groups);
  console_.Notice(SignalName(signal) + " sent to " + std::to_string(groups.size()) +
                  " rank process group(s); SIGKILL to whatever remains after " +
                  FormatSeconds(config_.grace_seconds));
}

void Supervisor::KillAll(const std::string& why) {
  phase_ = Phase::kKilling;
  deadline_ = Clock::now() + kReapAfterKill;
  for (Rank& rank : ranks_) {
    if (rank.running) rank.kill_sent = true;
  }
  std::vector<pid_t> groups = LiveGroups();
  if (groups.empty()) return;
  SignalRanks(SIGKILL, groups);
  console_.Notice("SIGKILL sent to " + std::to_string(groups.size()) +
                  " rank process group(s): " + why);
}

void Supervisor::NoteLeftovers(const std::vector<pid_t>& groups) {
  for (pid_t group : groups) {
    std::string members;
    for (const ProcStat& member : ProcessGroupMembers(group))
      members += (members.empty() ? "" : ", ") + std::to_string(member.pid) + " " + member.comm;
    auto rank = std::find_if(ranks_.begin(), ranks_.end(),
                             [group](const Rank& r) { return r.report.pid == group; });
    // Said now rather than in the summary: stopping them may take the grace period.
    console_.Notice("rank " + std::to_string(rank->report.rank) +
                    " exited but left processes in its group (" + members + "); stopping them");
  }
}

void Supervisor::RecordStuck() {
  for (Rank& rank : ranks_) {
    if (!rank.running) continue;
    std::optional<ProcStat> stat = ReadProcStat(rank.report.pid);
    rank.report.ending = RankEnding::kNotReaped;
    rank.report.stuck_state = stat ? stat->state : '?';
  }
  for (pid_t group : LiveGroups()) {
    for (const ProcStat& member : ProcessGroupMembers(group)) {
      std::string note =
          "pid " + std::to_string(member.pid) + " (" + member.comm + ") in the group of pid " +
          std::to_string(group) + " is still alive " + std::to_string(kReapAfterKill.count()) +
          " s after SIGKILL: " + ProcessStateName(member.state) + " (" + member.state + ")";
      console_.Notice(note);
      notes_.push_back(note);
    }
  }
}

void Supervisor::StartDrain() {
  phase_ = Phase::kDraining;
  deadline_ = Clock::now() + kDrainLimit;
}

void Supervisor::Advance() {
  Clock::time_point now = Clock::now();
  switch (phase_) {
    case Phase::kRunning:
      if (!AllReaped()) return;
      if (std::vector<pid_t> groups = LiveGroups(); !groups.empty()) {
        // Every rank exited 0 but left children behind: they hold what the job held.
        NoteLeftovers(groups);
        BeginStop(SIGTERM);
        return;
      }
      StartDrain();
      break;
    case Phase::kStopping:
      if (AllReaped() && LiveGroups().empty()) {
        StartDrain();
      } else if (now >= deadline_) {
        KillAll("the " + FormatSeconds(config_.grace_seconds) + " grace period is over");
      }
      break;
    case Phase::kKilling:
      if (AllReaped() && LiveGroups().empty()) {
        StartDrain();
      } else if (now >= deadline_) {
        RecordStuck();
        StartDrain();
      }
      break;
    case Phase::kDraining:
    case Phase::kDone: break;
  }
  if (phase_ != Phase::kDraining) return;
  if (AllStreamsClosed()) {
    phase_ = Phase::kDone;
  } else if (Clock::now() >= deadline_) {
    for (Rank& rank : ranks_) {
      for (RankStream* stream : {rank.out.get(), rank.err.get()}) {
        if (!stream->open()) continue;
        notes_.push_back("rank " + std::to_string(rank.report.rank) + " " +
                         StreamName(stream->kind()) + " was still open " +
                         FormatSeconds(std::chrono::duration<double>(kDrainLimit).count()) +
                         " after its process group ended (held by a process that left the group)");
        CloseStream(*stream);
      }
    }
    phase_ = Phase::kDone;
  }
}

JobReport Supervisor::BuildReport() const {
  JobReport report;
  report.cause = cause_.value_or(JobCause::kAllSucceeded);
  report.failed_index = failed_index_;
  report.launcher_signal = launcher_signal_;
  report.signal_sender = signal_sender_;
  report.killed_at_once = killed_at_once_;
  report.grace_seconds = config_.grace_seconds;
  report.elapsed_seconds = Seconds(Clock::now());
  report.world_size = config_.world_size;
  for (const Rank& rank : ranks_) report.ranks.push_back(rank.report);
  report.notes = notes_;
  if (failed_index_ >= 0) {
    // Every rank prints the same line; the failed rank's own comes first.
    const Rank& failed = ranks_[static_cast<size_t>(failed_index_)];
    std::vector<std::string> lines;
    if (!failed.err->fault_line().empty()) lines.push_back(failed.err->fault_line());
    for (const Rank& rank : ranks_) {
      if (!rank.err->fault_line().empty()) lines.push_back(rank.err->fault_line());
    }
    report.divergence =
        DivergenceOf(failed.report.rank, failed.report.status, lines, host_name_);
  }
  return report;
}

}  // namespace dmlp
