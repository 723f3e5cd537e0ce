#include "trainer/collectives.h"

#include "trainer/math/ordered_reduce.h"

namespace dmlp {

Result<ShardSlices> Collectives::Exchange(const float* partials, size_t local_shards, size_t stride,
                                          size_t slice) {
  const size_t world = static_cast<size_t>(world_size());
  // With one local shard the partial is already laid out [destination][slice].
  const float* send = partials;
  if (local_shards > 1) {
    exchange_send_.resize(world * local_shards * slice);
    PackForAllToAll(partials, local_shards, stride, world, slice, exchange_send_.data());
    send = exchange_send_.data();
  }
  exchange_receive_.resize(world * local_shards * slice);
  DMLP_RETURN_IF_ERROR(AllToAll(send, exchange_receive_.data(), local_shards * slice));
  return ShardSlices{exchange_receive_.data(), slice};
}

Status Collectives::Gather(float* own, float* reduced, size_t slice) { return AllGather(own, reduced, slice); }

}  // namespace dmlp
