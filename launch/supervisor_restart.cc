// The launch as a whole: attempts one after another (--restarts), and what
// happens between two of them. See "--restarts N" in supervisor.h and the
// rules in restart_policy.h.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "launch/proc_stat.h"
#include "launch/restart_policy.h"
#include "launch/supervisor.h"

namespace dmlp {
namespace {

// How often the launcher looks again for an escaped process to die after
// SIGKILL. Only between attempts, and only when one was found.
constexpr std::chrono::milliseconds kEscapedPoll{10};

}  // namespace

Result<LaunchReport> Supervisor::Run() {
  Clock::time_point launch_start = Clock::now();
  DMLP_RETURN_IF_ERROR(Prepare());
  LaunchReport launch;
  launch.max_attempts = config_.restarts + 1;
  for (int number = 1;; ++number) {
    DMLP_ASSIGN_OR_RETURN(JobReport attempt, RunAttempt(number));
    launch.attempts.push_back(std::move(attempt));
    const JobReport& ended = launch.attempts.back();
    RestartDecision decision =
        DecideRestart(ended, number, launch.max_attempts, stop_signal_, stop_sender_,
                      config_.restart_on_divergence);
    if (decision.restart) {
      // A signal that came after the attempt's loop ended still forbids the restart.
      DMLP_RETURN_IF_ERROR(ReadSignalsBetweenAttempts());
      decision = DecideRestart(ended, number, launch.max_attempts, stop_signal_, stop_sender_,
                               config_.restart_on_divergence);
    }
    if (decision.restart) {
      for (const std::string& line : AttemptLines(ended, number, launch.max_attempts))
        console_.Notice(line);
      if (std::string left = EndEscapedProcesses(); !left.empty())
        decision = RestartDecision{false, left};
    }
    if (!decision.restart) {
      launch.not_restarted = decision.not_restarted;
      break;
    }
    console_.Notice(RestartNotice(ended, number + 1, launch.max_attempts));
  }
  launch.elapsed_seconds = std::chrono::duration<double>(Clock::now() - launch_start).count();
  return launch;
}

Status Supervisor::ReadSignalsBetweenAttempts() {
  DMLP_ASSIGN_OR_RETURN(std::vector<ReceivedSignal> pending, signals_->ReadPending());
  for (const ReceivedSignal& received : pending) {
    if (IsTerminationSignal(received.signal) && stop_signal_ == 0) {
      stop_signal_ = received.signal;
      stop_sender_ = received.sender_pid;
      console_.Notice("received " + SignalName(received.signal) + " between attempts");
    } else if (received.signal == SIGTSTP) {
      raise(SIGSTOP);  // no rank is running to be stopped with us
    }
    // SIGCHLD: strays are reaped before the restart. SIGUSR1/2: no rank to pass them to.
  }
  return Status::Ok();
}

void Supervisor::ReapStrays() {
  // Orphans of the last attempt (we are their subreaper) and the dismissed watchdog.
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
  }
}

std::string Supervisor::EndEscapedProcesses() {
  // Every rank's group is empty, but a process that left its group (setsid,
  // setpgid) escaped the teardown. Once its parent died it became our child:
  // SIGKILL by pid is safe then, as an unreaped child's pid cannot be reused.
  // Its own children become ours in turn and are found on the next round.
  Clock::time_point deadline = Clock::now() + kReapAfterKill;
  bool announced = false;
  for (;;) {
    ReapStrays();
    std::vector<ProcStat> escaped = ChildProcesses(getpid());
    escaped.erase(std::remove_if(escaped.begin(), escaped.end(),
                                 [this](const ProcStat& child) {
                                   // A dismissed watchdog is on its way out by itself.
                                   return child.pid == watchdog_.pid() || child.state == 'Z';
                                 }),
                  escaped.end());
    if (escaped.empty()) return "";
    std::string list;
    for (const ProcStat& child : escaped)
      list += (list.empty() ? "" : ", ") + std::to_string(child.pid) + " " + child.comm;
    if (!announced) {
      console_.Notice("attempt " + std::to_string(attempt_) + " left " +
                      std::to_string(escaped.size()) +
                      " process(es) outside its ranks' process groups (" + list +
                      "); SIGKILL before the restart");
      announced = true;
    }
    if (Clock::now() >= deadline) {
      std::string stuck;
      for (const ProcStat& child : escaped)
        stuck += (stuck.empty() ? "" : ", ") + std::to_string(child.pid) + " " + child.comm + " (" +
                 ProcessStateName(child.state) + ")";
      return "process(es) left by attempt " + std::to_string(attempt_) + " still alive " +
             std::to_string(kReapAfterKill.count()) + " s after SIGKILL: " + stuck;
    }
    for (const ProcStat& child : escaped) kill(child.pid, SIGKILL);
    std::this_thread::sleep_for(kEscapedPoll);
  }
}

}  // namespace dmlp
