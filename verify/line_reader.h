// defines: Line, LineReader
//
// Line framing of a receipt file, streamed through one fixed buffer: memory is
// the same for ten lines or ten million. Each line comes with what framing
// checks need: whether it ended in '\n' and whether anything follows it (a
// torn last line is incomplete, the same damage elsewhere an error). Lines
// longer than kMaxReceiptLineBytes are skipped up to their '\n' and reported as
// too long, never buffered whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "verify/run_dir.h"

namespace dmlp::verify {

struct Line {
  std::string_view text;  // without the '\n'; valid until the next Next(); cut for too-long lines
  int64_t number = 0;     // 1-based
  uint64_t length = 0;    // the full length, without the '\n'
  bool has_newline = false;
  bool is_last = false;   // nothing follows this line in the file
  bool too_long = false;  // length > kMaxReceiptLineBytes; `text` holds only its start
  bool all_nul = false;   // every byte of the line (all `length` of them, not only `text`) is NUL
};

class LineReader {
 public:
  static constexpr size_t kBufferBytes = 64 * 1024;

  /// Reads from `fd` (owned); `display_name` names the file in errors.
  LineReader(UniqueFd fd, std::string display_name);
  /// The next line: true and `*line` set, false at end of file, IO_ERROR on a failed read.
  Result<bool> Next(Line* line);
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  Status Fill();               // one read() after end_; sets eof_
  void Compact(size_t from);   // moves [from, end_) to the front
  Result<bool> SkipLongLine(Line* line);
  // Refills when the buffer ends right after a line, keeping its first `kept` bytes.
  Status PeekAfterLine(size_t& line_begin, size_t kept);

  UniqueFd fd_;
  std::string display_name_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buffer_[begin_, end_)
  bool eof_ = false;
  int64_t line_number_ = 0;
  uint64_t bytes_read_ = 0;
  std::string long_prefix_;  // the start of a too-long line
};

}  // namespace dmlp::verify
