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

// Simulates the all-to-all / fold / all-gather protocol for W ranks over the
// same DATA_SHARDS partials and checks every W gives the single-rank bits.
std::vector<float> ReduceWithRanks(const std::vector<std::vector<float>>& shard_partials,
                                   size_t parameters, size_t world) {
  const size_t shards = shard_partials.size();
  ReductionLayout layout{parameters, world, shards / world};
  const size_t padded = layout.padded_length(), slice = layout.slice_length();
  std::vector<std::vector<float>> send(world);
  for (size_t rank = 0; rank < world; ++rank) {
    std::vector<float> local(layout.shards_per_rank * padded, 0.0f);
    for (size_t k = 0; k < layout.shards_per_rank; ++k) {
      const auto& partial = shard_partials[rank * layout.shards_per_rank + k];
      std::memcpy(local.data() + k * padded, partial.data(), partial.size() * sizeof(float));
    }
    send[rank].resize(local.size());
    PackForAllToAll(layout, local.data(), send[rank].data());
  }
  std::vector<float> gathered(padded);
  for (size_t owner = 0; owner < world; ++owner) {
    std::vector<float> received(shards * slice);  // block p from rank p
    const size_t block = layout.shards_per_rank * slice;
    for (size_t source = 0; source < world; ++source)
      std::memcpy(received.data() + source * block, send[source].data() + owner * block,
                  block * sizeof(float));
    FoldShardsInOrder(received.data(), shards, slice, slice, gathered.data() + owner * slice);
  }
  return gathered;
}

TEST(OrderedReduceTest, BitsDoNotDependOnTheNumberOfRanks) {
  const size_t parameters = 37, shards = 8;
  std::mt19937 random(7);
  std::uniform_real_distribution<float> wide(-1e6f, 1e6f);
  std::vector<std::vector<float>> partials(shards, std::vector<float>(parameters + 1));
  for (auto& partial : partials)
    for (float& value : partial) value = wide(random) * std::ldexp(1.0f, -int(random() % 30));
  std::vector<float> single = ReduceWithRanks(partials, parameters, 1);
  for (size_t world : {2u, 4u, 8u}) {
    std::vector<float> multi = ReduceWithRanks(partials, parameters, world);
    ASSERT_EQ(std::memcmp(single.data(), multi.data(), (parameters + 1) * sizeof(float)), 0)
        << "world " << world;
  }
}

}  // namespace
}  // namespace dmlp
