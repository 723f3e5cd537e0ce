#include "verify/line_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/errno_error.h"
#include "common/receipt_reader.h"

namespace dmlp::verify {
namespace {

bool IsAllNul(const char* bytes, size_t count) {
  return std::all_of(bytes, bytes + count, [](char c) { return c == '\0'; });
}

}  // namespace

LineReader::LineReader(UniqueFd fd, std::string display_name)
    : fd_(std::move(fd)), display_name_(std::move(display_name)), buffer_(kBufferBytes) {}

Status LineReader::Fill() {
  for (;;) {
    ssize_t got = ::read(fd_.get(), buffer_.data() + end_, buffer_.size() - end_);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return ErrnoError("IO_ERROR", "read " + display_name_);
    if (got == 0) eof_ = true;
    end_ += static_cast<size_t>(got);
    bytes_read_ += static_cast<uint64_t>(got);
    return Status::Ok();
  }
}

void LineReader::Compact(size_t from) {
  std::memmove(buffer_.data(), buffer_.data() + from, end_ - from);
  end_ -= from;
  begin_ -= std::min(begin_, from);
}

Status LineReader::PeekAfterLine(size_t& line_begin, size_t kept) {
  if (begin_ != end_ || eof_) return Status::Ok();
  // Keep the current line's shown bytes (<= kMaxReceiptLineBytes, so the buffer has
  // room) and read on to learn whether the line is the file's last.
  std::memmove(buffer_.data(), buffer_.data() + line_begin, kept);
  line_begin = 0;
  begin_ = end_ = kept;
  return Fill();
}

Result<bool> LineReader::Next(Line* line) {
  if (begin_ == end_ && !eof_) {
    begin_ = end_ = 0;
    DMLP_RETURN_IF_ERROR(Fill());
  }
  if (begin_ == end_) return false;
  const char* newline = nullptr;
  size_t searched = begin_;
  for (;;) {
    newline = static_cast<const char*>(
        std::memchr(buffer_.data() + searched, '\n', end_ - searched));
    if (newline != nullptr || eof_) break;
    if (end_ - begin_ > kMaxReceiptLineBytes) return SkipLongLine(line);
    searched = end_ - begin_;
    Compact(begin_);
    DMLP_RETURN_IF_ERROR(Fill());
  }
  size_t line_begin = begin_;
  size_t line_end = newline != nullptr ? static_cast<size_t>(newline - buffer_.data()) : end_;
  size_t length = line_end - line_begin;
  size_t kept = std::min<size_t>(length, kMaxReceiptLineBytes);
  begin_ = newline != nullptr ? line_end + 1 : end_;
  DMLP_RETURN_IF_ERROR(PeekAfterLine(line_begin, kept));
  line->number = ++line_number_;
  line->length = length;
  line->has_newline = newline != nullptr;
  line->is_last = begin_ == end_ && eof_;
  line->too_long = length > kMaxReceiptLineBytes;
  line->text = std::string_view(buffer_.data() + line_begin, kept);
  line->all_nul = length > 0 && IsAllNul(line->text.data(), kept);
  return true;
}

Result<bool> LineReader::SkipLongLine(Line* line) {
  long_prefix_.assign(buffer_.data() + begin_, 64);
  uint64_t length = end_ - begin_;
  bool all_nul = IsAllNul(buffer_.data() + begin_, end_ - begin_);
  bool has_newline = false;
  begin_ = end_ = 0;
  while (!has_newline) {
    DMLP_RETURN_IF_ERROR(Fill());
    if (end_ == 0 && eof_) break;
    auto* newline = static_cast<const char*>(std::memchr(buffer_.data(), '\n', end_));
    if (newline != nullptr) {
      begin_ = static_cast<size_t>(newline - buffer_.data()) + 1;
      length += begin_ - 1;
      all_nul = all_nul && IsAllNul(buffer_.data(), begin_ - 1);
      has_newline = true;
    } else {
      length += end_;
      all_nul = all_nul && IsAllNul(buffer_.data(), end_);
      end_ = 0;
    }
  }
  size_t unused = 0;
  DMLP_RETURN_IF_ERROR(PeekAfterLine(unused, 0));
  line->number = ++line_number_;
  line->length = length;
  line->has_newline = has_newline;
  line->is_last = begin_ == end_ && eof_;
  line->too_long = true;
  line->text = long_prefix_;
  line->all_nul = all_nul;
  return true;
}

}  // namespace dmlp::verify
