// defines: ReportToJson, ErrorReportToJson, kReportSchema, IsJsonReport
//
// The --json report, schema "dmlp-verify/1": one object, valid whatever the
// verdict (also when the verifier itself failed, exit 2):
//
//   schema        "dmlp-verify/1"
//   version       dmlp-verify's version
//   run_dir       RUN_DIR as given;  against: GOLDEN (--against) or null;
//                 require_comparable: --require-comparable;
//                 tolerance: --tolerance's REL, or null
//   verdict       "PASS" | "INCOMPLETE" | "FAIL" | "ERROR" (exit 2)
//   exit_code     0 | 1 | 2 | 3, exactly the process exit status
//   error         null, or "CODE: detail" when verdict is ERROR
//   summary       {format, version, result, state, processes, steps,
//                  errors, incompletes, warnings, infos, findings_total, findings_shown,
//                  divergent_steps}
//   first_divergence  null, or {step, between: "ranks"|"runs" (with
//                  --tolerance, between runs only where a loss exceeds REL),
//                  groups: [[ranks...], ...] (between ranks, groups of equal
//                  records ordered by smallest rank; [] between runs),
//                  runs: [RUN_DIR, OTHER_RUN] (between runs; [] otherwise)}
//   ranks         [{rank, file, lines, records, first_step, last_step,
//                   torn_last_line, last_loss, last_params_sha256}, ...]
//   metrics       the same for metrics.jsonl (rank null), or null
//   environments  where each rank ran (rank-N.env.jsonl; [] without them):
//                 [{rank, file, damaged_lines, lines: [{line, event, after_step,
//                   time, host, boot_id, why (null unless restored), device}]}]
//   against_run   {summary, ranks, metrics, environments} of GOLDEN, or null
//   against_verdict  null, or {comparability: "must_match"|"not_comparable"|
//                 "unknown", reasons: [what differs, or why unknown],
//                 outcome: "identical"|"diverged"|"run_shorter"|"golden_shorter",
//                 step (diverged: the first differing step; shorter: the last
//                 common one), what ("params_sha256"|"loss"|"both"|"step" when
//                 diverged, else null), golden_value, run_value,
//                 golden_last_step, run_last_step,
//                 tolerance: null without --tolerance, else the loss curves
//                 compared (loss_tolerance.h; these decide the verdict):
//                   {rel, within, golden_source, run_source ("metrics.jsonl"
//                    or "rank-N.jsonl"), compared: [[first, last], ...] (the
//                    steps both have), compared_steps, largest_rel_diff,
//                    largest_step, golden_loss_at_largest,
//                    run_loss_at_largest (null when nothing was compared;
//                    largest_rel_diff null also when infinite),
//                    first_exceeding_step, first_exceeding_rel_diff (null
//                    when within), exceeding_steps, golden_last_step,
//                    run_last_step}}
//   findings      [{id, severity, file, line, step, expected, actual, message}]
//                 line/step/expected/actual null when not applicable; at most
//                 20 per (id, file) and 2000 in all are listed, all are counted
//
// Strings from the run (file contents, names) may be any bytes: invalid UTF-8
// is replaced (U+FFFD) so the output always parses.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "verify/verifier.h"

namespace dmlp::verify {

inline constexpr char kReportSchema[] = "dmlp-verify/1";

/// The report object of a finished verification.
nlohmann::json ReportToJson(const Report& report);
/// The report object when verification could not run (verdict ERROR, exit 2).
nlohmann::json ErrorReportToJson(const VerifyOptions& options, const Status& error);
/// Whether `text` is a report object of schema kReportSchema: one dmlp-verify wrote (report_file.h).
bool IsJsonReport(std::string_view text);
/// Serializes a report (2-space indent, invalid UTF-8 replaced, trailing newline).
std::string DumpReport(const nlohmann::json& report);

}  // namespace dmlp::verify
