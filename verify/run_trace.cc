#include "verify/run_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace dmlp::verify {

void LossCell::Include(int64_t step, double loss) {
  if (empty()) {
    min = max = loss;
    first_step = step;
  } else {
    min = std::min(min, loss);
    max = std::max(max, loss);
  }
  last_step = step;
}

void LossCell::Fold(const LossCell& other) {
  if (other.empty()) return;
  if (empty()) {
    *this = other;
    return;
  }
  min = std::min(min, other.min);
  max = std::max(max, other.max);
  first_step = std::min(first_step, other.first_step);
  last_step = std::max(last_step, other.last_step);
}

void AgreementCell::Fold(const AgreementCell& other) {
  if (flags.size() < other.flags.size()) flags.resize(other.flags.size(), 0);
  for (size_t rank = 0; rank < other.flags.size(); ++rank) flags[rank] |= other.flags[rank];
}

uint8_t StateOf(uint8_t flags) {
  if (flags & kRankDiffers) return kRankDiffers;
  if (flags & kRankAgrees && !(flags & kRankAbsent)) return kRankAgrees;
  return kRankAbsent;  // also a step no file has
}

std::vector<StateRun> RunTrace::RankRuns(size_t begin, size_t end) const {
  std::vector<StateRun> runs;
  const auto& cells = agreement_.cells();
  for (size_t i = 0; i < cells.size(); ++i) {
    const int64_t first = agreement_.FirstStepOf(i);
    if (first > last_step_) break;
    const int64_t last = std::min(last_step_, first + agreement_.width() - 1);
    uint8_t flags = 0;
    for (size_t rank = begin; rank < end && rank < cells[i].flags.size(); ++rank) flags |= cells[i].flags[rank];
    const uint8_t state = StateOf(flags);
    if (!runs.empty() && runs.back().state == state)
      runs.back().last = last;
    else
      runs.push_back(StateRun{first, last, state});
  }
  return runs;
}

void RunTrace::Begin(std::vector<int64_t> ranks, std::string curve_source) {
  ranks_ = std::move(ranks);
  curve_source_ = std::move(curve_source);
}

void RunTrace::OnStep(int64_t step, const std::vector<uint8_t>& states, std::optional<std::string_view> loss) {
  last_step_ = step;
  if (!states.empty() && std::none_of(states.begin(), states.end(), [](uint8_t s) { return s == kRankAbsent; }))
    last_complete_step_ = step;
  // Folded in place: no allocation per step once the bucket has its row.
  std::vector<uint8_t>& flags = agreement_.At(step).flags;
  if (flags.size() < states.size()) flags.resize(states.size(), 0);
  for (size_t rank = 0; rank < states.size(); ++rank) flags[rank] |= states[rank];
  if (!loss) return;
  // The receipt reader accepted the text as a finite float32 repr; strtod reads it exactly.
  const std::string text(*loss);
  const double value = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(value)) return;
  const int64_t expected = curve_last_ + 1;
  if (step > expected) {
    ++gap_count_;
    if (gaps_.size() < kMaxGaps) gaps_.push_back(StepGap{expected, step - 1});
  }
  if (curve_first_ == 0) curve_first_ = step;
  curve_last_ = step;
  if (step <= kHeadSteps) loss_head_.At(step).Include(step, value);
  loss_.At(step).Include(step, value);
}

}  // namespace dmlp::verify
