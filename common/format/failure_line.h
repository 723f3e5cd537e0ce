// defines: kRankDivergedExit, kShardAuditFailedExit, kFailureStepKey, kFailureRanksKey,
//          kFailureAuditRanksKey, kFailureDigestKey, kFailureMajorityKey, kFailureUpdateKey,
//          kFailureShardKey, kFailureDigestsKey, kFailureDevicesKey, kFailureDeviceSeparator,
//          kFailureNoMajority, kFailureDeviceRank, kFailureDeviceHost
//
// The failure line: what a rank prints when the hardware may be at fault, and
// the exit code it ends with. dmlp-train (trainer/checks/divergence_check.cc,
// trainer/checks/shard_audit.cc) writes it; dmlp-launch
// (launch/divergence_line.cc) reads it to name the step, the ranks and the
// devices. One line each:
//   dmlp-train: error: RANK_DIVERGED: step=S rank(s)=R[,R...] digest=<odd ranks' digests>
//       majority=<hex|none> device(s)=rank R: <label>[; rank R2: <label>]        (exit 4)
//   dmlp-train: error: SHARD_AUDIT_FAILED: step=S update=U shard=K ranks=A,B
//       digests=<A's>,<B's> device(s)=rank A: <label>; rank B: <label>            (exit 5)
// The codes themselves are kRankDiverged and kShardAuditFailed (error_codes.h).
// device(s)= runs to the end of the line, so it comes last.
#pragma once

#include "common/format/error_codes.h"

namespace dmlp {

inline constexpr int kRankDivergedExit = 4;      // every rank exits with it; so does dmlp-launch
inline constexpr int kShardAuditFailedExit = 5;  // every rank exits with it; so does dmlp-launch

inline constexpr char kFailureStepKey[] = "step=";         // the logged step
inline constexpr char kFailureRanksKey[] = "rank(s)=";     // RANK_DIVERGED: the odd ranks
inline constexpr char kFailureAuditRanksKey[] = "ranks=";  // SHARD_AUDIT_FAILED: owner,auditor
inline constexpr char kFailureDigestKey[] = "digest=";     // RANK_DIVERGED: the odd ranks' digests
inline constexpr char kFailureMajorityKey[] = "majority=";
inline constexpr char kFailureNoMajority[] = "none";       // majority= when no digest has one
inline constexpr char kFailureUpdateKey[] = "update=";     // SHARD_AUDIT_FAILED: global update number
inline constexpr char kFailureShardKey[] = "shard=";
inline constexpr char kFailureDigestsKey[] = "digests=";   // SHARD_AUDIT_FAILED: owner's,auditor's
inline constexpr char kFailureDevicesKey[] = "device(s)=";
// device(s)= holds "rank R: <label>" items, "; " between two; a label starts
// "host NAME " (trainer/checks/rank_devices.cc), then names the device.
inline constexpr char kFailureDeviceSeparator[] = "; ";
inline constexpr char kFailureDeviceRank[] = "rank ";
inline constexpr char kFailureDeviceHost[] = "host ";

}  // namespace dmlp
