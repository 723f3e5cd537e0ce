// How a rank's device is named where a failure names it (trainer/rank_devices.h).
#include "trainer/rank_devices.h"

#include <string>

#include <gtest/gtest.h>

#include "trainer/rendezvous/rendezvous_wire.h"

namespace dmlp {
namespace {

TEST(RankDevicesTest, LabelsNameHostAndDevice) {
  EXPECT_EQ(DeviceLabel("h1", {"cuda", "NVIDIA L4", "GPU-8f3c", "0000:3B:00.0", "12.8"}),
            "host h1 NVIDIA L4 GPU-8f3c PCI 0000:3B:00.0");
  EXPECT_EQ(DeviceLabel("node7", {"cpu", "Intel(R) Xeon(R) Gold", "", "", ""}),
            "host node7 cpu Intel(R) Xeon(R) Gold");
  // A GPU the driver told nothing more about is still named.
  EXPECT_EQ(DeviceLabel("h1", {"cuda", "NVIDIA L4", "", "", ""}), "host h1 NVIDIA L4");
}

TEST(RankDevicesTest, LabelsAreOneLineAndFitOneGatherValue) {
  EXPECT_EQ(DeviceLabel("h\n1", {"cpu", std::string(1000, 'x'), "", "", ""}).size(), kMaxGatherValueBytes);
  EXPECT_EQ(DeviceLabel("h\n1", {"cpu", "m\r", "", "", ""}), "host h 1 cpu m ");
}

}  // namespace
}  // namespace dmlp
