#include "launch/rank_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errno_error.h"
#include "launch/launch_errors.h"

namespace dmlp {
namespace {

// What the child writes to the report pipe when it cannot reach exec.
struct ChildFailure {
  int step;   // which setup step failed
  int error;  // its errno
};
enum ChildStep : int { kStepSetpgid = 1, kStepDup = 2, kStepExec = 3 };

[[noreturn]] void ChildFail(int report_fd, ChildStep step) {
  ChildFailure failure{step, errno};
  ssize_t ignored = write(report_fd, &failure, sizeof(failure));
  (void)ignored;
  int code = kExitInternal;
  if (step == kStepExec) code = (failure.error == ENOENT) ? kExitNotFound : kExitNotExecutable;
  _exit(code);
}

// Moves `from` onto `target`, leaving it inheritable. dup2 onto itself would
// keep FD_CLOEXEC set, so that case clears the flag instead.
bool MoveFd(int from, int target) {
  if (from == target) return fcntl(target, F_SETFD, 0) == 0;
  return dup2(from, target) == target;
}

// REQUIRES: runs in the child between fork and exec; async-signal-safe calls only.
[[noreturn]] void RunChild(const RankLaunch& launch, char* const* argv, char* const* envp,
                           int stdout_write, int stderr_write, int report_fd) {
  if (setpgid(0, 0) != 0) ChildFail(report_fd, kStepSetpgid);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The launcher may have died before the line above armed the signal; then
  // we were reparented and must not run a rank nobody supervises.
  if (getppid() != launch.launcher_pid) _exit(kExitInternal);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int signal = 1; signal < NSIG; ++signal) {
    if (signal != SIGKILL && signal != SIGSTOP) sigaction(signal, &default_action, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (launch.open_file_limit != nullptr) setrlimit(RLIMIT_NOFILE, launch.open_file_limit);
  // All three sources are >= 3 (the launcher keeps 0..2 open), so no move clobbers another.
  if (!MoveFd(launch.dev_null_fd, STDIN_FILENO) || !MoveFd(stdout_write, STDOUT_FILENO) ||
      !MoveFd(stderr_write, STDERR_FILENO))
    ChildFail(report_fd, kStepDup);
  execve(launch.executable.c_str(), argv, envp);
  ChildFail(report_fd, kStepExec);
}

Status ExecFailure(const RankLaunch& launch, const ChildFailure& failure) {
  std::string what = launch.executable + ": " + std::strerror(failure.error);
  if (failure.step == kStepExec && failure.error == ENOENT)
    return Status::Error(kCommandNotFound,
                         what + " (exec failed; a missing #! interpreter reads the same)");
  if (failure.step == kStepExec) return Status::Error(kCommandNotExecutable, what);
  return ErrnoError(kSpawnFailed, "rank " + std::to_string(launch.rank) + " setup step " + std::to_string(failure.step),
                    failure.error);
}

}  // namespace

std::vector<std::string> RankEnvironment(const Environment& base, int rank, int local_rank) {
  // One code path with the engines: dmlp-launch is one more engine. It sets
  // the variables an engine would (PROCESS_ID, LOCAL_RANK, and NUM_PROCESSES
  // in options.cc), and dmlp-train reads every engine's through the same
  // ReadRankPlace (common/rank_place.h). It sets dmlp's own names rather than
  // RANK/WORLD_SIZE because those win over any engine's: a launcher that was
  // itself started by srun or mpirun (one per node) places its ranks, and the
  // outer engine's variables, inherited here, describe the launcher instead.
  Environment environment = base;
  environment.Set("PROCESS_ID", std::to_string(rank));
  environment.Set("LOCAL_RANK", std::to_string(local_rank));
  std::vector<std::string> entries;
  for (const auto& [name, value] : environment.values()) entries.push_back(name + "=" + value);
  return entries;
}

Result<SpawnedRank> SpawnRank(const RankLaunch& launch) {
  // Everything the child touches is built before fork.
  std::vector<char*> argv, envp;
  for (const std::string& arg : launch.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  for (const std::string& entry : launch.environment)
    envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  int out[2], err[2], report[2];
  if (pipe2(out, O_CLOEXEC) != 0) return ErrnoError(kSpawnFailed, "pipe2");
  UniqueFd out_read(out[0]), out_write(out[1]);
  if (pipe2(err, O_CLOEXEC) != 0) return ErrnoError(kSpawnFailed, "pipe2");
  UniqueFd err_read(err[0]), err_write(err[1]);
  if (pipe2(report, O_CLOEXEC) != 0) return ErrnoError(kSpawnFailed, "pipe2");
  UniqueFd report_read(report[0]), report_write(report[1]);
  // Only the launcher's ends are non-blocking; the rank gets ordinary blocking pipes.
  if (fcntl(out_read.get(), F_SETFL, O_NONBLOCK) != 0 ||
      fcntl(err_read.get(), F_SETFL, O_NONBLOCK) != 0)
    return ErrnoError(kSpawnFailed, "fcntl");

  pid_t pid = fork();
  if (pid < 0) return ErrnoError(kSpawnFailed, "fork");
  if (pid == 0)
    RunChild(launch, argv.data(), envp.data(), out_write.get(), err_write.get(),
             report_write.get());
  // Both sides call setpgid so the group exists whichever runs first; EACCES
  // here only means the child already exec'd (and so already did it itself).
  setpgid(pid, pid);
  out_write.Reset();
  err_write.Reset();
  report_write.Reset();

  ChildFailure failure{};
  ssize_t got;
  do {
    got = read(report_read.get(), &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof(failure))) {
    int ignored_status;
    while (waitpid(pid, &ignored_status, 0) < 0 && errno == EINTR) {
    }
    return ExecFailure(launch, failure);
  }
  // got == 0: exec succeeded and closed the report pipe.
  SpawnedRank spawned;
  spawned.pid = pid;
  spawned.stdout_read = std::move(out_read);
  spawned.stderr_read = std::move(err_read);
  return spawned;
}

}  // namespace dmlp
