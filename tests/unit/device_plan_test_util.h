// A CUDA plan for one local rank, for the device-selection tests
// (device_layout_test.cc without a GPU, cuda_device_test.cc with one).
#pragma once

#include <cstdint>

#include "trainer/plan.h"

namespace dmlp::testing {

/// PLATFORM=cuda, rank `local_rank` of `processes` ranks on one host.
inline Plan LocalRankPlan(int64_t processes, int64_t local_rank, CollectivesKind collectives) {
  Plan plan;
  plan.platform = Platform::kCuda;
  plan.num_processes = processes;
  plan.process_id = local_rank;
  plan.local_rank = local_rank;
  plan.collectives = collectives;
  return plan;
}

}  // namespace dmlp::testing
