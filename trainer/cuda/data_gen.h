// defines: GenerateSamplesOnDevice
//
// The training data generated on the GPU from trainer/math/sample_math.h's
// functions, the very code the CPU platform runs (trainer/math/data.cc), so the
// bytes are the CPU platform's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/status.h"
#include "trainer/math/data.h"

namespace dmlp::cuda {

/// Device version of GenerateSamples: global samples [begin, end) of (step,
/// microbatch) into inputs[(i - begin) * features + f] and labels[i - begin].
/// Device pointers; enqueued on `stream`. REQUIRES: CheckSampleLimits passed;
/// 1 <= step, 0 <= microbatch, 0 <= begin < end <= BATCH.
Status GenerateSamplesOnDevice(const SampleSpec& spec, int64_t step, int64_t microbatch,
                               int64_t begin, int64_t end, float* inputs, int32_t* labels,
                               cudaStream_t stream);

}  // namespace dmlp::cuda
