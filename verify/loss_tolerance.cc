#include "verify/loss_tolerance.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>

#include "common/number_grammar.h"
#include "verify/receipt_set.h"

namespace dmlp::verify {
namespace {

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// One step both curves have.
void Include(LossComparison& comparison, int64_t step, const std::string& golden_loss, const std::string& run_loss) {
  // Both texts passed the strict receipt parser: finite, Python's repr of a float32.
  const double difference = RelativeDifference(std::strtod(golden_loss.c_str(), nullptr),
                                               std::strtod(run_loss.c_str(), nullptr));
  if (!comparison.compared.empty() && comparison.compared.back().last + 1 == step)
    comparison.compared.back().last = step;
  else
    comparison.compared.push_back({step, step});
  ++comparison.compared_steps;
  comparison.last_common = step;
  if (comparison.largest_step == 0 || difference > comparison.largest) {
    comparison.largest = difference;
    comparison.largest_step = step;
    comparison.golden_at_largest = golden_loss;
    comparison.run_at_largest = run_loss;
  }
  if (!(difference > comparison.tolerance)) return;
  ++comparison.exceeding_steps;
  if (comparison.first_exceeding != 0) return;
  comparison.first_exceeding = step;
  comparison.first_exceeding_difference = difference;
  comparison.golden_at_first = golden_loss;
  comparison.run_at_first = run_loss;
}

// No step in common. A curve without a record yet (a live run before its
// first step, or a resume's first) contradicts nothing: the run's own findings
// and the shorter-curve finding say it is unfinished. Two curves with steps and
// none in common, or two finished runs with no step at all, are never a pass.
void AddNothingCompared(const LossComparison& comparison, const ReceiptFile& golden, const ReceiptFile& run,
                        bool both_finished, FindingSink& sink) {
  const std::string file = run.dir->Display(run.name);
  const bool both_empty = comparison.golden_last == 0 && comparison.run_last == 0;
  const bool either_empty = comparison.golden_last == 0 || comparison.run_last == 0;
  if (either_empty && !both_finished) {
    if (both_empty)  // equal lengths: no shorter-curve finding follows
      sink.Add(Finding::Of("against.incomplete", file,
                           "neither " + run.name + " nor " + golden.dir->Display(golden.name) +
                               " holds a record yet: no loss to compare"));
    return;
  }
  sink.Add(Finding::Of("against.loss_exceeds", file,
                       "no step of " + run.name + " is in " + golden.dir->Display(golden.name) +
                           ": no loss to compare"));
}

}  // namespace

Result<double> ParseTolerance(std::string_view text) {
  const std::string shown(text);
  const std::string expected = " (give a relative difference, a finite decimal number >= 0 such as 1e-4)";
  // The number grammar of every setting and flag (common/number_grammar.h).
  if (!IsDecimalNumber(text))
    return Status::Error("USAGE_ERROR", "--tolerance '" + shown + "' is not a decimal number" + expected);
  if (text.front() == '-') {
    // "-0" (also "-0.0", "-0e5") is zero, not a negative difference. Told by
    // its digits, not by strtod, which also rounds "-1e-400" to zero.
    const std::string_view digits = text.substr(1, text.find_first_of("eE") - 1);
    if (digits.find_first_not_of("0.") == std::string_view::npos) return 0.0;
    return Status::Error("USAGE_ERROR", "--tolerance " + shown + ": a relative difference cannot be negative" + expected);
  }
  const double value = std::strtod(shown.c_str(), nullptr);
  if (!std::isfinite(value))
    return Status::Error("USAGE_ERROR", "--tolerance " + shown + " is not finite" + expected);
  return value;
}

double RelativeDifference(double golden, double run) {
  if (golden == run) return 0;
  if (golden == 0) return std::numeric_limits<double>::infinity();
  return std::fabs(run - golden) / std::fabs(golden);
}

std::string StepRangesText(const std::vector<StepRange>& ranges) {
  if (ranges.empty()) return "none";
  std::string text;
  for (const StepRange& range : ranges) {
    if (!text.empty()) text += ", ";
    text += std::to_string(range.first);
    if (range.last != range.first) text += "-" + std::to_string(range.last);
  }
  return text;
}

std::string LossComparisonText(const LossComparison& losses) {
  if (losses.compared_steps == 0) return "losses: no step in common to compare";
  char rel[32];
  std::snprintf(rel, sizeof rel, "%g", losses.tolerance);
  const std::string where = "steps " + StepRangesText(losses.compared);
  const std::string text =
      losses.within() ? std::string("losses within ") + rel + " relative at " + where
                      : std::string("losses beyond ") + rel + " relative from step " +
                            std::to_string(losses.first_exceeding) + " (" + std::to_string(losses.exceeding_steps) +
                            " of " + std::to_string(losses.compared_steps) + " steps), compared at " + where;
  return text + " (largest " + Number(losses.largest) + " at step " + std::to_string(losses.largest_step) + ")";
}

Result<LossComparison> CompareLosses(const ReceiptFile& golden, const ReceiptFile& run, double tolerance) {
  // Silent streams: each run's own defects were reported when it was verified.
  DMLP_ASSIGN_OR_RETURN(auto golden_stream, OpenReceiptStream(*golden.dir, golden.name, golden.rank, nullptr));
  DMLP_ASSIGN_OR_RETURN(auto run_stream, OpenReceiptStream(*run.dir, run.name, run.rank, nullptr));
  LossComparison comparison;
  comparison.tolerance = tolerance;
  comparison.golden_source = golden.name;
  comparison.run_source = run.name;
  Receipt golden_record, run_record;
  DMLP_ASSIGN_OR_RETURN(bool has_golden, golden_stream->Next(&golden_record));
  DMLP_ASSIGN_OR_RETURN(bool has_run, run_stream->Next(&run_record));
  // Both streams' steps strictly increase: a merge by step.
  while (has_golden || has_run) {
    const bool take_golden = has_golden && (!has_run || golden_record.step <= run_record.step);
    const bool take_run = has_run && (!has_golden || run_record.step <= golden_record.step);
    if (take_golden && take_run) Include(comparison, golden_record.step, golden_record.loss, run_record.loss);
    if (take_golden) {
      comparison.golden_last = golden_record.step;
      DMLP_ASSIGN_OR_RETURN(has_golden, golden_stream->Next(&golden_record));
    }
    if (take_run) {
      comparison.run_last = run_record.step;
      DMLP_ASSIGN_OR_RETURN(has_run, run_stream->Next(&run_record));
    }
  }
  return comparison;
}

void AddLossFindings(const LossComparison& comparison, const ReceiptFile& golden, const ReceiptFile& run,
                     bool golden_finished, bool run_finished, FindingSink& sink) {
  const std::string file = run.dir->Display(run.name);
  const std::string tolerance = Number(comparison.tolerance);
  if (comparison.compared_steps == 0) {
    AddNothingCompared(comparison, golden, run, golden_finished && run_finished, sink);
  } else if (comparison.first_exceeding != 0) {
    sink.Add(Finding::Of("against.loss_exceeds", file,
                         "loss differs from GOLDEN's by " + Number(comparison.first_exceeding_difference) +
                             " relative at step " + std::to_string(comparison.first_exceeding) +
                             ", more than --tolerance " + tolerance + " (" +
                             std::to_string(comparison.exceeding_steps) + " of " +
                             std::to_string(comparison.compared_steps) + " compared steps exceed it; largest " +
                             Number(comparison.largest) + " at step " + std::to_string(comparison.largest_step) +
                             "; golden: " + golden.dir->path() + ")")
                 .AtStep(comparison.first_exceeding)
                 .Expect(comparison.golden_at_first, comparison.run_at_first));
  }
  if (comparison.golden_last == comparison.run_last) return;
  const bool run_shorter = comparison.run_last < comparison.golden_last;
  sink.Add(ShorterRunFinding(run_shorter, run_shorter ? run_finished : golden_finished,
                             "losses compared at steps " + StepRangesText(comparison.compared),
                             comparison.golden_last, comparison.run_last, golden, run));
}

}  // namespace dmlp::verify
