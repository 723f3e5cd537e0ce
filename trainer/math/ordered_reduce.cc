#include "trainer/math/ordered_reduce.h"

#include <cstring>

namespace dmlp {

void FoldShardsInOrder(const float* partials, size_t shards, size_t stride, size_t length,
                       float* out) {
  // Left fold, shard by shard: out = s0 + s1; out += s2; ... Each element sees
  // the additions in shard order whatever the vectorization of the inner loop.
  if (shards == 1) {
    std::memcpy(out, partials, length * sizeof(float));
    return;
  }
  const float* second = partials + stride;
  for (size_t e = 0; e < length; ++e) out[e] = partials[e] + second[e];
  for (size_t shard = 2; shard < shards; ++shard) {
    const float* partial = partials + shard * stride;
    for (size_t e = 0; e < length; ++e) out[e] += partial[e];
  }
}

void PackForAllToAll(const float* partials, size_t local_shards, size_t stride, size_t world_size,
                     size_t slice, float* send) {
  for (size_t destination = 0; destination < world_size; ++destination) {
    for (size_t shard = 0; shard < local_shards; ++shard) {
      std::memcpy(send + (destination * local_shards + shard) * slice,
                  partials + shard * stride + destination * slice, slice * sizeof(float));
    }
  }
}

}  // namespace dmlp
