// The divergence check's verdict (which ranks are named, by which majority, in
// the exact RANK_DIVERGED text dmlp-launch parses), the device label, and the
// test faults: their variables, and where a backend takes them (TestFaultTarget).
#include "trainer/checks/divergence_check.h"

#include <gtest/gtest.h>

#include "common/env.h"
#include "trainer/rendezvous/rendezvous_wire.h"
#include "trainer/test_faults.h"

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

// A backend that computes nothing; `target` (may be null) takes the test faults.
class FaultOnlyBackend final : public Backend {
 public:
  explicit FaultOnlyBackend(TestFaultTarget* target) : target_(target) {}
  nlohmann::json Fingerprint() const override { return nlohmann::json::object(); }
  DeviceIdentity Device() const override { return {}; }
  Result<SnapshotBuffer> AllocateSnapshotBuffer() override { return Status::Error("UNSUPPORTED"); }
  Status LoadState(const uint8_t*) override { return Status::Ok(); }
  Status ComputePartials(int64_t, int64_t) override { return Status::Ok(); }
  Status ReduceAndApply() override { return Status::Ok(); }
  Result<float> LastLoss() override { return 0.0f; }
  Result<SnapshotWaiter> BeginSnapshot(uint8_t*) override { return Status::Error("UNSUPPORTED"); }
  TestFaultTarget* test_faults() override { return target_; }

 private:
  TestFaultTarget* target_;
};

class RecordingTarget final : public TestFaultTarget {
 public:
  Status FlipBitForTests(size_t byte, int bit) override {
    flips.push_back(std::to_string(byte) + ":" + std::to_string(bit));
    return Status::Ok();
  }
  Status FlipPartialBitForTests(int64_t local_shard) override {
    flips.push_back("partial " + std::to_string(local_shard));
    return Status::Ok();
  }
  std::vector<std::string> flips;
};

TEST(TestFaultsTest, LandOnTheBackendsTargetAtTheirUpdateOnly) {
  RecordingTarget target;
  FaultOnlyBackend backend(&target);
  const BitFlipForTests flip{3, 5, 1};
  const PartialFaultForTests corruption{3};
  for (int64_t step = 1; step <= 2; ++step) {
    for (int64_t microbatch = 0; microbatch < 2; ++microbatch) {  // update 3: step 2, microbatch 0
      ASSERT_TRUE(corruption.BeforeReduction(backend, step, microbatch, 2).ok());
      ASSERT_TRUE(flip.AfterUpdate(backend, step, microbatch, 2).ok());
    }
  }
  EXPECT_EQ(target.flips, (std::vector<std::string>{"partial 0", "5:1"}));
}

TEST(TestFaultsTest, ABackendWithoutATargetRefusesThem) {
  FaultOnlyBackend backend(nullptr);
  EXPECT_EQ((BitFlipForTests{1}).AfterUpdate(backend, 1, 0, 1).ToString(),
            "UNSUPPORTED: this backend cannot flip a bit of its state");
  EXPECT_EQ((PartialFaultForTests{1}).BeforeReduction(backend, 1, 0, 1).ToString(),
            "INTERNAL: this backend has no shard audit");
}

}  // namespace
}  // namespace dmlp
