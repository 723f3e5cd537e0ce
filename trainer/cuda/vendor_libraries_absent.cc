// The vendor libraries' functions in a build without them
// (DMLP_CUDA_VENDOR_LIBRARIES=OFF, vendor_libraries.h): refusals naming what
// this build lacks, never a missing symbol. CheckVendorLibraries refuses at
// start-up what the others would refuse later.
#include <string>

#include "common/format/error_codes.h"
#include "trainer/cuda/vendor_libraries.h"

namespace dmlp::cuda {
namespace {

Status Absent(const char* setting, const char* library) {
  return Status::Error(kVendorLibraryAbsent,
                       std::string(setting) + " needs " + library +
                           ", and this build of dmlp has none (configured with "
                           "DMLP_CUDA_VENDOR_LIBRARIES=OFF)");
}

}  // namespace

Status CheckVendorLibraries(const Plan& plan) {
  if (plan.gemm == GemmKind::kCublas) return Absent("GEMM=cublas", "cuBLAS");
  if (plan.num_processes > 1 && plan.collectives == CollectivesKind::kNccl)
    return Absent("COLLECTIVES=nccl with NUM_PROCESSES > 1 (COLLECTIVES=gloo works without it)", "NCCL");
  return Status::Ok();
}

Result<std::unique_ptr<DeviceGemm>> CreateCublasGemm(cudaStream_t /*stream*/, bool /*tf32*/) {
  return Absent("GEMM=cublas", "cuBLAS");
}

Result<std::unique_ptr<DeviceCollectives>> CreateNcclCollectives(Rendezvous& /*rendezvous*/,
                                                                 std::chrono::milliseconds /*heartbeat*/) {
  return Absent("COLLECTIVES=nccl", "NCCL");
}

Result<nlohmann::json> NcclVersionForFingerprint(bool /*checked*/) { return nlohmann::json(nullptr); }

}  // namespace dmlp::cuda
