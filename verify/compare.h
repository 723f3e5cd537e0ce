// defines: CompareRuns
//
// --against: two runs' receipts compared step by step, after each was verified
// on its own. Each run is represented by its lowest-ranked receipt file (rank 0
// in any sound run; the ranks of one run agree or the run already failed).
// Runs with a different number of processes but the same data shards promise
// identical receipts, so the comparison is by step, not by file.
//   - the first step whose (params_sha256, loss) differ, or that only one run
//     has while the other goes on: against.differs, and a Divergence between runs;
//   - no differing step but one run stops earlier: against.prefix.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "verify/findings.h"
#include "verify/receipt_set.h"
#include "verify/run_dir.h"

namespace dmlp::verify {

/// Compares run `a` (file `a_name`, rank `a_rank`) with run `b`; the Divergence when they differ at a step.
Result<std::optional<Divergence>> CompareRuns(const RunDir& a, const std::string& a_name, int64_t a_rank,
                                              const RunDir& b, const std::string& b_name, int64_t b_rank,
                                              FindingSink& sink);

}  // namespace dmlp::verify
