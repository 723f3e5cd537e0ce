// defines: AtomicWriteOptions, WriteFileAtomically, CreateExclusive, WriteAll, ReadFdToString,
//          ReadFileToString, FsyncDirectory, IsDescriptorShortage, DescribeDescriptorShortage
//
// File primitives with the durability and safety rules dmlp's outputs need:
// finished files appear whole or not at all (temporary, fsync, rename, fsync
// of the directory), and files that must not be clobbered are created with
// O_EXCL. Errors carry the path and errno text.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dmlp {

/// How WriteFileAtomically names its temporary, and what it asks before the rename.
struct AtomicWriteOptions {
  /// false: the temporary is FILE.tmp, for a directory one writer owns at a
  /// time (OUT_DIR, under its lock); a stale one left by a killed writer is
  /// replaced. true: FILE.tmp-<pid>, for a directory where others may write
  /// the same FILE (dmlp-verify's reports): no two writers share a temporary,
  /// and whatever already has its name is never replaced nor followed
  /// (IO_ERROR "create FILE.tmp-<pid>: File exists").
  bool temporary_per_process = false;
  /// Asked once the temporary is complete and fsynced, just before the rename;
  /// an error stops the write (the temporary is removed, FILE untouched).
  std::function<Status()> before_rename;
};

/// Writes `contents` to `path` via a temporary: write, fsync, rename, fsync dir,
/// never through a link (OutDir::WriteAtomically). Code IO_ERROR on failure (the
/// temporary is removed and `path` is untouched; a missing directory is
/// "open directory DIR: ..."); OUTPUT_NOT_REGULAR for a stale temporary that
/// is not a regular file.
Status WriteFileAtomically(const std::string& path, std::string_view contents);
/// The same for a file made of several pieces written in order (no concatenation copy).
Status WriteFileAtomically(const std::string& path, std::initializer_list<std::string_view> parts,
                           const AtomicWriteOptions& options = {});
/// Opens a new file for writing (O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, no O_APPEND).
/// EEXIST gives `exists_code` (e.g. OUTPUT_EXISTS); other failures IO_ERROR.
Result<int> CreateExclusive(const std::string& path, const std::string& exists_code);
/// write() until done, retrying EINTR; IO_ERROR naming `what` otherwise.
Status WriteAll(int fd, std::string_view data, const std::string& what);
/// Everything left to read from `fd`, which it closes; IO_ERROR naming `path` otherwise.
Result<std::string> ReadFdToString(int fd, const std::string& path);
/// Whole file contents; NOT_FOUND when absent, IO_ERROR otherwise.
Result<std::string> ReadFileToString(const std::string& path);
/// fsync of the directory holding `path` so a rename or create is durable.
Status FsyncDirectoryOf(const std::string& path);
/// EMFILE or ENFILE: no descriptor for a new file or socket.
bool IsDescriptorShortage(int error);
/// "too many open files (RLIMIT_NOFILE=N)" for EMFILE, the system's table for ENFILE.
std::string DescribeDescriptorShortage(int error);
/// 0 when `count` more descriptors can be opened now (they are opened and
/// closed again), else the errno that stopped it. For libraries that swallow
/// the errno of a descriptor they could not get (Gloo's address lookup).
int DescriptorHeadroomError(int count);

}  // namespace dmlp
