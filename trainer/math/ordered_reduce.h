// defines: ReductionLayout, FoldShardsInOrder, PackForAllToAll
//
// Ordered reduction (docs/architecture.md, "The invariants"): the reduced vector is the P gradient values
// followed by the shard's loss sum, padded with zeros to a multiple of the
// world size W so that every rank owns one equal slice. Each rank sends slice q
// of each of its shard partials to rank q (all-to-all); since ranks own
// consecutive shards, rank q then holds all DATA_SHARDS partials of its slice in
// global shard order and folds them left to right, ((s0 + s1) + s2) + ...; an
// all-gather of the folded slices gives every rank the full sum. Every addition
// happens in this code in that fixed order, so the collectives only move bytes
// and NUM_PROCESSES (W) cannot change a bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dmlp {

struct ReductionLayout {
  size_t parameter_count = 0;  // P
  size_t world_size = 1;       // W
  size_t shards_per_rank = 1;  // local shards
  /// P + 1 (loss) rounded up to a multiple of W.
  size_t padded_length() const {
    return (parameter_count + 1 + world_size - 1) / world_size * world_size;
  }
  size_t slice_length() const { return padded_length() / world_size; }
  size_t loss_index() const { return parameter_count; }
};

/// out[e] = ((partials[0][e] + partials[1][e]) + ...) for e < length, where
/// partial s starts at partials + s * stride. REQUIRES: shards >= 1.
void FoldShardsInOrder(const float* partials, size_t shards, size_t stride, size_t length,
                       float* out);
/// Rearranges local shard partials (shard s at partials + s * stride, slice q
/// at its float q * slice) into all-to-all blocks [destination rank][shard][slice].
void PackForAllToAll(const float* partials, size_t local_shards, size_t stride, size_t world_size,
                     size_t slice, float* send);

}  // namespace dmlp
