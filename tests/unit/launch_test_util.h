// defines: testing::CapturingConsole, testing::RankReportOf
//
// Test helpers shared by the launcher's in-process tests.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "launch/console.h"
#include "launch/run_summary.h"

namespace dmlp::testing {

/// One rank's ending as the supervisor reports it (pid 100 + rank).
inline RankReport RankReportOf(int rank, RankEnding ending, ExitStatus status, double end_seconds,
                               int stop_signal = 0) {
  RankReport report;
  report.rank = rank;
  report.local_rank = rank;
  report.pid = 100 + rank;
  report.ending = ending;
  report.status = status;
  report.end_seconds = end_seconds;
  report.stop_signal = stop_signal;
  return report;
}

/// A Console that keeps what the supervisor printed, for assertions.
class CapturingConsole : public Console {
 public:
  void RankLines(StreamKind kind, std::string_view lines) override {
    (kind == StreamKind::kStdout ? out : err).append(lines);
  }
  void Notice(std::string_view text) override { notices.emplace_back(text); }
  bool HasNotice(const std::string& text) const {
    return std::find(notices.begin(), notices.end(), text) != notices.end();
  }
  std::string out, err;
  std::vector<std::string> notices;
};

}  // namespace dmlp::testing
