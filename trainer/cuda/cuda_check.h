// defines: CUDA_CHECK, SetErrorRank, ErrorLocation, CudaErrorStatus
//
// Every CUDA runtime call of the CUDA platform goes through CUDA_CHECK. A
// failure returns a Status from the enclosing function (which must return
// Status or Result<T>) whose detail reads like one frame of a stack trace
// across processes (nccl-tests' habit):
//
//   CUDA_ERROR: cudaMalloc(&data, bytes): out of memory (cudaErrorMemoryAllocation)
//     at trainer/cuda/device_buffer.h:41 [rank 3 on host gpu-7]
//
// cuBLAS and NCCL calls have their counterparts, CUBLAS_CHECK (cublas_check.h,
// CUBLAS_ERROR) and NCCL_CHECK (nccl_check.h, NCCL_ERROR), with the same
// ErrorLocation. They live apart so that the kernels' launchers need only the
// CUDA runtime's headers: the kernel sources then compile under any toolkit,
// e.g. CUDA 11.8 for the simulator (tools/gpu-sim.sh), where <cublas_v2.h>
// and <nccl.h> resolve to another toolkit's. The rank is process-wide (one
// rank per process) and set once by CreateCudaBackend.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "common/status.h"

namespace dmlp::cuda {

/// Stamps `rank` into every later error of this process (-1: not known yet).
void SetErrorRank(int rank);
/// "at <file>:<line> [rank R on host H]", the file relative to the source tree.
std::string ErrorLocation(const char* file, int line);

/// CUDA_ERROR: "<call>: <cudaGetErrorString> (<cudaGetErrorName>) at ...".
Status CudaErrorStatus(cudaError_t error, const char* call, const char* file, int line);

}  // namespace dmlp::cuda

/// Returns CUDA_ERROR from the enclosing function when `call` does not give cudaSuccess.
#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    const cudaError_t dmlp_cuda_error_ = (call);                                         \
    if (dmlp_cuda_error_ != cudaSuccess)                                                 \
      return ::dmlp::cuda::CudaErrorStatus(dmlp_cuda_error_, #call, __FILE__, __LINE__); \
  } while (0)
