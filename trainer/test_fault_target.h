// defines: TestFaultTarget
//
// Tests only (test_faults.h): where a platform lets the tests plant the
// faults a bad device would cause. A Backend that takes them returns itself
// from Backend::test_faults().
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace dmlp {

class TestFaultTarget {
 public:
  virtual ~TestFaultTarget() = default;
  /// DMLP_TEST_FLIP_BIT: flips bit `bit` (0..7) of byte `byte` of this rank's
  /// state image where it lives, after every update issued so far, as silent
  /// corruption would. REQUIRES: byte < layout.image_bytes(). Byte 0.. is the
  /// first parameter.
  virtual Status FlipBitForTests(size_t byte, int bit) = 0;
  /// DMLP_TEST_CORRUPT_SHARD: flips one bit of local shard `local_shard`'s
  /// partial before the reduction: the top mantissa bit of the first gradient
  /// value (a lowest bit can vanish in the fold's rounding, and the tests need
  /// the fault to reach the state).
  virtual Status FlipPartialBitForTests(int64_t local_shard) = 0;
};

}  // namespace dmlp
