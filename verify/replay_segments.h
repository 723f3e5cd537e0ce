// defines: ReplaySegment, SegmentsBetween, ChooseSegments, MissProbability
//
// What `dmlp-verify --replay` recomputes: the run cut at its kept checkpoints
// (and step 0, the plan's initial state) into segments, each replayable alone
// from the state at its start. A sampled audit picks some of them with a seeded
// generator of its own (splitmix64, not <random>'s distributions, whose output
// the C++ standard leaves to each library), so a seed names the same segments
// on every machine and an audit can be repeated.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace dmlp::verify {

/// Steps from+1 .. to, recomputed from the state after step `from` (0: the initial state).
struct ReplaySegment {
  int64_t from = 0;
  int64_t to = 0;
  int64_t steps() const { return to - from; }
};

/// The segments from 0 through each checkpoint step below `final_step` to `final_step`.
/// REQUIRES: final_step >= 1; steps outside 1..final_step-1 are ignored.
std::vector<ReplaySegment> SegmentsBetween(const std::vector<int64_t>& checkpoint_steps, int64_t final_step);

/// `count` of `all` chosen by `seed` (every one when count is nullopt or not
/// below their number), in step order.
std::vector<ReplaySegment> ChooseSegments(const std::vector<ReplaySegment>& all, std::optional<int64_t> count,
                                          uint64_t seed);

/// The chance that `chosen` segments drawn at random from `total` miss every
/// one of a fraction `wrong_fraction` of them (those holding a wrong step):
/// C(total - wrong, chosen) / C(total, chosen), wrong = ceil(fraction x total).
double MissProbability(int64_t total, int64_t chosen, double wrong_fraction);

}  // namespace dmlp::verify
