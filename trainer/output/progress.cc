#include "trainer/output/progress.h"

#include <unistd.h>

namespace dmlp {

ProgressReporter::ProgressReporter(std::FILE* stream, int64_t first_step, int64_t total_steps)
    : stream_(stream),
      interactive_(::isatty(::fileno(stream)) == 1),
      first_step_(first_step),
      total_steps_(total_steps),
      start_(Clock::now()),
      last_print_(start_) {}

void ProgressReporter::StepDone(int64_t step) {
  const Clock::time_point now = Clock::now();
  const auto since_print = now - last_print_;
  const bool edge = step == first_step_ || step == total_steps_;
  if (!edge && since_print < (interactive_ ? std::chrono::milliseconds(250)
                                           : std::chrono::milliseconds(30000)))
    return;
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double done = static_cast<double>(step - first_step_ + 1);
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double eta = rate > 0 ? static_cast<double>(total_steps_ - step) / rate : 0;
  std::fprintf(stream_, "%sdmlp-train: step %lld/%lld  %.2f steps/s  ETA %.0f s%s",
               interactive_ ? "\r" : "", static_cast<long long>(step),
               static_cast<long long>(total_steps_), rate, eta, interactive_ ? "   " : "\n");
  std::fflush(stream_);
  line_open_ = interactive_;
}

void ProgressReporter::Finish() {
  if (line_open_) std::fputc('\n', stream_);
  line_open_ = false;
}

}  // namespace dmlp
