// defines: kDataDefinitionId
//
// The name of the definition of the training data and the initial parameters
// (trainer/math/sample_math.h): jax 0.10.2's threefry samples and flax 0.12.5's
// model.init, as the reference job draws them. It is a line of PlanFingerprint
// (so of CheckpointFingerprint) and a field of result.json's plan, so a
// checkpoint written under another definition is refused on resume, ranks
// built with different definitions do not pair up, and `dmlp-verify --against`
// never calls runs from two definitions comparable. Change it whenever a bit of
// any sample or initial parameter changes. (dmlp once drew both from
// Philox4x32-10 with Box-Muller normals; those runs have no such line.)
#pragma once

namespace dmlp {

inline constexpr const char* kDataDefinitionId = "jax-0.10.2-threefry/flax-0.12.5-lecun";

}  // namespace dmlp
