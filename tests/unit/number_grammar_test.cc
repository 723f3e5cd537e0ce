// The one number grammar of every numeric setting and flag.
#include "common/number_grammar.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace dmlp {
namespace {

TEST(NumberGrammarTest, IntegersAreDigitsWithAMinusOnlyWhereAllowed) {
  for (const char* good : {"0", "7", "007", "9223372036854775808"}) EXPECT_TRUE(IsDecimalInteger(good, false)) << good;
  EXPECT_TRUE(IsDecimalInteger("-5", true));
  for (const char* bad : {"", "-", "-5", "+5", " 5", "5 ", "5x", "0x10", "1e3", "1.0", "\xd9\xa3"})
    EXPECT_FALSE(IsDecimalInteger(bad, false)) << bad;
  EXPECT_FALSE(IsDecimalInteger("-", true));
  EXPECT_FALSE(IsDecimalInteger("--5", true));
}

TEST(NumberGrammarTest, NumbersAreDecimalWithOptionalFractionAndExponent) {
  for (const char* good : {"0", "0.001", "1e-3", "1E-3", "1e+2", "1e2", ".5", "5.", "2", "-0.1", "-0", "00.10e007"})
    EXPECT_TRUE(IsDecimalNumber(good)) << good;
  for (const char* bad : {"", ".", "-", "-.", "e5", ".e5", "1e", "1e+", "1e-", "1.2.3", "1e5.0", "+1", "+0.1", " 1",
                          "1 ", "1x", "1,5", "0x10", "0x1p-3", "0X1P3", "inf", "-inf", "infinity", "nan", "NaN", "1d",
                          "1f", "--1"})
    EXPECT_FALSE(IsDecimalNumber(bad)) << bad;
}

TEST(NumberGrammarTest, ParseIntegerKeepsItsRangeAndWords) {
  EXPECT_EQ(*ParseInteger("12", 1, 100), 12);
  EXPECT_EQ(ParseInteger("12x", 1, 100).status().detail(), "is not an integer");
  EXPECT_EQ(ParseInteger("-1", 0, 100).status().detail(), "is not an integer");
  EXPECT_EQ(ParseInteger("0", 1, 100).status().detail(), "must be >= 1");
  EXPECT_EQ(ParseInteger("101", 1, 100).status().detail(), "must be <= 100");
  EXPECT_EQ(ParseInteger("9223372036854775808", 0, INT64_MAX).status().detail(), "is out of range");
  EXPECT_EQ(*ParseInteger("-9223372036854775808", INT64_MIN, INT64_MAX), INT64_MIN);
}

TEST(NumberGrammarTest, HexInfinityAndNanAreNotNumbers) {
  for (const char* bad : {"0x1p-10", "0x10", "inf", "nan", "+0.001", " 0.001", "0.001 "})
    EXPECT_EQ(ParseFiniteDouble(bad).status().detail(), "is not a number") << bad;
  EXPECT_EQ(ParseFiniteDouble("1e999").status().detail(), "must be finite");
  EXPECT_EQ(ParseFiniteDouble("1e-400").status().detail(), "must be finite");
}

// The grammar only decides which texts are numbers: the value of one is
// strtod's, to the bit, as it was before the grammar.
TEST(NumberGrammarTest, ValuesAreStrtodsToTheBit) {
  for (const char* text : {"0.001", "1e-3", "0.1", "3.14159265358979323846264338327950288", "2.2250738585072014e-308",
                           "123456789012345678901234567890", ".5", "5.", "-0.25", "1E+2", "0.30000000000000004"}) {
    const double ours = *ParseFiniteDouble(text);
    const double theirs = std::strtod(text, nullptr);
    EXPECT_EQ(std::memcmp(&ours, &theirs, sizeof ours), 0) << text;
  }
}

}  // namespace
}  // namespace dmlp
