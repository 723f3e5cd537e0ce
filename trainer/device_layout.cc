#include "trainer/device_layout.h"

#include <cstdlib>
#include <string>

#include "common/format/error_codes.h"

namespace dmlp {
std::string VisibleDevicesSetting() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  return value == nullptr ? "unset" : "\"" + std::string(value) + "\"";
}

bool SharesDevices(const Plan& plan) {
  return plan.platform == Platform::kCuda && plan.collectives == CollectivesKind::kGloo;
}

Result<DeviceSlot> DeviceSlotFor(const Plan& plan, int visible_count) {
  const int64_t count = visible_count;
  int64_t ordinal = plan.local_rank;
  if (SharesDevices(plan) && ordinal >= 0) ordinal %= count;
  if (ordinal < 0 || ordinal >= count) {
    // With COLLECTIVES=gloo every LOCAL_RANK >= 0 has a device: the advice
    // only goes to a user who has not set it.
    return Status::Error(kDeviceLayoutInvalid,
                         "LOCAL_RANK " + std::to_string(plan.local_rank) + " needs visible GPU " +
                             std::to_string(plan.local_rank) + " but " + std::to_string(count) +
                             " GPU(s) are visible (CUDA_VISIBLE_DEVICES " +
                             VisibleDevicesSetting() + "); run at most one rank per GPU" +
                             (SharesDevices(plan) ? "" : ", or set COLLECTIVES=gloo to share"));
  }
  DeviceSlot slot;
  slot.ordinal = static_cast<int>(ordinal);
  // Local ranks l in [0, NUM_PROCESSES) with l % count == ordinal.
  if (SharesDevices(plan) && plan.num_processes > ordinal)
    slot.ranks_on_device = (plan.num_processes - 1 - ordinal) / count + 1;
  return slot;
}

}  // namespace dmlp
