#include "trainer/cuda/cublas_check.h"

#include <string>

#include "common/format/error_codes.h"

namespace dmlp::cuda {

Status CublasErrorStatus(cublasStatus_t status, const char* call, const char* file, int line) {
  return Status::Error(kCublasError, std::string(call) + ": " + cublasGetStatusString(status) +
                                           " (" + cublasGetStatusName(status) + ")" +
                                           ErrorLocation(file, line));
}

}  // namespace dmlp::cuda
