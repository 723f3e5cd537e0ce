// defines: DeviceFacts, VisibleDeviceCount, SelectDevice, DescribeDevice, UuidText, VersionText
//
// Which device a rank uses is decided by DeviceSlotFor (trainer/device_layout.h)
// from the plan; this file asks the driver. A machine without a driver or GPU
// is a clear CUDA_UNAVAILABLE error, never a crash.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "trainer/plan.h"

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

/// Makes the plan's device (DeviceSlotFor) current for the calling thread and
/// describes it: the one selection the memory check and the backend share.
/// CUDA_UNAVAILABLE as above; DEVICE_LAYOUT_INVALID from DeviceSlotFor.
Result<DeviceFacts> SelectDevice(const Plan& plan);

/// Describes visible device `index` as the driver sees it now (not cached: a
/// process restored by cuda-checkpoint may run on another GPU than it started on).
Result<DeviceFacts> DescribeDevice(int index);

/// cudaDeviceProp::uuid as nvidia-smi prints it: "GPU-" and 8-4-4-4-12 hex digits.
std::string UuidText(const unsigned char (&bytes)[16]);

/// 12080 -> "12.8", 13000 -> "13.0" (cudaDriverGetVersion's encoding).
std::string VersionText(int cuda_version);

}  // namespace dmlp::cuda
