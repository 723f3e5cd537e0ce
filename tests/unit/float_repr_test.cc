#include "common/float_repr.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace dmlp {
namespace {

// Every row of the reference's own float32 -> repr(float(x)) table must match.
TEST(FloatReprTest, MatchesPythonForEveryTestVector) {
  std::ifstream file(std::string(DMLP_TEST_DATA_DIR) + "/data/float32_repr.tsv");
  ASSERT_TRUE(file) << "missing tests/data/float32_repr.tsv";
  std::string line;
  int rows = 0;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string bits_hex, expected;
    std::getline(fields, bits_hex, '\t');
    std::getline(fields, expected);
    uint32_t bits = static_cast<uint32_t>(std::stoul(bits_hex, nullptr, 16));
    EXPECT_EQ(Float32Repr(std::bit_cast<float>(bits)), expected) << "bits " << bits_hex;
    ++rows;
  }
  EXPECT_GT(rows, 2000);
}

TEST(FloatReprTest, DoublesAndSpecialValues) {
  EXPECT_EQ(PythonFloatRepr(0.001), "0.001");
  EXPECT_EQ(PythonFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PythonFloatRepr(1e-05), "1e-05");
  EXPECT_EQ(PythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatRepr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(PythonFloatRepr(-2.5), "-2.5");
  EXPECT_EQ(PythonFloatRepr(1e300), "1e+300");
  EXPECT_EQ(PythonFloatRepr(5e-324), "5e-324");
  EXPECT_EQ(PythonFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PythonFloatRepr(1.0 / 0.0), "inf");
  EXPECT_EQ(PythonFloatRepr(-1.0 / 0.0), "-inf");
}

}  // namespace
}  // namespace dmlp
