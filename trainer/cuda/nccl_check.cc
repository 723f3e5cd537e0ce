#include "trainer/cuda/nccl_check.h"

#include <string>

#include "common/format/error_codes.h"

namespace dmlp::cuda {

Status NcclErrorStatus(ncclResult_t result, ncclComm_t comm, const char* call, const char* file,
                       int line) {
  std::string detail = std::string(call) + ": " + ncclGetErrorString(result);
  // ncclGetLastError(nullptr) gives the last message of any communicator in the process.
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && last[0] != '\0') detail += std::string("; ") + last;
  return Status::Error(kNcclError, detail + ErrorLocation(file, line));
}

}  // namespace dmlp::cuda
