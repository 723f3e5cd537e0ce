// defines: ReplayRequest, ReplaySegmentOutcome, ReplayAudit, AuditByReplay
//
// `dmlp-verify --replay[=N] RUN_DIR`: receipts proven genuine, not only
// consistent (docs/verifier.md, "Consistent and genuine"). The ordinary checks
// prove that every rank wrote the same hashes and that the summary and the
// state file agree with them; a fault every rank shares, or files rewritten
// together, passes them. The audit recomputes segments of the run with
// dmlp-train on this machine, one rank, each from a kept checkpoint (or the
// plan's initial state) to the next, and compares every recomputed receipt and
// the final digests with the run's. In order:
//   1. only a run whose ordinary checks passed is audited (replay.not_run);
//   2. every kept checkpoint must hash to its recorded digest and to the
//      run's receipt of its step (replay.checkpoint_invalid, FAIL);
//   3. where the bits come from: dmlp-train runs one step of the plan here, and
//      every result.json field of a row of common/bit_settings.h that decides
//      the bits under the run's REDUCTION must equal the run's
//      (replay.not_reproducible, INCOMPLETE, naming the fields);
//   4. the chosen segments are replayed (replay.mismatch, FAIL, REPLAY_MISMATCH
//      with the first step and what differs; replay.segment_failed, INCOMPLETE).
// The run directory is only read; the audit works in a directory of its own
// under TMPDIR, removed afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "verify/findings.h"
#include "verify/replay_segments.h"

namespace dmlp::verify {

struct RunReport;

/// --replay[=N|all] and --replay-seed S.
struct ReplayRequest {
  std::optional<int64_t> segments = kDefaultSegments;  // nullopt: all
  std::optional<uint64_t> seed;                        // nullopt: drawn, and printed
  static constexpr int64_t kDefaultSegments = 3;
};

struct ReplaySegmentOutcome {
  ReplaySegment segment;
  std::string outcome;  // "reproduced", "mismatch" or "incomplete"
  std::string detail;   // what differs, or why it could not be replayed
  int64_t step = 0;     // mismatch: the first step that differs
};

struct ReplayAudit {
  std::string requested;           // "all" or N
  uint64_t seed = 0;
  int64_t run_steps = 0;
  int64_t run_segments = 0;        // segments between kept checkpoints in the run
  bool from_start = false;         // no kept checkpoint: one segment from step 0
  std::string not_run;             // why nothing was replayed ("" when segments ran)
  std::string bits_difference;     // why this machine cannot give the run's bits ("" when it can)
  std::vector<ReplaySegmentOutcome> segments;  // the chosen ones, in step order
  int64_t steps_replayed = 0;      // steps recomputed and compared
  std::optional<int64_t> first_mismatch_step;
  std::string first_mismatch;      // REPLAY_MISMATCH's detail
  double miss_chance_10 = 1, miss_chance_1 = 1;  // MissProbability at 10 % and 1 % of segments wrong
  double replay_seconds = 0;       // wall time of the segments' dmlp-train runs
};

/// Audits `run` (verified already, its findings in `sink`) by replay; adds the
/// replay.* findings to `sink`. An error Status only for trouble of the verifier itself.
Result<ReplayAudit> AuditByReplay(const ReplayRequest& request, const RunReport& run, FindingSink& sink);

}  // namespace dmlp::verify
