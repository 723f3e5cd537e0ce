#include "common/status.h"

#include <gtest/gtest.h>

namespace dmlp {
namespace {

TEST(StatusTest, OkPrintsOk) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
}

TEST(StatusTest, ErrorTextIsCodeThenDetail) {
  EXPECT_EQ(Status::Error("ENV_MISSING", "STEPS").ToString(), "ENV_MISSING: STEPS");
  EXPECT_EQ(Status::Error("OUTPUT_ALREADY_COMPLETE").ToString(), "OUTPUT_ALREADY_COMPLETE");
  EXPECT_EQ(Status::Error("IO_ERROR", "x").WithContext("open out").ToString(),
            "IO_ERROR: open out: x");
}

Result<int> Half(int value) {
  if (value % 2 != 0) return Status::Error("ODD", std::to_string(value));
  return value / 2;
}

Result<int> Quarter(int value) {
  DMLP_ASSIGN_OR_RETURN(int half, Half(value));
  return Half(half);
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().ToString(), "ODD: 3");
  EXPECT_EQ(Quarter(5).status().ToString(), "ODD: 5");
}

}  // namespace
}  // namespace dmlp
