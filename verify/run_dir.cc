#include "verify/run_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errno_error.h"
#include "common/flock_holder.h"

namespace dmlp::verify {
namespace {

// The names whose creation, renaming or removal can change a verdict (a live
// job's checkpoints come and go without changing one).
bool IsWatchedName(const std::string& name) {
  return name.starts_with("rank-") || name == "metrics.jsonl" || name == "result.json" ||
         name == "result.json.tmp" || name == "dmlp.lock";
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

Result<RunDir> RunDir::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::Error("NOT_FOUND", path);
    if (errno == ENOTDIR) return Status::Error("NOT_A_DIRECTORY", path);
    return ErrnoError("IO_ERROR", "open " + path);
  }
  RunDir dir;
  dir.path_ = path;
  dir.fd_ = UniqueFd(fd);
  return dir;
}

std::string RunDir::Display(const std::string& name) const {
  if (path_.empty() || path_.back() == '/') return path_ + name;
  return path_ + "/" + name;
}

Result<RunFile> RunDir::OpenFile(const std::string& name) const {
  RunFile file;
  struct stat info {};
  // lstat first so a FIFO or device is never opened (opening a FIFO blocks).
  if (::fstatat(fd_.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return file;
    return ErrnoError("IO_ERROR", "stat " + Display(name));
  }
  if (!S_ISREG(info.st_mode)) {
    file.kind = FileKind::kNotRegular;
    return file;
  }
  int fd = ::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return file;
    if (errno == ELOOP) {
      file.kind = FileKind::kNotRegular;
      return file;
    }
    return ErrnoError("IO_ERROR", "open " + Display(name));
  }
  file.fd = UniqueFd(fd);
  // Re-check through the descriptor: the name may have changed since fstatat.
  if (::fstat(fd, &info) != 0) return ErrnoError("IO_ERROR", "stat " + Display(name));
  file.kind = S_ISREG(info.st_mode) ? FileKind::kRegular : FileKind::kNotRegular;
  if (file.kind != FileKind::kRegular) file.fd = UniqueFd();
  return file;
}

Result<DirListing> RunDir::List() const {
  int fd = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("IO_ERROR", "open " + path_);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return ErrnoError("IO_ERROR", "list " + path_);
  }
  DirListing listing;
  errno = 0;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (IsWatchedName(name) && listing.entries.size() < 2 * kMaxRankFiles + 8)
      listing.entries[name] = entry->d_ino;
    if (!name.starts_with("rank-") || !name.ends_with(".jsonl")) continue;
    if (name.ends_with(".env.jsonl")) {  // where a rank ran, not its receipts
      const int64_t env_rank = RankOfEnvFileName(name);
      if (env_rank >= 0 && listing.env_files.size() < kMaxRankFiles) listing.env_files[env_rank] = name;
      errno = 0;
      continue;
    }
    int64_t rank = RankOfFileName(name);
    if (rank < 0) {
      if (listing.bad_rank_name_count++ < kMaxBadNamesKept) listing.bad_rank_names.push_back(name);
    } else if (listing.rank_file_count++ < kMaxRankFiles) {
      listing.rank_files[rank] = name;
    }
    errno = 0;
  }
  int error = errno;
  ::closedir(dir);
  if (error != 0) {
    errno = error;
    return ErrnoError("IO_ERROR", "list " + path_);
  }
  return listing;
}

std::string RunDir::LockHolderPid() const {
  Result<RunFile> lock = OpenFile("dmlp.lock");
  if (!lock.ok() || lock->kind != FileKind::kRegular) return "";
  struct stat info {};
  return ::fstat(lock->fd.get(), &info) == 0 ? FlockHolderPid(info.st_ino) : "";
}

int64_t RankOfFileName(const std::string& name) {
  constexpr std::string_view kPrefix = "rank-", kSuffix = ".jsonl";
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix))
    return -1;
  std::string_view digits(name.data() + kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() > 10 || (digits.size() > 1 && digits[0] == '0')) return -1;
  int64_t rank = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    rank = rank * 10 + (c - '0');
  }
  return rank <= INT32_MAX ? rank : -1;
}

int64_t RankOfEnvFileName(const std::string& name) {
  constexpr std::string_view kSuffix = ".env.jsonl";
  if (!name.ends_with(kSuffix)) return -1;
  return RankOfFileName(name.substr(0, name.size() - kSuffix.size()) + ".jsonl");
}

}  // namespace dmlp::verify
