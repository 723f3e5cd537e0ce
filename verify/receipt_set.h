// defines: Divergence, ReceiptSet, ReceiptSetSummary, CheckReceiptSet, GroupsText
//
// All receipt files of one run read in lockstep, merged by step: at every step
// the ranks that have it must agree on params_sha256 and loss, and
// metrics.jsonl must equal rank 0 without `rank`. One record per file is in
// memory at a time. At the end, files that stop early are steps.count_mismatch
// (incomplete).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "verify/findings.h"
#include "verify/receipt_stream.h"
#include "verify/run_dir.h"
#include "verify/run_trace.h"

namespace dmlp::verify {

/// The first step at which two sources disagree, with the sources grouped by value.
struct Divergence {
  int64_t step = 0;
  std::string between;                       // "ranks" or "runs"
  std::vector<std::vector<int64_t>> groups;  // ranks with equal records, by smallest rank
  std::vector<std::string> runs;             // between runs: the two run directories
  std::string differs_in;  // "params_sha256", "loss", "both", or "step" (a step only one side has)
};

struct ReceiptSetSummary {
  std::vector<FileSummary> ranks;        // in rank order
  std::optional<FileSummary> metrics;    // when metrics.jsonl was read
  int64_t last_step = 0;                 // the highest step any file reached
  int64_t divergent_steps = 0;           // steps at which ranks disagreed
  std::optional<Divergence> divergence;  // the first such step
  /// The reference record for result.json: rank 0's last, else the lowest rank's.
  const std::optional<Receipt>& LastRecord() const;
};

/// Rank groups as people read them: "{0,1,3} {2}".
std::string GroupsText(const std::vector<std::vector<int64_t>>& groups);
/// Reads the given rank files (rank -> name) and metrics.jsonl (when `read_metrics`),
/// feeding `trace` (when not null) step by step.
/// REQUIRES: every name is a canonical rank file name of `dir`. IO_ERROR on read failure.
Result<ReceiptSetSummary> CheckReceiptSet(const RunDir& dir, const std::map<int64_t, std::string>& rank_files,
                                          bool read_metrics, FindingSink& sink, RunTrace* trace = nullptr);

/// Opens one receipt file as a stream (`rank` none: metrics.jsonl); the file must be regular.
Result<std::unique_ptr<ReceiptStream>> OpenReceiptStream(const RunDir& dir, const std::string& name,
                                                         std::optional<int64_t> rank, FindingSink* sink);

}  // namespace dmlp::verify
