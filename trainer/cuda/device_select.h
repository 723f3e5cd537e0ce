// defines: DeviceFacts, VisibleDeviceCount, SelectDevice, DescribeDevice, UuidText, VersionText
//
// One GPU per rank: rank with LOCAL_RANK r uses visible device r. A machine
// without a driver or GPU is a clear CUDA_UNAVAILABLE error, never a crash;
// fewer visible GPUs than local ranks is DEVICE_LAYOUT_INVALID — unless the
// ranks may share GPUs (COLLECTIVES=gloo: no NCCL, which refuses two ranks on
// one device), where rank r uses visible device r % count.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace dmlp::cuda {

/// What result.json's fingerprint records about the device and the CUDA stack.
struct DeviceFacts {
  int index = 0;           // visible device ordinal (LOCAL_RANK, modulo the count when shared)
  std::string name;        // "NVIDIA H200"
  std::string pci_bus_id;  // "0000:19:00.0"
  std::string uuid;        // "GPU-8f3c2a1e-…", as nvidia-smi -L prints it
  int sm_count = 0;        // bits are promised per (model, SM count)
  int compute_major = 0;
  int compute_minor = 0;
  size_t total_memory = 0;  // bytes
  int driver_version = 0;   // CUDA version the driver supports, e.g. 12080
  int runtime_version = 0;  // cudart this process runs with, e.g. 12080
};

/// Visible CUDA devices; CUDA_UNAVAILABLE (with the runtime's reason) when there
/// is no driver, no device, or the driver is too old for this runtime.
Result<int> VisibleDeviceCount();

/// Makes device `local_rank` (`local_rank % count` when `share_devices`) current
/// for the calling thread and describes it. CUDA_UNAVAILABLE as above;
/// DEVICE_LAYOUT_INVALID when local_rank >= the count and devices are not shared.
Result<DeviceFacts> SelectDevice(int64_t local_rank, bool share_devices = false);

/// Describes visible device `index` as the driver sees it now (not cached: a
/// process restored by cuda-checkpoint may run on another GPU than it started on).
Result<DeviceFacts> DescribeDevice(int index);

/// cudaDeviceProp::uuid as nvidia-smi prints it: "GPU-" and 8-4-4-4-12 hex digits.
std::string UuidText(const unsigned char (&bytes)[16]);

/// 12080 -> "12.8", 13000 -> "13.0" (cudaDriverGetVersion's encoding).
std::string VersionText(int cuda_version);

}  // namespace dmlp::cuda
