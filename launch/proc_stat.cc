#include "launch/proc_stat.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <sstream>

namespace dmlp {

std::optional<ProcStat> ParseProcStat(const std::string& text) {
  // "pid (comm) state ppid pgrp ..." where comm may itself hold spaces and
  // parentheses: it ends at the last ')'.
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat stat;
  stat.pid = static_cast<pid_t>(std::atol(text.substr(0, open).c_str()));
  stat.comm = text.substr(open + 1, close - open - 1);
  std::istringstream fields(text.substr(close + 1));
  // Fields after comm, numbered as in proc(5) minus 3: state(3) ppid(4)
  // pgrp(5) ... utime(14) stime(15) cutime(16) cstime(17).
  std::string field;
  std::vector<std::string> rest;
  while (fields >> field && rest.size() < 15) rest.push_back(field);
  if (rest.size() < 15 || rest[0].size() != 1) return std::nullopt;
  stat.state = rest[0][0];
  stat.ppid = static_cast<pid_t>(std::atol(rest[1].c_str()));
  stat.pgrp = static_cast<pid_t>(std::atol(rest[2].c_str()));
  stat.utime_ticks = std::atol(rest[11].c_str());
  stat.stime_ticks = std::atol(rest[12].c_str());
  stat.children_utime_ticks = std::atol(rest[13].c_str());
  stat.children_stime_ticks = std::atol(rest[14].c_str());
  return stat;
}

namespace {

// Every process in /proc for which `wanted` holds; one that ends during the scan is skipped.
std::vector<ProcStat> ScanProcesses(const std::function<bool(const ProcStat&)>& wanted) {
  std::vector<ProcStat> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (struct dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    std::optional<ProcStat> stat = ReadProcStat(static_cast<pid_t>(pid));
    if (stat && wanted(*stat)) found.push_back(*stat);
  }
  closedir(proc);
  return found;
}

}  // namespace

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<ProcStat> stat = ReadProcStatFrom(fd);
  ::close(fd);
  return stat;
}

std::optional<ProcStat> ReadProcStatFrom(int fd) {
  // Plain read(), not an ifstream: a process that ends between the open and
  // the read makes read() fail with ESRCH, and libstdc++'s istreambuf_iterator
  // turns that into an exception. Every scan of /proc meets such processes on
  // a busy machine (any process, not only ours), and the exception escaped
  // the launcher between two attempts (a flaky --restarts test).
  std::string text;
  char buffer[1024];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return std::nullopt;
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  return ParseProcStat(text);
}

std::vector<ProcStat> ProcessGroupMembers(pid_t pgid) {
  return ScanProcesses([pgid](const ProcStat& stat) { return stat.pgrp == pgid; });
}

std::vector<ProcStat> ChildProcesses(pid_t parent) {
  return ScanProcesses([parent](const ProcStat& stat) { return stat.ppid == parent; });
}

std::string ProcessStateName(char state) {
  switch (state) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "uninterruptible sleep";
    case 'T': return "stopped";
    case 't': return "stopped by a tracer";
    case 'Z': return "zombie";
    case 'X': return "dead";
    case 'I': return "idle";
    default: return std::string("state ") + state;
  }
}

}  // namespace dmlp
