// defines: SampleSpec, CheckSampleLimits, GenerateSamples
//
// The training data on the host: FEATURES standard normals and one label per
// sample, a pure function of (SEED, step, microbatch, global sample index):
// the reference job's local_batch, bit for bit. The definition is in
// trainer/math/sample_math.h; the CUDA platform calls the same functions from its
// kernels (trainer/cuda/data_gen.cu).
#pragma once

#include <cstdint>

#include "common/status.h"

namespace dmlp {

/// What a sample depends on besides (step, microbatch, index).
struct SampleSpec {
  uint32_t seed = 0;     // SEED: jax.random.key takes 32 bits (plan.cc refuses more)
  int64_t features = 0;  // FEATURES
  int64_t classes = 0;   // CLASSES
};

/// ENV_INVALID when the plan does not fit jax's 32-bit words: BATCH, STEPS and
/// MICROBATCHES <= 2^32 - 1 (each is folded into a key as a uint32),
/// CLASSES <= INT32_MAX (randint's int32 labels); also every value >= 1.
Status CheckSampleLimits(const SampleSpec& spec, int64_t batch, int64_t steps,
                         int64_t microbatches);

/// Writes global samples [begin, end) of the update (step, microbatch):
/// inputs[(i - begin) * features + f] and labels[i - begin]. The bytes of a
/// sample do not depend on begin/end: generating [0, B) at once or in any
/// pieces gives the same array.
/// REQUIRES: CheckSampleLimits passed; 1 <= step, 0 <= microbatch, 0 <= begin <= end <= BATCH.
void GenerateSamples(const SampleSpec& spec, int64_t step, int64_t microbatch, int64_t begin,
                     int64_t end, float* inputs, int32_t* labels);

}  // namespace dmlp
