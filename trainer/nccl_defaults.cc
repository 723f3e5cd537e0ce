#include "trainer/nccl_defaults.h"

#include <cstdlib>
#include <utility>

namespace dmlp {

bool UsesNccl(const Plan& plan) {
  return plan.platform == Platform::kCuda && plan.collectives == CollectivesKind::kNccl &&
         plan.num_processes > 1;
}

void DefaultToFreezableTransports(const Plan& plan) {
  if (!UsesNccl(plan)) return;
  for (const auto& [name, value] :
       {std::pair{"NCCL_SHM_DISABLE", "1"}, std::pair{"NCCL_P2P_DISABLE", "1"},
        std::pair{"NCCL_NVLS_ENABLE", "0"}, std::pair{"NCCL_IB_DISABLE", "1"}}) {
    setenv(name, value, /*overwrite=*/0);
  }
}

}  // namespace dmlp
