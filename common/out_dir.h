// defines: OutDir, kNotRegularCode
//
// A directory dmlp writes into, held as an O_DIRECTORY descriptor: every entry
// is created, replaced, moved and removed relative to that descriptor
// (openat/renameat/mkdirat/unlinkat) and never through a symbolic link, so a
// link planted under a name dmlp writes (a receipt, a temporary, a checkpoint,
// superseded/) cannot redirect a write outside the directory: new files are
// O_CREAT|O_EXCL|O_NOFOLLOW, subdirectories are opened O_NOFOLLOW, and an
// entry of the wrong kind where dmlp writes is OUTPUT_NOT_REGULAR naming it.
// The directory itself may be reached through links: that path is the user's
// choice (OUT_DIR), the names inside it are dmlp's.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_util.h"
#include "common/status.h"

namespace dmlp {

/// An entry that is not a plain file (or directory) where dmlp writes one.
inline constexpr char kNotRegularCode[] = "OUTPUT_NOT_REGULAR";

class OutDir {
 public:
  enum class Kind { kAbsent, kRegular, kDirectory, kLink, kOther };

  /// Opens an existing directory. NOT_FOUND when absent, IO_ERROR otherwise.
  static Result<OutDir> Open(const std::string& path);
  /// Creates the directory and its parents where missing (mkdir -p), then opens it.
  static Result<OutDir> Create(const std::string& path);
  /// OUTPUT_DANGLING_LINK when `path` or one of its parents is a symbolic link
  /// whose target does not exist (mkdir -p would fail with a bare EEXIST).
  static Status CheckNoDanglingLink(const std::string& path);
  OutDir(OutDir&& other) noexcept;
  OutDir& operator=(OutDir&& other) noexcept;
  OutDir(const OutDir&) = delete;
  ~OutDir();

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  /// "<path>/<name>", for messages.
  std::string PathOf(std::string_view name) const;

  /// What `name` is, without following a link.
  Result<Kind> KindOf(std::string_view name) const;
  /// Names of the entries (not "." or ".."), sorted.
  Result<std::vector<std::string>> List() const;
  /// A new file opened for reading and writing (O_EXCL|O_NOFOLLOW, no O_APPEND). An entry
  /// already there is `exists_code` when it is a regular file, OUTPUT_NOT_REGULAR otherwise.
  Result<int> CreateFile(std::string_view name, const std::string& exists_code) const;
  /// Opens an existing regular file for reading; a link is OUTPUT_NOT_REGULAR, absence NOT_FOUND.
  Result<int> OpenForReading(std::string_view name) const;
  /// `name` appears whole or not at all: `name`.tmp is written, fsynced and
  /// renamed over `name`, then the directory is fsynced. A stale regular
  /// temporary is replaced; one that is not a regular file is OUTPUT_NOT_REGULAR.
  /// `options` may name the temporary by the process and ask before the rename.
  Status WriteAtomically(std::string_view name, std::initializer_list<std::string_view> parts,
                         const AtomicWriteOptions& options = {}) const;
  /// The subdirectory `name`, made when `create` and missing; a link or file there is OUTPUT_NOT_REGULAR.
  Result<OutDir> OpenSubdir(std::string_view name, bool create) const;
  /// Makes the new, empty subdirectory `name`; EEXIST is `exists_code`.
  Status MakeSubdir(std::string_view name, const std::string& exists_code) const;
  /// Moves the entry `name` (itself, even a link) to `target`/`target_name`.
  Status MoveTo(std::string_view name, const OutDir& target, std::string_view target_name) const;
  /// Removes the entry `name` (a link is removed, never followed). Absent is fine.
  Status Remove(std::string_view name) const;
  /// fsync of the directory: makes creates, renames and removals in it durable.
  Status Sync() const;

 private:
  OutDir(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  Status NotRegular(std::string_view name, Kind kind, std::string_view expected) const;

  std::string path_;
  int fd_ = -1;
};

}  // namespace dmlp
