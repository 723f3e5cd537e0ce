// defines: ReceiptFile, LineOutcome
//
// One receipt file (rank-<r>.jsonl or metrics.jsonl) as its rank writes it
// (docs/architecture.md, "The invariants": a receipt line is never written
// blind). The rank keeps its own offset and writes each line with pwrite at
// it, never O_APPEND and never the descriptor's position: a process restored
// from a freeze finds its files as the restore left them, which may be newer
// or older than its image.
// Before each write: one fstat, and where the file already reaches past the
// offset, a pread of the bytes the line would cover:
//   - identical bytes: a confirmed replay, nothing written;
//   - different bytes: REPLAY_DIVERGED, nothing written;
//   - the file shorter than the offset: RECEIPTS_LOST naming the steps whose
//     lines this rank had written and the file no longer holds.
// A file that ends inside the line with the line's own first bytes is a torn
// write of the same line; the whole line is written again (same bytes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dmlp {

enum class LineOutcome { kWritten, kConfirmed };

class ReceiptFile {
 public:
  ReceiptFile() = default;
  /// `fd` is open for reading and writing (not owned); `path` names it in errors.
  ReceiptFile(int fd, std::string path, int64_t rank) : fd_(fd), path_(std::move(path)), rank_(rank) {}

  /// Writes (or confirms) the line of `step` at this file's offset.
  /// REQUIRES: steps come in order 1, 2, ...; `line` ends with '\n'.
  Result<LineOutcome> Put(int64_t step, std::string_view line);

  /// Bytes of the lines put so far (the offset of the next line).
  int64_t offset() const { return line_ends_.empty() ? 0 : line_ends_.back(); }

 private:
  Status Lost(int64_t step, int64_t size) const;

  int fd_ = -1;
  std::string path_;
  int64_t rank_ = 0;
  std::vector<int64_t> line_ends_;  // end offset of step s's line at [s - 1]
};

/// "REPLAY_DIVERGED: step=<s> rank=<r> <detail>": one code and one prefix for
/// every replay that does not reproduce what an earlier attempt recorded.
Status ReplayDiverged(int64_t step, int64_t rank, const std::string& detail);

}  // namespace dmlp
