// defines: LossCell, RankStepState, AgreementCell, StepGap, RunTrace
//
// What the receipt merge (receipt_set.h) saw step by step, kept for the HTML
// report's pictures with memory bounded whatever the step count:
//   - the loss curve: metrics.jsonl's loss per step (the lowest rank's when
//     metrics.jsonl is not read), as min/max per bucket (step_buckets.h), plus
//     the first kHeadSteps steps exactly, so a log-scaled steps axis shows
//     the start of a long run point by point;
//   - the rank x step strip: per bucket and rank, whether the rank agreed with
//     the majority of ranks, disagreed, or had no record at a step;
//   - the curve's gaps (the first kMaxGaps, all counted) and the last step
//     every rank wrote.
// It is filled by the same pass that makes the findings: no second verifier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "verify/step_buckets.h"

namespace dmlp::verify {

/// The loss over a range of steps: extremes survive folding, so spikes stay visible.
struct LossCell {
  double min = 0, max = 0;
  int64_t first_step = 0, last_step = 0;  // 0: empty
  bool empty() const { return first_step == 0; }
  void Include(int64_t step, double loss);
  void Fold(const LossCell& other);
};

/// Flags, so a folded cell can say "agreed at some steps and differed at others".
enum RankStepState : uint8_t { kRankAgrees = 1, kRankDiffers = 2, kRankAbsent = 4 };

/// Per rank (in the order RunTrace::ranks lists them), the OR of its RankStepState flags.
struct AgreementCell {
  std::vector<uint8_t> flags;
  bool empty() const { return flags.empty(); }
  void Fold(const AgreementCell& other);
};

/// A stretch of steps over which one rank was in one state (StateOf's result).
struct StateRun {
  int64_t first = 0, last = 0;  // steps, inclusive (to the bucket width)
  uint8_t state = kRankAgrees;  // one RankStepState: kRankDiffers wins over kRankAbsent over kRankAgrees
};

/// The single state a folded cell is drawn as: any difference shows, then any absence.
uint8_t StateOf(uint8_t flags);

struct StepGap {
  int64_t first = 0, last = 0;  // steps missing from the curve, inclusive
};

class RunTrace {
 public:
  static constexpr size_t kBuckets = 2048;
  static constexpr int64_t kHeadSteps = 1024;
  static constexpr size_t kMaxGaps = 64;

  RunTrace() : loss_head_(kHeadSteps), loss_(kBuckets), agreement_(kBuckets) {}

  /// Names the ranks the strip has rows for, and which file the curve comes from.
  void Begin(std::vector<int64_t> ranks, std::string curve_source);
  /// One merged step, steps strictly increasing. `states`: one RankStepState per
  /// rank; `loss`: the curve source's loss text at this step, if it has one.
  void OnStep(int64_t step, const std::vector<uint8_t>& states, std::optional<std::string_view> loss);

  const std::vector<int64_t>& ranks() const { return ranks_; }
  const std::string& curve_source() const { return curve_source_; }
  /// Steps 1..kHeadSteps, one per bucket.
  const StepBuckets<LossCell>& loss_head() const { return loss_head_; }
  const StepBuckets<LossCell>& loss() const { return loss_; }
  const StepBuckets<AgreementCell>& agreement() const { return agreement_; }
  const std::vector<StepGap>& gaps() const { return gaps_; }
  int64_t gap_count() const { return gap_count_; }
  /// The highest step at which every rank has a record (0: none).
  int64_t last_complete_step() const { return last_complete_step_; }
  /// The highest step seen in any file.
  int64_t last_step() const { return last_step_; }
  /// The first and last step on the curve (0 when empty).
  int64_t curve_first_step() const { return curve_first_; }
  int64_t curve_last_step() const { return curve_last_; }
  /// The states over steps 1..last_step() of the ranks at indexes [begin, end) taken
  /// together (flags OR-ed), equal neighbours collapsed.
  std::vector<StateRun> RankRuns(size_t begin, size_t end) const;

 private:
  std::vector<int64_t> ranks_;
  std::string curve_source_;
  StepBuckets<LossCell> loss_head_, loss_;
  StepBuckets<AgreementCell> agreement_;
  std::vector<StepGap> gaps_;
  int64_t gap_count_ = 0;
  int64_t last_complete_step_ = 0, last_step_ = 0, curve_first_ = 0, curve_last_ = 0;
};

}  // namespace dmlp::verify
