// defines: StepBuckets
//
// Per-step values folded into a fixed number of equal-width step buckets, for
// pictures of runs of any length (verify/html_report.h). Memory is the bucket
// count, whatever the number of steps, and the step count need not be known
// up front: the width starts at 1 step and doubles (neighbours folded pairwise)
// whenever a step falls beyond the last bucket. Folding keeps what a picture
// must not lose (a loss spike, one disagreeing step) because a Cell's Fold
// keeps extremes and flags, never an average.
//
// A Cell is default-constructible (empty) and has
//   bool empty() const;  void Fold(const Cell& other);
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dmlp::verify {

template <class Cell>
class StepBuckets {
 public:
  /// REQUIRES: capacity >= 2 and even.
  explicit StepBuckets(size_t capacity) : cells_(capacity) {}

  /// The cell holding `step` (>= 1), coarsening first when it lies beyond the last bucket.
  Cell& At(int64_t step) {
    while ((step - 1) / width_ >= static_cast<int64_t>(cells_.size())) Coarsen();
    return cells_[static_cast<size_t>((step - 1) / width_)];
  }
  /// Steps per bucket: a power of two. Bucket i covers steps [i*width + 1, (i+1)*width].
  int64_t width() const { return width_; }
  /// All buckets, empty ones included, in step order.
  const std::vector<Cell>& cells() const { return cells_; }
  /// The first step bucket `index` covers.
  int64_t FirstStepOf(size_t index) const { return static_cast<int64_t>(index) * width_ + 1; }

 private:
  void Coarsen() {
    const size_t half = cells_.size() / 2;
    for (size_t i = 0; i < half; ++i) {
      Cell merged = std::move(cells_[2 * i]);
      if (!cells_[2 * i + 1].empty()) merged.Fold(cells_[2 * i + 1]);
      cells_[i] = std::move(merged);
    }
    for (size_t i = half; i < cells_.size(); ++i) cells_[i] = Cell();
    width_ *= 2;
  }

  std::vector<Cell> cells_;
  int64_t width_ = 1;
};

}  // namespace dmlp::verify
