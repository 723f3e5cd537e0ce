// defines: ParseTolerance, RelativeDifference, StepRange, LossComparison, CompareLosses,
//          AddLossFindings, StepRangesText, LossComparisonText
//
// --against GOLDEN --tolerance REL RUN: for runs that cannot give the same bits
// (the reference JAX job against dmlp, CPU against CUDA, fp32 against tf32),
// the two loss curves are compared step by step instead of the receipts:
//
//   relative difference at step s = |loss_run(s) - loss_golden(s)| / |loss_golden(s)|
//
// (0 where both are 0, infinite where only GOLDEN's is). The runs agree when
// every step both have is within REL (<=), and they have steps in common; a
// curve without a record yet (a live run before its first step) is compared
// with nothing and is INCOMPLETE, never a loss difference. The
// losses come from each run's metrics.jsonl where it has one, else from its
// lowest-ranked receipt file (one run's ranks agree, or that run already
// failed). Steps only one run has are reported like the bitwise comparison's
// (against.prefix / against.incomplete), never compared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "verify/compare.h"
#include "verify/findings.h"

namespace dmlp::verify {

/// REL as given to --tolerance: a number of the settings' grammar (common/number_grammar.h),
/// finite and >= 0 ("1e-4", "0.001", "0"). USAGE_ERROR naming the text otherwise (also "nan", "inf", "0x1p-4").
Result<double> ParseTolerance(std::string_view text);

/// |run - golden| / |golden|; 0 when both are 0, +infinity when only golden is.
double RelativeDifference(double golden, double run);

/// Steps first..last, inclusive.
struct StepRange {
  int64_t first = 0, last = 0;
  friend bool operator==(const StepRange&, const StepRange&) = default;
};

/// "1-50", "1-3, 5-9", "none".
std::string StepRangesText(const std::vector<StepRange>& ranges);

struct LossComparison {
  double tolerance = 0;
  std::string golden_source, run_source;  // the file each curve came from ("metrics.jsonl", "rank-0.jsonl")
  std::vector<StepRange> compared;        // the steps both runs have, in order
  int64_t compared_steps = 0;
  double largest = 0;                     // the largest relative difference over compared steps
  int64_t largest_step = 0;               // where (the first such step); 0 when nothing was compared
  std::string golden_at_largest, run_at_largest;  // the loss texts at largest_step
  int64_t first_exceeding = 0;            // the first step whose difference exceeds tolerance; 0: none
  double first_exceeding_difference = 0;
  std::string golden_at_first, run_at_first;  // the loss texts at first_exceeding
  int64_t exceeding_steps = 0;
  int64_t golden_last = 0, run_last = 0;  // the last step of each curve
  int64_t last_common = 0;                // the last step both have

  /// Every compared step within tolerance, and at least one compared.
  bool within() const { return compared_steps > 0 && first_exceeding == 0; }
};

/// "losses within 0.0001 relative at steps 1-50 (largest 3.1e-06 at step 44)", or
/// "losses beyond 0.0001 relative from step 12 (7 of 50 steps), compared at steps 1-50 (largest ...)".
std::string LossComparisonText(const LossComparison& comparison);

/// Reads both curves to the end and compares them step by step.
Result<LossComparison> CompareLosses(const ReceiptFile& golden, const ReceiptFile& run, double tolerance);

/// against.loss_exceeds when not within (or no step in common though both
/// curves have steps); against.prefix / against.incomplete when one curve
/// ends first (finished or not, as in compare.h), or both have no record yet.
void AddLossFindings(const LossComparison& comparison, const ReceiptFile& golden, const ReceiptFile& run,
                     bool golden_finished, bool run_finished, FindingSink& sink);

}  // namespace dmlp::verify
