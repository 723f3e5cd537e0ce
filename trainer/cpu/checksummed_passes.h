// defines: FoldShardsChecksummed, FoldSliceChecksummed, AdamUpdateChecksummed,
//          AdamUpdateSliceChecksummed, kChecksummedBlockFloats
//
// The two passes of the in place ordered reduction that read the shared
// segment (CpuBackend::ReduceShared and ReduceAndApply), each also adding up
// the checksum terms (slice_checksum.h) of the bytes it reads and writes
// there, so the transport's checks cost no second pass over memory
// (docs/performance.md). Each value is taken from the segment once and both
// the checksum and the arithmetic use that one copy: the fold loads 16
// floats into registers, adds up their terms and adds them to the sum there
// (the few floats past a piece's last 16 through a copy on the stack); Adam
// copies a block of the gradient to the stack, taking the terms of each
// register it copies, and AdamUpdate reads the copy. So the bytes checked
// are the bytes used, with no window between the two for another process
// to write in (docs/reliability.md).
//
// Bits: the copies are byte copies, and the arithmetic is FoldShardsInOrder's
// (each element's additions in shard order, each an IEEE add, whether in a
// vector lane or a scalar) and AdamUpdate itself on the copy, so the floats
// are those of the unchecked passes, NaN payloads, signed zeros and
// denormals included (tests/unit/checksummed_passes_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/math/adam.h"

namespace dmlp {

/// Floats per block of the gradient Adam copies to the stack (first-level cache).
inline constexpr size_t kChecksummedBlockFloats = 1024;

/// FoldShardsInOrder(partials, shards, stride, count, out), which also adds to
/// terms[s] the checksum terms of the floats it read from partial s, for
/// s < shards, and to terms[shards] those of the floats it wrote to `out`;
/// `partials` and `out` point at float `slice_offset` of their slices.
/// REQUIRES: shards >= 1; terms has shards + 1 entries; slice_offset as
/// PieceTerms's (a multiple of kChecksumWordFloats, odd count only at a
/// slice's end).
void FoldShardsChecksummed(const float* partials, size_t shards, size_t stride, size_t count,
                           size_t slice_offset, float* out, uint64_t* terms);

/// FoldShardsChecksummed over a whole slice of `slice` floats on the rank's
/// threads (ParallelRanges in pieces of `grain`); returns the checksums:
/// [s] of partial s's slice as read, for s < shards, and [shards] of the
/// slice written to `out`. REQUIRES: grain a multiple of kChecksumWordFloats.
std::vector<uint64_t> FoldSliceChecksummed(const float* partials, size_t shards, size_t stride, size_t slice,
                                           size_t grain, float* out);

/// AdamUpdate over `count` elements; returns the checksum terms of the
/// gradient floats it read, which lie at float `slice_offset` of their slice.
/// REQUIRES: as FoldShardsChecksummed's slice_offset.
uint64_t AdamUpdateChecksummed(const AdamScalars& scalars, const float* grad, float* params, float* mu,
                               float* nu, size_t count, size_t slice_offset);

/// Adam for the parameters (the floats below `parameters`) among floats
/// [start, start + slice) of the reduced vector `reduced`, on the rank's
/// threads (ParallelRanges in pieces of `grain`); returns the checksum of
/// that slice of `reduced` as the update read it, and sets *loss to the float
/// at `parameters` when the slice holds it. The floats past the slice's last
/// whole word of parameters (an odd last parameter, the loss, the padding:
/// a few) are copied once, and the update, *loss and the checksum read the
/// copy. REQUIRES: grain a multiple of kChecksumWordFloats.
uint64_t AdamUpdateSliceChecksummed(const AdamScalars& scalars, const float* reduced, size_t start, size_t slice,
                                    size_t parameters, size_t grain, float* params, float* mu, float* nu,
                                    float* loss);

}  // namespace dmlp
