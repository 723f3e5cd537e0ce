#include "trainer/cpu/slice_checksum.h"

#include <cstring>

#include "trainer/cpu/cpu_clones.h"

namespace dmlp {
namespace {

constexpr uint64_t kPositionKey = 0x9e3779b97f4a7c15;  // 2^64 / golden ratio: consecutive keys far apart
constexpr uint64_t kMixMultiplier = 0xd6e8feb86659fd93;  // odd: the multiply is a bijection

inline uint64_t Mix(uint64_t x) {
  x ^= x >> 32;
  x *= kMixMultiplier;
  return x ^ (x >> 32);
}

// Integer arithmetic only, so every clone's sum is the same number; the
// loop is vectorized (64-bit multiplies as 32-bit halves below AVX-512DQ):
// bench/transport_bench measures it against the memory's bandwidth.
DMLP_CPU_CLONES
uint64_t WordTerms(const unsigned char* bytes, uint64_t first_word, size_t count) {
  uint64_t sum = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t word;  // a slice may start 4 bytes past an 8-byte boundary: read bytes, not a uint64_t
    std::memcpy(&word, bytes + i * sizeof word, sizeof word);
    sum += Mix(word ^ ((first_word + i) * kPositionKey));
  }
  return sum;
}

}  // namespace

uint64_t PieceTerms(const float* piece, size_t slice_offset, size_t count) {
  const size_t whole_words = count / kChecksumWordFloats;
  const uint64_t first_word = slice_offset / kChecksumWordFloats;
  uint64_t sum = WordTerms(reinterpret_cast<const unsigned char*>(piece), first_word, whole_words);
  if (count % kChecksumWordFloats != 0) {
    uint64_t last = 0;  // the odd float, padded with zeros
    std::memcpy(&last, piece + count - 1, sizeof(float));
    sum += Mix(last ^ ((first_word + whole_words) * kPositionKey));
  }
  return sum;
}

uint64_t ChecksumTerms(const float* slice, size_t first, size_t count) {
  return PieceTerms(slice + first, first, count);
}

uint64_t FinishChecksum(uint64_t terms, size_t count) { return Mix(terms ^ Mix(count)); }

uint64_t SliceChecksum(const float* slice, size_t count) {
  return FinishChecksum(ChecksumTerms(slice, 0, count), count);
}

}  // namespace dmlp
