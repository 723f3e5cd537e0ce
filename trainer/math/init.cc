#include "trainer/math/init.h"

#include <openssl/evp.h>

#include <stdexcept>
#include <string>

#include "trainer/math/sample_loops.h"
#include "trainer/math/sample_math.h"

namespace dmlp {
namespace {

// Standard deviation of the standard normal truncated to (-2, 2), the constant
// jax's variance_scaling divides by (as a float32).
constexpr float kTruncatedNormalStddev = static_cast<float>(0.87962566103423978);

// out[e] = truncated normal of bits(kernel_key)[e] times stddev, for e in [0, size).
void FillKernel(JaxKey kernel_key, float stddev, size_t size, float* out) {
  uint32_t key0[kSampleChunk], key1[kSampleChunk], high[kSampleChunk], low[kSampleChunk];
  uint32_t bits[kSampleChunk];
  for (size_t k = 0; k < kSampleChunk; ++k) key0[k] = kernel_key.k0, key1[k] = kernel_key.k1;
  for (size_t start = 0; start < size; start += kSampleChunk) {
    const size_t count = size - start < kSampleChunk ? size - start : kSampleChunk;
    for (size_t k = 0; k < count; ++k) {
      const uint64_t index = start + k;  // a kernel may have up to 2^36 elements
      high[k] = static_cast<uint32_t>(index >> 32), low[k] = static_cast<uint32_t>(index);
    }
    JaxBitsLoop(key0, key1, high, low, bits, count);
    JaxTruncatedNormalLoop(bits, stddev, out + start, count);
  }
}

}  // namespace

float LecunNormalStddev(int64_t fan_in) {
  const auto variance = static_cast<float>(1.0 / static_cast<double>(fan_in));
  return FDiv(FSqrt(variance), kTruncatedNormalStddev);
}

uint32_t FlaxDenseHash(int64_t layer) {
  const std::string data = "Dense_" + std::to_string(layer) + '\x01';
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // EVP_Digest fails only when OpenSSL itself is unusable (no SHA-1 provider):
  // a programming error, as in common/sha256.cc.
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha1(), nullptr) != 1 || length < 4)
    throw std::runtime_error("SHA1_DIGEST_FAILED");
  return (uint32_t{digest[0]} << 24) | (uint32_t{digest[1]} << 16) | (uint32_t{digest[2]} << 8) |
         uint32_t{digest[3]};
}

Status InitParams(const StateLayout& layout, uint32_t seed, float* params) {
  const JaxKey init_key = InitKey(seed);
  for (const StateLeaf& leaf : layout.leaves()) {
    float* out = params + leaf.offset;
    if (!leaf.is_kernel) {
      for (size_t i = 0; i < leaf.size; ++i) out[i] = 0.0f;
      continue;
    }
    FillKernel(DenseKernelKey(init_key, FlaxDenseHash(leaf.layer)),
               LecunNormalStddev(layout.fan_in(leaf.layer)), leaf.size, out);
  }
  return Status::Ok();
}

}  // namespace dmlp
