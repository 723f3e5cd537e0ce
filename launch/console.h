// defines: StreamKind, Console, FdConsole
//
// Where the launcher's output goes. Rank lines keep their stream (a rank's
// stdout on the launcher's stdout, its stderr on stderr); launcher messages go
// to stderr as "dmlp-launch: <text>". The supervisor writes through this
// interface so tests can capture it and main decides the descriptors.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dmlp {

enum class StreamKind { kStdout, kStderr };

/// "stdout" / "stderr".
const char* StreamName(StreamKind kind);

class Console {
 public:
  virtual ~Console() = default;
  /// Whole, already prefixed lines of one rank's stream.
  virtual void RankLines(StreamKind kind, std::string_view lines) = 0;
  /// One launcher message without the "dmlp-launch: " prefix or newline.
  virtual void Notice(std::string_view text) = 0;
};

/// Writes to two descriptors with one write() per call where the kernel
/// allows, so whole lines stay whole. A descriptor that fails is given up:
/// ranks keep running and --log-dir files keep everything. EPIPE (the reader
/// is gone, `| head`) is the reader's choice and stays silent; any other
/// failure (EFBIG past RLIMIT_FSIZE, ENOSPC, EIO) is kept for write_error().
class FdConsole : public Console {
 public:
  FdConsole(int out_fd, int err_fd) : out_fd_(out_fd), err_fd_(err_fd) {}
  void RankLines(StreamKind kind, std::string_view lines) override;
  void Notice(std::string_view text) override;
  /// The first failed write other than EPIPE, as "stdout: File too large".
  const std::optional<std::string>& write_error() const { return write_error_; }

 private:
  void GiveUp(StreamKind kind, int& fd);

  int out_fd_;
  int err_fd_;
  std::optional<std::string> write_error_;
};

/// Writes all of `data` to `fd` (retrying short writes and EINTR, waiting out
/// EAGAIN on a non-blocking descriptor). Returns false on any other error.
bool WriteAll(int fd, std::string_view data);

}  // namespace dmlp
