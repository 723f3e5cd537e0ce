#include "trainer/math/data.h"

#include <algorithm>

#include <string>

#include "common/format/error_codes.h"
#include "trainer/math/sample_loops.h"
#include "trainer/math/sample_math.h"

namespace dmlp {
namespace {

constexpr int64_t kMaxKeyWord = int64_t{0xFFFFFFFF};

Status TooLarge(const char* name, int64_t value, int64_t max, const char* why) {
  return Status::Error(kEnvInvalid, std::string(name) + " " + std::to_string(value) +
                                          " exceeds " + std::to_string(max) + " (" + why + ")");
}

}  // namespace

Status CheckSampleLimits(const SampleSpec& spec, int64_t batch, int64_t steps,
                         int64_t microbatches) {
  if (spec.features < 1 || spec.classes < 1 || batch < 1 || steps < 1 || microbatches < 1)
    return Status::Error(kEnvInvalid, "FEATURES, CLASSES, BATCH, STEPS, MICROBATCHES must be >= 1");
  const char* why = "jax.random.fold_in takes 32-bit words";
  if (batch > kMaxKeyWord) return TooLarge("BATCH", batch, kMaxKeyWord, why);
  if (steps > kMaxKeyWord) return TooLarge("STEPS", steps, kMaxKeyWord, why);
  if (microbatches > kMaxKeyWord) return TooLarge("MICROBATCHES", microbatches, kMaxKeyWord, why);
  if (spec.classes > INT32_MAX)
    return TooLarge("CLASSES", spec.classes, INT32_MAX, "labels are int32");
  return Status::Ok();
}

void GenerateSamples(const SampleSpec& spec, int64_t step, int64_t microbatch, int64_t begin,
                     int64_t end, float* inputs, int32_t* labels) {
  const JaxKey update_key = UpdateKey(DataKey(spec.seed), static_cast<uint32_t>(step),
                                      static_cast<uint32_t>(microbatch));
  const auto classes = static_cast<uint32_t>(spec.classes);
  const int64_t features = spec.features;
  // The (sample, feature) pairs of [begin, end), row-major, so a chunk of them
  // is a contiguous piece of `inputs`: each pair's image key and counter, then
  // threefry for the whole chunk, then the normals (trainer/math/sample_loops.h).
  uint32_t key0[kSampleChunk], key1[kSampleChunk], high[kSampleChunk], low[kSampleChunk];
  uint32_t bits[kSampleChunk];
  const int64_t total = (end - begin) * features;
  int64_t sample = begin, feature = 0;
  JaxKey image_key = begin < end ? SampleImageKey(update_key, static_cast<uint32_t>(begin)) : JaxKey{};
  for (int64_t chunk_start = 0; chunk_start < total; chunk_start += kSampleChunk) {
    const int64_t count = total - chunk_start < int64_t{kSampleChunk} ? total - chunk_start
                                                                       : int64_t{kSampleChunk};
    // In runs of one sample's features: one key, consecutive counters.
    for (int64_t k = 0; k < count;) {
      const int64_t run = std::min(count - k, features - feature);
      for (int64_t r = 0; r < run; ++r) {
        key0[k + r] = image_key.k0, key1[k + r] = image_key.k1;
        high[k + r] = static_cast<uint32_t>((feature + r) >> 32), low[k + r] = static_cast<uint32_t>(feature + r);
      }
      k += run, feature += run;
      if (feature == features && ++sample < end) {
        feature = 0;
        image_key = SampleImageKey(update_key, static_cast<uint32_t>(sample));
      }
    }
    JaxBitsLoop(key0, key1, high, low, bits, static_cast<size_t>(count));
    JaxNormalLoop(bits, inputs + chunk_start, static_cast<size_t>(count));
  }
  for (int64_t index = begin; index < end; ++index)
    labels[index - begin] = SampleLabel(update_key, static_cast<uint32_t>(index), classes);
}

}  // namespace dmlp
