#include "trainer/cpu/slice_checksum.h"

#include <cstring>

#include "trainer/math/cpu_clones.h"

namespace dmlp {
namespace {

constexpr uint64_t kPositionKey = kChecksumPositionKey;

inline uint64_t Mix(uint64_t x) {
  ChecksumMix(x);
  return x;
}

// Integer arithmetic only, so every clone's sum is the same number. The
// loop is vectorized, and it is the checksum's cost: the passes that take
// their terms while they read (checksummed_passes.h) wait on it, not on
// memory. So the position keys run as a sum (one add per word, where
// (first_word + i) * kPositionKey was a second 64-bit multiply), and the
// x86-64-v4 clone has AVX-512DQ's 64-bit multiply, which "avx512f" alone
// builds from three 32-bit ones. bench/transport_bench measures it against
// the memory's bandwidth.
DMLP_CPU_FMA_CLONES  // no FMA here: these are the clones whose levels include AVX-512DQ
uint64_t WordTerms(const unsigned char* bytes, uint64_t first_word, size_t count) {
  uint64_t sum = 0;
  uint64_t key = first_word * kPositionKey;  // Key(first_word + i), mod 2^64
  for (size_t i = 0; i < count; ++i) {
    uint64_t word;  // a slice may start 4 bytes past an 8-byte boundary: read bytes, not a uint64_t
    std::memcpy(&word, bytes + i * sizeof word, sizeof word);
    sum += Mix(word ^ key);
    key += kPositionKey;
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
