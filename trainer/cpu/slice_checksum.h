// defines: ChecksumTerms, PieceTerms, FinishChecksum, SliceChecksum, kChecksumWordFloats,
//          ChecksumMix, kChecksumPositionKey, kChecksumMixMultiplier
//
// A fast 64-bit checksum of the bytes a rank publishes through the shared
// memory segment (collectives_shm.h), which each reader recomputes from
// what it read: a write into the segment by anybody else between the two shows as
// a mismatch. It is no defence against a writer who knows this format (the
// checksums lie in the same segment: docs/reliability.md), and it never
// touches the bytes it covers, so it cannot change a receipt bit.
//
// The checksum of n 8-byte words w_0 .. w_{n-1} (a last odd float padded with
// zeros) is Finish(sum over i of Mix(w_i ^ Key(i)), n), sums modulo 2^64.
// Mix is a bijection (xor-shift, odd multiply, xor-shift), so a change of one
// word always changes the sum; Key(i) makes every position's term differ, so
// moved or swapped words show too; a change of several words cancels out with
// a chance of about 2^-64. The sum does not care where it is split, which lets
// a caller spread one slice over its threads (ChecksumTerms on pieces that
// start at a multiple of kChecksumWordFloats, added up), and lets a pass that
// reads a slice for another purpose (the fold, the optimizer) add up the terms
// of what it read, wherever it keeps the floats (PieceTerms on its copy).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dmlp {

/// Floats per checksum word: a piece other than the last starts and ends on a multiple of this.
inline constexpr size_t kChecksumWordFloats = 2;

/// Key(i) = i * kChecksumPositionKey, mod 2^64.
inline constexpr uint64_t kChecksumPositionKey = 0x9e3779b97f4a7c15;  // 2^64 / golden ratio: keys far apart
inline constexpr uint64_t kChecksumMixMultiplier = 0xd6e8feb86659fd93;  // odd: the multiply is a bijection

/// Mix, in place, of one word or of each lane of a GCC vector of words (the
/// passes that take their terms in registers, checksummed_passes.cc; in
/// place: a vector passed by value would depend on the clone's ABI).
template <typename Words>
inline void ChecksumMix(Words& x) {
  x ^= x >> 32;
  x *= kChecksumMixMultiplier;
  x ^= x >> 32;
}

/// The sum of the terms of floats [first, first + count) of a slice that
/// starts at `slice`. REQUIRES: first is a multiple of kChecksumWordFloats.
uint64_t ChecksumTerms(const float* slice, size_t first, size_t count);

/// The sum of the terms of `count` floats read from `piece` (any memory, a
/// copy say) that lie at float `slice_offset` of their slice: ChecksumTerms
/// of the slice's floats there when the copy is exact. REQUIRES: slice_offset
/// is a multiple of kChecksumWordFloats; `count` is odd only where the piece
/// ends its slice (the last float is the odd one, padded with zeros).
uint64_t PieceTerms(const float* piece, size_t slice_offset, size_t count);

/// The checksum of a slice of `count` floats whose terms add up to `terms`.
uint64_t FinishChecksum(uint64_t terms, size_t count);

/// ChecksumTerms and FinishChecksum over a whole slice, on this thread.
uint64_t SliceChecksum(const float* slice, size_t count);

}  // namespace dmlp
