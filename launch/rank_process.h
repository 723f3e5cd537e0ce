// defines: RankLaunch, SpawnedRank, RankEnvironment, SpawnRank
//
// Starting one rank: fork, set the child up, exec. Between fork and exec the
// child only makes async-signal-safe system calls on data prepared before the
// fork. The child
//   - leads its own process group (setpgid, done by both sides so the parent
//     can signal the group as soon as fork returns);
//   - gets SIGKILL when the launcher dies (PR_SET_PDEATHSIG), and exits at
//     once if the launcher already died before that was armed;
//   - starts with no blocked signals and default dispositions (ignored signals
//     would otherwise survive exec);
//   - reads /dev/null and writes to two pipes the launcher drains.
// A failed exec is reported through a close-on-exec pipe, so the launcher
// knows the exact errno instead of guessing from exit code 127.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "common/env.h"
#include "common/status.h"
#include "launch/unique_fd.h"

namespace dmlp {

struct RankLaunch {
  int rank = 0;                                    // global: PROCESS_ID
  int local_rank = 0;                              // on this node: LOCAL_RANK
  std::string executable;                          // resolved path, exec'd as is
  std::vector<std::string> argv;                   // argv[0] as the user typed it
  std::vector<std::string> environment;            // "NAME=value" entries
  int dev_null_fd = -1;                            // opened once by the launcher, read-only
  pid_t launcher_pid = 0;                          // getpid() before the fork
  const struct rlimit* open_file_limit = nullptr;  // restored in the child when set
};

struct SpawnedRank {
  pid_t pid = 0;         // also the rank's process group id
  UniqueFd stdout_read;  // non-blocking read ends
  UniqueFd stderr_read;
};

/// The rank's environment: `base` with PROCESS_ID and LOCAL_RANK set.
std::vector<std::string> RankEnvironment(const Environment& base, int rank, int local_rank);
/// Forks and execs one rank. COMMAND_NOT_FOUND / COMMAND_NOT_EXECUTABLE when
/// exec fails (the child is then already reaped); SPAWN_FAILED for fork/pipe.
Result<SpawnedRank> SpawnRank(const RankLaunch& launch);

}  // namespace dmlp
