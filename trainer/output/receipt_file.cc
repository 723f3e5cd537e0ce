#include "trainer/output/receipt_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/errno_error.h"

namespace dmlp {
namespace {

/// pread of exactly `count` bytes at `offset` (the caller knows they exist).
Status ReadAt(int fd, int64_t offset, size_t count, std::string& bytes, const std::string& path) {
  bytes.assign(count, '\0');
  size_t done = 0;
  while (done < count) {
    ssize_t got = ::pread(fd, bytes.data() + done, count - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return ErrnoError("IO_ERROR", "read " + path);
    if (got == 0) break;  // shrank since fstat: compare what is there
    done += static_cast<size_t>(got);
  }
  bytes.resize(done);
  return Status::Ok();
}

Status WriteAt(int fd, int64_t offset, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t written = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return ErrnoError("IO_ERROR", "write " + path);
    data.remove_prefix(static_cast<size_t>(written));
    offset += written;
  }
  return Status::Ok();
}

}  // namespace

Status ReplayDiverged(int64_t step, int64_t rank, const std::string& detail) {
  return Status::Error("REPLAY_DIVERGED",
                       "step=" + std::to_string(step) + " rank=" + std::to_string(rank) + " " + detail);
}

Status ReceiptFile::Lost(int64_t step, int64_t size) const {
  // The first lost step is the first whose line the file no longer holds whole.
  int64_t first = 1;
  while (first < step && line_ends_[first - 1] <= size) ++first;
  return Status::Error("RECEIPTS_LOST",
                       "steps " + std::to_string(first) + ".." + std::to_string(step - 1) +
                           " rank=" + std::to_string(rank_) + ": " + path_ + " is " +
                           std::to_string(size) + " bytes, this rank had written " +
                           std::to_string(offset()) + " (restored onto older files)");
}

Result<LineOutcome> ReceiptFile::Put(int64_t step, std::string_view line) {
  const int64_t at = offset();
  struct stat info {};
  if (::fstat(fd_, &info) != 0) return ErrnoError("IO_ERROR", "stat " + path_);
  const int64_t size = static_cast<int64_t>(info.st_size);
  if (size < at) return Lost(step, size);
  LineOutcome outcome = LineOutcome::kWritten;
  if (size > at) {
    std::string there;
    const size_t covered = static_cast<size_t>(std::min<int64_t>(size - at, line.size()));
    DMLP_RETURN_IF_ERROR(ReadAt(fd_, at, covered, there, path_));
    if (line.substr(0, there.size()) != there)
      return ReplayDiverged(step, rank_,
                            path_ + " already holds other bytes at offset " + std::to_string(at) +
                                " (nothing overwritten)");
    if (there.size() == line.size()) outcome = LineOutcome::kConfirmed;
  }
  if (outcome == LineOutcome::kWritten) DMLP_RETURN_IF_ERROR(WriteAt(fd_, at, line, path_));
  line_ends_.push_back(at + static_cast<int64_t>(line.size()));
  return outcome;
}

}  // namespace dmlp
