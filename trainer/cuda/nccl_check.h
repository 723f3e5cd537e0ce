// defines: NCCL_CHECK, NcclErrorStatus
//
// NCCL calls' counterpart of CUDA_CHECK (cuda_check.h): a failure returns
// NCCL_ERROR from the enclosing function (Status or Result<T>), with the same
// location stamp. Its own header so that only NCCL code includes <nccl.h>
// (cuda_check.h says why that matters).
#pragma once

#include <nccl.h>

#include "common/status.h"
#include "trainer/cuda/cuda_check.h"

namespace dmlp::cuda {

/// NCCL_ERROR: "<call>: <ncclGetErrorString>; <last NCCL message> at ...". comm may be null.
Status NcclErrorStatus(ncclResult_t result, ncclComm_t comm, const char* call, const char* file,
                       int line);

}  // namespace dmlp::cuda

/// Returns NCCL_ERROR unless `call` gives ncclSuccess. With a non-blocking
/// communicator, ncclInProgress is not an error: the caller then waits for the
/// communicator (nccl_collectives.h). `comm` (may be nullptr) supplies ncclGetLastError.
#define NCCL_CHECK(comm, call)                                                                    \
  do {                                                                                            \
    const ncclResult_t dmlp_nccl_result_ = (call);                                                \
    if (dmlp_nccl_result_ != ncclSuccess && dmlp_nccl_result_ != ncclInProgress)                  \
      return ::dmlp::cuda::NcclErrorStatus(dmlp_nccl_result_, (comm), #call, __FILE__, __LINE__); \
  } while (0)
