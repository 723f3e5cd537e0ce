#include "trainer/math/sample_loops.h"

#include "trainer/math/cpu_clones.h"
#include "trainer/math/sample_math.h"

namespace dmlp {

DMLP_CPU_FMA_CLONES
void JaxBitsLoop(const uint32_t* __restrict key0, const uint32_t* __restrict key1,
                 const uint32_t* __restrict index_high, const uint32_t* __restrict index_low,
                 uint32_t* __restrict bits, size_t count) {
  for (size_t n = 0; n < count; ++n) {
    const JaxKey words = Threefry2x32(JaxKey{key0[n], key1[n]}, index_high[n], index_low[n]);
    bits[n] = words.k0 ^ words.k1;  // JaxBits32, on the index's two words
  }
}

DMLP_CPU_FMA_CLONES
void JaxNormalLoop(const uint32_t* __restrict bits, float* __restrict out, size_t count) {
  for (size_t n = 0; n < count; ++n) out[n] = JaxNormalFromBits(bits[n]);
}

DMLP_CPU_FMA_CLONES
void JaxTruncatedNormalLoop(const uint32_t* __restrict bits, float scale, float* __restrict out,
                            size_t count) {
  for (size_t n = 0; n < count; ++n) out[n] = FMul(JaxTruncatedNormalFromBits(bits[n]), scale);
}

}  // namespace dmlp
