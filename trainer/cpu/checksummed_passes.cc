#include "trainer/cpu/checksummed_passes.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "trainer/cpu/adam_cpu.h"
#include "trainer/cpu/cpu_parallel.h"
#include "trainer/cpu/slice_checksum.h"

namespace dmlp {

static_assert(kChecksummedBlockFloats % kChecksumWordFloats == 0, "every block but a slice's last starts a word");

// Block by block: the sum starts as shard 0's copy and adds each later
// shard's copy in shard order, so every element sees ((s0 + s1) + s2) + ...,
// as in FoldShardsInOrder (one shard: a copy). The sum is written to `out`
// once per block, from the stack, where its terms were taken.
void FoldShardsChecksummed(const float* partials, size_t shards, size_t stride, size_t count,
                           size_t slice_offset, float* out, uint64_t* terms) {
  float sum[kChecksummedBlockFloats];
  float read[kChecksummedBlockFloats];
  for (size_t done = 0; done < count; done += kChecksummedBlockFloats) {
    const size_t length = std::min(kChecksummedBlockFloats, count - done);
    const size_t offset = slice_offset + done;
    std::memcpy(sum, partials + done, length * sizeof(float));
    terms[0] += PieceTerms(sum, offset, length);
    for (size_t shard = 1; shard < shards; ++shard) {
      std::memcpy(read, partials + shard * stride + done, length * sizeof(float));
      terms[shard] += PieceTerms(read, offset, length);
      for (size_t e = 0; e < length; ++e) sum[e] += read[e];
    }
    terms[shards] += PieceTerms(sum, offset, length);
    std::memcpy(out + done, sum, length * sizeof(float));
  }
}

// Each element's sum is whole on one thread; the terms add up in any split
// at whole words.
std::vector<uint64_t> FoldSliceChecksummed(const float* partials, size_t shards, size_t stride, size_t slice,
                                           size_t grain, float* out) {
  std::vector<uint64_t> terms(shards + 1, 0);
  std::mutex terms_lock;
  ParallelRanges(slice, grain, [&](size_t first, size_t last) {
    std::vector<uint64_t> piece(shards + 1, 0);
    FoldShardsChecksummed(partials + first, shards, stride, last - first, first, out + first, piece.data());
    std::lock_guard<std::mutex> hold(terms_lock);
    for (size_t i = 0; i <= shards; ++i) terms[i] += piece[i];
  });
  for (uint64_t& checksum : terms) checksum = FinishChecksum(checksum, slice);
  return terms;
}

// AdamUpdate itself, a block at a time, on the copy of the gradient.
uint64_t AdamUpdateChecksummed(const AdamScalars& scalars, const float* grad, float* params, float* mu,
                               float* nu, size_t count, size_t slice_offset) {
  float read[kChecksummedBlockFloats];
  uint64_t terms = 0;
  for (size_t done = 0; done < count; done += kChecksummedBlockFloats) {
    const size_t length = std::min(kChecksummedBlockFloats, count - done);
    std::memcpy(read, grad + done, length * sizeof(float));
    terms += PieceTerms(read, slice_offset + done, length);
    AdamUpdate(scalars, read, params + done, mu + done, nu + done, length);
  }
  return terms;
}

// Element-wise, as the unchecked loop: each parameter's update reads only its
// own four values, whichever piece or copy they come from. The checksum's
// terms add up in any split at whole words.
uint64_t AdamUpdateSliceChecksummed(const AdamScalars& scalars, const float* reduced, size_t start, size_t slice,
                                    size_t parameters, size_t grain, float* params, float* mu, float* nu,
                                    float* loss) {
  const size_t end = start + slice;
  const size_t updated_end = std::clamp(parameters, start, end);
  const size_t whole = (updated_end - start) / kChecksumWordFloats * kChecksumWordFloats;
  std::atomic<uint64_t> terms{0};
  ParallelRanges(whole, grain, [&](size_t first, size_t last) {
    const size_t at = start + first;
    terms.fetch_add(AdamUpdateChecksummed(scalars, reduced + at, params + at, mu + at, nu + at, last - first, first),
                    std::memory_order_relaxed);
  });
  const size_t rest = start + whole;
  const std::vector<float> copy(reduced + rest, reduced + end);
  if (updated_end > rest) AdamUpdate(scalars, copy.data(), params + rest, mu + rest, nu + rest, updated_end - rest);
  if (parameters >= rest && parameters < end) *loss = copy[parameters - rest];
  return FinishChecksum(terms.load() + PieceTerms(copy.data(), whole, copy.size()), slice);
}

}  // namespace dmlp
