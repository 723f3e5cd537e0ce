#include "launch/rank_stream.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launch/divergence_line.h"

namespace dmlp {
namespace {
constexpr size_t kReadBytes = 64 * 1024;
}  // namespace

RankStream::RankStream(int rank, StreamKind kind, UniqueFd pipe, UniqueFd log_file,
                       Console& console, bool shown)
    : rank_(rank),
      kind_(kind),
      pipe_(std::move(pipe)),
      log_file_(std::move(log_file)),
      console_(console),
      shown_(shown),
      prefixer_("[rank " + std::to_string(rank) + "] ") {}

bool RankStream::ReadOnce() {
  if (!pipe_.valid()) return false;
  char buffer[kReadBytes];
  ssize_t got;
  do {
    got = read(pipe_.get(), buffer, sizeof(buffer));
  } while (got < 0 && errno == EINTR);
  if (got < 0 && errno == EAGAIN) return true;
  if (got <= 0) return false;  // EOF, or a read error that no retry would fix
  Deliver(buffer, static_cast<size_t>(got));
  return true;
}

bool RankStream::ReadAvailable(size_t max_bytes) {
  size_t total = 0;
  while (pipe_.valid() && total < max_bytes) {
    char buffer[kReadBytes];
    ssize_t got = read(pipe_.get(), buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return true;  // drained for now; a writer is still there
    if (got <= 0) return false;
    Deliver(buffer, static_cast<size_t>(got));
    total += static_cast<size_t>(got);
  }
  return pipe_.valid();
}

void RankStream::Deliver(const char* data, size_t size) {
  if (log_file_.valid()) {
    std::string_view rest(data, size);
    if (!WriteAll(log_file_.get(), rest)) {
      int error = errno;
      console_.Notice("rank " + std::to_string(rank_) + " " + StreamName(kind_) +
                      " log: write failed (" + std::strerror(error) + "); log file is incomplete");
      log_file_.Reset();
    }
  }
  std::string lines = prefixer_.Feed(std::string_view(data, size));
  if (!lines.empty()) Show(lines);
}

void RankStream::Watch(const std::string& lines) {
  // Whole lines only (the prefixer's output), so a code cut by a pipe read is still seen.
  if (!MentionsHardwareFault(lines)) return;
  size_t start = 0;
  while (start < lines.size()) {
    size_t end = lines.find('\n', start);  // every line from the prefixer ends in '\n'
    std::string_view line(lines.data() + start, end - start);
    if (MentionsHardwareFault(line)) fault_line_ = line;
    start = end + 1;
  }
}

void RankStream::Show(const std::string& lines) {
  Watch(lines);
  if (shown_) {
    console_.RankLines(kind_, lines);
    return;
  }
  size_t start = 0;
  while (start < lines.size()) {
    size_t end = lines.find('\n', start);  // every line from the prefixer ends in '\n'
    hidden_tail_.push_back(lines.substr(start, end + 1 - start));
    if (hidden_tail_.size() > kTailLines) hidden_tail_.pop_front();
    start = end + 1;
  }
}

void RankStream::Close() {
  if (!pipe_.valid()) return;
  std::string last = prefixer_.Finish();
  if (!last.empty()) Show(last);
  pipe_.Reset();
  log_file_.Reset();
}

}  // namespace dmlp
