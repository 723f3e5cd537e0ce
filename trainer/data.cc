#include "trainer/data.h"

#include <string>

#include "trainer/philox.h"
#include "trainer/sample_math.h"

namespace dmlp {
namespace {

constexpr int64_t kMaxCounterWord = int64_t{0xFFFFFFFF};

Status TooLarge(const char* name, int64_t value, int64_t max, const char* why) {
  return Status::Error("ENV_INVALID", std::string(name) + " " + std::to_string(value) +
                                          " exceeds " + std::to_string(max) + " (" + why + ")");
}

}  // namespace

Status CheckSampleLimits(const SampleSpec& spec, int64_t batch, int64_t steps,
                         int64_t microbatches) {
  if (spec.features < 1 || spec.classes < 1 || batch < 1 || steps < 1 || microbatches < 1)
    return Status::Error("ENV_INVALID", "FEATURES, CLASSES, BATCH, STEPS, MICROBATCHES must be >= 1");
  const char* why = "data counters are 32-bit words";
  if (batch > kMaxCounterWord) return TooLarge("BATCH", batch, kMaxCounterWord, why);
  if (steps > kMaxCounterWord) return TooLarge("STEPS", steps, kMaxCounterWord, why);
  if (microbatches > kMaxCounterWord)
    return TooLarge("MICROBATCHES", microbatches, kMaxCounterWord, why);
  // Feature blocks 0 .. (F-1)/4 must stay below kLabelBlock.
  if (spec.features > 4 * kMaxCounterWord)
    return TooLarge("FEATURES", spec.features, 4 * kMaxCounterWord, why);
  if (spec.classes > INT32_MAX)
    return TooLarge("CLASSES", spec.classes, INT32_MAX, "labels are int32");
  return Status::Ok();
}

void GenerateSamples(const SampleSpec& spec, int64_t step, int64_t microbatch, int64_t begin,
                     int64_t end, float* inputs, int32_t* labels) {
  const PhiloxKey key = PhiloxKeyFromSeed(spec.seed);
  const auto step_word = static_cast<uint32_t>(step);
  const auto microbatch_word = static_cast<uint32_t>(microbatch);
  const auto classes = static_cast<uint32_t>(spec.classes);
  const int64_t features = spec.features;
  const int64_t blocks_per_sample = (features + 3) / 4;
  // The (sample, block) pairs of [begin, end) are walked in chunks: Philox for
  // a whole chunk, then Box-Muller for a whole chunk, so that both loops are
  // plain array loops the compiler vectorizes (math.cmake: -O3). Vector lanes
  // do the same IEEE operations as scalar code: the bits do not change.
  constexpr int64_t kChunk = 256;
  uint32_t sample_word[kChunk], block_word[kChunk];
  uint32_t w0[kChunk], w1[kChunk], w2[kChunk], w3[kChunk];
  float z0[kChunk], z1[kChunk], z2[kChunk], z3[kChunk];
  const int64_t total = (end - begin) * blocks_per_sample;
  for (int64_t chunk_start = 0; chunk_start < total; chunk_start += kChunk) {
    const int64_t count = total - chunk_start < kChunk ? total - chunk_start : kChunk;
    int64_t local = chunk_start / blocks_per_sample, block = chunk_start % blocks_per_sample;
    for (int64_t k = 0; k < count; ++k) {
      sample_word[k] = static_cast<uint32_t>(begin + local);
      block_word[k] = static_cast<uint32_t>(block);
      if (++block == blocks_per_sample) block = 0, ++local;
    }
    for (int64_t k = 0; k < count; ++k) {
      const PhiloxBlock words =
          SampleFeatureBlock(key, block_word[k], sample_word[k], step_word, microbatch_word);
      w0[k] = words.w0, w1[k] = words.w1, w2[k] = words.w2, w3[k] = words.w3;
    }
    // A last, partial block computes both pairs too; the unused lanes are dropped.
    for (int64_t k = 0; k < count; ++k) BoxMuller(w0[k], w1[k], &z0[k], &z1[k]);
    for (int64_t k = 0; k < count; ++k) BoxMuller(w2[k], w3[k], &z2[k], &z3[k]);
    for (int64_t k = 0; k < count; ++k) {
      const int64_t first = 4 * static_cast<int64_t>(block_word[k]);
      float* row = inputs + (sample_word[k] - begin) * features;
      const float z[4] = {z0[k], z1[k], z2[k], z3[k]};
      const int64_t lanes = features - first < 4 ? features - first : 4;
      for (int64_t lane = 0; lane < lanes; ++lane) row[first + lane] = z[lane];
    }
  }
  for (int64_t index = begin; index < end; ++index)
    labels[index - begin] = SampleLabel(key, static_cast<uint32_t>(index), step_word,
                                        microbatch_word, classes);
}

}  // namespace dmlp
