// defines: Comparability, CompareSetups, ComparabilityName
//
// --against GOLDEN RUN first asks whether the two runs must give identical
// receipts. dmlp promises bits for the same plan on the same stack with the
// same build (docs/determinism.md), so two runs must match when their result.json agree
// on
//   - the plan and model, except what never changes a bit: the settings
//     common/bit_settings.h marks so (STEPS, a shorter run being a prefix,
//     OUT_DIR, the port, the heartbeat, checkpoints), and under the ordered
//     reduction the number of processes (its promise);
//   - the build (version, git commit, uncommitted changes, compilers, CUDA
//     architectures and headers);
//   - the fingerprint (platform, CPU or GPU model, libraries, BLAS kernel,
//     precision, shards), except what only moves bytes (bit_settings.h again):
//     BLAS threads, and under the ordered reduction the collectives library
//     and NCCL's variables.
// Otherwise they are not comparable, and a difference in the receipts is not
// a failure to reproduce. Without result.json on one side (a run still going),
// in the reference's format (no build, no fingerprint), or from a build with
// uncommitted changes (its sources have no name), it is unknown; the verifier
// then holds the runs to matching, as it always did.
//
// result.json records rank 0's stack only. Where both runs have env files
// (rank-N.env.jsonl, rank_env_check.h), every rank's last line is compared
// too: its device (kind, model, driver), libraries and build
// (StackSignature), rank by rank where the two runs have the same ranks, as
// sets otherwise. A difference makes the runs not comparable, with reasons
// naming the rank ("rank 3: device.name: ..."), even when result.json is
// missing on a side (a run still going); agreeing env files alone never make
// runs "must match", since the plan is only in result.json.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "verify/rank_env_check.h"
#include "verify/result_doc.h"

namespace dmlp::verify {

struct Comparability {
  enum class Kind { kMustMatch, kNotComparable, kUnknown };
  Kind kind = Kind::kUnknown;
  std::vector<std::string> reasons;  // what differs ("plan.seed: 42 vs 43"), or why it is unknown
};

/// Decides from the two result.json documents (absent or invalid: nullopt) and
/// the two runs' env files (none: empty).
Comparability CompareSetups(const std::optional<ResultDoc>& golden, const std::optional<ResultDoc>& run,
                            const std::vector<RankEnvironment>& golden_envs = {},
                            const std::vector<RankEnvironment>& run_envs = {});
/// "must_match", "not_comparable" or "unknown".
const char* ComparabilityName(Comparability::Kind kind);

}  // namespace dmlp::verify
