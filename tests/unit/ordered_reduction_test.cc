// The ordered reduction's schedule (trainer/reduction/ordered_reduction.h)
// over a transport that moves bytes between threads, one per rank: whatever
// NUM_PROCESSES, the bits of one rank's left fold over all shards.
#include "trainer/reduction/ordered_reduction.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace dmlp {
namespace {

class PlainFold final : public ShardFold {
 public:
  Status Fold(const float* partials, size_t shards, size_t stride, size_t length, float* out) override {
    FoldShardsInOrder(partials, shards, stride, length, out);
    return Status::Ok();
  }
};

// What the ranks' transports share: each call publishes this rank's buffer,
// waits for every rank's, copies, and waits again before any is reused.
struct Loopback {
  explicit Loopback(size_t world) : world(world), barrier(static_cast<std::ptrdiff_t>(world)), buffers(world) {}
  size_t world;
  std::barrier<> barrier;
  std::vector<float*> buffers;
  std::vector<size_t> allreduce_counts;  // rank 0's record of AllReduceSum's counts
};

class LoopbackTransport final : public ReductionTransport {
 public:
  LoopbackTransport(Loopback& net, size_t rank) : net_(net), rank_(rank) {}

  Result<ShardSlices> Exchange(const float* partials, size_t local_shards, size_t stride, size_t slice) override {
    Publish(const_cast<float*>(partials));
    received_.resize(net_.world * local_shards * slice);
    for (size_t source = 0; source < net_.world; ++source) {
      for (size_t shard = 0; shard < local_shards; ++shard) {
        std::memcpy(received_.data() + (source * local_shards + shard) * slice,
                    net_.buffers[source] + shard * stride + rank_ * slice, slice * sizeof(float));
      }
    }
    net_.barrier.arrive_and_wait();
    return ShardSlices{received_.data(), slice};
  }

  Status Gather(float* own, float* reduced, size_t slice) override {
    EXPECT_EQ(own, reduced + rank_ * slice);
    Publish(reduced);
    for (size_t source = 0; source < net_.world; ++source) {
      if (source != rank_)
        std::memcpy(reduced + source * slice, net_.buffers[source] + source * slice, slice * sizeof(float));
    }
    net_.barrier.arrive_and_wait();
    return Status::Ok();
  }

  // The sum in rank order, the same bits on every rank.
  Status AllReduceSum(float* data, size_t count) override {
    Publish(data);
    std::vector<float> sum(net_.buffers[0], net_.buffers[0] + count);
    for (size_t source = 1; source < net_.world; ++source)
      for (size_t e = 0; e < count; ++e) sum[e] += net_.buffers[source][e];
    if (rank_ == 0) net_.allreduce_counts.push_back(count);
    net_.barrier.arrive_and_wait();
    std::copy(sum.begin(), sum.end(), data);
    return Status::Ok();
  }

 private:
  void Publish(float* buffer) {
    net_.buffers[rank_] = buffer;
    net_.barrier.arrive_and_wait();
  }

  Loopback& net_;
  size_t rank_;
  std::vector<float> received_;
};

std::vector<std::vector<float>> RandomPartials(size_t shards, size_t values) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> wide(-1e6f, 1e6f);
  std::vector<std::vector<float>> partials(shards, std::vector<float>(values));
  for (auto& partial : partials)
    for (float& value : partial) value = wide(random) * std::ldexp(1.0f, -int(random() % 30));
  return partials;
}

// Every rank's reduced vector (its first P + 1 floats) after one Reduce over
// `shard_partials` (P + 1 floats each) split over `world` ranks.
std::vector<std::vector<float>> ReduceWithRanks(Reduction reduction,
                                                const std::vector<std::vector<float>>& shard_partials,
                                                size_t parameters, size_t world, Loopback* net = nullptr) {
  const size_t shards = shard_partials.size();
  const ReductionLayout layout{parameters, world, shards / world};
  Loopback own_net(world);
  if (net == nullptr) net = &own_net;
  std::vector<std::vector<float>> results(world);
  std::vector<std::thread> ranks;
  for (size_t rank = 0; rank < world; ++rank) {
    ranks.emplace_back([&, rank] {
      // An odd stride, as the CUDA platform's aligned partials have.
      const size_t stride = layout.padded_length() + 3;
      std::vector<float> partials(layout.shards_per_rank * stride, 0.0f), reduced(layout.padded_length());
      for (size_t k = 0; k < layout.shards_per_rank; ++k) {
        const auto& partial = shard_partials[rank * layout.shards_per_rank + k];
        std::copy(partial.begin(), partial.end(), partials.begin() + static_cast<std::ptrdiff_t>(k * stride));
      }
      PlainFold fold;
      LoopbackTransport transport(*net, rank);
      OrderedReduction schedule(reduction, layout, static_cast<int>(rank), shards, fold,
                                world == 1 ? nullptr : &transport);
      Result<const float*> sum = schedule.Reduce({partials.data(), stride, reduced.data()}, "step 1 microbatch 0");
      ASSERT_TRUE(sum.ok()) << sum.status().ToString();
      results[rank].assign(*sum, *sum + parameters + 1);
    });
  }
  for (std::thread& rank : ranks) rank.join();
  return results;
}

