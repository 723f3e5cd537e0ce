#include "trainer/checks/rank_devices.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "common/format/error_codes.h"
#include "common/format/failure_line.h"
#include "trainer/rendezvous/rendezvous.h"
#include "trainer/rendezvous/rendezvous_wire.h"

namespace dmlp {
namespace {

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

std::string DeviceLabel(const std::string& host, const DeviceIdentity& device) {
  std::string label = kFailureDeviceHost + host + " ";
  if (device.kind == "cpu") {
    label += "cpu " + device.name;
  } else {
    label += device.name;
    if (!device.uuid.empty()) label += " " + device.uuid;
    if (!device.pci_bus_id.empty()) label += " PCI " + device.pci_bus_id;
  }
  label = OneLine(std::move(label));
  if (label.size() > kMaxGatherValueBytes) label.resize(kMaxGatherValueBytes);
  return label;
}

Result<std::vector<RankDevice>> GatherRankDevices(Rendezvous& rendezvous, const Backend& backend) {
  const DeviceIdentity device = backend.Device();
  // "<name>\n<label>": the name first, whole (it decides what an audit may
  // compare); the label fills what is left of the value.
  std::string value = OneLine(device.name).substr(0, kMaxGatherValueBytes / 2) + "\n";
  value += DeviceLabel(HostName(), device).substr(0, kMaxGatherValueBytes - value.size());
  DMLP_ASSIGN_OR_RETURN(std::vector<std::string> values, rendezvous.AllGather("rank-device", value));
  std::vector<RankDevice> devices;
  for (size_t rank = 0; rank < values.size(); ++rank) {
    const size_t newline = values[rank].find('\n');
    if (newline == std::string::npos)
      return Status::Error(kProtocolError, "rank " + std::to_string(rank) + " published no device");
    devices.push_back({values[rank].substr(0, newline), values[rank].substr(newline + 1)});
  }
  return devices;
}


std::string HostOf(const RankDevice& device) {
  static constexpr std::string_view kPrefix = kFailureDeviceHost;  // DeviceLabel's form
  if (device.label.compare(0, kPrefix.size(), kPrefix) != 0) return {};
  const size_t end = device.label.find(' ', kPrefix.size());
  return device.label.substr(kPrefix.size(), end == std::string::npos ? end : end - kPrefix.size());
}

Status NameLostPeerHost(Status status, const std::vector<RankDevice>& devices) {
  static constexpr std::string_view kRank = "rank ";  // rendezvous.h: "PEER_LOST: rank R: why"
  const std::string& detail = status.detail();
  if (status.code() != kPeerLost || detail.compare(0, kRank.size(), kRank) != 0) return status;
  const size_t colon = detail.find(':');
  if (colon == std::string::npos) return status;
  const std::string number = detail.substr(kRank.size(), colon - kRank.size());
  char* end = nullptr;
  const long lost = std::strtol(number.c_str(), &end, 10);
  if (number.empty() || *end != '\0' || lost < 0 || static_cast<size_t>(lost) >= devices.size()) return status;
  const std::string host = HostOf(devices[lost]);
  if (host.empty()) return status;
  std::string ranks;
  for (size_t rank = 0; rank < devices.size(); ++rank) {
    if (HostOf(devices[rank]) == host) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
  }
  return Status::Error(kPeerLost, detail.substr(0, colon) + " (host " + host + ", ranks " + ranks + ")" +
                                        detail.substr(colon));
}

}  // namespace dmlp
