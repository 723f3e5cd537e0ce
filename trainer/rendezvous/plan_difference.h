// defines: DescribePlanDifference
//
// The detail of PLAN_MISMATCH: what differs between rank 0's plan fingerprint
// and another rank's. The trainer builds the fingerprint; when it is a list of
// `NAME=value` items (one per line, or separated by ';'), the message names
// the first item that differs, which is what a user needs to fix the launch.
#pragma once

#include <string>
#include <string_view>

namespace dmlp {

/// "BATCH=8 (rank 0 has BATCH=16)", "B missing (rank 0 has B=2)", "C=3 (rank 0
/// has no C)"; when either fingerprint is not such a list (or repeats a name),
/// both quoted: fingerprint "x" (rank 0 has "y"). `reference` names whose the
/// first fingerprint is ("rank 0"; "the checkpoint" for a resume).
std::string DescribePlanDifference(std::string_view rank0_fingerprint, std::string_view other_fingerprint,
                                   std::string_view reference = "rank 0");

}  // namespace dmlp
