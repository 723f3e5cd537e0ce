#include "verify/report_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/file_util.h"

namespace dmlp::verify {
namespace {

Status Trouble(const std::string& what, int error) {
  return Status::Error("IO_ERROR", what + ": " + std::strerror(error));
}

}  // namespace

Status WriteReportFile(const std::string& path, std::string_view contents) {
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Trouble("create " + temporary, errno);
  Status status = WriteAll(fd, contents, temporary);
  if (status.ok() && ::fsync(fd) != 0) status = Trouble("fsync " + temporary, errno);
  if (::close(fd) != 0 && status.ok()) status = Trouble("close " + temporary, errno);
  if (status.ok() && std::rename(temporary.c_str(), path.c_str()) != 0)
    status = Trouble("rename " + temporary + " to " + path, errno);
  if (!status.ok()) {
    ::unlink(temporary.c_str());
    return status;
  }
  return FsyncDirectoryOf(path);
}

}  // namespace dmlp::verify
