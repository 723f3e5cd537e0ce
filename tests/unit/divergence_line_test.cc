// The RANK_DIVERGED / SHARD_AUDIT_FAILED lines as dmlp-launch reads them:
// exact texts as dmlp-train prints them, then damaged ones.
#include "launch/divergence_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dmlp {
namespace {

const char kL4[] = "NVIDIA L4 GPU-8f3c2a1e-0011-2233-4455-66778899aaff PCI 0000:3B:00.0";

std::string Diverged() {
  return std::string(
             "[rank 0] dmlp-train: error: RANK_DIVERGED: step=7 rank(s)=1 digest=ab12 "
             "majority=cd34 device(s)=rank 1: host h1 ") +
         kL4;
}

std::string AuditFailed() {
  return "dmlp-train: error: SHARD_AUDIT_FAILED: step=12 update=3 shard=2 ranks=0,3 "
         "digests=aa,bb device(s)=rank 0: host h1 cpu Intel(R) Xeon(R) Gold 6338; rank 3: "
         "host h2 cpu Intel(R) Xeon(R) Gold 6338";
}

TEST(DivergenceLine, RankDivergedAsTheTrainerPrintsIt) {
  std::optional<Divergence> parsed = ParseDivergenceLine(Diverged(), "here");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->code, "RANK_DIVERGED");
  EXPECT_TRUE(parsed->line_read);
  EXPECT_EQ(parsed->step, 7);
  EXPECT_EQ(parsed->ranks, std::vector<int>{1});
  ASSERT_EQ(parsed->devices.size(), 1u);
  EXPECT_EQ(parsed->devices[0].rank, 1);
  EXPECT_EQ(parsed->devices[0].host, "h1");
  EXPECT_EQ(parsed->devices[0].device, kL4);
  EXPECT_EQ(DescribeDivergence(*parsed), "rank 1 diverged at step 7 (RANK_DIVERGED)");
  EXPECT_EQ(DescribeDevices(*parsed), std::string("host h1 (") + kL4 + ")");
}

TEST(DivergenceLine, ShardAuditWithTwoDevices) {
  std::optional<Divergence> parsed = ParseDivergenceLine(AuditFailed(), "here");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->code, "SHARD_AUDIT_FAILED");
  EXPECT_EQ(parsed->step, 12);
  EXPECT_EQ(parsed->ranks, (std::vector<int>{0, 3}));
  EXPECT_EQ(DescribeDivergence(*parsed),
            "ranks 0,3 failed the shard audit at step 12 (SHARD_AUDIT_FAILED)");
  EXPECT_EQ(DescribeDevices(*parsed),
            "rank 0: host h1 (cpu Intel(R) Xeon(R) Gold 6338); rank 3: host h2 (cpu Intel(R) "
            "Xeon(R) Gold 6338)");
}

TEST(DivergenceLine, SeveralRanksAndALabelWithoutHost) {
  std::optional<Divergence> parsed = ParseDivergenceLine(
      "dmlp-train: error: RANK_DIVERGED: step=3 rank(s)=1,2 digest=a,b majority=none "
      "device(s)=rank 1: NVIDIA H200 PCI 0000:01:00.0; rank 2: host h9",
      "launcher-host");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->ranks, (std::vector<int>{1, 2}));
  ASSERT_EQ(parsed->devices.size(), 2u);
  EXPECT_EQ(parsed->devices[0].host, "launcher-host");  // the launcher's own host stands in
  EXPECT_EQ(parsed->devices[0].device, "NVIDIA H200 PCI 0000:01:00.0");
  EXPECT_EQ(parsed->devices[1].host, "h9");
  EXPECT_EQ(parsed->devices[1].device, "");
  EXPECT_EQ(DescribeDevices(*parsed),
            "rank 1: host launcher-host (NVIDIA H200 PCI 0000:01:00.0); rank 2: host h9");
}

// A rank's line may be 1 MiB; the summary keeps a host name, a device and 16 labels.
TEST(DivergenceLine, LongLabelsAreBounded) {
  const std::string host(1 << 20, 'h'), device(1 << 20, 'd');
  std::optional<Divergence> parsed = ParseDivergenceLine(
      "dmlp-train: error: RANK_DIVERGED: step=7 rank(s)=1 device(s)=rank 1: host " + host + " " + device,
      "here");
  ASSERT_TRUE(parsed.has_value());
  ASSERT_EQ(parsed->devices.size(), 1u);
  EXPECT_EQ(parsed->devices[0].host, std::string(255, 'h') + "...");
  EXPECT_EQ(parsed->devices[0].device, std::string(256, 'd') + "...");
  EXPECT_LT(DescribeDevices(*parsed).size(), 600u);
  std::string many = "dmlp-train: error: RANK_DIVERGED: step=7 rank(s)=1 device(s)=rank 0: host a x";
  for (int rank = 1; rank < 20; ++rank) many += "; rank " + std::to_string(rank) + ": host a x";
  parsed = ParseDivergenceLine(many, "here");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->devices.size(), 16u);
  EXPECT_TRUE(DescribeDevices(*parsed).ends_with("; rank 15: host a (x); 4 more")) << DescribeDevices(*parsed);
}

