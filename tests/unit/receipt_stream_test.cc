// One receipt file as a step sequence: the step rules and the torn last line.
#include "verify/receipt_stream.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "tests/unit/verify_test_util.h"

namespace dmlp::verify {
namespace {

using testing::RankLine;

struct Outcome {
  std::vector<int64_t> accepted;
  std::map<std::string, size_t> findings;  // id -> count
  FileSummary summary;
};

Outcome Stream(const std::string& content, std::optional<int64_t> rank = 0) {
  testing::TempDir dir;
  dir.Write("rank-0.jsonl", content);
  FindingSink sink;
  ReceiptStream stream(LineReader(UniqueFd(::open(dir.File("rank-0.jsonl").c_str(), O_RDONLY)), "rank-0.jsonl"),
                       "rank-0.jsonl", rank, "run/rank-0.jsonl", &sink);
  Outcome outcome;
  Receipt record;
  for (;;) {
    Result<bool> more = stream.Next(&record);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    outcome.accepted.push_back(record.step);
  }
  for (const Finding& finding : sink.kept()) {
    ++outcome.findings[finding.id];
    EXPECT_EQ(finding.file, "run/rank-0.jsonl");
  }
  outcome.summary = stream.summary();
  return outcome;
}

std::string Steps(std::initializer_list<int> steps, int variant_at = 0) {
  std::string content;
  for (int step : steps) content += RankLine(step, 0, step == variant_at ? 1 : 0);
  return content;
}

using Ids = std::map<std::string, size_t>;

TEST(ReceiptStreamTest, ContiguousSteps) {
  Outcome outcome = Stream(Steps({1, 2, 3}));
  EXPECT_EQ(outcome.accepted, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(outcome.findings.empty());
  EXPECT_EQ(outcome.summary.records, 3);
  EXPECT_EQ(outcome.summary.last_step, 3);
  EXPECT_EQ(outcome.summary.last->params_sha256, testing::TestHash(3));
}

TEST(ReceiptStreamTest, StepRules) {
  EXPECT_EQ(Stream(Steps({1, 3})).findings, (Ids{{"steps.gap", 1}}));
  EXPECT_EQ(Stream(Steps({2, 3})).findings, (Ids{{"steps.gap", 1}}));
  EXPECT_EQ(Stream(Steps({1, 2, 2, 3})).findings, (Ids{{"steps.duplicate", 1}}));
  std::string conflicting = Steps({1, 2}) + RankLine(2, 0, 1) + Steps({3});
  EXPECT_EQ(Stream(conflicting).findings, (Ids{{"steps.conflicting_duplicate", 1}}));
  Outcome restart = Stream(Steps({1, 2, 3, 1, 2, 3, 4}));
  EXPECT_EQ(restart.findings, (Ids{{"steps.restart", 1}}));
  EXPECT_EQ(restart.accepted, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(Stream(Steps({1, 2, 3, 1, 2, 5})).findings, (Ids{{"steps.restart", 1}, {"steps.gap", 1}}));
  Outcome swapped = Stream(Steps({1, 3, 2, 4}));
  EXPECT_EQ(swapped.findings, (Ids{{"steps.gap", 1}, {"steps.out_of_order", 1}}));
  EXPECT_EQ(swapped.accepted, (std::vector<int64_t>{1, 3, 4}));
}

TEST(ReceiptStreamTest, RankField) {
  EXPECT_EQ(Stream(RankLine(1, 0) + RankLine(2, 1)).findings, (Ids{{"rank.field_mismatch", 1}}));
  Outcome metrics = Stream(testing::MetricsLine(1) + RankLine(2, 0), std::nullopt);
  EXPECT_EQ(metrics.findings, (Ids{{"line.field_extra", 1}}));
  EXPECT_EQ(metrics.accepted, (std::vector<int64_t>{1}));
}

TEST(ReceiptStreamTest, TornLastLineIsIncompleteOnlyAtTheEnd) {
  const std::string third = RankLine(3, 0);
  Outcome cut = Stream(Steps({1, 2}) + third.substr(0, 50));
  EXPECT_EQ(cut.findings, (Ids{{"line.torn_last", 1}}));
  EXPECT_TRUE(cut.summary.torn_last);
  EXPECT_EQ(cut.accepted.size(), 2u);
  Outcome whole = Stream(Steps({1, 2}) + third.substr(0, third.size() - 1));
  EXPECT_EQ(whole.findings, (Ids{{"line.torn_last", 1}}));
  EXPECT_EQ(Stream(Steps({1, 2}) + third.substr(0, 50) + "\n").findings, (Ids{{"line.torn_last", 1}}));
  EXPECT_EQ(Stream(Steps({1}) + third.substr(0, 50) + "\n" + Steps({2})).findings, (Ids{{"line.truncated", 1}}));
  // Garbage at the end is not a torn write.
  EXPECT_EQ(Stream(Steps({1}) + "xyz").findings, (Ids{{"line.not_json", 1}}));
}

TEST(ReceiptStreamTest, GluedRecordIsStillCounted) {
  std::string second = RankLine(2, 0);
  Outcome outcome = Stream(Steps({1}) + second.substr(0, 40) + RankLine(3, 0) + Steps({4}));
  EXPECT_EQ(outcome.findings, (Ids{{"line.torn_glued", 1}, {"steps.gap", 1}}));
  EXPECT_EQ(outcome.accepted, (std::vector<int64_t>{1, 3, 4}));
}

TEST(ReceiptStreamTest, DamagedLinesAreCountedNotStored) {
  std::string content;
  for (int i = 0; i < 5000; ++i) content += "not json\n";
  testing::TempDir dir;
  dir.Write("rank-0.jsonl", content);
  FindingSink sink;
  ReceiptStream stream(LineReader(UniqueFd(::open(dir.File("rank-0.jsonl").c_str(), O_RDONLY)), "r"),
                       "rank-0.jsonl", 0, "r", &sink);
  Receipt record;
  Result<bool> more = stream.Next(&record);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
  EXPECT_EQ(sink.Count("line.not_json"), 5000u);
  EXPECT_EQ(sink.kept().size(), FindingSink::kKeepPerIdAndFile);
  EXPECT_EQ(sink.dropped(), 5000u - FindingSink::kKeepPerIdAndFile);
}

}  // namespace
}  // namespace dmlp::verify
