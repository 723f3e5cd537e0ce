// The resume's pieces: OUT_DIR's lock and the merge of earlier attempts' receipts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/receipt.h"
#include "trainer/output/output_lock.h"
#include "trainer/output/replay.h"

namespace dmlp {
namespace {

namespace fs = std::filesystem;

class ResumeFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = fs::path(::testing::TempDir()) / ("dmlp-replay-" + std::to_string(::getpid()));
    fs::remove_all(run_);
    fs::create_directories(run_);
  }
  void TearDown() override { fs::remove_all(run_); }

  static std::string Line(int64_t step, std::optional<int64_t> rank, char digit = 'a') {
    return FormatReceiptLine({step, "2.5", std::string(64, digit), rank});
  }
  void Write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  OutDir Out() const { return std::move(OutDir::Open(run_.string()).value()); }

  fs::path run_;
};

TEST_F(ResumeFilesTest, TheLockAdmitsOneHolderAndNamesIt) {
  OutDir out = Out();
  {
    Result<OutputLock> first = OutputLock::Acquire(out);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    Result<OutputLock> second = OutputLock::Acquire(out);
    EXPECT_EQ(second.status().ToString(),
              "OUTPUT_LOCKED: " + run_.string() + " is in use by another job (" + run_.string() +
                  "/dmlp.lock held by pid " + std::to_string(::getpid()) + ")");
  }
  EXPECT_FALSE(fs::exists(run_ / "dmlp.lock"));  // created by that lock, removed with it
  Write(run_ / "dmlp.lock", "");                 // stale, from a killed job
  {
    Result<OutputLock> taken = OutputLock::Acquire(out);
    ASSERT_TRUE(taken.ok());
  }
  EXPECT_TRUE(fs::exists(run_ / "dmlp.lock"));  // a failed start leaves what it found
  {
    Result<OutputLock> taken = OutputLock::Acquire(out);
    ASSERT_TRUE(taken.ok());
    taken->Finish();
  }
  EXPECT_FALSE(fs::exists(run_ / "dmlp.lock"));  // a completed job leaves none
  fs::create_symlink("/dev/null", run_ / "dmlp.lock");
  EXPECT_EQ(OutputLock::Acquire(out).status().code(), "OUTPUT_NOT_REGULAR");
}

TEST_F(ResumeFilesTest, PriorReceiptsAreTheLongestOfAllAttempts) {
  Write(run_ / "superseded/1/rank-1.jsonl", Line(1, 1) + Line(2, 1) + Line(3, 1));
  Write(run_ / "superseded/1/metrics.jsonl", Line(1, {}) + Line(2, {}) + Line(3, {}) + Line(4, {}));
  // A resume killed while rewriting: a shorter copy on top, then a torn line.
  Write(run_ / "rank-1.jsonl", Line(1, 1) + Line(2, 1).substr(0, 20));
  Result<std::vector<Receipt>> prior = ReadPriorReceipts(Out(), 1, true);
  ASSERT_TRUE(prior.ok()) << prior.status().ToString();
  ASSERT_EQ(prior->size(), 4u);
  EXPECT_EQ((*prior)[3].rank, 1);
  EXPECT_EQ(ReadPriorReceipts(Out(), 2, false)->size(), 4u);  // a rank that did not exist then
}

TEST_F(ResumeFilesTest, AttemptsThatDisagreeAreRefused) {
  Write(run_ / "superseded/1/rank-0.jsonl", Line(1, 0) + Line(2, 0));
  Write(run_ / "rank-0.jsonl", Line(1, 0) + Line(2, 0, 'b'));
  EXPECT_EQ(ReadPriorReceipts(Out(), 0, true).status().ToString(),
            "RESUME_RECEIPTS_INVALID: " + run_.string() + "/rank-0.jsonl: step 2 differs from " +
                run_.string() + "/superseded/1/rank-0.jsonl");
  EXPECT_TRUE(ReadPriorReceipts(Out(), 0, false).ok());  // without the top level they agree
  Write(run_ / "superseded/2/rank-0.jsonl", Line(1, 0) + "not json\n");
  EXPECT_EQ(ReadPriorReceipts(Out(), 0, false).status().code(), "RESUME_RECEIPTS_INVALID");
}

TEST_F(ResumeFilesTest, RanksWithFilesAreFoundInEveryAttempt) {
  Write(run_ / "superseded/1/rank-3.jsonl", "");
  Write(run_ / "rank-1.jsonl", "");
  Write(run_ / "metrics.jsonl", "");
  Write(run_ / "rank-x.jsonl", "");
  EXPECT_EQ(*RanksWithReceiptFiles(Out()), (std::set<int64_t>{1, 3}));
}

TEST_F(ResumeFilesTest, MovingAsideRenamesEveryReceiptFileIntoANewFolder) {
  Write(run_ / "rank-0.jsonl", Line(1, 0));
  Write(run_ / "metrics.jsonl", Line(1, {}));
  Write(run_ / "checkpoint-00000002.safetensors", "x");
  fs::create_directories(run_ / "superseded/1");
  Result<std::string> aside = MoveReceiptsAside(Out());
  ASSERT_TRUE(aside.ok()) << aside.status().ToString();
  EXPECT_EQ(*aside, run_.string() + "/superseded/2");
  EXPECT_TRUE(fs::exists(run_ / "superseded/2/rank-0.jsonl"));
  EXPECT_TRUE(fs::exists(run_ / "superseded/2/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(run_ / "checkpoint-00000002.safetensors"));
  EXPECT_EQ(*MoveReceiptsAside(Out()), "");  // nothing left to move
}

}  // namespace
}  // namespace dmlp
