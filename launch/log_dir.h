// defines: LogDir
//
// `--log-dir DIR`: the raw per-rank logs, rank-R.stdout / rank-R.stderr (and
// rank-R.attempt-N.* for restarted attempts). DIR may be reached through
// links (the user's choice, as OUT_DIR is); the names inside it are
// dmlp-launch's, and are written as OUT_DIR's files are (common/out_dir.h):
// relative to DIR's descriptor, never through a link. A log already there is
// replaced, not truncated: a new file takes the name (rename), so an earlier
// log's bytes stay with whatever else names that file (a hard link, a copy
// kept on purpose). A symbolic link, FIFO or directory under a log's name is
// LOG_DIR_FAILED naming it: nothing outside DIR is ever opened.
#pragma once

#include <string>

#include "common/out_dir.h"
#include "common/status.h"
#include "launch/console.h"
#include "launch/unique_fd.h"

namespace dmlp {

class LogDir {
 public:
  /// Creates DIR where missing (mkdir -p) and opens it. LOG_DIR_FAILED naming it.
  static Result<LogDir> Create(const std::string& path);

  /// A new, empty log file for `rank`'s `kind` stream in `attempt` (1: the first).
  Result<UniqueFd> Open(int rank, int attempt, StreamKind kind) const;

 private:
  explicit LogDir(OutDir dir) : dir_(std::move(dir)) {}
  OutDir dir_;
};

}  // namespace dmlp
