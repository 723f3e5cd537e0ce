// defines: DeviceLabel, Divergence, IsHardwareFaultExit,
//          MentionsHardwareFault, ParseDivergenceLine, DivergenceOf, DivergencePlace,
//          DescribeDivergence, DescribeDevices
//
// The failure line a rank prints when the hardware may be at fault
// (common/format/failure_line.h), as the launcher reads it. A label reads
// "host h1 NVIDIA L4 GPU-<uuid> PCI 0000:3B:00.0" or "host h1 cpu Intel(R)
// Xeon(R) ...". The trainer owns that format, so parsing is lenient: it anchors on the code and on `step=`,
// `rank(s)=` / `ranks=`, `device(s)=`, and whatever does not parse is left
// unknown. The exit code decides (IsHardwareFaultExit); the line only adds
// the step, the ranks and the devices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/format/failure_line.h"
#include "launch/exit_status.h"

namespace dmlp {

/// One "rank R: <label>" item of device(s)=.
struct DeviceLabel {
  int rank = 0;
  std::string host;    // the label's "host NAME", else the launcher's own host name
  std::string device;  // the rest of the label ("NVIDIA L4 GPU-... PCI ..."); may be empty
};

/// What one attempt's failed rank said about a divergence.
struct Divergence {
  std::string code;        // kRankDiverged or kShardAuditFailed
  int failed_rank = 0;     // the rank that failed first (exit code 4 or 5)
  bool line_read = false;  // false: only the exit code is known
  std::optional<int64_t> step;
  std::vector<int> ranks;            // rank(s)= or ranks=; empty when unreadable
  std::vector<DeviceLabel> devices;  // device(s)=, in the order printed (the first 16)
  size_t devices_not_kept = 0;       // labels beyond those
  std::string launcher_host;         // gethostname() of the launcher that saw it

  /// Same step and same rank(s), both known: a replay that failed the same way.
  bool SamePlace(const Divergence& other) const;
};

/// True for exit code 4 (RANK_DIVERGED) and 5 (SHARD_AUDIT_FAILED).
bool IsHardwareFaultExit(const ExitStatus& status);
/// True when `line` names either code (a cheap test for every line a rank prints).
bool MentionsHardwareFault(std::string_view line);
/// Parses one line (any prefix, such as "[rank 1] dmlp-train: error: ", is
/// skipped). nullopt when neither code is in it; otherwise every field that
/// parses. `launcher_host` stands in for a label without "host NAME".
std::optional<Divergence> ParseDivergenceLine(std::string_view line,
                                              const std::string& launcher_host);
/// The divergence of an attempt whose first failure was `failed_rank` with
/// `status`; nullopt unless IsHardwareFaultExit(status). `lines` are the
/// hardware-fault lines the ranks printed, the failed rank's first: the first
/// one with the code that matches the exit code is used.
std::optional<Divergence> DivergenceOf(int failed_rank, const ExitStatus& status,
                                       const std::vector<std::string>& lines,
                                       const std::string& launcher_host);
/// "rank 1 diverged at step 7", "ranks 0,1 failed the shard audit at step 7";
/// without " at step S" when the step is unknown.
std::string DivergencePlace(const Divergence& divergence);
/// "rank 1 diverged at step 7 (RANK_DIVERGED)", "ranks 0,1 failed the shard
/// audit at step 7 (SHARD_AUDIT_FAILED)"; "rank 1 diverged (RANK_DIVERGED; exit
/// code 4, no readable RANK_DIVERGED line)" when only the exit code is known.
std::string DescribeDivergence(const Divergence& divergence);
/// "host h1 (NVIDIA L4 ...)" for one device, "rank 0: host h1 (...); rank 1:
/// host h2 (...)" for several; "host h1 (the launcher's host; no device
/// named)" when the line named none.
std::string DescribeDevices(const Divergence& divergence);

}  // namespace dmlp
