#include "launch/console.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace dmlp {

const char* StreamName(StreamKind kind) {
  return kind == StreamKind::kStdout ? "stdout" : "stderr";
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t wrote = write(fd, data.data(), data.size());
    if (wrote > 0) {
      data.remove_prefix(static_cast<size_t>(wrote));
    } else if (wrote < 0 && errno == EAGAIN) {
      // Someone made our descriptor non-blocking; wait for room instead of dropping lines.
      pollfd wait_for_room{fd, POLLOUT, 0};
      poll(&wait_for_room, 1, -1);
    } else if (!(wrote < 0 && errno == EINTR)) {
      return false;
    }
  }
  return true;
}

void FdConsole::GiveUp(StreamKind kind, int& fd) {
  // REQUIRES: errno is the failed write's.
  if (errno != EPIPE && !write_error_)
    write_error_ = std::string(StreamName(kind)) + ": " + std::strerror(errno);
  fd = -1;
}

void FdConsole::RankLines(StreamKind kind, std::string_view lines) {
  int& fd = kind == StreamKind::kStdout ? out_fd_ : err_fd_;
  if (fd >= 0 && !WriteAll(fd, lines)) GiveUp(kind, fd);
}

void FdConsole::Notice(std::string_view text) {
  if (err_fd_ < 0) return;
  std::string line = "dmlp-launch: ";
  line.append(text);
  line.push_back('\n');
  if (!WriteAll(err_fd_, line)) GiveUp(StreamKind::kStderr, err_fd_);
}

}  // namespace dmlp
