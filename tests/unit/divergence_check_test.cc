// The divergence check's verdict (which ranks are named, by which majority, in
// the exact RANK_DIVERGED text dmlp-launch parses), the device label, and the
// test-only bit-flip hook's variable.
#include "trainer/checks/divergence_check.h"

#include <gtest/gtest.h>

#include "common/env.h"
#include "common/format/error_codes.h"
#include "trainer/rendezvous/rendezvous_wire.h"
#include "trainer/test_faults.h"
#include "trainer/trainer.h"

namespace dmlp {
namespace {

const std::string kA(64, 'a'), kB(64, 'b'), kC(64, 'c');

TEST(DivergenceCheckTest, EqualDigestsAreNoDivergence) {
  EXPECT_FALSE(DescribeDivergence(3, {kA, kA, kA}, {"l0", "l1", "l2"}));
  EXPECT_FALSE(DescribeDivergence(3, {kA}, {"l0"}));
}

TEST(DivergenceCheckTest, TheOddRankIsNamedByTheMajority) {
  EXPECT_EQ(DescribeDivergence(7, {kA, kB, kA}, {"host h0 cpu X", "host h1 cpu X", "host h2 cpu X"}).value(),
            "step=7 rank(s)=1 digest=" + kB + " majority=" + kA + " device(s)=rank 1: host h1 cpu X");
  EXPECT_EQ(DescribeDivergence(2, {kB, kA, kA, kC, kA}, {"d0", "d1", "d2", "d3", "d4"}).value(),
            "step=2 rank(s)=0,3 digest=" + kB + "," + kC + " majority=" + kA +
                " device(s)=rank 0: d0; rank 3: d3");
}

TEST(DivergenceCheckTest, WithoutAStrictMajorityEveryRankIsNamed) {
  EXPECT_EQ(DescribeDivergence(5, {kA, kB}, {"d0", "d1"}).value(),
            "step=5 rank(s)=0,1 digest=" + kA + "," + kB + " majority=none device(s)=rank 0: d0; rank 1: d1");
  // Two against two is no majority either.
  EXPECT_EQ(DescribeDivergence(1, {kA, kB, kB, kA}, {"d0", "d1", "d2", "d3"}).value(),
            "step=1 rank(s)=0,1,2,3 digest=" + kA + "," + kB + "," + kB + "," + kA +
                " majority=none device(s)=rank 0: d0; rank 1: d1; rank 2: d2; rank 3: d3");
}

TEST(DivergenceCheckTest, OffOrAloneTheCheckPassesEveryStep) {
  DivergenceCheck off;
  EXPECT_FALSE(off.active());
  EXPECT_TRUE(off.Check(1, kA).ok());
}

TEST(BitFlipForTestsTest, ReadsUpdateAndOptionallyByteAndBit) {
  Environment env;
  Result<BitFlipForTests> none = BitFlipForTests::FromEnvironment(env, 100);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->update, 0);
  env.Set("DMLP_TEST_FLIP_BIT", "9");
  Result<BitFlipForTests> flip = BitFlipForTests::FromEnvironment(env, 100);
  ASSERT_TRUE(flip.ok()) << flip.status().ToString();
  EXPECT_EQ(flip->update, 9);
  EXPECT_EQ(flip->byte, 2u);
  EXPECT_EQ(flip->bit, 6);
  env.Set("DMLP_TEST_FLIP_BIT", "3:99:0");
  flip = BitFlipForTests::FromEnvironment(env, 100);
  ASSERT_TRUE(flip.ok()) << flip.status().ToString();
  EXPECT_EQ(flip->byte, 99u);
  EXPECT_EQ(flip->bit, 0);
  for (const char* bad : {"0", "x", "3:100:0", "3:1:8", "3:1", "3:1:2:4", ""}) {
    env.Set("DMLP_TEST_FLIP_BIT", bad);
    EXPECT_EQ(BitFlipForTests::FromEnvironment(env, 100).status().code(), "ENV_INVALID") << bad;
  }
}

// docs/troubleshooting.md's table says what a rank ends with on each code it raises.
TEST(TrainerExitCodeTest, ExitCodesAreTheCataloguesForTheTrainersCodes) {
  for (const ErrorCodeRow& row : ErrorCodes()) {
    if (!row.programs.starts_with("dmlp-train")) continue;
    EXPECT_EQ(ExitCodeFor(Status::Error(std::string(row.code))), row.exit_code) << row.code;
  }
  EXPECT_EQ(ExitCodeFor(Status::Error("NOT_A_CODE_OF_DMLP")), 1);
}

}  // namespace
}  // namespace dmlp
