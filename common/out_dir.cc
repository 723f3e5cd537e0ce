#include "common/out_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "common/errno_error.h"
#include "common/file_util.h"
#include "common/quote.h"

namespace dmlp {
namespace {

std::string Name(std::string_view name) { return std::string(name); }

const char* KindName(OutDir::Kind kind) {
  switch (kind) {
    case OutDir::Kind::kLink: return "a symbolic link";
    case OutDir::Kind::kDirectory: return "a directory";
    case OutDir::Kind::kRegular: return "a regular file";
    case OutDir::Kind::kAbsent: return "absent";
    case OutDir::Kind::kOther: break;
  }
  return "not a regular file";
}

}  // namespace

Result<OutDir> OutDir::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::Error("NOT_FOUND", path);
    return ErrnoError("IO_ERROR", "open directory " + path);
  }
  return OutDir(path, fd);
}

Status OutDir::CheckNoDanglingLink(const std::string& path) {
  namespace fs = std::filesystem;
  // The deepest part of `path` that exists decides: its parents resolve.
  for (fs::path at = fs::path(path); !at.empty(); at = at.parent_path()) {
    std::error_code error;
    const fs::file_status own = fs::symlink_status(at, error);
    if (own.type() == fs::file_type::not_found) {
      if (at == at.parent_path()) break;
      continue;
    }
    if (error || !fs::is_symlink(own) || fs::status(at, error).type() != fs::file_type::not_found)
      break;
    const std::string target = fs::read_symlink(at, error).string();
    const std::string where = at == fs::path(path) ? "" : ": " + at.string();
    return Status::Error("OUTPUT_DANGLING_LINK",
                         "OUT_DIR " + path + where + " is a symbolic link to " + QuoteValue(target) +
                             ", which does not exist (create it, or point the link elsewhere)");
  }
  return Status::Ok();
}

Result<OutDir> OutDir::Create(const std::string& path) {
  DMLP_RETURN_IF_ERROR(CheckNoDanglingLink(path));
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) return Status::Error("IO_ERROR", "create " + path + ": " + error.message());
  return Open(path);
}

