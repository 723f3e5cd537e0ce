// defines: Finding, FindingSink
//
// A finding is one defect or observation, named by a catalog id
// (finding_catalog.h). The sink keeps counts of every finding but stores only a
// bounded number of them (per id and file, and in total), so a hostile file of a
// million bad lines costs counters, not memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "verify/finding_catalog.h"

namespace dmlp::verify {

struct Finding {
  std::string id;
  Severity severity = Severity::kError;
  std::string file;  // path as the user gave the run directory, plus the file name
  int64_t line = 0;  // 1-based line number; 0 when the finding is not about one line
  int64_t step = 0;  // 0 when the finding is not about one step
  std::optional<std::string> expected, actual;
  std::string message;

  /// A finding with its severity from the catalog (unknown ids count as errors).
  static Finding Of(std::string_view id, std::string file, std::string message);
  Finding& AtLine(int64_t number) { line = number; return *this; }
  Finding& AtStep(int64_t number) { step = number; return *this; }
  Finding& Expect(std::string expected_value, std::string actual_value) {
    expected = std::move(expected_value);
    actual = std::move(actual_value);
    return *this;
  }
};

class FindingSink {
 public:
  static constexpr size_t kKeepPerIdAndFile = 20;
  static constexpr size_t kKeepTotal = 2000;

  /// Counts the finding and keeps it if the caps allow.
  void Add(Finding finding);

  size_t errors() const { return errors_; }
  size_t incompletes() const { return incompletes_; }
  size_t warnings() const { return warnings_; }
  size_t infos() const { return infos_; }
  size_t total() const { return errors_ + incompletes_ + warnings_ + infos_; }
  /// How many findings were counted but not kept.
  size_t dropped() const { return total() - kept_.size(); }
  /// How many findings with this id were counted.
  size_t Count(std::string_view id) const;
  /// Kept findings, in the order they were added.
  const std::vector<Finding>& kept() const { return kept_; }

 private:
  std::vector<Finding> kept_;
  std::map<std::pair<std::string, std::string>, size_t> per_id_file_;
  std::map<std::string, size_t, std::less<>> per_id_;
  size_t errors_ = 0, incompletes_ = 0, warnings_ = 0, infos_ = 0;
};

}  // namespace dmlp::verify
