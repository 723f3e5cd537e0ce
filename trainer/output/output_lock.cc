#include "trainer/output/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "common/errno_error.h"
#include "common/file_util.h"
#include "common/flock_holder.h"

namespace dmlp {
namespace {

/// The pid holding a flock on the file open as `fd`, or "" (common/flock_holder.h).
std::string HolderPid(int fd) {
  struct stat held {};
  return ::fstat(fd, &held) == 0 ? FlockHolderPid(held.st_ino) : "";
}

/// True when `name` in `directory_fd` is still the file open as `fd`.
bool StillNamed(int directory_fd, int fd) {
  struct stat named {}, held {};
  if (::fstatat(directory_fd, kLockFile, &named, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (::fstat(fd, &held) != 0) return false;
  return named.st_dev == held.st_dev && named.st_ino == held.st_ino;
}

}  // namespace

OutputLock::OutputLock(int directory_fd, int fd, bool created, TerminationCleanup cleanup)
    : directory_fd_(directory_fd), fd_(fd), remove_on_release_(created), cleanup_(std::move(cleanup)) {}

Result<OutputLock> OutputLock::Acquire(const OutDir& out) {
  // A few rounds at most: each retry means the file was removed or replaced
  // between our open and our lock by a job that just ended.
  for (int round = 0; round < 100; ++round) {
    bool created = true;
    int fd = ::openat(out.fd(), kLockFile, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) {
      created = false;
      fd = ::openat(out.fd(), kLockFile, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0 && errno == ENOENT) continue;
    }
    if (fd < 0 && errno == ELOOP)
      return Status::Error(kNotRegularCode, out.PathOf(kLockFile) +
                                                " is a symbolic link, not a regular file "
                                                "(dmlp never writes through links)");
    if (fd < 0) return ErrnoError("IO_ERROR", "open " + out.PathOf(kLockFile));
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      ::close(fd);
      return Status::Error(kNotRegularCode, out.PathOf(kLockFile) + " is not a regular file");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      std::string holder = HolderPid(fd);
      ::close(fd);
      if (error == EWOULDBLOCK)
        return Status::Error("OUTPUT_LOCKED",
                             out.path() + " is in use by another job (" + out.PathOf(kLockFile) +
                                 " held by " + (holder.empty() ? "a process on another host"
                                                                : "pid " + holder) + ")");
      return ErrnoError("IO_ERROR", "lock " + out.PathOf(kLockFile), error);
    }
    if (!StillNamed(out.fd(), fd)) {  // removed by the job that held it: take the new one
      ::close(fd);
      continue;
    }
    // The descriptors that remove the file later, at the end or on SIGTERM.
    // Without them the file would outlive the job: give it up now (it is
    // ours, held and still named), and fail saying why.
    const int directory_fd = ::fcntl(out.fd(), F_DUPFD_CLOEXEC, 0);
    const int dup_error = errno;
    Result<TerminationCleanup> cleanup = TerminationCleanup();
    if (directory_fd < 0) {
      cleanup = Status::Error(IsDescriptorShortage(dup_error) ? "RESOURCE_EXHAUSTED" : "IO_ERROR",
                              "lock " + out.PathOf(kLockFile) + ": " +
                                  (IsDescriptorShortage(dup_error) ? DescribeDescriptorShortage(dup_error)
                                                                   : std::strerror(dup_error)));
    } else if (created) {
      cleanup = TerminationCleanup::Register(out.fd(), kLockFile, fd, false);
    }
    if (!cleanup.ok()) {
      if (created) ::unlinkat(out.fd(), kLockFile, 0);
      ::close(fd);
      if (directory_fd >= 0) ::close(directory_fd);
      return cleanup.status();
    }
    return OutputLock(directory_fd, fd, created, std::move(cleanup).value());
  }
  return Status::Error("OUTPUT_LOCKED", out.path() + ": " + kLockFile + " keeps being replaced");
}

OutputLock::OutputLock(OutputLock&& other) noexcept
    : directory_fd_(std::exchange(other.directory_fd_, -1)),
      fd_(std::exchange(other.fd_, -1)),
      remove_on_release_(other.remove_on_release_),
      cleanup_(std::move(other.cleanup_)) {}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  // Remove while still holding the lock, and only the file we hold: a taker
  // that opened it meanwhile finds it unnamed and starts over.
  if (remove_on_release_ && directory_fd_ >= 0 && StillNamed(directory_fd_, fd_))
    ::unlinkat(directory_fd_, kLockFile, 0);
  ::close(fd_);
  if (directory_fd_ >= 0) ::close(directory_fd_);
}

}  // namespace dmlp