OutDir::OutDir(OutDir&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

OutDir& OutDir::operator=(OutDir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

OutDir::~OutDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string OutDir::PathOf(std::string_view name) const { return path_ + "/" + Name(name); }

Status OutDir::NotRegular(std::string_view name, Kind kind, std::string_view expected) const {
  return Status::Error(kNotRegularCode, PathOf(name) + " is " + KindName(kind) + ", not " +
                                            Name(expected) + " (dmlp never writes through links)");
}

Result<OutDir::Kind> OutDir::KindOf(std::string_view name) const {
  struct stat info {};
  if (::fstatat(fd_, Name(name).c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Kind::kAbsent;
    return ErrnoError("IO_ERROR", "stat " + PathOf(name));
  }
  if (S_ISREG(info.st_mode)) return Kind::kRegular;
  if (S_ISDIR(info.st_mode)) return Kind::kDirectory;
  if (S_ISLNK(info.st_mode)) return Kind::kLink;
  return Kind::kOther;
}

Result<std::vector<std::string>> OutDir::List() const {
  int fd = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("IO_ERROR", "list " + path_);
  DIR* stream = ::fdopendir(fd);
  if (stream == nullptr) {
    ::close(fd);
    return ErrnoError("IO_ERROR", "list " + path_);
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(stream)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(stream);
  std::sort(names.begin(), names.end());
  return names;
}

Result<int> OutDir::CreateFile(std::string_view name, const std::string& exists_code) const {
  // O_EXCL never follows a link, O_NOFOLLOW says so twice: whatever is there
  // already, nothing outside this directory is opened. O_RDWR: a receipt
  // file is read back before each line (trainer/output/receipt_file.h).
  int fd = ::openat(fd_, Name(name).c_str(),
                    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) return fd;
  if (errno != EEXIST) return ErrnoError("IO_ERROR", "create " + PathOf(name));
  DMLP_ASSIGN_OR_RETURN(Kind kind, KindOf(name));
  if (kind == Kind::kRegular || kind == Kind::kAbsent) return Status::Error(exists_code, PathOf(name));
  return NotRegular(name, kind, "a regular file");
}

Result<int> OutDir::OpenForReading(std::string_view name) const {
  int fd = ::openat(fd_, Name(name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return Status::Error("NOT_FOUND", PathOf(name));
    if (errno == ELOOP) return NotRegular(name, Kind::kLink, "a regular file");
    return ErrnoError("IO_ERROR", "open " + PathOf(name));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return NotRegular(name, S_ISDIR(info.st_mode) ? Kind::kDirectory : Kind::kOther, "a regular file");
  }
  return fd;
}

Status OutDir::WriteAtomically(std::string_view name, std::initializer_list<std::string_view> parts,
                               const AtomicWriteOptions& options) const {
  // The one write-then-rename of every finished file dmlp writes.
  const std::string temporary =
      Name(name) + (options.temporary_per_process ? ".tmp-" + std::to_string(::getpid()) : ".tmp");
  if (!options.temporary_per_process) {
    // A temporary left by a killed writer is ours to replace, but only a plain
    // file: removing a planted link or FIFO would hide the plant, so name it.
    DMLP_ASSIGN_OR_RETURN(Kind stale, KindOf(temporary));
    if (stale != Kind::kAbsent && stale != Kind::kRegular)
      return NotRegular(temporary, stale, "a regular file (a stale temporary)");
    if (stale == Kind::kRegular) DMLP_RETURN_IF_ERROR(Remove(temporary));
  }
  // O_EXCL|O_NOFOLLOW: whatever took the temporary's name is neither followed nor truncated.
  const int fd = ::openat(fd_, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("IO_ERROR", "create " + PathOf(temporary));
  Status status;
  for (std::string_view part : parts) {
    if (status.ok()) status = WriteAll(fd, part, PathOf(temporary));
  }
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoError("IO_ERROR", "fsync " + PathOf(temporary));
  if (::close(fd) != 0 && status.ok()) status = ErrnoError("IO_ERROR", "close " + PathOf(temporary));
  if (status.ok() && options.before_rename) status = options.before_rename();
  // renameat replaces the entry `name` itself, a link there included: never its target.
  if (status.ok() && ::renameat(fd_, temporary.c_str(), fd_, Name(name).c_str()) != 0)
    status = ErrnoError("IO_ERROR", "rename " + PathOf(temporary) + " to " + PathOf(name));
  if (!status.ok()) {
    ::unlinkat(fd_, temporary.c_str(), 0);
    return status;
  }
  return Sync();
}

Result<OutDir> OutDir::OpenSubdir(std::string_view name, bool create) const {
  if (create && ::mkdirat(fd_, Name(name).c_str(), 0755) != 0 && errno != EEXIST)
    return ErrnoError("IO_ERROR", "create " + PathOf(name));
  int fd = ::openat(fd_, Name(name).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) return OutDir(PathOf(name), fd);
  if (errno == ENOENT) return Status::Error("NOT_FOUND", PathOf(name));
  if (errno == ELOOP || errno == ENOTDIR) {
    DMLP_ASSIGN_OR_RETURN(Kind kind, KindOf(name));
    return Status::Error(kNotRegularCode, PathOf(name) + " is " + KindName(kind) +
                                              ", not a directory (dmlp never writes through links)");
  }
  return ErrnoError("IO_ERROR", "open directory " + PathOf(name));
}

Status OutDir::MakeSubdir(std::string_view name, const std::string& exists_code) const {
  if (::mkdirat(fd_, Name(name).c_str(), 0755) == 0) return Status::Ok();
  if (errno == EEXIST) return Status::Error(exists_code, PathOf(name));
  return ErrnoError("IO_ERROR", "create " + PathOf(name));
}

Status OutDir::MoveTo(std::string_view name, const OutDir& target,
                      std::string_view target_name) const {
  if (::renameat(fd_, Name(name).c_str(), target.fd_, Name(target_name).c_str()) != 0)
    return ErrnoError("IO_ERROR", "move " + PathOf(name) + " to " + target.PathOf(target_name));
  return Status::Ok();
}

Status OutDir::Remove(std::string_view name) const {
  if (::unlinkat(fd_, Name(name).c_str(), 0) != 0 && errno != ENOENT)
    return ErrnoError("IO_ERROR", "remove " + PathOf(name));
  return Status::Ok();
}

Status OutDir::Sync() const {
  if (::fsync(fd_) != 0) return ErrnoError("IO_ERROR", "fsync directory " + path_);
  return Status::Ok();
}

}  // namespace dmlp
