#include "verify/report_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "common/errno_error.h"
#include "common/file_util.h"
#include "verify/same_file.h"

namespace dmlp::verify {
namespace {

// Larger than any report dmlp-verify writes (findings are capped): a bigger
// file is not one of them, and is not read to find out.
constexpr off_t kMaxReportBytes = off_t{256} << 20;
// Directories between FILE and "/" that are compared with the runs, at most.
constexpr int kMaxDepth = 4096;

const char* KindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/// The index of the run in `runs` that `directory` is or lies below, if any.
std::optional<size_t> EnclosingRun(const std::string& directory, const std::vector<struct stat>& runs) {
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // writing there fails and says why
  std::optional<size_t> found;
  for (int depth = 0; depth < kMaxDepth && !found; ++depth) {
    struct stat here {};
    if (::fstat(fd, &here) != 0) break;
    for (size_t i = 0; i < runs.size() && !found; ++i)
      if (SameInode(here, runs[i])) found = i;
    const int parent = ::openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat above {};
    const bool at_root = parent < 0 || ::fstat(parent, &above) != 0 || SameInode(above, here);
    ::close(fd);
    fd = parent;
    if (at_root) break;
  }
  if (fd >= 0) ::close(fd);
  return found;
}

/// Whether the regular file at `path` is a report dmlp-verify wrote.
Result<bool> HoldsOwnReport(const std::string& path, const ReportMarker& is_own_report) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrnoError("IO_ERROR", "open " + path);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size > kMaxReportBytes) {
    ::close(fd);
    return false;
  }
  Result<std::string> text = ReadFdToString(fd, path);  // closes fd
  if (!text.ok()) return text.status();
  return is_own_report(*text);
}

}  // namespace

Status CheckReportTarget(const std::string& option, const std::string& path,
                         const std::vector<std::string>& run_dirs, const ReportMarker& is_own_report) {
  std::vector<struct stat> runs;
  std::vector<std::string> names;
  for (const std::string& run : run_dirs) {
    struct stat info {};
    if (::stat(run.c_str(), &info) != 0) continue;  // verifying it fails and says why
    runs.push_back(info);
    names.push_back(run);
  }
  if (std::optional<size_t> run = EnclosingRun(ParentOf(path), runs))
    return Status::Error("USAGE_ERROR", option + path + " is inside the run directory " + names[*run] +
                                            ", which dmlp-verify never writes");
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError("IO_ERROR", "stat " + path);
  }
  if (!S_ISREG(info.st_mode))
    return Status::Error("USAGE_ERROR", option + path + " is " + KindOf(info.st_mode) +
                                            ", not a report dmlp-verify wrote; it is never replaced");
  DMLP_ASSIGN_OR_RETURN(bool own, HoldsOwnReport(path, is_own_report));
  if (!own)
    return Status::Error("USAGE_ERROR", option + path +
                                            " exists and is not a report dmlp-verify wrote; it is never replaced");
  return Status::Ok();
}

Status WriteReportFile(const std::string& path, std::string_view contents) {
  AtomicWriteOptions options;
  // Two dmlp-verify processes may write one report: each its own temporary.
  options.temporary_per_process = true;
  // Checked once more just before: what took FILE's name meanwhile is not replaced either.
  options.before_rename = [&path] {
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
      return Status::Error("IO_ERROR", path + " became " + KindOf(info.st_mode) + "; it is not replaced");
    return Status::Ok();
  };
  return WriteFileAtomically(path, {contents}, options);
}

}  // namespace dmlp::verify
