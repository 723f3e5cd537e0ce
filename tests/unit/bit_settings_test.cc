// The table of what decides the bits (common/bit_settings.h): well formed, and
// the fields dmlp-verify --against ignores are the ones it always ignored,
// plus NUM_PROCESSES and COLLECTIVES' under the ordered reduction only, and
// the device's without cuBLAS.
#include "common/bit_settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

namespace dmlp {
namespace {

TEST(BitSettingsTest, EverySettingHasOneRowAndPlanRowsComeFirst) {
  std::set<Setting> seen;
  std::set<std::string_view> keys;
  bool past_plan_rows = false;
  for (const SettingRow& row : kSettings) {
    EXPECT_TRUE(seen.insert(row.setting).second) << row.name;
    EXPECT_FALSE(row.name.empty());
    if (row.plan_key.empty()) {
      past_plan_rows = true;
      continue;
    }
    EXPECT_FALSE(past_plan_rows) << row.name << ": a plan row after the rows without a plan key";
    EXPECT_TRUE(keys.insert(row.plan_key).second) << row.plan_key;
    EXPECT_EQ(row.plan_key.find_first_of("=\n;"), std::string_view::npos) << row.plan_key;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(Setting::kCudaToolchain) + 1);
}

TEST(BitSettingsTest, WhatTheComparisonIgnoresDependsOnTheReduction) {
  const std::vector<std::string> ordered = BitFreeResultFields(false, false);
  const std::vector<std::string> allreduce = BitFreeResultFields(true, false);
  auto has = [](const std::vector<std::string>& fields, const std::string& field) {
    return std::find(fields.begin(), fields.end(), field) != fields.end();
  };
  for (const char* field : {"plan.out_dir", "plan.steps", "plan.checkpoint_every", "plan.resume", "model.port",
                            "model.process_id", "model.heartbeat_timeout_s", "fingerprint.blas.threads",
                            "fingerprint.blas.isa", "build.image_id"}) {
    EXPECT_TRUE(has(ordered, field)) << field;
    EXPECT_TRUE(has(allreduce, field)) << field;
  }
  for (const char* field : {"model.processes", "plan.collectives", "fingerprint.collectives", "fingerprint.nccl_env.*",
                            "build.nccl_header"}) {
    EXPECT_TRUE(has(ordered, field)) << field;
    EXPECT_FALSE(has(allreduce, field)) << field;
  }
  for (const char* field : {"plan.seed", "plan.data_shards", "fingerprint.data_shards", "model.width", "plan.reduction",
                            "plan.gemm_order"}) {
    EXPECT_FALSE(has(ordered, field)) << field;
    EXPECT_FALSE(has(allreduce, field)) << field;
  }
}

// The platform decides no bit by itself: the GEMM order does, on either
// platform, and the device and cuBLAS's own fields where a run ran cuBLAS.
TEST(BitSettingsTest, ThePlatformDecidesNoBitTheDeviceOnlyWithCublas) {
  const std::vector<std::string> ordered = BitFreeResultFields(false, false);
  const std::vector<std::string> cublas = BitFreeResultFields(false, true);
  auto has = [](const std::vector<std::string>& fields, const std::string& field) {
    return std::find(fields.begin(), fields.end(), field) != fields.end();
  };
  for (const char* field : {"plan.platform", "fingerprint.platform", "plan.gemm", "fingerprint.gemm.kind",
                            "fingerprint.blas.kernel", "fingerprint.blas.library"}) {
    EXPECT_TRUE(has(ordered, field)) << field;
    EXPECT_TRUE(has(cublas, field)) << field;
  }
  for (const char* field : {"fingerprint.device.*", "fingerprint.gemm.version", "fingerprint.gemm.compute_type",
                            "fingerprint.cuda_env.*", "fingerprint.cpu", "device.*", "build.cuda_toolkit",
                            "build.cuda_compiler", "build.cuda_architectures"}) {
    EXPECT_TRUE(has(ordered, field)) << field;
    EXPECT_FALSE(has(cublas, field)) << field;
  }
}

}  // namespace
}  // namespace dmlp
