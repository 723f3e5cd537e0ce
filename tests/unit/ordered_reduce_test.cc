#include "trainer/math/ordered_reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace dmlp {
namespace {

TEST(OrderedReduceTest, FoldAddsLeftToRight) {
  // (1e8 + 1) - 1e8 = 0 in float32, while 1e8 + (1 - 1e8) would be 1 or 0 differently.
  std::vector<float> partials = {1e8f, 1.0f, -1e8f, 1.0f};
  float out = 0;
  FoldShardsInOrder(partials.data(), 4, 1, 1, &out);
  EXPECT_EQ(out, ((1e8f + 1.0f) + -1e8f) + 1.0f);
  EXPECT_EQ(out, 1.0f);
}

TEST(OrderedReduceTest, LayoutPadsToEqualSlices) {
  ReductionLayout layout{10, 4, 2};
  EXPECT_EQ(layout.padded_length(), 12u);  // 10 gradients + loss, rounded up to 4 slices
  EXPECT_EQ(layout.slice_length(), 3u);
  EXPECT_EQ(layout.loss_index(), 10u);
}

TEST(OrderedReduceTest, PackPutsSliceQOfEveryShardIntoBlockQ) {
  const size_t shards = 2, stride = 7, world = 2, slice = 3;  // stride past the padded 6
  std::vector<float> partials(shards * stride), send(world * shards * slice);
  for (size_t i = 0; i < partials.size(); ++i) partials[i] = static_cast<float>(i);
  PackForAllToAll(partials.data(), shards, stride, world, slice, send.data());
  for (size_t q = 0; q < world; ++q)
    for (size_t s = 0; s < shards; ++s)
      for (size_t i = 0; i < slice; ++i)
        EXPECT_EQ(send[(q * shards + s) * slice + i], static_cast<float>(s * stride + q * slice + i));
}

}  // namespace
}  // namespace dmlp
