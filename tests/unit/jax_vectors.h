// defines: JaxVectorLine, ReadJaxVectors, ParseU32, ParseFloatBits
//
// Reads tests/data/jax_vectors.tsv and jax_sample_tables.tsv, the known answers
// tests/data/jax_vectors.py took from the real jax 0.10.2 / flax 0.12.5: one
// record per line, tab-separated, the kind first; '#' lines are comments.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dmlp::testing {

using JaxVectorLine = std::vector<std::string>;

/// The records of kind `kind` in tests/data/<file>; fails the test when the file is missing.
inline std::vector<JaxVectorLine> ReadJaxVectors(const std::string& file, const std::string& kind) {
  std::ifstream in(std::string(DMLP_TEST_DATA_DIR) + "/data/" + file);
  EXPECT_TRUE(in.good()) << file;
  std::vector<JaxVectorLine> records;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    JaxVectorLine fields;
    std::stringstream stream(line);
    std::string field;
    while (std::getline(stream, field, '\t')) fields.push_back(field);
    if (!fields.empty() && fields[0] == kind) records.push_back(fields);
  }
  return records;
}

/// A decimal field as uint64 (keys, seeds, indices).
inline uint64_t ParseU64(const std::string& text) { return std::strtoull(text.c_str(), nullptr, 10); }

/// A decimal field as uint32.
inline uint32_t ParseU32(const std::string& text) { return static_cast<uint32_t>(ParseU64(text)); }

/// A comma-separated list of 8-hex-digit float32 bit patterns.
inline std::vector<uint32_t> ParseFloatBits(const std::string& text) {
  std::vector<uint32_t> bits;
  std::stringstream stream(text);
  std::string word;
  while (std::getline(stream, word, ','))
    bits.push_back(static_cast<uint32_t>(std::strtoul(word.c_str(), nullptr, 16)));
  return bits;
}

}  // namespace dmlp::testing
