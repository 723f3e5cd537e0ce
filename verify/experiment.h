// defines: ExperimentDifferences, OtherExperimentFinding
//
// --against asks whether RUN reproduces GOLDEN; that question has an answer
// only when both ran the same experiment: the settings that pose the training
// problem (SEED, BATCH, MICROBATCHES, LEARNING_RATE, FEATURES, WIDTH, LAYERS,
// CLASSES and the data definition: the rows of common/bit_settings.h listed in
// experiment.cc). Everything else -- platform, processes, shards, precision,
// reduction, build, stack, STEPS -- may differ between two runs of one
// experiment: it decides bits (comparability.h), which --tolerance exists to
// look past, not the problem.
//
// Runs of two experiments are `against.other_experiment`, an error under
// --tolerance and without it, unless --allow-different-experiment says the
// difference is intended (then info). A field is compared where both
// result.json files record it; one that only one dmlp run records (a run
// older than plan.data_definition) is a difference. The reference's format
// records no data definition, so that field is not compared against it. A run
// without a valid result.json (still going) poses no known experiment and is
// never called another one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "verify/findings.h"
#include "verify/result_doc.h"

namespace dmlp::verify {

/// "plan.seed: 42 vs 43" for every experiment setting that differs; empty when
/// none does or either document is absent.
std::vector<std::string> ExperimentDifferences(const std::optional<ResultDoc>& golden,
                                               const std::optional<ResultDoc>& run);

/// against.other_experiment on `run_dir` naming the differences (error, or info when `allowed`);
/// nullopt when the runs are one experiment as far as their result.json files tell.
std::optional<Finding> OtherExperimentFinding(const std::optional<ResultDoc>& golden,
                                              const std::optional<ResultDoc>& run, const std::string& golden_dir,
                                              const std::string& run_dir, bool allowed);

}  // namespace dmlp::verify
