#include "verify/report_text.h"

#include <cstdio>

namespace dmlp::verify {
namespace {

// Control bytes and non-ASCII from hostile files must not reach the terminal raw.
std::string Printable(const std::string& text, size_t limit = 160) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  if (text.size() > limit) out += "...";
  return out;
}

std::string RunLine(const RunReport& run) {
  std::string line = "dmlp-verify: " + Printable(run.dir, 400) + ": ";
  line += std::to_string(run.processes) + (run.processes == 1 ? " rank, " : " ranks, ");
  line += std::to_string(run.receipts.last_step) + " steps, result.json " + run.result_status;
  if (run.result_status == "valid") line += " (" + run.format + " format, version " + Printable(run.version) + ")";
  line += ", state file " + run.state_status;
  if (run.receipts.divergent_steps > 0)
    line += ", ranks disagree at " + std::to_string(run.receipts.divergent_steps) + " steps";
  line += "\n";
  // Where each rank ran (rank-N.env.jsonl), one line per rank; nothing without env files.
  for (const RankEnvironment& env : run.environments)
    line += "dmlp-verify:   rank " + std::to_string(env.rank) + ": " + Printable(DescribeEnvironment(env), 400) + "\n";
  return line;
}

// "dmlp-verify: against GOLDEN: must match; diverged at step 4 (params_sha256)";
// with --tolerance also "; losses within 0.0001 relative at steps 1-50 (largest 3e-06 at step 44)".
std::string AgainstLine(const Report& report) {
  const AgainstVerdict& verdict = *report.against_verdict;
  std::string line = "dmlp-verify: against " + Printable(report.against->dir, 400) + ": ";
  switch (verdict.comparability.kind) {
    case Comparability::Kind::kMustMatch: line += "must match"; break;
    case Comparability::Kind::kNotComparable: line += "not comparable"; break;
    case Comparability::Kind::kUnknown: line += "comparability unknown"; break;
  }
  const RunComparison& comparison = verdict.comparison;
  switch (comparison.outcome) {
    case RunComparison::Outcome::kIdentical:
      line += "; identical (" + std::to_string(comparison.run_last) + " steps)";
      break;
    case RunComparison::Outcome::kDiverged:
      // Under --tolerance other bits are expected; the losses decide.
      line += (verdict.losses ? "; receipts differ from step " : "; diverged at step ") +
              std::to_string(comparison.step) + " (" + comparison.what + ")";
      break;
    case RunComparison::Outcome::kRunShorter:
    case RunComparison::Outcome::kGoldenShorter:
      line += "; equal up to step " + std::to_string(comparison.step) + ", RUN has " +
              std::to_string(comparison.run_last) + " steps, GOLDEN " + std::to_string(comparison.golden_last);
      break;
  }
  if (verdict.losses) line += "; " + LossComparisonText(*verdict.losses);
  return line + "\n";
}

std::string Plural(size_t count, const char* word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

}  // namespace

std::string FormatFindingLine(const Finding& finding) {
  std::string line = std::string(SeverityName(finding.severity)) + " " + finding.id + " " +
                     Printable(finding.file, 400);
  if (finding.line > 0) line += ":" + std::to_string(finding.line);
  if (finding.step > 0) line += " step " + std::to_string(finding.step);
  line += ": " + Printable(finding.message, 400);
  if (finding.expected && finding.actual)
    line += " (expected " + Printable(*finding.expected) + ", got " + Printable(*finding.actual) + ")";
  return line;
}

std::string FormatHumanReport(const Report& report) {
  std::string out;
  for (const Finding& finding : report.findings.kept()) out += FormatFindingLine(finding) + "\n";
  out += RunLine(report.run);
  if (report.against) out += RunLine(*report.against);
  if (report.against_verdict) out += AgainstLine(report);
  const FindingSink& findings = report.findings;
  out += "dmlp-verify: " + Plural(findings.errors(), "error") + ", " + std::to_string(findings.incompletes()) +
         " incomplete, ";
  if (findings.warnings() > 0) out += Plural(findings.warnings(), "warning") + ", ";  // older outputs unchanged
  out += std::to_string(findings.infos()) + " info";
  if (findings.dropped() > 0) out += " (" + std::to_string(findings.dropped()) + " more findings not listed)";
  if (report.first_divergence)
    out += "; first divergence between " + report.first_divergence->between + " at step " +
           std::to_string(report.first_divergence->step);
  out += "\n";
  out += std::string(VerdictName(report.verdict)) + "\n";
  return out;
}

std::string FormatCheckList() {
  std::string out = "| id | severity | meaning |\n|---|---|---|\n";
  for (const CheckInfo& check : FindingCatalog())
    out += "| `" + std::string(check.id) + "` | " + std::string(SeverityName(check.severity)) + " | " +
           std::string(check.meaning) + " |\n";
  return out;
}

}  // namespace dmlp::verify
