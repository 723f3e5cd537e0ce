#include "launch/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/errno_error.h"
#include "common/std_streams.h"
#include "launch/command_path.h"
#include "launch/launch_errors.h"
#include "launch/parent_watch.h"
#include "launch/proc_stat.h"
#include "launch/rank_process.h"

namespace dmlp {
namespace {

constexpr int kSignalsToHandle[] = {SIGCHLD, SIGINT,  SIGTERM, SIGHUP, SIGQUIT,
                                    SIGALRM, SIGUSR1, SIGUSR2, SIGTSTP};
// Bytes read from a rank's pipes right after it exits, before its verdict is printed.
constexpr size_t kLastWordsBytes = size_t{1} << 20;

}  // namespace

Result<LaunchReport> RunJob(const LaunchConfig& config, Console& console) {
  Supervisor supervisor(config, console);
  return supervisor.Run();
}

Supervisor::Supervisor(const LaunchConfig& config, Console& console)
    : config_(config), console_(console) {}

Supervisor::~Supervisor() = default;

double Supervisor::Seconds(Clock::time_point when) const {
  return std::chrono::duration<double>(when - start_).count();
}

Status Supervisor::Prepare() {
  // Descriptors 0..2 must be open before any pipe is made: a pipe landing on
  // fd 1 would otherwise be clobbered when a rank's stdout is moved there.
  OpenMissingStandardFds();
  DMLP_ASSIGN_OR_RETURN(signals_, SignalForwarder::Create(std::vector<int>(
                                      std::begin(kSignalsToHandle), std::end(kSignalsToHandle))));
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    return ErrnoError(kInternal, "PR_SET_CHILD_SUBREAPER");
  // After the signalfd exists: the parent's death is then a SIGTERM the loop reads.
  if (config_.watched_parent != 0) DMLP_RETURN_IF_ERROR(StopWithParent(config_.watched_parent));
  char host[256] = {};
  // Only for the summary's words about a divergence: a failure leaves "unknown".
  host_name_ = gethostname(host, sizeof(host) - 1) == 0 && host[0] != 0 ? host : "unknown";
  DMLP_ASSIGN_OR_RETURN(executable_,
                        ResolveExecutable(config_.command.front(), config_.environment));
  if (!config_.log_dir.empty()) {
    DMLP_ASSIGN_OR_RETURN(LogDir logs, LogDir::Create(config_.log_dir));
    log_dir_.emplace(std::move(logs));
  }
  dev_null_.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null_.valid()) return ErrnoError(kSpawnFailed, "open /dev/null");
  epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return ErrnoError(kSpawnFailed, "epoll_create1");
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = nullptr;  // nullptr marks the signalfd
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, signals_->fd(), &event) != 0)
    return ErrnoError(kSpawnFailed, "epoll_ctl");
  // Each rank holds two pipes (and two log files); lift the soft descriptor
  // limit for the launcher if a large node needs it, and give ranks the old one.
  // Once per launch: a second attempt must not mistake the lifted limit for the original.
  struct rlimit original {};
  getrlimit(RLIMIT_NOFILE, &original);
  rlim_t needed = static_cast<rlim_t>(config_.local_rank_count) * 4 + 64;
  if (original.rlim_cur != RLIM_INFINITY && original.rlim_cur < needed) {
    struct rlimit raised = original;
    raised.rlim_cur = std::min(needed, original.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rank_file_limit_ = original;
  }
  return Status::Ok();
}

Result<JobReport> Supervisor::RunAttempt(int number) {
  ResetAttempt(number);
  Status started = StartAttempt();
  if (!started.ok() && ranks_.empty()) return started;
  // Some ranks may have started before the failure: end them, then report it.
  if (!started.ok()) KillAll("dmlp-launch could not start every rank");
  DMLP_RETURN_IF_ERROR(Loop());
  if (!started.ok()) return started;
  // Every group is empty now (or its survivors were reported): the watchdog
  // must not signal those group ids after we exit.
  watchdog_.Dismiss();
  return BuildReport();
}

void Supervisor::ResetAttempt(int number) {
  attempt_ = number;
  start_ = Clock::now();
  ranks_.clear();  // every stream of the last attempt was closed (and left epoll) by the drain
  phase_ = Phase::kRunning;
  cause_.reset();
  failed_index_ = -1;
  launcher_signal_ = 0;
  signal_sender_ = 0;
  killed_at_once_ = false;
  notes_.clear();
}

Status Supervisor::StartAttempt() {
  DMLP_RETURN_IF_ERROR(SpawnAll());
  std::vector<pid_t> groups;
  std::vector<int> inherited = {epoll_.get(), signals_->fd(), dev_null_.get()};
  for (const Rank& rank : ranks_) {
    groups.push_back(rank.report.pid);
    inherited.push_back(rank.out->fd());
    inherited.push_back(rank.err->fd());
  }
  DMLP_ASSIGN_OR_RETURN(watchdog_, GroupWatchdog::Start(groups, inherited));
  return Status::Ok();
}