TEST(DivergenceLine, OtherLinesAreNotDivergences) {
  for (const char* line : {"", "dmlp-train: error: REPLAY_DIVERGED: step=7",
                           "RANK_DIVERGED without a colon", "step=7 rank(s)=1"}) {
    EXPECT_FALSE(ParseDivergenceLine(line, "h").has_value()) << line;
  }
  EXPECT_TRUE(MentionsHardwareFault("x SHARD_AUDIT_FAILED"));
  EXPECT_FALSE(MentionsHardwareFault("REPLAY_DIVERGED"));
}

TEST(DivergenceLine, DamagedLinesKeepWhatParses) {
  // Cut short before device(s)=: step and rank are still known.
  std::optional<Divergence> cut =
      ParseDivergenceLine("dmlp-train: error: RANK_DIVERGED: step=7 rank(s)=1 dige", "h0");
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->step, 7);
  EXPECT_EQ(cut->ranks, std::vector<int>{1});
  EXPECT_TRUE(cut->devices.empty());
  EXPECT_EQ(DescribeDevices(*cut), "host h0 (the launcher's host; no device named)");
  // Not numbers: unknown, never a wrong number.
  std::optional<Divergence> garbled = ParseDivergenceLine(
      "RANK_DIVERGED: step=7x rank(s)=1,+2 device(s)=rank x: host h1 GPU; rank 4 host", "h0");
  ASSERT_TRUE(garbled.has_value());
  EXPECT_FALSE(garbled->step.has_value());
  EXPECT_TRUE(garbled->ranks.empty());
  EXPECT_TRUE(garbled->devices.empty());
  garbled->failed_rank = 2;
  EXPECT_EQ(DescribeDivergence(*garbled), "rank 2 diverged (RANK_DIVERGED; step unreadable)");
  // Only the code survived.
  std::optional<Divergence> bare = ParseDivergenceLine("RANK_DIVERGED:", "h0");
  ASSERT_TRUE(bare.has_value());
  EXPECT_FALSE(bare->step.has_value());
  // A key inside another word ("substep=") is not the key.
  EXPECT_FALSE(ParseDivergenceLine("RANK_DIVERGED: substep=3", "h0")->step.has_value());
  // Control bytes (a NUL, an escape) never reach the console.
  std::string nul = "RANK_DIVERGED: step=1 rank(s)=0 device(s)=rank 0: host h1 GPU";
  nul += '\0';
  nul += "\x1b[2J";
  std::optional<Divergence> with_nul = ParseDivergenceLine(nul, "h0");
  ASSERT_TRUE(with_nul.has_value());
  ASSERT_EQ(with_nul->devices.size(), 1u);
  EXPECT_EQ(with_nul->devices[0].device, "GPU??[2J");
}

TEST(DivergenceLine, TheExitCodeDecidesTheLineAddsDetail) {
  EXPECT_TRUE(IsHardwareFaultExit(ExitStatus::Exited(4)));
  EXPECT_TRUE(IsHardwareFaultExit(ExitStatus::Exited(5)));
  EXPECT_FALSE(IsHardwareFaultExit(ExitStatus::Exited(3)));
  EXPECT_FALSE(IsHardwareFaultExit(ExitStatus::Signaled(4)));
  // A line without the exit code is no divergence.
  EXPECT_FALSE(DivergenceOf(1, ExitStatus::Exited(1), {Diverged()}, "h0").has_value());
  // Exit code 4 without a line still counts.
  std::optional<Divergence> silent = DivergenceOf(1, ExitStatus::Exited(4), {}, "h0");
  ASSERT_TRUE(silent.has_value());
  EXPECT_FALSE(silent->line_read);
  EXPECT_EQ(DescribeDivergence(*silent),
            "rank 1 diverged (exit code 4; no readable RANK_DIVERGED line)");
  EXPECT_EQ(DescribeDivergence(*DivergenceOf(0, ExitStatus::Exited(5), {}, "h0")),
            "rank 0 failed the shard audit (exit code 5; no readable SHARD_AUDIT_FAILED line)");
  // The line whose code matches the exit code wins over the first one.
  std::optional<Divergence> chosen =
      DivergenceOf(0, ExitStatus::Exited(5), {Diverged(), AuditFailed()}, "h0");
  ASSERT_TRUE(chosen.has_value());
  EXPECT_EQ(chosen->code, "SHARD_AUDIT_FAILED");
  EXPECT_EQ(chosen->step, 12);
  EXPECT_EQ(chosen->failed_rank, 0);
}

TEST(DivergenceLine, SamePlaceNeedsStepAndRanks) {
  Divergence a = *ParseDivergenceLine(Diverged(), "h");
  Divergence b = a;
  b.devices.clear();  // labels do not matter: the place does
  EXPECT_TRUE(a.SamePlace(b));
  b.step = 8;
  EXPECT_FALSE(a.SamePlace(b));
  b = a;
  b.ranks = {2};
  EXPECT_FALSE(a.SamePlace(b));
  Divergence order = *ParseDivergenceLine(AuditFailed(), "h");
  Divergence swapped = order;
  swapped.ranks = {3, 0};
  EXPECT_TRUE(order.SamePlace(swapped));
  Divergence unknown = a;
  unknown.ranks.clear();
  EXPECT_FALSE(unknown.SamePlace(unknown));
}

}  // namespace
}  // namespace dmlp
