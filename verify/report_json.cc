#include "verify/report_json.h"

#include <cmath>

namespace dmlp::verify {
namespace {

using nlohmann::json;

json OrNull(const std::optional<std::string>& value) { return value ? json(*value) : json(nullptr); }

json FileToJson(const FileSummary& file) {
  return {{"rank", file.rank ? json(*file.rank) : json(nullptr)},
          {"file", file.display},
          {"lines", file.lines},
          {"records", file.records},
          {"first_step", file.first_step},
          {"last_step", file.last_step},
          {"torn_last_line", file.torn_last},
          {"last_loss", file.last ? json(file.last->loss) : json(nullptr)},
          {"last_params_sha256", file.last ? json(file.last->params_sha256) : json(nullptr)}};
}

json RanksToJson(const RunReport& run) {
  json ranks = json::array();
  for (const FileSummary& file : run.receipts.ranks) ranks.push_back(FileToJson(file));
  return ranks;
}

json SummaryToJson(const RunReport& run) {
  return {{"run_dir", run.dir},
          {"format", run.format},
          {"version", run.version},
          {"result", run.result_status},
          {"state", run.state_status},
          {"processes", run.processes},
          {"steps", run.receipts.last_step},
          {"divergent_steps", run.receipts.divergent_steps}};
}

json DivergenceToJson(const std::optional<Divergence>& divergence) {
  if (!divergence) return nullptr;
  return {{"step", divergence->step},
          {"between", divergence->between},
          {"groups", divergence->groups},
          {"runs", divergence->runs}};
}

json FindingToJson(const Finding& finding) {
  return {{"id", finding.id},
          {"severity", SeverityName(finding.severity)},
          {"file", finding.file},
          {"line", finding.line > 0 ? json(finding.line) : json(nullptr)},
          {"step", finding.step > 0 ? json(finding.step) : json(nullptr)},
          {"expected", OrNull(finding.expected)},
          {"actual", OrNull(finding.actual)},
          {"message", finding.message}};
}

// Infinity (GOLDEN's loss 0, RUN's not) has no JSON spelling: null.
json Finite(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

json LossComparisonToJson(const std::optional<LossComparison>& losses) {
  if (!losses) return nullptr;
  json compared = json::array();
  for (const StepRange& range : losses->compared) compared.push_back({range.first, range.last});
  const bool exceeded = losses->first_exceeding != 0;
  const bool any = losses->compared_steps > 0;
  return {{"rel", losses->tolerance},
          {"within", losses->within()},
          {"golden_source", losses->golden_source},
          {"run_source", losses->run_source},
          {"compared", std::move(compared)},
          {"compared_steps", losses->compared_steps},
          {"largest_rel_diff", any ? Finite(losses->largest) : json(nullptr)},
          {"largest_step", any ? json(losses->largest_step) : json(nullptr)},
          {"golden_loss_at_largest", any ? json(losses->golden_at_largest) : json(nullptr)},
          {"run_loss_at_largest", any ? json(losses->run_at_largest) : json(nullptr)},
          {"first_exceeding_step", exceeded ? json(losses->first_exceeding) : json(nullptr)},
          {"first_exceeding_rel_diff", exceeded ? Finite(losses->first_exceeding_difference) : json(nullptr)},
          {"exceeding_steps", losses->exceeding_steps},
          {"golden_last_step", losses->golden_last},
          {"run_last_step", losses->run_last}};
}

json AgainstVerdictToJson(const std::optional<AgainstVerdict>& verdict) {
  if (!verdict) return nullptr;
  const RunComparison& comparison = verdict->comparison;
  const bool diverged = comparison.outcome == RunComparison::Outcome::kDiverged;
  return {{"comparability", ComparabilityName(verdict->comparability.kind)},
          {"reasons", verdict->comparability.reasons},
          {"outcome", ComparisonOutcomeName(comparison.outcome)},
          {"step", comparison.step},
          {"what", diverged ? json(comparison.what) : json(nullptr)},
          {"golden_value", diverged ? json(comparison.golden_value) : json(nullptr)},
          {"run_value", diverged ? json(comparison.run_value) : json(nullptr)},
          {"golden_last_step", comparison.golden_last},
          {"run_last_step", comparison.run_last},
          {"tolerance", LossComparisonToJson(verdict->losses)}};
}

// The audit of --replay (replay_audit.h), null without it.
json ReplayToJson(const std::optional<ReplayAudit>& audit) {
  if (!audit) return nullptr;
  json segments = json::array();
  for (const ReplaySegmentOutcome& segment : audit->segments)
    segments.push_back({{"from_step", segment.segment.from}, {"to_step", segment.segment.to},
                        {"outcome", segment.outcome}, {"detail", segment.detail}});
  json mismatch = nullptr;
  if (audit->first_mismatch_step) mismatch = {{"step", *audit->first_mismatch_step}, {"what", audit->first_mismatch}};
  return {{"requested", audit->requested},
          {"seed", audit->seed},
          {"run_steps", audit->run_steps},
          {"run_segments", audit->run_segments},
          {"from_start", audit->from_start},
          {"not_run", audit->not_run.empty() ? json(nullptr) : json(audit->not_run)},
          {"segments", std::move(segments)},
          {"steps_replayed", audit->steps_replayed},
          {"first_mismatch", std::move(mismatch)},
          {"miss_chance_at_10_percent_wrong", audit->miss_chance_10},
          {"miss_chance_at_1_percent_wrong", audit->miss_chance_1},
          {"replay_seconds", audit->replay_seconds}};
}

json Skeleton(const VerifyOptions& options) {
  return {{"schema", kReportSchema},
          {"version", DMLP_VERSION},
          {"run_dir", options.run_dir},
          {"against", OrNull(options.against)},
          {"allow_incomplete", options.allow_incomplete},
          {"require_comparable", options.require_comparable},
          {"tolerance", options.tolerance ? json(*options.tolerance) : json(nullptr)}};
}

}  // namespace

json ReportToJson(const Report& report) {
  json out = Skeleton(report.options);
  out["verdict"] = VerdictName(report.verdict);
  out["exit_code"] = report.exit_code;
  out["error"] = nullptr;
  json summary = SummaryToJson(report.run);
  summary["errors"] = report.findings.errors();
  summary["incompletes"] = report.findings.incompletes();
  summary["warnings"] = report.findings.warnings();
  summary["infos"] = report.findings.infos();
  summary["findings_total"] = report.findings.total();
  summary["findings_shown"] = report.findings.kept().size();
  out["summary"] = std::move(summary);
  out["first_divergence"] = DivergenceToJson(report.first_divergence);
  out["ranks"] = RanksToJson(report.run);
  out["metrics"] = report.run.receipts.metrics ? FileToJson(*report.run.receipts.metrics) : json(nullptr);
  out["environments"] = EnvironmentsToJson(report.run.environments);
  out["against_run"] = nullptr;
  if (report.against) {
    const RunReport& other = *report.against;
    out["against_run"] = {{"summary", SummaryToJson(other)},
                          {"ranks", RanksToJson(other)},
                          {"metrics", other.receipts.metrics ? FileToJson(*other.receipts.metrics) : json(nullptr)},
                          {"environments", EnvironmentsToJson(other.environments)}};
  }
  out["against_verdict"] = AgainstVerdictToJson(report.against_verdict);
  out["replay"] = ReplayToJson(report.replay);
  json findings = json::array();
  for (const Finding& finding : report.findings.kept()) findings.push_back(FindingToJson(finding));
  out["findings"] = std::move(findings);
  return out;
}

json ErrorReportToJson(const VerifyOptions& options, const Status& error) {
  json out = Skeleton(options);
  out["verdict"] = "ERROR";
  out["exit_code"] = 2;
  out["error"] = error.ToString();
  out["summary"] = nullptr;
  out["first_divergence"] = nullptr;
  out["ranks"] = json::array();
  out["metrics"] = nullptr;
  out["environments"] = json::array();
  out["against_run"] = nullptr;
  out["against_verdict"] = nullptr;
  out["replay"] = nullptr;
  out["findings"] = json::array();
  return out;
}

std::string DumpReport(const json& report) {
  return report.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

bool IsJsonReport(std::string_view text) {
  // Sorted keys put "against" first, so the marker is the schema field, not a prefix.
  const json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return document.is_object() && document.value("schema", json()) == kReportSchema;
}

}  // namespace dmlp::verify
