// defines: CUBLAS_CHECK, CublasErrorStatus
//
// cuBLAS calls' counterpart of CUDA_CHECK (cuda_check.h): a failure returns
// CUBLAS_ERROR from the enclosing function (Status or Result<T>), with the
// same location stamp. Its own header so that only cuBLAS code includes
// <cublas_v2.h> (cuda_check.h says why that matters).
#pragma once

// cublas_v2.h, never cublas_api.h alone: cuBLAS 12.x's cublas_api.h stops
// with #error unless cublas_v2.h (which defines CUBLASAPI) came first.
#include <cublas_v2.h>

#include "common/status.h"
#include "trainer/cuda/cuda_check.h"

namespace dmlp::cuda {

/// CUBLAS_ERROR: "<call>: <cublasGetStatusString> (<cublasGetStatusName>) at ...".
Status CublasErrorStatus(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace dmlp::cuda

/// Returns CUBLAS_ERROR from the enclosing function unless `call` gives CUBLAS_STATUS_SUCCESS.
#define CUBLAS_CHECK(call)                                                                    \
  do {                                                                                        \
    const cublasStatus_t dmlp_cublas_status_ = (call);                                        \
    if (dmlp_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                         \
      return ::dmlp::cuda::CublasErrorStatus(dmlp_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)