TEST(OrderedReductionTest, BitsDoNotDependOnTheNumberOfRanks) {
  const size_t parameters = 37, shards = 8;
  const auto partials = RandomPartials(shards, parameters + 1);
  std::vector<float> flat;
  for (const auto& partial : partials) flat.insert(flat.end(), partial.begin(), partial.end());
  std::vector<float> expected(parameters + 1);
  FoldShardsInOrder(flat.data(), shards, parameters + 1, parameters + 1, expected.data());
  for (size_t world : {1u, 2u, 4u, 8u}) {
    const auto results = ReduceWithRanks(Reduction::kOrdered, partials, parameters, world);
    for (size_t rank = 0; rank < world; ++rank) {
      ASSERT_EQ(std::memcmp(expected.data(), results[rank].data(), (parameters + 1) * sizeof(float)), 0)
          << "world " << world << " rank " << rank;
    }
  }
}

TEST(OrderedReductionTest, AllreduceSumsThePaddedVectorOfTheLocalFolds) {
  const size_t parameters = 10, world = 3;  // padded: 12
  const auto partials = RandomPartials(6, parameters + 1);
  Loopback net(world);
  const auto results = ReduceWithRanks(Reduction::kAllreduce, partials, parameters, world, &net);
  EXPECT_EQ(net.allreduce_counts, std::vector<size_t>{12});
  for (size_t e = 0; e <= parameters; ++e) {
    float sum = partials[0][e] + partials[1][e];
    for (size_t rank = 1; rank < world; ++rank) sum += partials[2 * rank][e] + partials[2 * rank + 1][e];
    for (size_t rank = 0; rank < world; ++rank) EXPECT_EQ(results[rank][e], sum) << e;
  }
}

TEST(OrderedReductionTest, OneShardOnOneRankIsItsOwnSum) {
  PlainFold fold;
  OrderedReduction schedule(Reduction::kOrdered, ReductionLayout{3, 1, 1}, 0, 1, fold, nullptr);
  std::vector<float> partial = {1, 2, 3, 4}, reduced(4);
  Result<const float*> sum = schedule.Reduce({partial.data(), 4, reduced.data()}, "");
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(*sum, partial.data());
}

// A transport whose check of what it delivered fails, as the shared segment's does.
class RefusingTransport final : public ReductionTransport {
 public:
  Result<ShardSlices> Exchange(const float* partials, size_t, size_t stride, size_t) override {
    return ShardSlices{partials, stride};
  }
  Status FoldExchanged(ShardFold&, ShardSlices, size_t, size_t, float*) override {
    return Status::Error("COLLECTIVE_ERROR", "reduce: the shared segment's rank 1's partials, slice 0 changed");
  }
  Status Gather(float*, float*, size_t) override { return Status::Ok(); }
  Status AllReduceSum(float*, size_t) override { return Status::Ok(); }
};

TEST(OrderedReductionTest, AFailedCheckOfTheExchangedBytesNamesTheUpdate) {
  PlainFold fold;
  RefusingTransport transport;
  OrderedReduction schedule(Reduction::kOrdered, ReductionLayout{3, 2, 1}, 0, 2, fold, &transport);
  std::vector<float> partial(4), reduced(4);
  Result<const float*> sum = schedule.Reduce({partial.data(), 4, reduced.data()}, "step 3 microbatch 1");
  ASSERT_FALSE(sum.ok());
  EXPECT_EQ(sum.status().ToString(), "COLLECTIVE_ERROR: step 3 microbatch 1: reduce: the shared segment's "
                                     "rank 1's partials, slice 0 changed");
}

}  // namespace
}  // namespace dmlp
