// defines: ProgressReporter
//
// Rank 0's progress line for humans on stderr: step, steps/s and ETA. On a
// terminal it redraws one line at most 4 times a second; otherwise (a log
// file, dmlp-launch's pipe) it prints a line at most every 30 s plus the first
// and last step, so logs of long runs stay small.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace dmlp {

class ProgressReporter {
 public:
  /// `first_step` is the first step this process computes (after a resume, > 1).
  ProgressReporter(std::FILE* stream, int64_t first_step, int64_t total_steps);
  /// Reports that `step` finished (the receipt may still be in the digest pipeline).
  void StepDone(int64_t step);
  /// Ends the terminal line, if one is open.
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  std::FILE* stream_;
  bool interactive_;
  int64_t first_step_, total_steps_;
  Clock::time_point start_, last_print_;
  bool line_open_ = false;
};

}  // namespace dmlp
