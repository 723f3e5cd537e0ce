#include "launch/log_dir.h"

#include <unistd.h>

#include "launch/launch_errors.h"

namespace dmlp {
namespace {

const char* KindName(OutDir::Kind kind) {
  switch (kind) {
    case OutDir::Kind::kLink: return "a symbolic link";
    case OutDir::Kind::kDirectory: return "a directory";
    default: return "a special file";
  }
}

Status Failed(const Status& status) { return Status::Error(kLogDirFailed, status.detail()); }

}  // namespace

Result<LogDir> LogDir::Create(const std::string& path) {
  Result<OutDir> dir = OutDir::Create(path);
  if (!dir.ok()) return Failed(dir.status());
  return LogDir(std::move(*dir));
}

Result<UniqueFd> LogDir::Open(int rank, int attempt, StreamKind kind) const {
  // The first attempt keeps the names of a launch without --restarts.
  const std::string name = "rank-" + std::to_string(rank) +
                           (attempt == 1 ? "" : ".attempt-" + std::to_string(attempt)) + "." + StreamName(kind);
  Result<OutDir::Kind> kind_there = dir_.KindOf(name);
  if (!kind_there.ok()) return Failed(kind_there.status());
  if (*kind_there != OutDir::Kind::kAbsent && *kind_there != OutDir::Kind::kRegular)
    return Status::Error(kLogDirFailed, dir_.PathOf(name) + ": " + KindName(*kind_there) +
                                            ", not a regular file; dmlp-launch never writes through it");
  // A new file renamed over the name: an entry swapped in meanwhile is
  // replaced too, never written through.
  const std::string temporary = name + ".tmp-" + std::to_string(::getpid());
  Result<int> created = dir_.CreateFile(temporary, kLogDirFailed);
  if (!created.ok()) return Failed(created.status());
  UniqueFd file(*created);
  if (Status moved = dir_.MoveTo(temporary, dir_, name); !moved.ok()) {
    (void)dir_.Remove(temporary);
    return Failed(moved);
  }
  return file;
}

}  // namespace dmlp
