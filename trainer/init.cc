#include "trainer/init.h"

#include <cmath>
#include <string>

#include "trainer/philox.h"
#include "trainer/sample_math.h"

namespace dmlp {
namespace {

// Standard deviation of the standard normal truncated to (-2, 2), the constant
// flax (jax.nn.initializers.variance_scaling) divides by.
constexpr double kTruncatedNormalStddev = 0.87962566103423978;

// Fills out[e] = InitKernelValue(key, e, layer, scale) for e in [0, size).
// Chunked like GenerateSamples: Philox and the first Box-Muller pair for a
// whole chunk in vectorizable loops; the ~0.2% of elements whose z0 and z1 are
// both outside (-2, 2) take the scalar definition. Same bits either way.
void FillKernel(PhiloxKey key, uint32_t layer, float scale, size_t size, float* out) {
  constexpr size_t kChunk = 256;
  uint32_t w0[kChunk], w1[kChunk];
  float z0[kChunk], z1[kChunk];
  for (size_t start = 0; start < size; start += kChunk) {
    const size_t count = size - start < kChunk ? size - start : kChunk;
    for (size_t k = 0; k < count; ++k) {
      const PhiloxBlock words =
          Philox4x32_10(PhiloxBlock{static_cast<uint32_t>(start + k), layer, 0u, 0u}, key);
      w0[k] = words.w0, w1[k] = words.w1;
    }
    for (size_t k = 0; k < count; ++k) BoxMuller(w0[k], w1[k], &z0[k], &z1[k]);
    for (size_t k = 0; k < count; ++k) {
      const auto element = static_cast<uint32_t>(start + k);
      float z;
      if (z0[k] > -2.0f && z0[k] < 2.0f) {
        z = z0[k];
      } else if (z1[k] > -2.0f && z1[k] < 2.0f) {
        z = z1[k];
      } else {
        z = InitTruncatedNormal(key, element, layer);
      }
      out[start + k] = FMul(z, scale);
    }
  }
}

}  // namespace

float KernelInitScale(int64_t fan_in) {
  return static_cast<float>(std::sqrt(1.0 / static_cast<double>(fan_in)) / kTruncatedNormalStddev);
}

Status CheckInitLimits(const StateLayout& layout) {
  for (const StateLeaf& leaf : layout.leaves()) {
    if (leaf.is_kernel && leaf.size > size_t{0xFFFFFFFF})
      return Status::Error("MODEL_INVALID", leaf.name + " has " + std::to_string(leaf.size) +
                                                " elements; init needs fewer than 2^32");
  }
  return Status::Ok();
}

Status InitParams(const StateLayout& layout, uint64_t seed, float* params) {
  DMLP_RETURN_IF_ERROR(CheckInitLimits(layout));
  const PhiloxKey key = PhiloxKeyFromSeed(seed);
  for (const StateLeaf& leaf : layout.leaves()) {
    float* out = params + leaf.offset;
    if (!leaf.is_kernel) {
      for (size_t i = 0; i < leaf.size; ++i) out[i] = 0.0f;
      continue;
    }
    FillKernel(key, static_cast<uint32_t>(leaf.layer), KernelInitScale(layout.fan_in(leaf.layer)),
               leaf.size, out);
  }
  return Status::Ok();
}

}  // namespace dmlp
