// defines: ProcStat, ReadProcStat, ReadProcStatFrom, ParseProcStat, ProcessGroupMembers,
//          ChildProcesses
//
// Reading /proc/PID/stat: used to say *why* a process survived SIGKILL (state
// D, uninterruptible sleep, usually a driver or a hung file system), to list
// what is left in a rank's process group, and to find the launcher's own
// children that are not ranks (orphans reparented to it, the subreaper).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace dmlp {

struct ProcStat {
  pid_t pid = 0;
  std::string comm;  // executable name, as the kernel keeps it (at most 15 bytes)
  char state = '?';  // R, S, D, T, Z ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  long utime_ticks = 0;           // user CPU time, clock ticks
  long stime_ticks = 0;           // system CPU time, clock ticks
  long children_utime_ticks = 0;  // of reaped children, clock ticks
  long children_stime_ticks = 0;
};

/// Parses the text of a /proc/PID/stat file; nullopt if it is malformed.
std::optional<ProcStat> ParseProcStat(const std::string& text);
/// Reads /proc/`pid`/stat; nullopt when the process is gone.
std::optional<ProcStat> ReadProcStat(pid_t pid);
/// Reads an open /proc/PID/stat to its end; nullopt on any read error (ESRCH:
/// the process was reaped after the open). Never throws.
std::optional<ProcStat> ReadProcStatFrom(int fd);
/// Every process whose process group is `pgid` (a scan of /proc).
std::vector<ProcStat> ProcessGroupMembers(pid_t pgid);
/// Every process whose parent is `parent`, zombies included (a scan of /proc).
std::vector<ProcStat> ChildProcesses(pid_t parent);
/// "uninterruptible sleep" for 'D', "zombie" for 'Z' ...
std::string ProcessStateName(char state);

}  // namespace dmlp
