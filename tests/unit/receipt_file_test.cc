#include "trainer/output/receipt_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace dmlp {
namespace {

// A fake receipt file: an unlinked temporary the test edits behind the
// writer's back, as a restore from a freeze would.
class ReceiptFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/dmlp-receipt-XXXXXX";
    fd_ = ::mkstemp(pattern.data());
    ASSERT_GE(fd_, 0);
    ::unlink(pattern.c_str());
    file_ = ReceiptFile(fd_, "out/rank-1.jsonl", 1);
  }
  void TearDown() override { ::close(fd_); }

  std::string Contents() const {
    std::string bytes(static_cast<size_t>(::lseek(fd_, 0, SEEK_END)), '\0');
    EXPECT_EQ(::pread(fd_, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    return bytes;
  }
  void Replace(const std::string& bytes) {
    ASSERT_EQ(::ftruncate(fd_, 0), 0);
    ASSERT_EQ(::pwrite(fd_, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }
  static std::string Line(int step) { return "{\"step\": " + std::to_string(step) + "}\n"; }

  int fd_ = -1;
  ReceiptFile file_;
};

TEST_F(ReceiptFileTest, WritesEachLineAtItsOffset) {
  for (int step = 1; step <= 3; ++step) EXPECT_EQ(*file_.Put(step, Line(step)), LineOutcome::kWritten);
  EXPECT_EQ(Contents(), Line(1) + Line(2) + Line(3));
  EXPECT_EQ(file_.offset(), static_cast<int64_t>(Contents().size()));
}

TEST_F(ReceiptFileTest, IdenticalBytesAlreadyThereAreAConfirmedReplay) {
  ASSERT_TRUE(file_.Put(1, Line(1)).ok());
  Replace(Line(1) + Line(2) + Line(3));  // the files are newer than the process
  EXPECT_EQ(*file_.Put(2, Line(2)), LineOutcome::kConfirmed);
  EXPECT_EQ(*file_.Put(3, Line(3)), LineOutcome::kConfirmed);
  EXPECT_EQ(*file_.Put(4, Line(4)), LineOutcome::kWritten);
  EXPECT_EQ(Contents(), Line(1) + Line(2) + Line(3) + Line(4));
}

TEST_F(ReceiptFileTest, DifferentBytesAreReplayDivergedAndNothingIsOverwritten) {
  ASSERT_TRUE(file_.Put(1, Line(1)).ok());
  const std::string on_disk = Line(1) + "{\"step\": 9}\n";
  Replace(on_disk);
  Result<LineOutcome> outcome = file_.Put(2, Line(2));
  EXPECT_EQ(outcome.status().ToString(),
            "REPLAY_DIVERGED: step=2 rank=1 out/rank-1.jsonl already holds other bytes at offset "
            "12 (nothing overwritten)");
  EXPECT_EQ(Contents(), on_disk);
}

TEST_F(ReceiptFileTest, ATornCopyOfTheSameLineIsCompleted) {
  ASSERT_TRUE(file_.Put(1, Line(1)).ok());
  Replace(Line(1) + Line(2).substr(0, 4));
  EXPECT_EQ(*file_.Put(2, Line(2)), LineOutcome::kWritten);
  EXPECT_EQ(Contents(), Line(1) + Line(2));
}

TEST_F(ReceiptFileTest, ATornDifferentLineIsReplayDiverged) {
  ASSERT_TRUE(file_.Put(1, Line(1)).ok());
  Replace(Line(1) + "{\"x");
  EXPECT_EQ(file_.Put(2, Line(2)).status().code(), "REPLAY_DIVERGED");
  EXPECT_EQ(Contents(), Line(1) + "{\"x");
}

TEST_F(ReceiptFileTest, AShorterFileIsReceiptsLostNamingTheSteps) {
  for (int step = 1; step <= 5; ++step) ASSERT_TRUE(file_.Put(step, Line(step)).ok());
  Replace(Line(1) + Line(2));  // restored onto older files: steps 3..5 are gone
  EXPECT_EQ(file_.Put(6, Line(6)).status().ToString(),
            "RECEIPTS_LOST: steps 3..5 rank=1: out/rank-1.jsonl is 24 bytes, this rank had "
            "written 60 (restored onto older files)");
  EXPECT_EQ(Contents(), Line(1) + Line(2));  // no hole of NUL bytes
}

TEST_F(ReceiptFileTest, ATruncationInsideALineLosesThatLine) {
  for (int step = 1; step <= 3; ++step) ASSERT_TRUE(file_.Put(step, Line(step)).ok());
  Replace(Line(1) + Line(2).substr(0, 5));
  EXPECT_EQ(file_.Put(4, Line(4)).status().ToString(),
            "RECEIPTS_LOST: steps 2..3 rank=1: out/rank-1.jsonl is 17 bytes, this rank had "
            "written 36 (restored onto older files)");
}

TEST_F(ReceiptFileTest, AnEmptiedFileLosesEveryStep) {
  for (int step = 1; step <= 2; ++step) ASSERT_TRUE(file_.Put(step, Line(step)).ok());
  Replace("");
  EXPECT_EQ(file_.Put(3, Line(3)).status().code(), "RECEIPTS_LOST");
  EXPECT_NE(file_.Put(3, Line(3)).status().detail().find("steps 1..2 "), std::string::npos);
}

}  // namespace
}  // namespace dmlp
