// Which GPU a rank uses (trainer/device_layout.h), with the visible device
// count passed in, so this runs without a GPU. The memory check before the
// backend exists and the backend itself both select through DeviceSlotFor
// (CudaDeviceMemory, cuda::SelectDevice): ranks sharing one GPU under
// COLLECTIVES=gloo used to pass the backend's selection but fail the memory
// check's, which ignored the sharing.
#include "trainer/device_layout.h"

#include <gtest/gtest.h>

#include "device_plan_test_util.h"
#include "trainer/memory_plan.h"

namespace dmlp {
namespace {

using testing::LocalRankPlan;

TEST(DeviceLayoutTest, OneRankPerGpuWithNccl) {
  for (int64_t rank = 0; rank < 4; ++rank) {
    const Result<DeviceSlot> slot =
        DeviceSlotFor(LocalRankPlan(4, rank, CollectivesKind::kNccl), 4);
    ASSERT_TRUE(slot.ok()) << slot.status().ToString();
    EXPECT_EQ(slot->ordinal, rank);
    EXPECT_EQ(slot->ranks_on_device, 1);
  }
}

TEST(DeviceLayoutTest, MoreRanksThanGpusWithNcclIsLayoutInvalidWithAdvice) {
  const Result<DeviceSlot> slot = DeviceSlotFor(LocalRankPlan(2, 1, CollectivesKind::kNccl), 1);
  ASSERT_FALSE(slot.ok());
  EXPECT_EQ(slot.status().code(), "DEVICE_LAYOUT_INVALID");
  EXPECT_NE(
      slot.status().detail().find("LOCAL_RANK 1 needs visible GPU 1 but 1 GPU(s) are visible"),
      std::string::npos)
      << slot.status().ToString();
  EXPECT_NE(slot.status().detail().find("or set COLLECTIVES=gloo to share"), std::string::npos);
}

// Whoever already set COLLECTIVES=gloo is not told to set it (a LOCAL_RANK
// that no GPU can take is the only way there, as ReadPlan refuses negatives).
TEST(DeviceLayoutTest, NoAdviceToSetWhatIsSet) {
  const Result<DeviceSlot> slot = DeviceSlotFor(LocalRankPlan(2, -1, CollectivesKind::kGloo), 1);
  ASSERT_FALSE(slot.ok());
  EXPECT_EQ(slot.status().code(), "DEVICE_LAYOUT_INVALID");
  EXPECT_EQ(slot.status().detail().find("COLLECTIVES=gloo"), std::string::npos)
      << slot.status().ToString();
}

// The start-up bug: rank 1 of a 2-rank gloo job on one GPU.
TEST(DeviceLayoutTest, GlooRanksShareTheVisibleGpus) {
  for (int64_t rank = 0; rank < 4; ++rank) {
    const Result<DeviceSlot> slot =
        DeviceSlotFor(LocalRankPlan(4, rank, CollectivesKind::kGloo), 1);
    ASSERT_TRUE(slot.ok()) << "rank " << rank << ": " << slot.status().ToString();
    EXPECT_EQ(slot->ordinal, 0);
    EXPECT_EQ(slot->ranks_on_device, 4);
  }
  // 5 ranks on 2 GPUs: ranks 0, 2, 4 on GPU 0; ranks 1, 3 on GPU 1.
  EXPECT_EQ(DeviceSlotFor(LocalRankPlan(5, 4, CollectivesKind::kGloo), 2)->ordinal, 0);
  EXPECT_EQ(DeviceSlotFor(LocalRankPlan(5, 4, CollectivesKind::kGloo), 2)->ranks_on_device, 3);
  EXPECT_EQ(DeviceSlotFor(LocalRankPlan(5, 3, CollectivesKind::kGloo), 2)->ordinal, 1);
  EXPECT_EQ(DeviceSlotFor(LocalRankPlan(5, 3, CollectivesKind::kGloo), 2)->ranks_on_device, 2);
  // Fewer ranks than GPUs: one each.
  EXPECT_EQ(DeviceSlotFor(LocalRankPlan(2, 1, CollectivesKind::kGloo), 8)->ranks_on_device, 1);
}

TEST(DeviceLayoutTest, OnlyTheCudaPlatformWithGlooShares) {
  EXPECT_TRUE(SharesDevices(LocalRankPlan(2, 0, CollectivesKind::kGloo)));
  EXPECT_FALSE(SharesDevices(LocalRankPlan(2, 0, CollectivesKind::kNccl)));
  Plan cpu = LocalRankPlan(2, 0, CollectivesKind::kGloo);
  cpu.platform = Platform::kCpu;
  EXPECT_FALSE(SharesDevices(cpu));
}

// Each of 4 ranks on one GPU needs 1000 bytes and sees 2500 free before its
// neighbours allocate: alone each fits, together they do not.
TEST(DeviceLayoutTest, TheMemoryCheckCountsTheRanksOnTheGpu) {
  DeviceMemory device;
  device.slot = *DeviceSlotFor(LocalRankPlan(4, 3, CollectivesKind::kGloo), 1);
  device.free_bytes = 2500;
  EXPECT_EQ(CheckDeviceMemoryFits(1000, device).ToString(),
            "PLAN_TOO_LARGE: needs 4000 bytes of GPU memory (4 ranks share GPU 0, 1000 each), "
            "2500 available");
  device.free_bytes = 4000;
  EXPECT_TRUE(CheckDeviceMemoryFits(1000, device).ok());
  // One rank per GPU: the plain text of before.
  device.slot = *DeviceSlotFor(LocalRankPlan(4, 3, CollectivesKind::kNccl), 4);
  device.free_bytes = 999;
  EXPECT_EQ(CheckDeviceMemoryFits(1000, device).ToString(),
            "PLAN_TOO_LARGE: needs 1000 bytes of GPU memory, 999 available");
}

}  // namespace
}  // namespace dmlp
