// SharedMemoryCollectives as the ordered reduction's transport
// (trainer/reduction/reduction_transport.h): every rank's partials lie in the
// segment's reduction area, [rank][local shard][padded], i.e. [shard][padded],
// so the exchange moves no byte: once all are written (a barrier), each rank
// folds its slice of every shard, in shard order, into its slice of the
// segment's reduced vector; once all slices are there (a barrier), every
// rank's optimizer reads the whole vector. Nobody writes a partial again
// before the next update's first barrier, which each rank reaches after its
// optimizer, nor a slice before that barrier. Two barriers, no copies but
// the fold's and the optimizer's blocks on their own stacks, where they take
// the checksums of what they read (checksummed_passes.h).
#include <atomic>
#include <vector>

#include "trainer/cpu/checksummed_passes.h"
#include "trainer/cpu/collectives_shm.h"
#include "trainer/cpu/cpu_parallel.h"
#include "trainer/cpu/slice_checksum.h"

namespace dmlp {
namespace {

// Floats per piece of the rank's threads: the CPU backend's element grain, a
// multiple of a checksum word, so the terms of the pieces add up in any split.
constexpr size_t kElementGrain = 4096;
static_assert(kElementGrain % kChecksumWordFloats == 0);

// SliceChecksum on the rank's threads.
uint64_t ParallelChecksum(const float* slice, size_t count) {
  std::atomic<uint64_t> terms{0};
  ParallelRanges(count, kElementGrain, [&](size_t first, size_t last) {
    terms.fetch_add(ChecksumTerms(slice, first, last - first), std::memory_order_relaxed);
  });
  return FinishChecksum(terms.load(), count);
}

}  // namespace

ReductionArea SharedMemoryCollectives::Area() {
  if (Partials(0) == nullptr) return {};  // no reduction area (REDUCTION=allreduce): any buffers
  return {Partials(rank_), Reduced(), this};
}

// The checksums of this rank's partials, every slice of every local shard: a
// pass of its own, the one the checks still add. The partials are written by
// the backward pass's GEMM tiles, bias-gradient sums and loss, milliseconds
// earlier and out of the caches by now, and the shard audit's test fault
// flips a bit after them; terms taken inside those kernels would seal bytes
// before the fault and put checksum work into the code that defines the
// gradient's bits. It reads the bytes and never writes them: no bit changes.
// REQUIRES (with an area): `partials` is Area().partials, `stride` the padded length.
Result<ShardSlices> SharedMemoryCollectives::Exchange(const float* partials, size_t local_shards, size_t stride,
                                                      size_t slice) {
  if (Partials(0) == nullptr) return Collectives::Exchange(partials, local_shards, stride, slice);
  const size_t slices = local_shards * static_cast<size_t>(world_size_);
  for (size_t i = 0; i < slices; ++i) {
    const float* written = partials + i * slice;
    SealSlice(written, ParallelChecksum(written, slice));
  }
  DMLP_RETURN_IF_ERROR(Barrier());
  return ShardSlices{Partials(0) + static_cast<size_t>(rank_) * slice, stride};
}

// The fold takes the checksums of this rank's slice of every partial from
// the bytes it reads, and of its reduced slice from those it writes.
Status SharedMemoryCollectives::FoldExchanged(ShardFold& fold, ShardSlices exchanged, size_t shards, size_t slice,
                                              float* own) {
  if (Partials(0) == nullptr) return Collectives::FoldExchanged(fold, exchanged, shards, slice, own);
  const std::vector<uint64_t> checksums =
      FoldSliceChecksummed(exchanged.first, shards, exchanged.stride, slice, kElementGrain, own);
  for (size_t shard = 0; shard < shards; ++shard) {
    DMLP_RETURN_IF_ERROR(CheckSlice(exchanged.first + shard * exchanged.stride, checksums[shard]));
  }
  SealSlice(own, checksums[shards]);
  return Status::Ok();
}

Status SharedMemoryCollectives::Gather(float* own, float* reduced, size_t slice) {
  if (Partials(0) == nullptr) return Collectives::Gather(own, reduced, slice);
  return Barrier();
}

}  // namespace dmlp
