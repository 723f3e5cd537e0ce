#include "trainer/output/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/file_util.h"
#include "common/state_digest.h"
#include "common/state_file.h"
#include "trainer/math/data_definition.h"
#include "trainer/output/replay.h"

namespace dmlp {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::path(::testing::TempDir()) / ("dmlp-ckpt-" + std::to_string(::getpid()));
    fs::remove_all(directory_);
    fs::create_directories(directory_);
    plan_.out_dir = directory_.string();
    plan_.model = {3, 4, 1, 2};
    plan_.num_processes = 2;
    plan_.data_shards = 2;
    plan_.steps = 10;
    plan_.batch = 4;
    plan_.microbatches = 1;
    plan_.learning_rate = 0.001;
    layout_ = *StateLayout::Create(plan_.model);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::vector<uint8_t> Image(uint8_t salt) const {
    std::vector<uint8_t> image(layout_.image_bytes());
    for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 13 + salt);
    return image;
  }
  std::string Write(int64_t step) {
    std::vector<uint8_t> image = Image(static_cast<uint8_t>(step));
    std::string digest = DigestStateStep(image.data(), image.size());
    EXPECT_TRUE(WriteCheckpoint(plan_, layout_, step, image.data(), digest).ok());
    return digest;
  }
  void Corrupt(int64_t step) {
    const std::string path = (directory_ / CheckpointFileName(step)).string();
    std::string bytes = *ReadFileToString(path);
    bytes[bytes.size() - 3] ^= 0x40;  // a flipped bit in the nu block
    ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  }

  fs::path directory_;
  Plan plan_;
  StateLayout layout_ = *StateLayout::Create({1, 1, 1, 1});
};

TEST_F(CheckpointTest, KeepsTheNewestTwo) {
  for (int64_t step : {2, 4, 6}) Write(step);
  EXPECT_FALSE(fs::exists(directory_ / CheckpointFileName(2)));
  EXPECT_TRUE(fs::exists(directory_ / CheckpointFileName(4)));
  EXPECT_TRUE(fs::exists(directory_ / CheckpointFileName(6)));
  EXPECT_EQ(CheckpointFileName(6), "checkpoint-00000006.safetensors");
}

TEST_F(CheckpointTest, NoCheckpointMeansStartFresh) {
  Result<CheckpointChoice> choice = FindResumeCheckpoint(plan_, layout_);
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->step, 0);
}

TEST_F(CheckpointTest, ResumesFromTheNewestAndLoadsItsBits) {
  Write(4);
  std::string digest = Write(6);
  Result<CheckpointChoice> choice = FindResumeCheckpoint(plan_, layout_);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_EQ(choice->step, 6);
  EXPECT_EQ(choice->params_sha256, digest);
  Result<std::vector<uint8_t>> image = LoadCheckpoint(*choice, layout_);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(*image, Image(6));
}

TEST_F(CheckpointTest, ACorruptNewestFallsBackToThePreviousOne) {
  Write(4);
  Write(6);
  Corrupt(6);
  Result<CheckpointChoice> choice = FindResumeCheckpoint(plan_, layout_);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_EQ(choice->step, 4);
  ASSERT_EQ(choice->skipped.size(), 1u);
  EXPECT_NE(choice->skipped[0].find("CHECKPOINT_INVALID"), std::string::npos);
}

TEST_F(CheckpointTest, NoValidCheckpointIsRefused) {
  Write(4);
  Corrupt(4);
  EXPECT_EQ(FindResumeCheckpoint(plan_, layout_).status().code(), "CHECKPOINT_INVALID");
  // A truncated file (a torn write that somehow kept its name) too.
  std::ofstream(directory_ / CheckpointFileName(8)) << "short";
  EXPECT_EQ(FindResumeCheckpoint(plan_, layout_).status().code(), "CHECKPOINT_INVALID");
}

TEST_F(CheckpointTest, ACheckpointTheRanksDidNotAgreeOnIsSkippedForThePreviousOne) {
  const std::string agreed = Write(4);
  const std::string odd = Write(6);  // as a diverged rank 0 writes it: valid, but only its own digest
  int asked = 0;
  auto receipts_hold = [&](const std::string& digest) {
    return [&, digest](const CheckpointChoice& choice) -> Status {
      ++asked;
      if (choice.params_sha256 == digest) return Status::Ok();
      return Status::Error("CHECKPOINT_DISAGREES", choice.path + ": not rank 1's receipt");
    };
  };
  Result<CheckpointChoice> choice = FindResumeCheckpoint(plan_, layout_, receipts_hold(agreed));
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_EQ(choice->step, 4);
  EXPECT_EQ(asked, 2);
  ASSERT_EQ(choice->skipped.size(), 1u);  // printed as a warning, like a torn checkpoint
  EXPECT_EQ(choice->skipped[0], "CHECKPOINT_DISAGREES: " + (directory_ / CheckpointFileName(6)).string() +
                                    ": not rank 1's receipt");
  // None agreed: a code of its own, naming every checkpoint skipped and why.
  Result<CheckpointChoice> none = FindResumeCheckpoint(plan_, layout_, receipts_hold("none"));
  EXPECT_EQ(none.status().code(), "CHECKPOINT_NOT_AGREED");
  EXPECT_NE(none.status().detail().find(CheckpointFileName(4)), std::string::npos);
  // Any other refusal ends the search with it (the receipts could not be judged).
  EXPECT_EQ(FindResumeCheckpoint(plan_, layout_, [](const CheckpointChoice&) {
              return Status::Error("RESUME_RECEIPTS_INVALID", "short");
            }).status().code(),
            "RESUME_RECEIPTS_INVALID");
  EXPECT_EQ(FindResumeCheckpoint(plan_, layout_)->params_sha256, odd);  // no predicate: as before
}

