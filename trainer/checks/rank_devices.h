// defines: HostName, DeviceLabel, RankDevice, GatherRankDevices, NameLostPeerHost
//
// Every rank's device, known to every rank, so that a failure found by one
// rank (RANK_DIVERGED, SHARD_AUDIT_FAILED) names the host and GPU of the rank
// at fault, not only its number. Gathered once after the rendezvous, through
// Rendezvous::AllGather (one value of at most kMaxGatherValueBytes per rank).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/backend.h"

namespace dmlp {

class Rendezvous;

/// gethostname(), or "unknown".
std::string HostName();

/// "host h1 NVIDIA L4 GPU-8f3c… PCI 0000:3B:00.0" (CUDA), "host h1 cpu <model>"
/// (CPU): one line (line breaks become spaces), cut to fit one gather value.
std::string DeviceLabel(const std::string& host, const DeviceIdentity& device);

struct RankDevice {
  std::string name;   // DeviceIdentity::name: partials are bit-identical only between equal names
  std::string label;  // DeviceLabel
};

/// Every rank's RankDevice, indexed by rank (collective: every rank calls it
/// once). PEER_LOST, RENDEZVOUS_TIMEOUT etc. from the rendezvous.
Result<std::vector<RankDevice>> GatherRankDevices(Rendezvous& rendezvous, const Backend& backend);

/// The host a RankDevice's label names ("host node3 cpu ..." -> "node3"); "" when none.
std::string HostOf(const RankDevice& device);

/// A PEER_LOST "rank R: why" gets the lost rank's host and every rank placed
/// there: "rank 4 (host node3, ranks 4,5): why". A job spread over hosts
/// mostly loses a whole host (a cable, a partition, a frozen machine), and the
/// host, not the number, is what a person goes to look at. Any other status,
/// or a rank the table does not know (lost before the devices were gathered),
/// is returned as it is.
Status NameLostPeerHost(Status status, const std::vector<RankDevice>& devices);

}  // namespace dmlp
