// defines: RankStream
//
// One rank's stdout or stderr as the launcher sees it: a non-blocking pipe
// read end, an optional raw log file (--log-dir), and a LinePrefixer so only
// whole "[rank R] " lines reach the console. A stream hidden by --show-ranks
// still feeds its log file and keeps its last lines, so a hidden rank that
// fails first can still be explained. Every stream also keeps the last line
// that names RANK_DIVERGED or SHARD_AUDIT_FAILED (divergence_line.h), so the
// launcher can say where a rank diverged whether or not it was shown.
#pragma once

#include <deque>
#include <string>

#include "launch/console.h"
#include "launch/line_prefixer.h"
#include "launch/unique_fd.h"

namespace dmlp {

class RankStream {
 public:
  /// Lines a hidden stream keeps for the failure report.
  static constexpr size_t kTailLines = 20;

  RankStream(int rank, StreamKind kind, UniqueFd pipe, UniqueFd log_file, Console& console,
             bool shown);

  int fd() const { return pipe_.get(); }
  bool open() const { return pipe_.valid(); }
  int rank() const { return rank_; }
  StreamKind kind() const { return kind_; }
  /// One read of up to 64 KiB (one per readiness event keeps chatty ranks from
  /// starving the others). Returns false at the end of the stream; the caller
  /// then calls Close() (after taking the descriptor out of its epoll set).
  bool ReadOnce();
  /// Reads until the pipe is empty, at most `max_bytes` (a rank that just
  /// exited: its last words come before the launcher's verdict). Returns false
  /// at the end of the stream, as ReadOnce.
  bool ReadAvailable(size_t max_bytes);
  /// Shows the unfinished last line and closes the pipe and the log file.
  void Close();
  /// The last lines of a hidden stream (prefixed); empty for a shown one.
  const std::deque<std::string>& hidden_tail() const { return hidden_tail_; }
  /// The last line (prefixed) that named a hardware-fault code; empty when none did.
  const std::string& fault_line() const { return fault_line_; }

 private:
  void Deliver(const char* data, size_t size);
  void Show(const std::string& lines);
  void Watch(const std::string& lines);

  int rank_;
  StreamKind kind_;
  UniqueFd pipe_;
  UniqueFd log_file_;
  Console& console_;
  bool shown_;
  LinePrefixer prefixer_;
  std::deque<std::string> hidden_tail_;
  std::string fault_line_;
};

}  // namespace dmlp
