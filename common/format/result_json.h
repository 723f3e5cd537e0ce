// defines: kResultFile, kResultBuild, kResultComplete, kResultConfirmedReplays, kResultDataset,
//          kResultDigestCost, kResultDigestPolicy, kResultDmlpVersion, kResultJaxVersion,
//          kResultFinalLoss, kResultFinalOptStateSha256, kResultFinalParamsSha256,
//          kResultFingerprint, kResultHeartbeatTimeoutSeconds, kResultLaunch, kResultModel,
//          kResultOptimizer, kResultParamsSha256, kResultPlan, kResultProcesses, kResultRankFiles,
//          kResultStateFile, kResultSteps, kResultUpdatesPerMetricStep, kLaunchCoordinatorFrom,
//          kLaunchPlaceSource, kModelClasses, kModelFeatures, kModelHeartbeatTimeoutS, kModelLayers,
//          kModelPort, kModelProcessId, kModelProcesses, kModelWidth, kPlanSteps, kDatasetGenerator,
//          DatasetText, kDigestCostText, kDigestPolicyText, kOptimizerText
//
// result.json: the summary rank 0 writes once every rank finished
// (trainer/output/run_output.cc) and dmlp-verify reads (verify/result_doc.cc),
// with the reference job's top-level keys (runtime.py Output.complete and
// train.py), jax_version replaced by dmlp_version, plus build, fingerprint,
// launch and state_file. "plan"'s keys are the plan's own (trainer/plan.cc,
// PlanDocument; common/bit_settings.h says which decide bits).
#pragma once

#include <string>
#include <string_view>

namespace dmlp {

inline constexpr char kResultFile[] = "result.json";

// Top-level keys, in the order the file lists them (sorted).
inline constexpr char kResultBuild[] = "build";
inline constexpr char kResultComplete[] = "complete";
inline constexpr char kResultConfirmedReplays[] = "confirmed_replays";
inline constexpr char kResultDataset[] = "dataset";
inline constexpr char kResultDigestCost[] = "digest_cost";
inline constexpr char kResultDigestPolicy[] = "digest_policy";
inline constexpr char kResultDmlpVersion[] = "dmlp_version";
inline constexpr char kResultJaxVersion[] = "jax_version";  // the reference's, instead of dmlp_version
inline constexpr char kResultFinalLoss[] = "final_loss";
inline constexpr char kResultFinalOptStateSha256[] = "final_opt_state_sha256";
inline constexpr char kResultFinalParamsSha256[] = "final_params_sha256";
inline constexpr char kResultFingerprint[] = "fingerprint";
inline constexpr char kResultHeartbeatTimeoutSeconds[] = "heartbeat_timeout_seconds";
inline constexpr char kResultLaunch[] = "launch";
inline constexpr char kResultModel[] = "model";
inline constexpr char kResultOptimizer[] = "optimizer";
inline constexpr char kResultParamsSha256[] = "params_sha256";
inline constexpr char kResultPlan[] = "plan";
inline constexpr char kResultProcesses[] = "processes";
inline constexpr char kResultRankFiles[] = "rank_files";
inline constexpr char kResultStateFile[] = "state_file";
inline constexpr char kResultSteps[] = "steps";
inline constexpr char kResultUpdatesPerMetricStep[] = "updates_per_metric_step";

// "launch": how the ranks were started (outside "plan": the same plan gives
// the same bits under any launcher).
inline constexpr char kLaunchCoordinatorFrom[] = "coordinator_from";
inline constexpr char kLaunchPlaceSource[] = "place_source";

// "plan": the plan's own keys (PlanDocument); dmlp-verify reads this one itself.
inline constexpr char kPlanSteps[] = "steps";

// "model": the reference's model section.
inline constexpr char kModelClasses[] = "classes";
inline constexpr char kModelFeatures[] = "features";
inline constexpr char kModelHeartbeatTimeoutS[] = "heartbeat_timeout_s";
inline constexpr char kModelLayers[] = "layers";
inline constexpr char kModelPort[] = "port";
inline constexpr char kModelProcessId[] = "process_id";
inline constexpr char kModelProcesses[] = "processes";
inline constexpr char kModelWidth[] = "width";

// The summary's fixed texts.
inline constexpr char kOptimizerText[] = "adam";
inline constexpr char kDigestPolicyText[] =
    "every step: SHA-256 of the canonical state image (params leaves, adam count, mu leaves, nu leaves; "
    "C-order little-endian)";
inline constexpr char kDigestCostText[] =
    "copies the state to host memory each step; hashed on a background thread while the next step computes";

// The generator the data come from, as the data definition's id names it
// (trainer/math/data_definition.h); a unit test keeps the two agreeing.
inline constexpr char kDatasetGenerator[] = "threefry";

/// "dataset": what the data are, for the data definition `data_definition`
/// (kDataDefinitionId): every sample drawn with jax.random, a pure function
/// of (SEED, step, microbatch, global index) (trainer/math/sample_math.h).
inline std::string DatasetText(std::string_view data_definition) {
  return std::string("deterministic globally indexed jax.random ") + kDatasetGenerator +
         " draws (features: normal; labels: randint), data definition " + std::string(data_definition);
}

}  // namespace dmlp