TEST_F(CheckpointTest, AnotherPlansCheckpointIsRefusedNotUsed) {
  Write(4);
  plan_.learning_rate = 0.002;
  EXPECT_EQ(FindResumeCheckpoint(plan_, layout_).status().code(), "CHECKPOINT_PLAN_MISMATCH");
}

TEST_F(CheckpointTest, ACheckpointOfAnotherDataDefinitionIsRefused) {
  // Written by dmlp while it drew from Philox (data and init): the same plan, but
  // its fingerprint has no data_definition line. Resuming it would mix data.
  std::string fingerprint = CheckpointFingerprint(plan_);
  // The line and the newline that joins it to its neighbour (it may be the last).
  const std::string line = std::string("\ndata_definition=") + kDataDefinitionId;
  ASSERT_NE(fingerprint.find(line), std::string::npos);
  fingerprint.erase(fingerprint.find(line), line.size());
  const std::vector<uint8_t> image = Image(4);
  const std::string digest = DigestStateStep(image.data(), image.size());
  ASSERT_TRUE(WriteStateFile((directory_ / CheckpointFileName(4)).string(), layout_, image.data(),
                             {{"step", "4"}, {"params_sha256", digest},
                              {"checkpoint_fingerprint", fingerprint}})
                  .ok());
  EXPECT_EQ(FindResumeCheckpoint(plan_, layout_).status().code(), "CHECKPOINT_PLAN_MISMATCH");
  Write(4);  // the same state under today's definition resumes
  EXPECT_EQ(FindResumeCheckpoint(plan_, layout_)->step, 4);
}

TEST_F(CheckpointTest, WorldSizeAndStepsMayChangeOnResume) {
  Write(4);
  plan_.num_processes = 1;
  plan_.steps = 20;
  plan_.checkpoint_every = 3;
  EXPECT_EQ(FindResumeCheckpoint(plan_, layout_)->step, 4);
}

TEST(ReplayTest, PriorReceiptsComeFromTheRankFileThenMetrics) {
  fs::path aside = fs::path(::testing::TempDir()) / ("dmlp-aside-" + std::to_string(::getpid()));
  fs::create_directories(aside);
  const std::string a(64, 'a'), b(64, 'b'), c(64, 'c');
  std::ofstream(aside / "metrics.jsonl")
      << FormatReceiptLine({1, "2.0", a, std::nullopt}) << FormatReceiptLine({2, "1.5", b, std::nullopt})
      << FormatReceiptLine({3, "1.25", c, std::nullopt});
  // Rank 1 died after one receipt and half a line.
  std::ofstream(aside / "rank-1.jsonl") << FormatReceiptLine({1, "2.0", a, 1}) << "{\"loss\": \"1.";
  Result<std::vector<Receipt>> prior = ReadPriorReceipts(*OutDir::Open(aside.string()), 1, true);
  ASSERT_TRUE(prior.ok()) << prior.status().ToString();
  ASSERT_EQ(prior->size(), 3u);
  EXPECT_EQ((*prior)[2], (Receipt{3, "1.25", c, 1}));
  // A rank that did not exist then inherits rank 0's record.
  EXPECT_EQ(ReadPriorReceipts(*OutDir::Open(aside.string()), 5, true)->size(), 3u);
  std::ofstream(aside / "rank-2.jsonl") << "garbage\n";
  EXPECT_EQ(ReadPriorReceipts(*OutDir::Open(aside.string()), 2, true).status().code(), "RESUME_RECEIPTS_INVALID");
  fs::remove_all(aside);
}

TEST(ReplayTest, MoveReceiptsAsideKeepsEveryAttempt) {
  fs::path out = fs::path(::testing::TempDir()) / ("dmlp-move-" + std::to_string(::getpid()));
  fs::create_directories(out);
  EXPECT_EQ(*MoveReceiptsAside(*OutDir::Open(out.string())), "");
  std::ofstream(out / "rank-0.jsonl") << "x\n";
  std::ofstream(out / "metrics.jsonl") << "y\n";
  std::ofstream(out / "checkpoint-00000002.safetensors") << "z";
  EXPECT_EQ(*MoveReceiptsAside(*OutDir::Open(out.string())), (out / "superseded" / "1").string());
  std::ofstream(out / "rank-0.jsonl") << "x2\n";
  EXPECT_EQ(*MoveReceiptsAside(*OutDir::Open(out.string())), (out / "superseded" / "2").string());
  EXPECT_EQ(*ReadFileToString((out / "superseded" / "1" / "metrics.jsonl").string()), "y\n");
  EXPECT_EQ(*ReadFileToString((out / "superseded" / "2" / "rank-0.jsonl").string()), "x2\n");
  EXPECT_TRUE(fs::exists(out / "checkpoint-00000002.safetensors"));
  fs::remove_all(out);
}

}  // namespace
}  // namespace dmlp
