#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/data_gen.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/math/sample_math.h"

namespace dmlp::cuda {
namespace {

// Bit-equal to GenerateSamples: one thread per (sample, feature) runs
// SampleImageKey, JaxBits32 and JaxNormalFromBits (sample_math.h), integer
// threefry and IEEE operations each rounded as written, FMAs explicit
// (__fmaf_rn), exactly as data.cc's loops. Nothing is shared.
__global__ void sample_features_kernel(JaxKey update_key, int64_t features, int64_t begin,
                                       int64_t rows, float* inputs) {
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const JaxKey image_key = SampleImageKey(update_key, static_cast<uint32_t>(begin + row));
    float* out = inputs + row * features;
    for (int64_t feature = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; feature < features;
         feature += int64_t{gridDim.x} * blockDim.x) {
      out[feature] = JaxNormalFromBits(JaxBits32(image_key, static_cast<uint64_t>(feature)));
    }
  }
}

// Bit-equal to the host: SampleLabel is integer-only.
__global__ void sample_labels_kernel(JaxKey update_key, uint32_t classes, int64_t begin,
                                     int64_t rows, int32_t* labels) {
  for (int64_t row = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; row < rows;
       row += int64_t{gridDim.x} * blockDim.x) {
    labels[row] = SampleLabel(update_key, static_cast<uint32_t>(begin + row), classes);
  }
}

}  // namespace

Status GenerateSamplesOnDevice(const SampleSpec& spec, int64_t step, int64_t microbatch,
                               int64_t begin, int64_t end, float* inputs, int32_t* labels,
                               cudaStream_t stream) {
  if (spec.features < 1 || spec.classes < 1 || begin < 0 || end <= begin)
    return Status::Error(kInternal, "GenerateSamplesOnDevice: bad range");
  const JaxKey update_key = UpdateKey(DataKey(spec.seed), static_cast<uint32_t>(step),
                                      static_cast<uint32_t>(microbatch));
  const int64_t rows = end - begin;
  const dim3 grid(GridBlocks(static_cast<uint64_t>(spec.features)),
                  GridBlocks(static_cast<uint64_t>(rows), 1));
  sample_features_kernel<<<grid, kThreadsPerBlock, 0, stream>>>(update_key, spec.features, begin,
                                                                rows, inputs);
  CUDA_CHECK(cudaGetLastError());
  sample_labels_kernel<<<GridBlocks(static_cast<uint64_t>(rows)), kThreadsPerBlock, 0, stream>>>(
      update_key, static_cast<uint32_t>(spec.classes), begin, rows, labels);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
