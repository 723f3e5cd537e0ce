#include "trainer/checks/divergence_check.h"

#include <map>

#include "common/format/error_codes.h"
#include "common/format/failure_line.h"


namespace dmlp {
namespace {

std::string JoinRanks(const std::vector<size_t>& ranks) {
  std::string text;
  for (size_t rank : ranks) text += (text.empty() ? "" : ",") + std::to_string(rank);
  return text;
}

}  // namespace

std::optional<std::string> DescribeDivergence(int64_t step, const std::vector<std::string>& digests,
                                              const std::vector<std::string>& labels) {
  std::map<std::string, size_t> holders;
  for (const std::string& digest : digests) ++holders[digest];
  if (holders.size() <= 1) return std::nullopt;
  std::optional<std::string> majority;
  for (const auto& [digest, count] : holders) {
    if (2 * count > digests.size()) majority = digest;
  }
  std::vector<size_t> odd;
  for (size_t rank = 0; rank < digests.size(); ++rank) {
    if (!majority || digests[rank] != *majority) odd.push_back(rank);
  }
  std::string odd_digests, devices;
  for (size_t rank : odd) {
    odd_digests += (odd_digests.empty() ? "" : ",") + digests[rank];
    devices += (devices.empty() ? "" : kFailureDeviceSeparator) +
               (kFailureDeviceRank + std::to_string(rank) + ": " + labels[rank]);
  }
  return kFailureStepKey + std::to_string(step) + " " + kFailureRanksKey + JoinRanks(odd) + " " +
         kFailureDigestKey + odd_digests + " " + kFailureMajorityKey + majority.value_or(kFailureNoMajority) +
         " " + kFailureDevicesKey + devices;
}

DivergenceCheck DivergenceCheck::Start(const Plan& plan, const std::vector<RankDevice>& devices,
                                       Rendezvous& rendezvous) {
  DivergenceCheck check;
  if (!plan.divergence_check || plan.num_processes < 2) return check;
  for (const RankDevice& device : devices) check.labels_.push_back(device.label);
  check.rendezvous_ = &rendezvous;
  return check;
}

Status DivergenceCheck::Check(int64_t step, const std::string& digest) {
  if (rendezvous_ == nullptr) return Status::Ok();
  // One round per step, forgotten by the coordinator once answered; the step
  // in the name makes a rank out of step a timeout naming it, never a false match.
  DMLP_ASSIGN_OR_RETURN(std::vector<std::string> digests,
                        rendezvous_->AllGather("step-digest/" + std::to_string(step), digest));
  std::optional<std::string> divergence = DescribeDivergence(step, digests, labels_);
  if (divergence) return Status::Error(kRankDiverged, *divergence);
  return Status::Ok();
}

Status PreferDivergence(Status status, DigestPipeline& digests) {
  if (status.ok() || status.code() == kRankDiverged) return status;
  // The sink has the verdict of every step it took: a peer that stopped for a
  // divergence breaks this rank's collectives, which is not the news.
  Status drained = digests.Drain();
  return drained.code() == kRankDiverged ? drained : status;
}

}  // namespace dmlp
