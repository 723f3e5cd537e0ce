// defines: SampleSpec, CheckSampleLimits, GenerateSamples
//
// The training data on the host: FEATURES standard normals and one label per
// sample, a pure function of (SEED, step, microbatch, global sample index).
// The definition, and why it is built this way, is in trainer/sample_math.h;
// the CUDA platform calls the same functions from its kernels.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace dmlp {

/// What a sample depends on besides (step, microbatch, index).
struct SampleSpec {
  uint64_t seed = 0;     // SEED, 0 .. 2^63-1
  int64_t features = 0;  // FEATURES
  int64_t classes = 0;   // CLASSES
};

/// ENV_INVALID when the plan does not fit the 32-bit counter words: BATCH,
/// STEPS and MICROBATCHES <= 2^32 - 1, FEATURES <= 4 * (2^32 - 1) (the last
/// block is the label's), CLASSES <= INT32_MAX; also every value >= 1.
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