Status Supervisor::SpawnAll() {
  RankLaunch launch;
  launch.executable = executable_;
  launch.argv = config_.command;
  launch.dev_null_fd = dev_null_.get();
  launch.launcher_pid = getpid();
  launch.open_file_limit = rank_file_limit_ ? &*rank_file_limit_ : nullptr;
  Environment environment = config_.environment;
  // A restarted attempt continues from the newest checkpoint instead of starting over.
  if (attempt_ > 1) environment.Set("RESUME", "1");
  for (int local = 0; local < config_.local_rank_count; ++local) {
    int global = config_.first_rank + local;
    UniqueFd out_log, err_log;
    if (log_dir_) {
      DMLP_ASSIGN_OR_RETURN(out_log, log_dir_->Open(global, attempt_, StreamKind::kStdout));
      DMLP_ASSIGN_OR_RETURN(err_log, log_dir_->Open(global, attempt_, StreamKind::kStderr));
    }
    launch.rank = global;
    launch.local_rank = local;
    launch.environment = RankEnvironment(environment, global, local);
    DMLP_ASSIGN_OR_RETURN(SpawnedRank spawned, SpawnRank(launch));
    Rank rank;
    rank.report.rank = global;
    rank.report.local_rank = local;
    rank.report.pid = spawned.pid;
    bool shown = config_.shown_ranks.Shows(global);
    rank.out =
        std::make_unique<RankStream>(global, StreamKind::kStdout, std::move(spawned.stdout_read),
                                     std::move(out_log), console_, shown);
    rank.err =
        std::make_unique<RankStream>(global, StreamKind::kStderr, std::move(spawned.stderr_read),
                                     std::move(err_log), console_, shown);
    ranks_.push_back(std::move(rank));
    for (RankStream* stream : {ranks_.back().out.get(), ranks_.back().err.get()}) {
      epoll_event event{};
      event.events = EPOLLIN;  // level-triggered: one read per wakeup, fair across ranks
      event.data.ptr = stream;
      if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, stream->fd(), &event) != 0)
        return ErrnoError(kSpawnFailed, "epoll_ctl");
    }
  }
  return Status::Ok();
}

Status Supervisor::Loop() {
  epoll_event events[64];
  for (;;) {
    Advance();
    if (phase_ == Phase::kDone) return Status::Ok();
    int ready = epoll_wait(epoll_.get(), events, 64, TimeoutMs());
    if (ready < 0 && errno == EINTR) continue;  // e.g. stopped and continued
    if (ready < 0) return ErrnoError(kInternal, "epoll_wait");
    for (int i = 0; i < ready; ++i) {
      auto* stream = static_cast<RankStream*>(events[i].data.ptr);
      if (stream == nullptr) {
        DMLP_RETURN_IF_ERROR(HandleSignals());
      } else if (!stream->ReadOnce()) {
        CloseStream(*stream);
      }
    }
  }
}

void Supervisor::CloseStream(RankStream& stream) {
  if (!stream.open()) return;
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, stream.fd(), nullptr);
  stream.Close();
}

Status Supervisor::HandleSignals() {
  DMLP_ASSIGN_OR_RETURN(std::vector<ReceivedSignal> pending, signals_->ReadPending());
  bool reap = false;
  std::vector<pid_t> first_to_change;  // the children SIGCHLD named, in arrival order
  for (const ReceivedSignal& received : pending) {
    if (received.signal == SIGCHLD) {
      reap = true;
      first_to_change.push_back(received.sender_pid);
    } else if (IsTerminationSignal(received.signal)) {
      OnLauncherSignal(received);
    } else if (received.signal == SIGTSTP) {
      Suspend();
    } else {  // SIGUSR1, SIGUSR2: passed on (dmlp-train logs them and goes on), nothing else
      const std::vector<pid_t> groups = LiveGroups();
      SignalRanks(received.signal, groups);
      const std::string from =
          received.sender_pid > 0 ? " from pid " + std::to_string(received.sender_pid) : "";
      console_.Notice("received " + SignalName(received.signal) + from + "; passed on to " +
                      std::to_string(groups.size()) + " rank process group(s)");
    }
  }
  if (reap) ReapChildren(first_to_change);
  return Status::Ok();
}

void Supervisor::Suspend() {
  // Ranks sit in their own process groups, so a terminal's Ctrl-Z reaches only
  // the launcher: stop the ranks too, stop ourselves, and continue them after.
  std::vector<pid_t> groups = LiveGroups();
  SignalRanks(SIGSTOP, groups);
  raise(SIGSTOP);
  SignalRanks(SIGCONT, groups);
}

