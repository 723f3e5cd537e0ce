// defines: BitFlipForTests, PartialFaultForTests
//
// DMLP_TEST_FLIP_BIT=<update>[:<byte>:<bit>] (tests only, like
// DMLP_TEST_KILL_AT): right after global update number <update> (1-based,
// counting microbatches: update (step-1)*MICROBATCHES + microbatch + 1), flip
// bit <bit> (0..7, default 6) of byte <byte> (default 2) of this rank's state
// image on its device (TestFaultTarget::FlipBitForTests). The defaults hit the top
// mantissa bit of the first parameter: a change of a quarter to a half of its
// value, which no later update rounds away, and which keeps the loss finite.
// Only ranks whose environment has it are affected, so a test gives it to one
// rank to make that rank silently diverge (trainer/checks/divergence_check.h).
//
// DMLP_TEST_CORRUPT_SHARD=<update> (tests only): at global update <update>,
// between its partials and its reduction, flip one bit of this rank's first
// local shard's partial (TestFaultTarget::FlipPartialBitForTests), the fault a bad GPU
// would cause in a gradient: every rank then agrees on a wrong state, which
// only the shard audit catches (trainer/checks/shard_audit.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/env.h"
#include "common/status.h"
#include "trainer/backend.h"

namespace dmlp {

struct BitFlipForTests {
  int64_t update = 0;  // 0: none
  size_t byte = 2;
  int bit = 6;

  /// From DMLP_TEST_FLIP_BIT; none when unset. ENV_INVALID when malformed or
  /// when the byte lies outside a state image of `image_bytes`.
  static Result<BitFlipForTests> FromEnvironment(const Environment& env, size_t image_bytes);
  /// Called after each update: flips when (step, microbatch) is update number `update`.
  Status AfterUpdate(Backend& backend, int64_t step, int64_t microbatch, int64_t microbatches) const;
};

struct PartialFaultForTests {
  int64_t update = 0;  // 0: none

  /// From DMLP_TEST_CORRUPT_SHARD (an integer >= 1; ENV_INVALID otherwise); none when unset.
  static Result<PartialFaultForTests> FromEnvironment(const Environment& env);
  /// Called between ComputePartials and the shard audit: flips when (step,
  /// microbatch) is update number `update`.
  Status BeforeReduction(Backend& backend, int64_t step, int64_t microbatch, int64_t microbatches) const;
};

}  // namespace dmlp
