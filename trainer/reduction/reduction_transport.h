// defines: ShardFold, ShardSlices, SliceSeals, ReductionArea, ReductionTransport
//
// What the ordered reduction (ordered_reduction.h) asks of a platform: one
// adder, ShardFold, and one byte mover, ReductionTransport. The schedule is
// written once over them; each platform brings its own: the CPU folds on its
// threads and moves bytes with Gloo over TCP (cpu/collectives_gloo.h) or in a
// shared segment (cpu/collectives_shm.h); the CUDA platform folds with a
// kernel and moves bytes with NCCL or Gloo staged through host memory
// (cuda/device_collectives.h). Buffers are in the platform's memory; counts
// are in floats.
//
// Bits: a transport only moves bytes, so which one ran cannot change a bit
// of REDUCTION=ordered; every addition is the ShardFold's, in shard order.
// The one exception is AllReduceSum, REDUCTION=allreduce's library sum, whose
// order is the library's (the fingerprint names it).
//
// Every call is collective: all ranks call it in the same order with the same
// counts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace dmlp {

/// The platform's adder: out[e] = ((s0[e] + s1[e]) + s2[e]) + ... for e <
/// length, where shard s starts at partials + s * stride
/// (trainer/math/ordered_reduce.h's FoldShardsInOrder, bit for bit).
/// REQUIRES: shards >= 1.
class ShardFold {
 public:
  virtual ~ShardFold() = default;
  virtual Status Fold(const float* partials, size_t shards, size_t stride, size_t length, float* out) = 0;
};

/// Where the exchange left this rank's slice of every global shard: shard
/// s's at first + s * stride, in global shard order.
struct ShardSlices {
  const float* first = nullptr;
  size_t stride = 0;
};

/// A memory area that other processes can write into: its writers seal what
/// they publish with a checksum (cpu/slice_checksum.h), and every reader
/// checks the checksum of what it read, from the bytes it used.
class SliceSeals {
 public:
  virtual ~SliceSeals() = default;
  /// Publishes `checksum` of the slice at `slice`, which this rank just wrote.
  virtual void SealSlice(const float* slice, uint64_t checksum) = 0;
  /// COLLECTIVE_ERROR when the slice's writer sealed other bytes than the
  /// `checksum` this rank read.
  virtual Status CheckSlice(const float* slice, uint64_t checksum) = 0;
};

/// Where a transport needs the reduction's buffers: in memory it shares with
/// the other ranks, or (all null) in the caller's own.
struct ReductionArea {
  float* partials = nullptr;   // this rank's [local shard][padded]
  float* reduced = nullptr;    // [padded]
  SliceSeals* seals = nullptr; // non-null: the area's readers check what they read
};

class ReductionTransport {
 public:
  virtual ~ReductionTransport() = default;

  /// Where the partials and the reduced vector must lie; all null: anywhere.
  virtual ReductionArea Area() { return {}; }
  /// Sends slice q (floats [q * slice, (q + 1) * slice)) of each local partial
  /// (local shard s at partials + s * stride) to rank q; returns where this
  /// rank's slice of every global shard now lies. Ranks own consecutive
  /// shards, so rank order is global shard order.
  virtual Result<ShardSlices> Exchange(const float* partials, size_t local_shards, size_t stride,
                                       size_t slice) = 0;
  /// Folds the exchanged slices of all `shards` into `own` with `fold`. A
  /// transport whose area others can write folds with its own checked fold
  /// instead (the same bits, its checksums taken from the bytes it adds).
  virtual Status FoldExchanged(ShardFold& fold, ShardSlices exchanged, size_t shards, size_t slice,
                               float* own) {
    return fold.Fold(exchanged.first, shards, exchanged.stride, slice, own);
  }
  /// Every rank's folded slice into every rank's `reduced`: rank q's from
  /// its `own`, which is reduced + q * slice (in place).
  virtual Status Gather(float* own, float* reduced, size_t slice) = 0;
  /// REDUCTION=allreduce: in place, every rank ends with the same bits, the
  /// library's sum over ranks of `data`.
  virtual Status AllReduceSum(float* data, size_t count) = 0;
};

}  // namespace dmlp
