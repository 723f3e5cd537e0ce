// defines: CUDA_CHECK, CUBLAS_CHECK, NCCL_CHECK, SetErrorRank, CudaErrorStatus,
//          CublasErrorStatus, NcclErrorStatus
//
// Every CUDA, cuBLAS and NCCL call of the CUDA platform goes through one of
// these macros. A failure returns a Status from the enclosing function (which
// must return Status or Result<T>) whose detail reads like one frame of a
// stack trace across processes (nccl-tests' habit):
//
//   CUDA_ERROR: cudaMalloc(&data, bytes): out of memory (cudaErrorMemoryAllocation)
//     at trainer/cuda/device_buffer.h:41 [rank 3 on host gpu-7]
//
// Codes: CUDA_ERROR, CUBLAS_ERROR, NCCL_ERROR. The rank is process-wide (one
// rank per process) and set once by CreateCudaBackend.
#pragma once

// cublas_v2.h, never cublas_api.h alone: cuBLAS 12.x's cublas_api.h stops
// with #error unless cublas_v2.h (which defines CUBLASAPI) came first.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "common/status.h"

namespace dmlp::cuda {

/// Stamps `rank` into every later error of this process (-1: not known yet).
void SetErrorRank(int rank);
/// "at <file>:<line> [rank R on host H]", the file relative to the source tree.
std::string ErrorLocation(const char* file, int line);

/// CUDA_ERROR: "<call>: <cudaGetErrorString> (<cudaGetErrorName>) at ...".
Status CudaErrorStatus(cudaError_t error, const char* call, const char* file, int line);
/// CUBLAS_ERROR: "<call>: <cublasGetStatusString> (<cublasGetStatusName>) at ...".
Status CublasErrorStatus(cublasStatus_t status, const char* call, const char* file, int line);
/// NCCL_ERROR: "<call>: <ncclGetErrorString>; <last NCCL message> at ...". comm may be null.
Status NcclErrorStatus(ncclResult_t result, ncclComm_t comm, const char* call, const char* file,
                       int line);

}  // namespace dmlp::cuda

/// Returns CUDA_ERROR from the enclosing function when `call` does not give cudaSuccess.
#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    const cudaError_t dmlp_cuda_error_ = (call);                                         \
    if (dmlp_cuda_error_ != cudaSuccess)                                                 \
      return ::dmlp::cuda::CudaErrorStatus(dmlp_cuda_error_, #call, __FILE__, __LINE__); \
  } while (0)

/// Returns CUBLAS_ERROR from the enclosing function unless `call` gives CUBLAS_STATUS_SUCCESS.
#define CUBLAS_CHECK(call)                                                                    \
  do {                                                                                        \
    const cublasStatus_t dmlp_cublas_status_ = (call);                                        \
    if (dmlp_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                         \
      return ::dmlp::cuda::CublasErrorStatus(dmlp_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

/// Returns NCCL_ERROR unless `call` gives ncclSuccess. With a non-blocking
/// communicator, ncclInProgress is not an error: the caller then waits for the
/// communicator (nccl_collectives.h). `comm` (may be nullptr) supplies ncclGetLastError.
#define NCCL_CHECK(comm, call)                                                                    \
  do {                                                                                            \
    const ncclResult_t dmlp_nccl_result_ = (call);                                                \
    if (dmlp_nccl_result_ != ncclSuccess && dmlp_nccl_result_ != ncclInProgress)                  \
      return ::dmlp::cuda::NcclErrorStatus(dmlp_nccl_result_, (comm), #call, __FILE__, __LINE__); \
  } while (0)
