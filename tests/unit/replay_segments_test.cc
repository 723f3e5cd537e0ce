#include "verify/replay_segments.h"

#include <gtest/gtest.h>

namespace dmlp::verify {
namespace {

std::vector<std::pair<int64_t, int64_t>> Bounds(const std::vector<ReplaySegment>& segments) {
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (const ReplaySegment& segment : segments) bounds.emplace_back(segment.from, segment.to);
  return bounds;
}

TEST(ReplaySegmentsTest, CheckpointsCutTheRunFromStepZeroToItsEnd) {
  EXPECT_EQ(Bounds(SegmentsBetween({6, 2, 4}, 7)),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 4}, {4, 6}, {6, 7}}));
  // A checkpoint at the last step starts nothing; none at all is one segment from the initial state.
  EXPECT_EQ(Bounds(SegmentsBetween({4, 8}, 8)), (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 8}}));
  EXPECT_EQ(Bounds(SegmentsBetween({}, 5)), (std::vector<std::pair<int64_t, int64_t>>{{0, 5}}));
}

TEST(ReplaySegmentsTest, ASeedChoosesTheSameSegmentsEveryTime) {
  const std::vector<ReplaySegment> all = SegmentsBetween({10, 20, 30, 40, 50, 60, 70, 80, 90}, 100);
  const auto chosen = ChooseSegments(all, 3, 42);
  ASSERT_EQ(chosen.size(), 3u);
  EXPECT_EQ(Bounds(chosen), Bounds(ChooseSegments(all, 3, 42)));
  for (size_t i = 1; i < chosen.size(); ++i) EXPECT_LT(chosen[i - 1].from, chosen[i].from);  // step order
  bool another_choice = false;
  for (uint64_t seed = 0; seed < 20 && !another_choice; ++seed)
    another_choice = Bounds(ChooseSegments(all, 3, seed)) != Bounds(chosen);
  EXPECT_TRUE(another_choice);
  EXPECT_EQ(ChooseSegments(all, std::nullopt, 1).size(), all.size());
  EXPECT_EQ(ChooseSegments(all, 50, 1).size(), all.size());
}

TEST(ReplaySegmentsTest, MissProbabilityIsTheHypergeometricZeroTerm) {
  // 1 wrong segment of 4, 3 drawn: missed only when it is the one left out.
  EXPECT_DOUBLE_EQ(MissProbability(4, 3, 0.25), 0.25);
  EXPECT_DOUBLE_EQ(MissProbability(10, 10, 0.1), 0.0);
  EXPECT_DOUBLE_EQ(MissProbability(10, 0, 0.5), 1.0);
  // 12 of 120 wrong, 12 drawn: C(108,12)/C(120,12), about 0.26.
  EXPECT_NEAR(MissProbability(120, 12, 0.1), 0.2645, 1e-3);
}

}  // namespace
}  // namespace dmlp::verify
