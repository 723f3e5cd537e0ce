// defines: kJaxTableSize, DmlpSampleTable
//
// dmlp's side of the exhaustive comparison with jax: the float step of normal
// and truncated_normal(-2, 2) for every 23-bit mantissa the uniform can have
// (bits = mantissa << 9), through the host's vectorized loops. Shared by
// sample_math_test.cc (hash against jax's) and jax_tables_dump.cc (the tables
// tests/data/jax_vectors.py compares input by input).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/math/sample_loops.h"

namespace dmlp::testing {

inline constexpr uint32_t kJaxTableSize = uint32_t{1} << 23;

/// The table "normal" or "truncated_normal" (truncated values unscaled); empty for another name.
inline std::vector<float> DmlpSampleTable(const std::string& name) {
  std::vector<uint32_t> bits(kJaxTableSize);
  for (uint32_t mantissa = 0; mantissa < kJaxTableSize; ++mantissa) bits[mantissa] = mantissa << 9;
  std::vector<float> table(kJaxTableSize);
  if (name == "normal") {
    JaxNormalLoop(bits.data(), table.data(), table.size());
  } else if (name == "truncated_normal") {
    JaxTruncatedNormalLoop(bits.data(), 1.0f, table.data(), table.size());
  } else {
    table.clear();
  }
  return table;
}

}  // namespace dmlp::testing
