// The phase profile's bookkeeping (trainer/cuda/phase_profile.h) without a
// GPU: an interval the driver will not time (a pair of events recorded across
// a CUDA checkpoint and restore) is left out and counted, and the rank goes on.
#include <gtest/gtest.h>

#include "trainer/cuda/phase_profile.h"

namespace dmlp {
namespace {

using cuda::PhaseProfile;

TEST(PhaseProfile, AnIntervalTheDriverRefusesIsLeftOutNotAnError) {
  // Begin, data, compute | checkpoint | collectives, optimizer.
  const PhaseProfile::Marks marks = {{-1, 0},
                                     {PhaseProfile::kData, 1},
                                     {PhaseProfile::kCompute, 2},
                                     {PhaseProfile::kCollectives, 3},
                                     {PhaseProfile::kOptimizer, 4}};
  double seconds[PhaseProfile::kPhaseCount] = {};
  const int64_t refused = PhaseProfile::AddIntervals(
      marks,
      [](size_t from, size_t to, float* milliseconds) {
        if (from == 2 && to == 3) return cudaErrorInvalidResourceHandle;  // across the checkpoint
        *milliseconds = static_cast<float>(to);
        return cudaSuccess;
      },
      seconds);
  EXPECT_EQ(refused, 1);
  EXPECT_DOUBLE_EQ(seconds[PhaseProfile::kData], 0.001);
  EXPECT_DOUBLE_EQ(seconds[PhaseProfile::kCompute], 0.002);
  EXPECT_DOUBLE_EQ(seconds[PhaseProfile::kCollectives], 0.0);
  EXPECT_DOUBLE_EQ(seconds[PhaseProfile::kOptimizer], 0.004);
}

TEST(PhaseProfile, ABeginEndsNoInterval) {
  const PhaseProfile::Marks marks = {{-1, 0}, {PhaseProfile::kData, 1}, {-1, 2}, {PhaseProfile::kData, 3}};
  double seconds[PhaseProfile::kPhaseCount] = {};
  int calls = 0;
  EXPECT_EQ(PhaseProfile::AddIntervals(marks,
                                       [&](size_t, size_t, float* milliseconds) {
                                         ++calls;
                                         *milliseconds = 1.0f;
                                         return cudaSuccess;
                                       },
                                       seconds),
            0);
  EXPECT_EQ(calls, 2);
  EXPECT_DOUBLE_EQ(seconds[PhaseProfile::kData], 0.002);
}

}  // namespace
}  // namespace dmlp
