#include "trainer/rank_devices.h"

#include <unistd.h>

#include <climits>

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
  std::string label = "host " + host + " ";
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
      return Status::Error("PROTOCOL_ERROR", "rank " + std::to_string(rank) + " published no device");
    devices.push_back({values[rank].substr(0, newline), values[rank].substr(newline + 1)});
  }
  return devices;
}

}  // namespace dmlp
