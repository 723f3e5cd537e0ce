#include "verify/experiment.h"

#include "common/bit_settings.h"
#include "verify/result_fields.h"

namespace dmlp::verify {
namespace {

// The settings that pose the training problem (experiment.h): what the data
// and initial parameters are, the model's shape and the optimizer's steps.
constexpr Setting kExperimentSettings[] = {
    Setting::kSeed,     Setting::kBatch, Setting::kMicrobatches, Setting::kLearningRate,   Setting::kFeatures,
    Setting::kWidth,    Setting::kLayers, Setting::kClasses,     Setting::kDataDefinition,
};

// Every result.json field of those settings, from the one table (bit_settings.h).
std::vector<std::string> ExperimentFields() {
  return ResultFieldsOf([](const SettingRow& row) {
    for (Setting setting : kExperimentSettings)
      if (row.setting == setting) return true;
    return false;
  });
}

}  // namespace

std::vector<std::string> ExperimentDifferences(const std::optional<ResultDoc>& golden,
                                               const std::optional<ResultDoc>& run) {
  if (!golden || !run) return {};
  // Absence is a difference only between two dmlp runs: the reference writes
  // none of dmlp's additions (plan.data_definition).
  const bool both_dmlp = golden->format == ResultDoc::Format::kDmlp && run->format == ResultDoc::Format::kDmlp;
  return ResultFieldDifferences(*golden, *run, ExperimentFields(), both_dmlp);
}

std::optional<Finding> OtherExperimentFinding(const std::optional<ResultDoc>& golden,
                                              const std::optional<ResultDoc>& run, const std::string& golden_dir,
                                              const std::string& run_dir, bool allowed) {
  const std::vector<std::string> differences = ExperimentDifferences(golden, run);
  if (differences.empty()) return std::nullopt;
  std::string what;
  for (const std::string& difference : differences) what += (what.empty() ? "" : "; ") + difference;
  Finding finding = Finding::Of("against.other_experiment", run_dir,
                                "another experiment than " + golden_dir + ": " + what);
  if (allowed) {
    finding.severity = Severity::kInfo;
    finding.message += " (intended: --allow-different-experiment)";
  } else {
    finding.message += "; whether it reproduces GOLDEN has no answer (--allow-different-experiment "
                       "if the difference is intended)";
  }
  return finding;
}

}  // namespace dmlp::verify
