#include "verify/compare.h"

#include <algorithm>

namespace dmlp::verify {
namespace {

// Reads the rest of a stream; returns its last accepted step (or `last` if none).
Result<int64_t> DrainLastStep(ReceiptStream& stream, Receipt& record, int64_t last) {
  for (;;) {
    DMLP_ASSIGN_OR_RETURN(bool more, stream.Next(&record));
    if (!more) return last;
    last = record.step;
  }
}

// What differs between two records of the same step, or "" when nothing does.
std::string WhatDiffers(const Receipt& golden, const Receipt& run) {
  const bool digest = golden.params_sha256 != run.params_sha256, loss = golden.loss != run.loss;
  if (digest && loss) return "both";
  if (digest) return "params_sha256";
  if (loss) return "loss";
  return "";
}

}  // namespace

Result<RunComparison> CompareRuns(const ReceiptFile& golden, const ReceiptFile& run) {
  // Silent streams: each run's own defects were reported when it was verified.
  DMLP_ASSIGN_OR_RETURN(auto golden_stream, OpenReceiptStream(*golden.dir, golden.name, golden.rank, nullptr));
  DMLP_ASSIGN_OR_RETURN(auto run_stream, OpenReceiptStream(*run.dir, run.name, run.rank, nullptr));
  Receipt golden_record, run_record;
  DMLP_ASSIGN_OR_RETURN(bool has_golden, golden_stream->Next(&golden_record));
  DMLP_ASSIGN_OR_RETURN(bool has_run, run_stream->Next(&run_record));
  RunComparison comparison;
  while (has_golden && has_run) {
    if (golden_record.step != run_record.step) {
      comparison.outcome = RunComparison::Outcome::kDiverged;
      comparison.step = std::min(golden_record.step, run_record.step);
      comparison.what = "step";
      comparison.golden_value = "step " + std::to_string(golden_record.step);
      comparison.run_value = "step " + std::to_string(run_record.step);
      return comparison;
    }
    if (std::string what = WhatDiffers(golden_record, run_record); !what.empty()) {
      comparison.outcome = RunComparison::Outcome::kDiverged;
      comparison.step = golden_record.step;
      comparison.what = what;
      const bool digest = what != "loss";
      comparison.golden_value = digest ? golden_record.params_sha256 : golden_record.loss;
      comparison.run_value = digest ? run_record.params_sha256 : run_record.loss;
      return comparison;
    }
    comparison.golden_last = comparison.run_last = golden_record.step;
    DMLP_ASSIGN_OR_RETURN(has_golden, golden_stream->Next(&golden_record));
    DMLP_ASSIGN_OR_RETURN(has_run, run_stream->Next(&run_record));
  }
  comparison.step = comparison.golden_last;
  if (has_golden) {
    comparison.outcome = RunComparison::Outcome::kRunShorter;
    DMLP_ASSIGN_OR_RETURN(comparison.golden_last, DrainLastStep(*golden_stream, golden_record, golden_record.step));
  } else if (has_run) {
    comparison.outcome = RunComparison::Outcome::kGoldenShorter;
    DMLP_ASSIGN_OR_RETURN(comparison.run_last, DrainLastStep(*run_stream, run_record, run_record.step));
  }
  return comparison;
}

void AddComparisonFindings(const RunComparison& comparison, const Comparability& comparability,
                           const ReceiptFile& golden, const ReceiptFile& run, bool golden_finished,
                           bool run_finished, FindingSink& sink) {
  const bool not_comparable = comparability.kind == Comparability::Kind::kNotComparable;
  const std::string file = run.dir->Display(run.name);
  // A difference between runs that need not match is worth saying, not a failure.
  auto add = [&](Finding finding) {
    if (not_comparable && finding.severity == Severity::kError) {
      finding.severity = Severity::kInfo;
      finding.message += " (the runs are not comparable, so this is expected)";
    }
    sink.Add(std::move(finding));
  };
  switch (comparison.outcome) {
    case RunComparison::Outcome::kIdentical:
      return;
    case RunComparison::Outcome::kDiverged:
      add(Finding::Of("against.differs", file,
                      (comparison.what == "step" ? std::string("the steps differ")
                       : comparison.what == "both" ? std::string("params_sha256 and loss differ")
                                                   : comparison.what + " differs") +
                          " at step " + std::to_string(comparison.step) + " (golden: " + golden.dir->path() + ")")
              .AtStep(comparison.step)
              .Expect(comparison.golden_value, comparison.run_value));
      return;
    case RunComparison::Outcome::kRunShorter:
    case RunComparison::Outcome::kGoldenShorter: {
      const bool run_shorter = comparison.outcome == RunComparison::Outcome::kRunShorter;
      add(ShorterRunFinding(run_shorter, run_shorter ? run_finished : golden_finished,
                            "equal up to step " + std::to_string(comparison.step), comparison.golden_last,
                            comparison.run_last, golden, run));
      return;
    }
  }
}

Finding ShorterRunFinding(bool run_shorter, bool shorter_finished, const std::string& so_far,
                          int64_t golden_last, int64_t run_last, const ReceiptFile& golden,
                          const ReceiptFile& run) {
  const std::string file = run.dir->Display(run.name);
  const std::string shorter = run_shorter ? "RUN " + run.dir->path() : "GOLDEN " + golden.dir->path();
  Finding finding = shorter_finished
                        ? Finding::Of("against.prefix", file, shorter + " finished before the other run: " + so_far)
                        : Finding::Of("against.incomplete", file, shorter + " has not finished: " + so_far);
  return finding.AtStep(std::min(golden_last, run_last) + 1)
      .Expect(std::to_string(golden_last) + " steps", std::to_string(run_last) + " steps");
}

const char* ComparisonOutcomeName(RunComparison::Outcome outcome) {
  switch (outcome) {
    case RunComparison::Outcome::kIdentical: return "identical";
    case RunComparison::Outcome::kDiverged: return "diverged";
    case RunComparison::Outcome::kRunShorter: return "run_shorter";
    case RunComparison::Outcome::kGoldenShorter: return "golden_shorter";
  }
  return "identical";
}

}  // namespace dmlp::verify
