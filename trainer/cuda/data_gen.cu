#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/data_gen.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/philox.h"
#include "trainer/sample_math.h"

namespace dmlp::cuda {
namespace {

// Bit-equal to GenerateSamples: one thread per (sample, block of 4 features)
// runs SampleFeatureBlock + NormalPair, integer Philox and un-fused IEEE float
// operations only (sample_math.h), exactly as data.cc does; a partial last
// block computes only the pair it uses, as data.cc. Nothing is shared.
__global__ void sample_features_kernel(PhiloxKey key, int64_t features, uint32_t step,
                                       uint32_t microbatch, int64_t begin, int64_t rows,
                                       float* inputs) {
  const int64_t blocks_per_row = (features + 3) / 4;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const auto sample = static_cast<uint32_t>(begin + row);
    float* out = inputs + row * features;
    for (int64_t block = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; block < blocks_per_row;
         block += int64_t{gridDim.x} * blockDim.x) {
      const int64_t first = block * 4;
      const PhiloxBlock words =
          SampleFeatureBlock(key, static_cast<uint32_t>(block), sample, step, microbatch);
      float z[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      NormalPair(words, 0, &z[0], &z[1]);
      if (features - first > 2) NormalPair(words, 1, &z[2], &z[3]);
      const int64_t lanes = features - first < 4 ? features - first : 4;
      for (int64_t lane = 0; lane < lanes; ++lane) out[first + lane] = z[lane];
    }
  }
}

// Bit-equal to the host: SampleLabel is integer-only.
__global__ void sample_labels_kernel(PhiloxKey key, uint32_t classes, uint32_t step,
                                     uint32_t microbatch, int64_t begin, int64_t rows,
                                     int32_t* labels) {
  for (int64_t row = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; row < rows;
       row += int64_t{gridDim.x} * blockDim.x) {
    labels[row] = SampleLabel(key, static_cast<uint32_t>(begin + row), step, microbatch, classes);
  }
}

}  // namespace

Status GenerateSamplesOnDevice(const SampleSpec& spec, int64_t step, int64_t microbatch,
                               int64_t begin, int64_t end, float* inputs, int32_t* labels,
                               cudaStream_t stream) {
  if (spec.features < 1 || spec.classes < 1 || begin < 0 || end <= begin)
    return Status::Error("INTERNAL", "GenerateSamplesOnDevice: bad range");
  const PhiloxKey key = PhiloxKeyFromSeed(spec.seed);
  const int64_t rows = end - begin;
  const auto step_word = static_cast<uint32_t>(step);
  const auto microbatch_word = static_cast<uint32_t>(microbatch);
  const dim3 grid(GridBlocks(static_cast<uint64_t>((spec.features + 3) / 4)),
                  GridBlocks(static_cast<uint64_t>(rows), 1));
  sample_features_kernel<<<grid, kThreadsPerBlock, 0, stream>>>(
      key, spec.features, step_word, microbatch_word, begin, rows, inputs);
  CUDA_CHECK(cudaGetLastError());
  sample_labels_kernel<<<GridBlocks(static_cast<uint64_t>(rows)), kThreadsPerBlock, 0, stream>>>(
      key, static_cast<uint32_t>(spec.classes), step_word, microbatch_word, begin, rows, labels);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