void Supervisor::ReapChildren(const std::vector<pid_t>& first_to_change) {
  // Collect everything first: ranks that died in the same instant as the
  // first failure ended on their own, not from the teardown it starts.
  std::vector<std::pair<Rank*, ExitStatus>> ended;
  Clock::time_point now = Clock::now();
  for (;;) {
    int wait_status = 0;
    pid_t pid = waitpid(-1, &wait_status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) break;  // 0: children remain but none ended; -1 ECHILD: none left
    if (!WIFEXITED(wait_status) && !WIFSIGNALED(wait_status)) continue;
    auto rank = std::find_if(ranks_.begin(), ranks_.end(),
                             [pid](const Rank& r) { return r.running && r.report.pid == pid; });
    // Anything else is the watchdog or an orphan of a rank (we are its subreaper).
    if (rank != ranks_.end()) ended.emplace_back(&*rank, ExitStatus::FromWaitStatus(wait_status));
  }
  // waitpid() hands out the dead oldest child first (rank 0 first), not in the
  // order they died. When the launcher was slow to run (a loaded host, SIGSTOP),
  // one call reaps a rank that failed first together with the peers it took
  // down (a rank past `ulimit -f`, then a rank that lost it as a peer), and the
  // peer would be named as the first failure. SIGCHLD is a standard signal: one
  // pending record, made by the first child to change since the last read, so
  // the rank it names died before every other one reaped here.
  std::stable_partition(ended.begin(), ended.end(), [&first_to_change](const auto& entry) {
    return std::find(first_to_change.begin(), first_to_change.end(), entry.first->report.pid) !=
           first_to_change.end();
  });
  for (auto& [rank, status] : ended) OnRankExit(*rank, status, now);
}

void Supervisor::OnRankExit(Rank& rank, ExitStatus status, Clock::time_point when) {
  rank.running = false;
  RankReport& report = rank.report;
  report.status = status;
  report.end_seconds = Seconds(when);
  if (rank.kill_sent) {
    report.ending = RankEnding::kAfterKill;
  } else if (report.stop_signal != 0) {
    report.ending = RankEnding::kAfterStopSignal;
  } else {
    report.ending = RankEnding::kOnItsOwn;
  }
  // Its last words (an error message, usually) come before the verdict.
  for (RankStream* stream : {rank.out.get(), rank.err.get()}) {
    if (!stream->ReadAvailable(kLastWordsBytes)) CloseStream(*stream);
  }
  if (status.success() || cause_.has_value()) return;
  cause_ = JobCause::kRankFailed;
  failed_index_ = static_cast<int>(&rank - ranks_.data());
  console_.Notice("RANK_EXIT_NONZERO: rank=" + std::to_string(report.rank) +
                  " pid=" + std::to_string(report.pid) + " " + status.ReportField());
  ShowHiddenTail(rank);
  BeginStop(SIGTERM);
}

void Supervisor::ShowHiddenTail(const Rank& rank) {
  const auto& tail = rank.err->hidden_tail();
  if (tail.empty()) return;
  console_.Notice("rank " + std::to_string(rank.report.rank) +
                  " is hidden by --show-ranks; its last stderr lines:");
  std::string lines;
  for (const std::string& line : tail) lines += line;
  console_.RankLines(StreamKind::kStderr, lines);
}

void Supervisor::OnLauncherSignal(const ReceivedSignal& received) {
  std::string name = SignalName(received.signal);
  // Whatever the phase, a signal to the launcher rules out a restart.
  if (stop_signal_ == 0) {
    stop_signal_ = received.signal;
    stop_sender_ = received.sender_pid;
  }
  if (phase_ == Phase::kRunning && !cause_.has_value()) {
    cause_ = JobCause::kLauncherSignal;
    launcher_signal_ = received.signal;
    signal_sender_ = received.sender_pid;
    std::string from =
        received.sender_pid > 0 ? " from pid " + std::to_string(received.sender_pid) : "";
    if (IsParentDeath(received.signal, received.sender_pid, config_.watched_parent))
      from = " (the parent-death signal: pid " + std::to_string(received.sender_pid) + " died)";
    console_.Notice("received " + name + from + "; send it again to kill at once");
    // SIGALRM (a wrapper's alarm) asks the launcher to end; the ranks get the
    // SIGTERM they clean up after, not an alarm they have no use for.
    BeginStop(received.signal == SIGALRM ? SIGTERM : received.signal);
  } else if (phase_ == Phase::kStopping || phase_ == Phase::kRunning) {
    console_.Notice("received " + name + " again");
    killed_at_once_ = true;
    KillAll("second signal");
  }
}

int Supervisor::RunningCount() const {
  return static_cast<int>(
      std::count_if(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; }));
}

std::vector<pid_t> Supervisor::LiveGroups() const {
  std::vector<pid_t> groups;
  for (const Rank& rank : ranks_) {
    // kill(-pgid, 0) succeeds while any member (even a zombie) remains.
    if (kill(-rank.report.pid, 0) == 0 || errno == EPERM) groups.push_back(rank.report.pid);
  }
  return groups;
}

void Supervisor::SignalRanks(int signal, const std::vector<pid_t>& groups) {
  SignalForwarder::SendToGroups(signal, groups);
  // A rank that moved itself to another group (setsid) is still reached directly.
  for (const Rank& rank : ranks_) {
    if (rank.running && getpgid(rank.report.pid) != rank.report.pid) kill(rank.report.pid, signal);
  }
}

}  // namespace dmlp
