// defines: UniqueFd, FileKind, RunFile, RunDir, DirListing
//
// The run directory, opened once and read only through its descriptor: every
// file is opened relative to it with O_NOFOLLOW, by a plain name (never a path),
// and must be a regular file, so no input can make the verifier read outside the
// directory or block on a FIFO. Nothing here writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace dmlp::verify {

/// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release();

 private:
  int fd_ = -1;
};

enum class FileKind { kRegular, kAbsent, kNotRegular };

/// A file of the run directory, opened when it is a regular file.
struct RunFile {
  FileKind kind = FileKind::kAbsent;
  UniqueFd fd;  // open (O_RDONLY) only when kind == kRegular
};

/// At most this many rank files are read (each is one open descriptor and buffer).
inline constexpr size_t kMaxRankFiles = 1024;
/// At most this many non-canonical rank file names are kept for the report.
inline constexpr size_t kMaxBadNamesKept = 100;

/// What the directory holds, by the names dmlp-verify cares about.
struct DirListing {
  std::map<int64_t, std::string> rank_files;  // rank -> "rank-N.jsonl" (canonical names only)
  size_t rank_file_count = 0;                 // all canonical names, even beyond kMaxRankFiles
  std::vector<std::string> bad_rank_names;    // "rank-*.jsonl" names that are not canonical
  size_t bad_rank_name_count = 0;
  std::map<int64_t, std::string> env_files;  // rank -> "rank-N.env.jsonl" (canonical, at most kMaxRankFiles)
  // name -> inode of every entry a pass reads by name (rank-*, metrics.jsonl,
  // result.json[.tmp], dmlp.lock): two listings with equal entries saw no
  // create, rename or removal between them that could change the verdict.
  std::map<std::string, uint64_t> entries;
};

class RunDir {
 public:
  /// Opens the directory (codes NOT_FOUND, NOT_A_DIRECTORY, IO_ERROR).
  static Result<RunDir> Open(const std::string& path);

  /// The path shown to users for a file of this directory: "<dir>/<name>".
  std::string Display(const std::string& name) const;
  const std::string& path() const { return path_; }
  /// Opens `name` (a plain file name) if it is a regular file; IO_ERROR when it cannot be read.
  Result<RunFile> OpenFile(const std::string& name) const;
  /// Lists the directory's rank files (IO_ERROR on failure).
  Result<DirListing> List() const;
  /// The pid of the job holding the run's dmlp.lock (trainer/output/output_lock.h),
  /// or "" when no process here holds it (absent, stale, or held on another host).
  std::string LockHolderPid() const;
  /// The descriptor, for /proc/self/fd access by readers that take a path.
  int fd() const { return fd_.get(); }

 private:
  std::string path_;
  UniqueFd fd_;
};

/// The rank of a canonical "rank-<N>.jsonl" name (N without leading zeros, < 2^31), or -1.
int64_t RankOfFileName(const std::string& name);
/// The rank of a canonical "rank-<N>.env.jsonl" name (rank_env_check.h), or -1.
int64_t RankOfEnvFileName(const std::string& name);

}  // namespace dmlp::verify
