// defines: AdamUpdateOnDevice
//
// optax.adam's update on the device: trainer/math/adam.h's AdamElement per element
// with the scalars MakeAdamScalars computed on the host, so every rank and
// both platforms get the same bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "trainer/math/adam.h"

namespace dmlp::cuda {

/// AdamElement(scalars, grad[i], &params[i], &mu[i], &nu[i]) for i < count, and
/// *count_slot = next_count (the state image's int32 Adam count). Device
/// pointers; enqueued on `stream`.
Status AdamUpdateOnDevice(const AdamScalars& scalars, const float* grad, float* params, float* mu,
                          float* nu, size_t count, int32_t* count_slot, int32_t next_count,
                          cudaStream_t stream);

}  // namespace dmlp::cuda
