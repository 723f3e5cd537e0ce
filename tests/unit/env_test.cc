#include "common/env.h"

#include <gtest/gtest.h>

namespace dmlp {
namespace {

Environment Env(std::initializer_list<std::pair<const std::string, std::string>> values) {
  return Environment(Environment::Map(values));
}

TEST(EnvTest, MissingEmptyAndBlankAreDistinct) {
  EXPECT_EQ(RequireInteger(Env({}), "STEPS", 1).status().ToString(), "ENV_MISSING: STEPS");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", ""}}), "STEPS", 1).status().ToString(),
            "ENV_EMPTY: STEPS");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", " \t"}}), "STEPS", 1).status().ToString(),
            "ENV_EMPTY: STEPS");
}

TEST(EnvTest, IntegersAreStrict) {
  EXPECT_EQ(*RequireInteger(Env({{"STEPS", "12"}}), "STEPS", 1), 12);
  EXPECT_EQ(*RequireInteger(Env({{"STEPS", "007"}}), "STEPS", 1), 7);
  EXPECT_EQ(RequireInteger(Env({{"STEPS", "12x"}}), "STEPS", 1).status().ToString(),
            "ENV_INVALID: STEPS='12x' is not an integer");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", " 12"}}), "STEPS", 1).status().code(), "ENV_INVALID");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", "+12"}}), "STEPS", 1).status().code(), "ENV_INVALID");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", "-1"}}), "STEPS", 1).status().ToString(),
            "ENV_INVALID: STEPS='-1' is not an integer");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", "0"}}), "STEPS", 1).status().ToString(),
            "ENV_INVALID: STEPS='0' must be >= 1");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", "2147483648"}}), "STEPS", 1).status().ToString(),
            "ENV_INVALID: STEPS='2147483648' must be <= 2147483647");
  EXPECT_EQ(RequireInteger(Env({{"S", "99999999999999999999"}}), "S", 0, INT64_MAX)
                .status()
                .ToString(),
            "ENV_INVALID: S='99999999999999999999' is out of range");
  EXPECT_EQ(*RequireInteger(Env({{"S", "9223372036854775807"}}), "S", 0, INT64_MAX), INT64_MAX);
}

// Values used to reach messages raw (a newline forged a line, ESC drove
// the terminal) and a control character reached the C library in a path.
TEST(EnvTest, ControlCharactersAreRefusedAndQuotedAsJsonDoes) {
  EXPECT_EQ(RequireString(Env({{"OUT_DIR", "/x/a\nb"}}), "OUT_DIR").status().ToString(),
            "ENV_INVALID: OUT_DIR='/x/a\\nb' holds a control character");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", "1\x1b[2J"}}), "STEPS", 1).status().ToString(),
            "ENV_INVALID: STEPS='1\\u001b[2J' holds a control character");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", "1\"\\x"}}), "STEPS", 1).status().ToString(),
            "ENV_INVALID: STEPS='1\\\"\\\\x' is not an integer");
  EXPECT_EQ(RequireInteger(Env({{"STEPS", "\xc3\xa9"}}), "STEPS", 1).status().ToString(),
            "ENV_INVALID: STEPS='\\u00e9' is not an integer");
  EXPECT_EQ(*RequireString(Env({{"OUT_DIR", "/x/plain dir"}}), "OUT_DIR"), "/x/plain dir");
}

TEST(EnvTest, NegativeIntegersOnlyWhereAllowed) {
  EXPECT_EQ(*ParseInteger("-9223372036854775808", INT64_MIN, INT64_MAX), INT64_MIN);
  EXPECT_EQ(*ParseInteger("-5", -10, 10), -5);
  EXPECT_FALSE(ParseInteger("-", -10, 10).ok());
}

TEST(EnvTest, PositiveNumbers) {
  EXPECT_DOUBLE_EQ(*RequirePositiveNumber(Env({{"LR", "0.001"}}), "LR"), 0.001);
  EXPECT_DOUBLE_EQ(*RequirePositiveNumber(Env({{"LR", "1e-3"}}), "LR"), 0.001);
  EXPECT_EQ(RequirePositiveNumber(Env({{"LR", "0"}}), "LR").status().ToString(),
            "ENV_INVALID: LR='0' must be finite and > 0");
  EXPECT_EQ(RequirePositiveNumber(Env({{"LR", "inf"}}), "LR").status().ToString(),
            "ENV_INVALID: LR='inf' is not a number");
  EXPECT_EQ(RequirePositiveNumber(Env({{"LR", "1e999"}}), "LR").status().ToString(),
            "ENV_INVALID: LR='1e999' must be finite");
  EXPECT_EQ(RequirePositiveNumber(Env({{"LR", "nan"}}), "LR").status().code(), "ENV_INVALID");
  EXPECT_EQ(RequirePositiveNumber(Env({{"LR", "0.1x"}}), "LR").status().ToString(),
            "ENV_INVALID: LR='0.1x' is not a number");
}

TEST(EnvTest, FillFromKeepsExistingValues) {
  Environment env = Env({{"A", "1"}});
  env.FillFrom(Env({{"A", "2"}, {"B", "3"}}));
  EXPECT_EQ(*env.Get("A"), "1");
  EXPECT_EQ(*env.Get("B"), "3");
}

TEST(EnvTest, AValueFromAFileIsTheFilesError) {
  Environment file;
  file.SetFromFile("STEPS", "x", "job.yaml");
  file.SetFromFile("LEARNING_RATE", "0", "job.yaml");
  file.SetFromFile("WIDTH", " ", "job.yaml");
  file.SetFromFile("SEED", "1", "job.yaml");
  Environment env = Env({{"SEED", "y"}});
  env.FillFrom(file);  // SEED stays the environment's, and so does its error
  EXPECT_EQ(*env.FileOf("STEPS"), "job.yaml");
  EXPECT_FALSE(env.FileOf("SEED"));
  EXPECT_EQ(RequireInteger(env, "STEPS", 1).status().ToString(),
            "CONFIG_INVALID: job.yaml: steps='x' is not an integer");
  EXPECT_EQ(RequirePositiveNumber(env, "LEARNING_RATE").status().ToString(),
            "CONFIG_INVALID: job.yaml: learning_rate='0' must be finite and > 0");
  EXPECT_EQ(RequireString(env, "WIDTH").status().ToString(), "CONFIG_INVALID: job.yaml: width is empty");
  EXPECT_EQ(RequireInteger(env, "SEED", 0).status().ToString(), "ENV_INVALID: SEED='y' is not an integer");
  EXPECT_EQ(SettingError(env, "STEPS", " is odd").ToString(), "CONFIG_INVALID: job.yaml: steps is odd");
  env.Set("STEPS", "z");  // set over the file's: the environment's again
  EXPECT_EQ(RequireInteger(env, "STEPS", 1).status().ToString(), "ENV_INVALID: STEPS='z' is not an integer");
}

}  // namespace
}  // namespace dmlp
