// defines: DeviceSlot, DeviceMemory, SharesDevices, DeviceSlotFor, VisibleDevicesSetting
//
// Which visible GPU a rank uses, decided from the plan and the number of
// visible devices alone, so that every caller (the memory check before the
// backend exists, the backend itself) selects the same device, and a test
// without a GPU can pass any device count. One GPU per rank: the rank with
// LOCAL_RANK r uses visible device r; fewer visible GPUs than local ranks is
// DEVICE_LAYOUT_INVALID — unless the ranks may share GPUs (PLATFORM=cuda with
// COLLECTIVES=gloo: no NCCL, which refuses two ranks on one device), where
// rank r uses visible device r % count.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "trainer/plan.h"

namespace dmlp {

/// One rank's GPU.
struct DeviceSlot {
  int ordinal = 0;              // visible device index (cudaSetDevice)
  int64_t ranks_on_device = 1;  // ranks of this host that may use the same GPU, this one included
};

/// A rank's GPU and its free memory now, for the memory check (memory_plan.h).
struct DeviceMemory {
  DeviceSlot slot;
  uint64_t free_bytes = 0;
};

/// True when several ranks may share one GPU (PLATFORM=cuda, COLLECTIVES=gloo).
bool SharesDevices(const Plan& plan);

/// The device of `plan`'s rank among `visible_count` GPUs. With shared devices
/// the ranks on one GPU are counted as if the host ran local ranks
/// 0..NUM_PROCESSES-1 (what dmlp-launch does): on a job spanning hosts that
/// over-counts, never under-counts. DEVICE_LAYOUT_INVALID as above.
/// REQUIRES: visible_count >= 1.
Result<DeviceSlot> DeviceSlotFor(const Plan& plan, int visible_count);

/// CUDA_VISIBLE_DEVICES for messages: `"0,1"` (quoted) or `unset`.
std::string VisibleDevicesSetting();

}  // namespace dmlp
