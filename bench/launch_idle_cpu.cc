// launch_idle_cpu: how much CPU dmlp-launch itself burns while its ranks do
// nothing. Starts `dmlp-launch --nproc N -- sleep S`, waits for it to exit
// without reaping it (waitid WNOWAIT), then reads the zombie's /proc files:
// its own CPU time (schedstat, nanoseconds; stat, clock ticks) and how often
// it woke up. schedstat is also sampled at 1 s and S-1 s: the launcher's CPU
// while every rank is up and asleep, startup and teardown excluded. A launcher with a polling
// interval wakes ~S/interval times; one driven by signalfd+epoll wakes a few times per rank (spawn,
// SIGCHLD, EOF).
//
//   launch_idle_cpu [--ranks N] [--seconds S] [--launcher PATH]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "launch/proc_stat.h"

namespace {

long StatusField(pid_t pid, const std::string& name) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(name + ":", 0) == 0) return std::atol(line.c_str() + name.size() + 1);
  }
  return -1;
}

// Nanoseconds on CPU (first field of /proc/PID/schedstat), -1 when unavailable.
long long CpuNanoseconds(pid_t pid) {
  std::ifstream schedstat("/proc/" + std::to_string(pid) + "/schedstat");
  long long nanoseconds = -1;
  schedstat >> nanoseconds;
  return schedstat ? nanoseconds : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string launcher = DMLP_LAUNCH_PATH;
  std::string ranks = "8", seconds = "10";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--ranks")
      ranks = argv[i + 1];
    else if (flag == "--seconds")
      seconds = argv[i + 1];
    else if (flag == "--launcher")
      launcher = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: launch_idle_cpu [--ranks N] [--seconds S] [--launcher PATH]\n");
      return 2;
    }
  }
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    return 1;
  }
  if (pid == 0) {
    int dev_null = open("/dev/null", O_WRONLY);
    dup2(dev_null, STDOUT_FILENO);
    dup2(dev_null, STDERR_FILENO);
    std::vector<const char*> args = {"dmlp-launch", "--nproc",       ranks.c_str(), "--",
                                     "sleep",       seconds.c_str(), nullptr};
    execv(launcher.c_str(), const_cast<char* const*>(args.data()));
    _exit(127);
  }
  // The idle window: every rank started (1 s in) until just before they wake.
  double total_seconds = std::atof(seconds.c_str());
  long long window_start = -1, window_end = -1;
  if (total_seconds > 2) {
    usleep(1000000);
    window_start = CpuNanoseconds(pid);
    usleep(static_cast<useconds_t>((total_seconds - 2) * 1e6));
    window_end = CpuNanoseconds(pid);
  }
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    std::perror("waitid");
    return 1;
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::optional<dmlp::ProcStat> stat = dmlp::ReadProcStat(pid);
  long long own_nanoseconds = CpuNanoseconds(pid);
  long voluntary = StatusField(pid, "voluntary_ctxt_switches");
  long involuntary = StatusField(pid, "nonvoluntary_ctxt_switches");
  int wait_status = 0;
  struct rusage usage {};
  wait4(pid, &wait_status, 0, &usage);
  if (!stat || !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    std::fprintf(stderr,
                 "launch_idle_cpu: dmlp-launch (%s) did not run the job cleanly (status %d)\n",
                 launcher.c_str(), wait_status);
    return 1;
  }
  double tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  double own = static_cast<double>(stat->utime_ticks + stat->stime_ticks) * tick;
  double ranks_cpu =
      static_cast<double>(stat->children_utime_ticks + stat->children_stime_ticks) * tick;
  double everything = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                      static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  std::printf("launch_idle_cpu: dmlp-launch --nproc %s -- sleep %s\n", ranks.c_str(),
              seconds.c_str());
  std::printf("  wall time                          %8.3f s\n", wall);
  std::printf("  launcher CPU, utime+stime          %8.3f s  (%ld+%ld ticks of %.0f ms)\n", own,
              stat->utime_ticks, stat->stime_ticks, tick * 1e3);
  std::printf("  launcher CPU, schedstat            %8.3f ms\n",
              static_cast<double>(own_nanoseconds) * 1e-6);
  std::printf("  launcher CPU share of wall time    %8.4f %%\n",
              100.0 * static_cast<double>(own_nanoseconds) * 1e-9 / wall);
  if (window_start >= 0 && window_end >= 0)
    std::printf(
        "  launcher CPU while all ranks slept %8.3f ms  (%.0f s window, startup/teardown "
        "excluded)\n",
        static_cast<double>(window_end - window_start) * 1e-6, total_seconds - 2);
  std::printf("  launcher wake-ups (voluntary cs)   %8ld  (%.1f per second; involuntary %ld)\n",
              voluntary, static_cast<double>(voluntary) / wall, involuntary);
  std::printf("  ranks' CPU, cutime+cstime          %8.3f s  (%s processes exec'ing sleep)\n",
              ranks_cpu, ranks.c_str());
  std::printf("  launcher+ranks CPU, wait4 rusage   %8.3f s\n", everything);
  return 0;
}
