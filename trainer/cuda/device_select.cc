#include "trainer/cuda/device_select.h"

#include <cuda_runtime_api.h>

#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/device_layout.h"

namespace dmlp::cuda {

Result<int> VisibleDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    // No driver (cudaErrorInsufficientDriver), no device (cudaErrorNoDevice), a
    // broken install...: the runtime's own words say which. Clear the error so
    // a caller that goes on (a test that skips) is not poisoned by it.
    (void)cudaGetLastError();
    return Status::Error(kCudaUnavailable, std::string("cudaGetDeviceCount: ") +
                                                 cudaGetErrorString(error) + " (" +
                                                 cudaGetErrorName(error) + ")");
  }
  if (count == 0) {
    return Status::Error(kCudaUnavailable, "no CUDA device visible (CUDA_VISIBLE_DEVICES " +
                                                 VisibleDevicesSetting() + ")");
  }
  return count;
}

Result<DeviceFacts> SelectDevice(const Plan& plan) {
  DMLP_ASSIGN_OR_RETURN(const int count, VisibleDeviceCount());
  DMLP_ASSIGN_OR_RETURN(const DeviceSlot slot, DeviceSlotFor(plan, count));
  CUDA_CHECK(cudaSetDevice(slot.ordinal));
  return DescribeDevice(slot.ordinal);
}

Result<DeviceFacts> DescribeDevice(int index) {
  DeviceFacts facts;
  facts.index = index;
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, facts.index));
  facts.name = properties.name;
  facts.sm_count = properties.multiProcessorCount;
  facts.compute_major = properties.major;
  facts.compute_minor = properties.minor;
  facts.total_memory = properties.totalGlobalMem;
  facts.uuid = UuidText(reinterpret_cast<const unsigned char(&)[16]>(properties.uuid.bytes));
  char bus_id[32] = {};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, facts.index));
  facts.pci_bus_id = bus_id;
  CUDA_CHECK(cudaDriverGetVersion(&facts.driver_version));
  CUDA_CHECK(cudaRuntimeGetVersion(&facts.runtime_version));
  return facts;
}

std::string UuidText(const unsigned char (&bytes)[16]) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += kHex[bytes[i] >> 4];
    text += kHex[bytes[i] & 0xf];
  }
  return text;
}

std::string VersionText(int cuda_version) {
  return std::to_string(cuda_version / 1000) + "." + std::to_string(cuda_version % 1000 / 10);
}

}  // namespace dmlp::cuda
