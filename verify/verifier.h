// defines: VerifyOptions, RunReport, Verdict, Report, Verify, VerifyRun, VerdictName
//
// dmlp-verify's library entry point: Verify(options) reads the run directory
// (and --against's), never writing to either, and returns the Report that
// main.cc renders. An error Status (exit 2) means the verifier could not do its
// job (unreadable directory, read error); every defect of the run itself is a
// finding in the Report instead.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "verify/compare.h"
#include "verify/comparability.h"
#include "verify/findings.h"
#include "verify/loss_tolerance.h"
#include "verify/rank_env_check.h"
#include "verify/receipt_set.h"
#include "verify/replay_audit.h"
#include "verify/run_trace.h"

namespace dmlp::verify {

struct VerifyOptions {
  std::string run_dir;
  std::optional<std::string> against;  // --against GOLDEN: the run RUN_DIR must match
  bool allow_incomplete = false;       // incomplete exits 0 instead of 3
  bool require_comparable = false;     // --require-comparable: runs that need not match fail
  bool allow_different_experiment = false;  // --allow-different-experiment: another experiment is info (experiment.h)
  bool trace = false;                  // keep a RunTrace per run (for --html)
  // Tests only: called with the pass number after each listing of RUN_DIR, to
  // change the directory in the middle of a pass as a live job does.
  std::function<void(int)> after_listing;
  std::optional<double> tolerance;     // --tolerance REL: compare the losses within REL, not the bits
  std::optional<ReplayRequest> replay;  // --replay[=N]: recompute segments with dmlp-train (replay_audit.h)
};

/// What was found in one run directory.
struct RunReport {
  std::string dir;
  std::string format = "unknown";        // "reference" or "dmlp" once result.json is valid
  std::string version;                   // jax_version or dmlp_version
  std::string result_status = "absent";  // "absent", "valid", "invalid"
  std::string state_status = "not_checked";  // "absent", "verified", "mismatch", "invalid", "not_checked"
  int64_t processes = 0;                 // result.json's processes, else the rank files found
  bool finished = false;                 // a complete result.json and nothing incomplete
  std::optional<ResultDoc> result;       // result.json when valid
  ReceiptSetSummary receipts;
  std::vector<std::pair<std::string, std::string>> settings;  // result.json's plan/model/fingerprint
  std::shared_ptr<const RunTrace> trace;  // when VerifyOptions::trace
  std::vector<RankEnvironment> environments;  // rank-N.env.jsonl files, rank order (may be none)
};

/// --against's verdict: must the runs match, and do they.
struct AgainstVerdict {
  Comparability comparability;
  RunComparison comparison;              // bit for bit (decides the verdict without --tolerance)
  std::optional<LossComparison> losses;  // --tolerance: decides the verdict instead
};

enum class Verdict { kPass, kIncomplete, kFail };

struct Report {
  VerifyOptions options;
  RunReport run;
  std::optional<RunReport> against;  // GOLDEN
  std::optional<AgainstVerdict> against_verdict;  // when both runs have receipts
  std::optional<ReplayAudit> replay;  // --replay
  FindingSink findings;
  // Within RUN_DIR, else within OTHER_RUN, else between the two runs.
  std::optional<Divergence> first_divergence;
  std::optional<Divergence> between_runs;  // --against: where the two runs part, even when
                                          // first_divergence is within one of them
  Verdict verdict = Verdict::kPass;
  int exit_code = 0;
};

/// Verifies options.run_dir (and options.against); codes NOT_FOUND, NOT_A_DIRECTORY, IO_ERROR, and
/// USAGE_ERROR when both name one directory (same_file.h), before anything is read.
Result<Report> Verify(const VerifyOptions& options);
/// Verifies one run directory, adding its findings to `sink` (and keeping a trace when `trace`);
/// read again while its receipt files are renamed under it (`after_listing`: VerifyOptions).
Result<RunReport> VerifyRun(const std::string& path, FindingSink& sink, bool trace = false,
                            const std::function<void(int)>& after_listing = {});
/// "PASS", "INCOMPLETE" or "FAIL".
const char* VerdictName(Verdict verdict);

}  // namespace dmlp::verify
