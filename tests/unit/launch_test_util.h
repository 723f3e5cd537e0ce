// defines: testing::CapturingConsole
//
// Test helpers shared by the launcher's in-process tests.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "launch/console.h"

namespace dmlp::testing {

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
