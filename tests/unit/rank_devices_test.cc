// How a rank's device is named where a failure names it (trainer/checks/rank_devices.h).
#include "trainer/checks/rank_devices.h"

#include <string>
#include <vector>

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

TEST(RankDevicesTest, HostOfReadsTheLabel) {
  EXPECT_EQ(HostOf({"cpu", "host node3 cpu Xeon"}), "node3");
  EXPECT_EQ(HostOf({"cpu", "host node3"}), "node3");
  EXPECT_EQ(HostOf({"cpu", "no host here"}), "");
}

TEST(RankDevicesTest, ALostPeerNamesItsHostAndTheRanksThere) {
  const std::vector<RankDevice> devices = {{"cpu", "host node1 cpu x"}, {"cpu", "host node1 cpu x"},
                                           {"cpu", "host node2 cpu x"}, {"cpu", "host node3 cpu x"},
                                           {"cpu", "host node2 cpu x"}};
  EXPECT_EQ(NameLostPeerHost(Status::Error("PEER_LOST", "rank 2: silent for 3s (HEARTBEAT_TIMEOUT_SECONDS)"),
                             devices)
                .ToString(),
            "PEER_LOST: rank 2 (host node2, ranks 2,4): silent for 3s (HEARTBEAT_TIMEOUT_SECONDS)");
  EXPECT_EQ(NameLostPeerHost(Status::Error("PEER_LOST", "rank 0: silent for 3s (seen by rank 3)"), devices)
                .ToString(),
            "PEER_LOST: rank 0 (host node1, ranks 0,1): silent for 3s (seen by rank 3)");
}

TEST(RankDevicesTest, OtherFailuresAndUnknownRanksAreLeftAsTheyAre) {
  const std::vector<RankDevice> devices = {{"cpu", "host node1 cpu x"}};
  for (const Status& status :
       {Status::Error("PEER_LOST", "rank 7: left the rendezvous"), Status::Error("PEER_LOST", "rank x: why"),
        Status::Error("PEER_LOST", "no rank here"), Status::Error("COLLECTIVE_ERROR", "rank 0: broken")}) {
    EXPECT_EQ(NameLostPeerHost(status, devices).ToString(), status.ToString());
  }
  EXPECT_EQ(NameLostPeerHost(Status::Error("PEER_LOST", "rank 0: why"), {}).ToString(), "PEER_LOST: rank 0: why");
}

}  // namespace
}  // namespace dmlp
