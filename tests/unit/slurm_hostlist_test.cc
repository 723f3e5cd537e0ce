#include "common/slurm_hostlist.h"

#include <gtest/gtest.h>

namespace dmlp {
namespace {

using Hosts = std::vector<std::string>;

Hosts Expand(const std::string& text) {
  Result<Hosts> hosts = ExpandSlurmHostlist(text);
  EXPECT_TRUE(hosts.ok()) << text << ": " << hosts.status().ToString();
  return hosts.ok() ? *hosts : Hosts{};
}

std::string ErrorOf(const std::string& text) { return ExpandSlurmHostlist(text).status().ToString(); }

TEST(SlurmHostlistTest, SingleHosts) {
  EXPECT_EQ(Expand("login1"), (Hosts{"login1"}));
  EXPECT_EQ(Expand("a,b.example.org,c-1"), (Hosts{"a", "b.example.org", "c-1"}));
}

TEST(SlurmHostlistTest, TheIssuesExample) {
  EXPECT_EQ(Expand("gpu[01-04,07],login1"),
            (Hosts{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07", "login1"}));
  EXPECT_EQ(FirstSlurmHost("gpu[01-04,07],login1").value(), "gpu01");
}

TEST(SlurmHostlistTest, ZeroPaddingIsTheLowerBoundsWidth) {
  EXPECT_EQ(Expand("n[08-11]"), (Hosts{"n08", "n09", "n10", "n11"}));
  EXPECT_EQ(Expand("n[8-11]"), (Hosts{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(Expand("n[098-100]"), (Hosts{"n098", "n099", "n100"}));
  EXPECT_EQ(Expand("n[007]"), (Hosts{"n007"}));
}

TEST(SlurmHostlistTest, SeveralBracketsMultiplyInSlurmsOrder) {
  EXPECT_EQ(Expand("rack[1-2]-node[01-02]"),
            (Hosts{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"}));
  EXPECT_EQ(Expand("r[1,3]n[5]x,gpu[1-2]"), (Hosts{"r1n5x", "r3n5x", "gpu1", "gpu2"}));
  EXPECT_EQ(FirstSlurmHost("r[2-3]n[7-9]").value(), "r2n7");
}

TEST(SlurmHostlistTest, DamagedListsAreEnvInvalid) {
  EXPECT_EQ(ErrorOf(""), "ENV_INVALID: is an empty host list");
  EXPECT_EQ(ErrorOf("gpu[01-04"), "ENV_INVALID: has an unclosed '['");
  EXPECT_EQ(ErrorOf("gpu01-04]"), "ENV_INVALID: has a ']' without its '['");
  EXPECT_EQ(ErrorOf("gpu[]"), "ENV_INVALID: has an empty '[]'");
  EXPECT_EQ(ErrorOf("gpu[[1-2]]"), "ENV_INVALID: has a '[' inside brackets");
  EXPECT_EQ(ErrorOf("gpu[04-01]"), "ENV_INVALID: has the descending range '04-01'");
  EXPECT_EQ(ErrorOf("gpu[a-b]"), "ENV_INVALID: has 'a-b' in brackets, not a number or range");
  EXPECT_EQ(ErrorOf("gpu[1,,2]"), "ENV_INVALID: has '' in brackets, not a number or range");
  EXPECT_EQ(ErrorOf("gpu[1-]"), "ENV_INVALID: has '1-' in brackets, not a number or range");
  EXPECT_EQ(ErrorOf("gpu[-1]"), "ENV_INVALID: has '-1' in brackets, not a number or range");
  EXPECT_EQ(ErrorOf("a,,b"), "ENV_INVALID: has an empty host name");
  EXPECT_EQ(ErrorOf("a,"), "ENV_INVALID: has an empty host name");
  EXPECT_EQ(ErrorOf("a b"), "ENV_INVALID: has white space");
}

TEST(SlurmHostlistTest, AHugeRangeIsRefusedNotAllocated) {
  EXPECT_EQ(ErrorOf("n[0-99999999]"), "ENV_INVALID: expands to more than 1048576 hosts");
  EXPECT_EQ(ErrorOf("a[0-1023]b[0-2047]"), "ENV_INVALID: expands to more than 1048576 hosts");
}

}  // namespace
}  // namespace dmlp
