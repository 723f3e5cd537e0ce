// defines: CheckVendorLibraries, CreateCublasGemm, CreateNcclCollectives, NcclVersionForFingerprint
//
// What the CUDA platform takes from NVIDIA's libraries beyond the CUDA runtime:
// cuBLAS (GEMM=cublas) and NCCL (COLLECTIVES=nccl with several ranks). A build
// configured with DMLP_CUDA_VENDOR_LIBRARIES=OFF links libcudart alone, e.g.
// for the GPU simulator's CUDA 11.8, which has neither library
// (tools/gpu-sim.sh): vendor_libraries_absent.cc then defines these functions
// as refusals, and nothing of this build includes <cublas_v2.h> or <nccl.h>.
// With the libraries, vendor_libraries.cc defines them over gemm_cublas.h and
// nccl_collectives.h.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "trainer/cuda/device_collectives.h"
#include "trainer/cuda/device_gemm.h"
#include "trainer/plan.h"

namespace dmlp {
class Rendezvous;
}

namespace dmlp::cuda {

/// VENDOR_LIBRARY_ABSENT, before any device is touched, when the plan needs
/// cuBLAS (GEMM=cublas) or NCCL (a communicator: NUM_PROCESSES > 1 with
/// COLLECTIVES=nccl) and this build has none; OK otherwise.
Status CheckVendorLibraries(const Plan& plan);

/// GEMM=cublas on the current device, bound to `stream` (gemm_cublas.h).
Result<std::unique_ptr<DeviceGemm>> CreateCublasGemm(cudaStream_t stream, bool tf32);

/// The NCCL communicator of all ranks (nccl_collectives.h, NcclComm::Create).
Result<std::unique_ptr<DeviceCollectives>> CreateNcclCollectives(Rendezvous& rendezvous,
                                                                 std::chrono::milliseconds heartbeat);

/// result.json's fingerprint.nccl: the NCCL library's version ("2.28.9"),
/// checked against the header (NCCL_VERSION_MISMATCH) when `checked`, i.e.
/// where a communicator will exist; null in a build without NCCL.
Result<nlohmann::json> NcclVersionForFingerprint(bool checked);

}  // namespace dmlp::cuda
