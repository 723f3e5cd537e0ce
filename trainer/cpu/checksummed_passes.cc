#include "trainer/cpu/checksummed_passes.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "trainer/cpu/adam_cpu.h"
#include "trainer/cpu/cpu_parallel.h"
#include "trainer/cpu/slice_checksum.h"
#include "trainer/math/cpu_clones.h"

namespace dmlp {

static_assert(kChecksummedBlockFloats % kChecksumWordFloats == 0, "every block but a slice's last starts a word");

namespace {

// 16 floats as 8 checksum words, in one AVX-512 register or several narrower
// ones (GCC's vector extensions, lowered for each clone): the passes load a
// chunk once, take its terms and do their arithmetic on the same register.
// A float vector's + is an IEEE add in every lane, as the scalar loop's.
typedef uint64_t ChunkWords __attribute__((vector_size(64)));
typedef float ChunkFloats __attribute__((vector_size(64)));
constexpr size_t kChunkFloats = sizeof(ChunkFloats) / sizeof(float);
constexpr size_t kChunkWords = kChunkFloats / kChecksumWordFloats;
static_assert(kChecksummedBlockFloats % kChunkFloats == 0);

// Key(first_word + lane) in each lane. Vectors by reference: by value they
// would depend on the clone's ABI.
void SetChunkKeys(uint64_t first_word, ChunkWords& keys) {
  for (size_t lane = 0; lane < kChunkWords; ++lane) keys[lane] = (first_word + lane) * kChecksumPositionKey;
}

// terms += the terms of `words` under `keys`.
inline void AddTerms(const ChunkWords& words, const ChunkWords& keys, ChunkWords& terms) {
  ChunkWords mixed = words ^ keys;
  ChecksumMix(mixed);
  terms += mixed;
}

// The same into kChunkWords lanes in memory, which need no vector alignment.
inline void AddTerms(const ChunkWords& words, const ChunkWords& keys, uint64_t* lanes) {
  ChunkWords terms;
  std::memcpy(&terms, lanes, sizeof terms);
  AddTerms(words, keys, terms);
  std::memcpy(lanes, &terms, sizeof terms);
}

// sum += added, lane by lane, as FoldShardsInOrder's scalar `out += partial`
// runs on x86: where both are NaN, the result is the left one's (quieted),
// whatever the payloads. IEEE 754 leaves that choice open and GCC treats +
// as commutative, so a vector add alone took the right one's payload in
// some clones; the select makes the rule explicit. Where sum is not a NaN the
// add decides alone, and it is the same IEEE add in either operand order.
typedef int32_t ChunkLanes __attribute__((vector_size(64)));
inline void AddLeftFirst(ChunkFloats& sum, const ChunkFloats& added) {
  constexpr int32_t kQuietBit = 0x00400000;
  const ChunkLanes left_nan = sum != sum;  // all ones where sum is a NaN
  ChunkLanes left, result;
  std::memcpy(&left, &sum, sizeof left);
  const ChunkFloats added_up = sum + added;
  std::memcpy(&result, &added_up, sizeof result);
  result = (left_nan & (left | kQuietBit)) | (~left_nan & result);
  std::memcpy(&sum, &result, sizeof sum);
}

uint64_t SumOfLanes(const ChunkWords& terms) {
  uint64_t sum = 0;
  for (size_t lane = 0; lane < kChunkWords; ++lane) sum += terms[lane];
  return sum;
}

uint64_t SumOfLanes(const uint64_t* lanes) {
  uint64_t sum = 0;
  for (size_t lane = 0; lane < kChunkWords; ++lane) sum += lanes[lane];
  return sum;
}

// Copies `count` floats (a multiple of kChunkFloats) and returns the terms of
// the copy, which lie at word `first_word` of their slice.
DMLP_CPU_FMA_CLONES  // the levels with AVX-512DQ's 64-bit multiply (slice_checksum.cc)
uint64_t CopyWithTerms(const float* from, float* to, size_t count, uint64_t first_word) {
  ChunkWords keys, terms{};
  SetChunkKeys(first_word, keys);
  for (size_t at = 0; at < count; at += kChunkFloats) {
    ChunkWords words;
    std::memcpy(&words, from + at, sizeof words);
    AddTerms(words, keys, terms);
    std::memcpy(to + at, &words, sizeof words);
    keys += kChunkWords * kChecksumPositionKey;
  }
  return SumOfLanes(terms);
}

// The fold of whole chunks, each loaded once into registers: the sum starts
// as shard 0's chunk and adds each later shard's in shard order, so every
// element sees ((s0 + s1) + s2) + ..., as in FoldShardsInOrder (one shard: a
// copy); the terms are of the loaded and the stored registers, added to
// lanes [s * kChunkWords, (s + 1) * kChunkWords) for shard s, to those of
// `shards` for the sum.
DMLP_CPU_FMA_CLONES
void FoldChunks(const float* partials, size_t shards, size_t stride, size_t count, uint64_t first_word,
                float* out, uint64_t* lanes) {
  ChunkWords keys;
  SetChunkKeys(first_word, keys);
  for (size_t at = 0; at < count; at += kChunkFloats) {
    ChunkWords words;
    std::memcpy(&words, partials + at, sizeof words);
    AddTerms(words, keys, lanes);
    ChunkFloats sum, added;  // the loaded words' floats (memcpy between registers: a reinterpretation)
    std::memcpy(&sum, &words, sizeof sum);
    for (size_t shard = 1; shard < shards; ++shard) {
      std::memcpy(&words, partials + shard * stride + at, sizeof words);
      AddTerms(words, keys, lanes + shard * kChunkWords);
      std::memcpy(&added, &words, sizeof added);
      AddLeftFirst(sum, added);
    }
    std::memcpy(&words, &sum, sizeof words);
    AddTerms(words, keys, lanes + shards * kChunkWords);
    std::memcpy(out + at, &words, sizeof words);
    keys += kChunkWords * kChecksumPositionKey;
  }
}

}  // namespace

// Whole chunks in registers; the last few floats of a piece (fewer than a
// chunk, the odd one included) through a copy on the stack.
void FoldShardsChecksummed(const float* partials, size_t shards, size_t stride, size_t count,
                           size_t slice_offset, float* out, uint64_t* terms) {
  const size_t chunked = count / kChunkFloats * kChunkFloats;
  std::vector<uint64_t> lanes((shards + 1) * kChunkWords, 0);
  FoldChunks(partials, shards, stride, chunked, slice_offset / kChecksumWordFloats, out, lanes.data());
  for (size_t i = 0; i <= shards; ++i) terms[i] += SumOfLanes(lanes.data() + i * kChunkWords);
  const size_t rest = count - chunked;
  if (rest == 0) return;
  float sum[kChunkFloats];
  float read[kChunkFloats];
  const size_t offset = slice_offset + chunked;
  std::memcpy(sum, partials + chunked, rest * sizeof(float));
  terms[0] += PieceTerms(sum, offset, rest);
  for (size_t shard = 1; shard < shards; ++shard) {
    std::memcpy(read, partials + shard * stride + chunked, rest * sizeof(float));
    terms[shard] += PieceTerms(read, offset, rest);
    for (size_t e = 0; e < rest; ++e) sum[e] += read[e];
  }
  terms[shards] += PieceTerms(sum, offset, rest);
  std::memcpy(out + chunked, sum, rest * sizeof(float));
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

// AdamUpdate itself, a block at a time, on the copy of the gradient whose
// terms were taken as it was copied.
uint64_t AdamUpdateChecksummed(const AdamScalars& scalars, const float* grad, float* params, float* mu,
                               float* nu, size_t count, size_t slice_offset) {
  float read[kChecksummedBlockFloats];
  uint64_t terms = 0;
  for (size_t done = 0; done < count; done += kChecksummedBlockFloats) {
    const size_t length = std::min(kChecksummedBlockFloats, count - done);
    const size_t chunked = length / kChunkFloats * kChunkFloats;
    terms += CopyWithTerms(grad + done, read, chunked, (slice_offset + done) / kChecksumWordFloats);
    std::memcpy(read + chunked, grad + done + chunked, (length - chunked) * sizeof(float));
    terms += PieceTerms(read + chunked, slice_offset + done + chunked, length - chunked);
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
