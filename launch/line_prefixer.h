// defines: LinePrefixer
//
// Turns one byte stream (a rank's stdout or stderr) into whole lines that each
// start with a prefix such as "[rank 3] ". Bytes arrive in pieces cut anywhere
// (a pipe read ends wherever the writer's write() ended); a line is released
// only once its '\n' has arrived, so two ranks' lines never interleave
// mid-line on the console. The unfinished tail is kept until more arrives or
// the stream ends (Finish).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dmlp {

class LinePrefixer {
 public:
  /// A line longer than this is shown as several lines of at most this many
  /// bytes, so one rank writing without newlines cannot exhaust memory.
  static constexpr size_t kDefaultMaxLineBytes = size_t{1} << 20;

  explicit LinePrefixer(std::string prefix, size_t max_line_bytes = kDefaultMaxLineBytes);

  /// Takes the next piece of the stream; returns the lines it completed, each
  /// prefixed and ending in '\n' (empty when none completed).
  std::string Feed(std::string_view data);
  /// End of stream: the unfinished last line, prefixed and given a '\n'; empty when none.
  std::string Finish();
  /// True while an unfinished line is held back.
  bool has_partial_line() const { return !pending_.empty(); }

 private:
  void Emit(std::string_view line_without_newline, std::string& out) const;

  std::string prefix_;
  size_t max_line_bytes_;
  std::string pending_;  // the unfinished line, without prefix
};

}  // namespace dmlp
