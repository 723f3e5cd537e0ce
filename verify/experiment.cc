#include "verify/experiment.h"

#include "common/bit_settings.h"

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

// "plan.seed" in the document, or nullptr where it has none.
const nlohmann::json* FieldOf(const ResultDoc& doc, const std::string& field) {
  const size_t dot = field.find('.');
  const std::string section = field.substr(0, dot), key = field.substr(dot + 1);
  const nlohmann::json& object = section == "plan" ? doc.plan : section == "model" ? doc.model : doc.fingerprint;
  if (!object.is_object()) return nullptr;
  auto found = object.find(key);
  return found == object.end() ? nullptr : &*found;
}

}  // namespace

std::vector<std::string> ExperimentDifferences(const std::optional<ResultDoc>& golden,
                                               const std::optional<ResultDoc>& run) {
  std::vector<std::string> differences;
  if (!golden || !run) return differences;
  // Absence is a difference only between two dmlp runs: the reference writes
  // none of dmlp's additions (plan.data_definition).
  const bool both_dmlp = golden->format == ResultDoc::Format::kDmlp && run->format == ResultDoc::Format::kDmlp;
  for (const std::string& field : ExperimentFields()) {
    const nlohmann::json* golden_value = FieldOf(*golden, field);
    const nlohmann::json* run_value = FieldOf(*run, field);
    if (golden_value && run_value) {
      // JSON equality: 0.001 written by Python and by dmlp, 42 and 42.0, are one value.
      if (*golden_value != *run_value)
        differences.push_back(field + ": " + golden_value->dump() + " vs " + run_value->dump());
    } else if ((golden_value || run_value) && both_dmlp) {
      differences.push_back(field + ": " + (golden_value ? golden_value->dump() : "(absent)") + " vs " +
                            (run_value ? run_value->dump() : "(absent)"));
    }
  }
  return differences;
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
