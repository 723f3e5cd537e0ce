#include "verify/replay_segments.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace dmlp::verify {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): the same sequence from a seed everywhere.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<ReplaySegment> SegmentsBetween(const std::vector<int64_t>& checkpoint_steps, int64_t final_step) {
  std::set<int64_t> starts = {0};
  for (int64_t step : checkpoint_steps)
    if (step >= 1 && step < final_step) starts.insert(step);
  std::vector<ReplaySegment> segments;
  for (auto it = starts.begin(); it != starts.end(); ++it) {
    auto next = std::next(it);
    segments.push_back({*it, next == starts.end() ? final_step : *next});
  }
  return segments;
}

std::vector<ReplaySegment> ChooseSegments(const std::vector<ReplaySegment>& all, std::optional<int64_t> count,
                                          uint64_t seed) {
  if (!count || *count >= static_cast<int64_t>(all.size())) return all;
  // A partial Fisher-Yates shuffle of the indices; the modulo's bias is below
  // 2^-40 for any run of fewer than 2^24 segments, and the same on every machine.
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  uint64_t state = seed;
  for (size_t i = 0; i < static_cast<size_t>(*count); ++i)
    std::swap(order[i], order[i + NextRandom(state) % (order.size() - i)]);
  order.resize(static_cast<size_t>(*count));
  std::sort(order.begin(), order.end());
  std::vector<ReplaySegment> chosen;
  for (size_t index : order) chosen.push_back(all[index]);
  return chosen;
}

double MissProbability(int64_t total, int64_t chosen, double wrong_fraction) {
  const int64_t wrong = static_cast<int64_t>(std::ceil(wrong_fraction * static_cast<double>(total) - 1e-9));
  double miss = 1.0;
  // C(total - wrong, chosen) / C(total, chosen) = prod_{i<chosen} (total - wrong - i) / (total - i).
  for (int64_t i = 0; i < chosen && miss > 0; ++i)
    miss *= std::max<double>(0.0, static_cast<double>(total - wrong - i)) / static_cast<double>(total - i);
  return miss;
}

}  // namespace dmlp::verify
