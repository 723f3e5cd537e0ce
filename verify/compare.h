// defines: ReceiptFile, RunComparison, CompareRuns, AddComparisonFindings, ShorterRunFinding,
//          ComparisonOutcomeName
//
// --against GOLDEN RUN: the two runs' receipts compared step by step, after
// each was verified on its own. Each run is represented by its lowest-ranked
// receipt file (rank 0 in any sound run; the ranks of one run agree or the run
// already failed). Runs with a different number of processes but the same data
// shards promise identical receipts, so the comparison is by step, not by file.
//
// The verdict (comparability.h decides whether the runs must match):
//   - identical: every step equal, same length;
//   - diverged at step s: the first step whose params_sha256 or loss differ,
//     or that only one run has while the other goes on: against.differs
//     (error; info when the runs are not comparable);
//   - RUN stops before GOLDEN, equal so far: still running or cut short
//     (RUN incomplete) is against.incomplete (exit 3), a finished RUN is
//     against.prefix (error; info when not comparable); the same when GOLDEN
//     stops first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "verify/comparability.h"
#include "verify/findings.h"
#include "verify/receipt_set.h"
#include "verify/run_dir.h"

namespace dmlp::verify {

/// One run's receipt file chosen to stand for it.
struct ReceiptFile {
  const RunDir* dir = nullptr;
  std::string name;            // rank-N.jsonl, or metrics.jsonl
  std::optional<int64_t> rank;  // none: metrics.jsonl
};

struct RunComparison {
  enum class Outcome { kIdentical, kDiverged, kRunShorter, kGoldenShorter };
  Outcome outcome = Outcome::kIdentical;
  int64_t step = 0;           // diverged: the first differing step; shorter: the last step both have
  std::string what;           // diverged: "params_sha256", "loss", "both" or "step"
  std::string golden_value, run_value;  // diverged: what each run has at `step`
  int64_t golden_last = 0, run_last = 0;  // the last step of each
};

/// Compares the two runs' receipts (their own defects were reported when each was verified).
Result<RunComparison> CompareRuns(const ReceiptFile& golden, const ReceiptFile& run);

/// Adds the verdict's findings: `run_finished` / `golden_finished` say whether
/// each run has a complete result.json and no incomplete receipts.
void AddComparisonFindings(const RunComparison& comparison, const Comparability& comparability,
                           const ReceiptFile& golden, const ReceiptFile& run, bool golden_finished,
                           bool run_finished, FindingSink& sink);

/// When one run ends first: against.prefix if that run finished, against.incomplete
/// if not; `so_far` says how the steps both have compared ("equal up to step 7").
Finding ShorterRunFinding(bool run_shorter, bool shorter_finished, const std::string& so_far,
                          int64_t golden_last, int64_t run_last, const ReceiptFile& golden,
                          const ReceiptFile& run);

/// "identical", "diverged", "run_shorter" or "golden_shorter".
const char* ComparisonOutcomeName(RunComparison::Outcome outcome);

}  // namespace dmlp::verify
