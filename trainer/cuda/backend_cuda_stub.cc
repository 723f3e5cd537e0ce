// The CUDA platform in a build without CUDA (DMLP_CUDA=OFF or no nvcc found):
// PLATFORM=cuda is a clear error, never a missing symbol.
#include "common/format/error_codes.h"
#include "trainer/backend.h"

namespace dmlp {

Result<std::unique_ptr<Backend>> CreateCudaBackend(const Plan& /*plan*/,
                                                   const StateLayout& /*layout*/,
                                                   Rendezvous& /*rendezvous*/) {
  return Status::Error(kPlatformUnavailable, "dmlp was built without CUDA");
}

Result<DeviceMemory> CudaDeviceMemory(const Plan& /*plan*/) {
  return Status::Error(kPlatformUnavailable, "dmlp was built without CUDA");
}

}  // namespace dmlp
