// defines: kSampleChunk, JaxBitsLoop, JaxNormalLoop, JaxTruncatedNormalLoop
//
// The host's array loops over trainer/math/sample_math.h, shared by data.cc and
// init.cc: each one is compiled per ISA (DMLP_CPU_FMA_CLONES) and vectorized by
// the compiler, so threefry runs 8-16 counters at once and erf_inv's FMAs are
// vector FMA instructions. Lanes do the same IEEE operations as the scalar
// functions the CUDA kernels call: the bits do not depend on the vector width
// (tests/unit/sample_math_test.cc holds the loops against the scalar code).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dmlp {

/// Elements per pass of the callers' chunked loops (arrays on the stack).
inline constexpr size_t kSampleChunk = 256;

/// bits[n] = JaxBits32({key0[n], key1[n]}, index[n]) for n < count, the
/// 64-bit element index given as its words (index_high[n], index_low[n]).
void JaxBitsLoop(const uint32_t* key0, const uint32_t* key1, const uint32_t* index_high,
                 const uint32_t* index_low, uint32_t* bits, size_t count);

/// out[n] = JaxNormalFromBits(bits[n]) for n < count.
void JaxNormalLoop(const uint32_t* bits, float* out, size_t count);

/// out[n] = JaxTruncatedNormalFromBits(bits[n]) * scale for n < count.
void JaxTruncatedNormalLoop(const uint32_t* bits, float scale, float* out, size_t count);

}  // namespace dmlp
