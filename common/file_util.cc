#include "common/file_util.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/errno_error.h"
#include "common/out_dir.h"

namespace dmlp {
Status WriteAll(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("IO_ERROR", "write " + what);
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
  return Status::Ok();
}

Status FsyncDirectoryOf(const std::string& path) {
  std::string directory = std::filesystem::path(path).parent_path().string();
  if (directory.empty()) directory = ".";
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("IO_ERROR", "open directory " + directory);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return ErrnoError("IO_ERROR", "fsync directory " + directory);
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  return WriteFileAtomically(path, {contents});
}

Status WriteFileAtomically(const std::string& path, std::initializer_list<std::string_view> parts,
                           const AtomicWriteOptions& options) {
  // One mechanism for every finished file dmlp writes (result.json, the state
  // file, checkpoints, verify's reports): relative to the directory's
  // descriptor, the temporary created O_EXCL|O_NOFOLLOW (common/out_dir.h).
  const std::filesystem::path location(path);
  std::string directory = location.parent_path().string();
  if (directory.empty()) directory = ".";
  Result<OutDir> out = OutDir::Open(directory);
  // Writing, a missing folder is an I/O failure like any other (IO_ERROR).
  if (!out.ok() && out.status().code() == "NOT_FOUND")
    return ErrnoError("IO_ERROR", "open directory " + directory, ENOENT);
  if (!out.ok()) return out.status();
  return out->WriteAtomically(location.filename().string(), parts, options);
}

Result<int> CreateExclusive(const std::string& path, const std::string& exists_code) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) return fd;
  if (errno == EEXIST) return Status::Error(exists_code, path);
  return ErrnoError("IO_ERROR", "create " + path);
}

Result<std::string> ReadFdToString(int fd, const std::string& path) {
  std::string contents;
  char buffer[1 << 16];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      Status status = ErrnoError("IO_ERROR", "read " + path);
      ::close(fd);
      return status;
    }
    if (got == 0) break;
    contents.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return contents;
}

Result<std::string> ReadFileToString(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::Error("NOT_FOUND", path);
    return ErrnoError("IO_ERROR", "open " + path);
  }
  return ReadFdToString(fd, path);
}

bool IsDescriptorShortage(int error) { return error == EMFILE || error == ENFILE; }

std::string DescribeDescriptorShortage(int error) {
  if (error == ENFILE) return "the system's table of open files is full (ENFILE, fs.file-max)";
  struct rlimit limit {};
  const std::string soft = ::getrlimit(RLIMIT_NOFILE, &limit) != 0 ? "unknown"
                           : limit.rlim_cur == RLIM_INFINITY      ? "unlimited"
                                                                  : std::to_string(limit.rlim_cur);
  return "too many open files (RLIMIT_NOFILE=" + soft + ")";
}

int DescriptorHeadroomError(int count) {
  std::vector<int> opened;
  int error = 0;
  for (int i = 0; i < count; ++i) {
    const int fd = ::eventfd(0, EFD_CLOEXEC);  // needs no file system, only a number
    if (fd < 0) {
      error = errno;
      break;
    }
    opened.push_back(fd);
  }
  for (int fd : opened) ::close(fd);
  return error;
}

}  // namespace dmlp
