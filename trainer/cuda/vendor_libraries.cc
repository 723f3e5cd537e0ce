// The vendor libraries' functions in a build that has them
// (DMLP_CUDA_VENDOR_LIBRARIES=ON): vendor_libraries.h.
#include "trainer/cuda/vendor_libraries.h"

#include <utility>

#include "trainer/cuda/gemm_cublas.h"
#include "trainer/cuda/nccl_collectives.h"
#include "trainer/cuda/nccl_version.h"

namespace dmlp::cuda {

Status CheckVendorLibraries(const Plan& /*plan*/) { return Status::Ok(); }

Result<std::unique_ptr<DeviceGemm>> CreateCublasGemm(cudaStream_t stream, bool tf32) {
  DMLP_ASSIGN_OR_RETURN(CublasGemm gemm, CublasGemm::Create(stream, tf32));
  return std::unique_ptr<DeviceGemm>(std::make_unique<CublasGemm>(std::move(gemm)));
}

Result<std::unique_ptr<DeviceCollectives>> CreateNcclCollectives(Rendezvous& rendezvous,
                                                                 std::chrono::milliseconds heartbeat) {
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<NcclComm> comm, NcclComm::Create(rendezvous, heartbeat));
  return std::unique_ptr<DeviceCollectives>(std::move(comm));
}

Result<nlohmann::json> NcclVersionForFingerprint(bool checked) {
  DMLP_ASSIGN_OR_RETURN(std::string version,
                        checked ? NcclComm::LibraryVersion() : NcclLibraryVersion());
  return nlohmann::json(std::move(version));
}

}  // namespace dmlp::cuda
