#include "trainer/output/run_output.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/file_util.h"
#include "common/state_file.h"

namespace dmlp {
namespace {

namespace fs = std::filesystem;

class RunOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::path(::testing::TempDir()) / ("dmlp-output-" + std::to_string(::getpid()));
    fs::remove_all(directory_);
    plan_.out_dir = directory_.string();
    plan_.steps = 2;
    plan_.num_processes = 2;
    plan_.process_id = 0;
    plan_.model = {3, 4, 1, 2};
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::vector<std::string> Listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(directory_))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path directory_;
  Plan plan_;
};

TEST_F(RunOutputTest, CreatesReceiptFilesAndWritesExactLines) {
  Result<RunOutput> output = RunOutput::Open(plan_);
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  const std::string hash(64, 'c');
  ASSERT_TRUE(output->Record(1, "2.5", hash).ok());
  EXPECT_EQ(output->Record(3, "2.5", hash).code(), "METRIC_STEP_NOT_CONTIGUOUS");
  EXPECT_EQ(*ReadFileToString((directory_ / "rank-0.jsonl").string()),
            "{\"loss\": \"2.5\", \"params_sha256\": \"" + hash + "\", \"rank\": 0, \"step\": 1}\n");
  EXPECT_EQ(*ReadFileToString((directory_ / "metrics.jsonl").string()),
            "{\"loss\": \"2.5\", \"params_sha256\": \"" + hash + "\", \"step\": 1}\n");
}

TEST_F(RunOutputTest, AStartThatFailsBeforeItsFirstStepLeavesNoFiles) {
  { ASSERT_TRUE(RunOutput::Open(plan_).ok()); }
  EXPECT_EQ(Listing(), std::vector<std::string>{});
  {
    Result<RunOutput> output = RunOutput::Open(plan_);
    ASSERT_TRUE(output.ok());
    ASSERT_TRUE(output->Record(1, "2.5", std::string(64, 'c')).ok());
  }
  EXPECT_EQ(Listing(), (std::vector<std::string>{"metrics.jsonl", "rank-0.env.jsonl", "rank-0.jsonl"}));
}

TEST_F(RunOutputTest, AnExistingReceiptIsOutputExistsAndNothingChanges) {
  fs::create_directories(directory_);
  std::ofstream(directory_ / "rank-0.jsonl") << "old\n";
  EXPECT_EQ(RunOutput::Open(plan_).status().code(), "OUTPUT_EXISTS");
  EXPECT_EQ(Listing(), std::vector<std::string>{"rank-0.jsonl"});
  fs::remove(directory_ / "rank-0.jsonl");
  std::ofstream(directory_ / "metrics.jsonl") << "old\n";
  EXPECT_EQ(RunOutput::Open(plan_).status().code(), "OUTPUT_EXISTS");
  EXPECT_EQ(Listing(), std::vector<std::string>{"metrics.jsonl"});
  EXPECT_EQ(*ReadFileToString((directory_ / "metrics.jsonl").string()), "old\n");
}

TEST_F(RunOutputTest, AFinishedRunIsOutputAlreadyComplete) {
  fs::create_directories(directory_);
  std::ofstream(directory_ / "result.json") << "{}\n";
  EXPECT_EQ(RunOutput::Open(plan_).status().ToString(),
            "OUTPUT_ALREADY_COMPLETE: " + directory_.string());
  EXPECT_EQ(Listing(), std::vector<std::string>{"result.json"});
}

TEST_F(RunOutputTest, MetricsLinesAreCheckedOnRewriteLikeReceipts) {
  const std::string hash(64, 'a');
  Result<RunOutput> output = RunOutput::Open(plan_);
  ASSERT_TRUE(output.ok());
  ASSERT_TRUE(output->Record(1, "2.5", hash).ok());
  // A restore onto newer files: rank-0.jsonl holds step 2 as this rank will
  // write it, metrics.jsonl holds another step 2.
  const std::string rank_line = FormatReceiptLine({2, "2.25", hash, 0});
  const std::string other_metrics_line = FormatReceiptLine({2, "9.75", hash, std::nullopt});
  std::ofstream(directory_ / "rank-0.jsonl", std::ios::app) << rank_line;
  std::ofstream(directory_ / "metrics.jsonl", std::ios::app) << other_metrics_line;
  Status status = output->Record(2, "2.25", hash);
  EXPECT_EQ(status.code(), "REPLAY_DIVERGED");
  EXPECT_NE(status.detail().find("step=2 rank=0 " + (directory_ / "metrics.jsonl").string()),
            std::string::npos)
      << status.ToString();
  EXPECT_EQ(*ReadFileToString((directory_ / "metrics.jsonl").string()),
            FormatReceiptLine({1, "2.5", hash, std::nullopt}) + other_metrics_line);
}

TEST_F(RunOutputTest, CompleteWritesStateFileThenResult) {
  StateLayout layout = *StateLayout::Create(plan_.model);
  std::vector<uint8_t> image(layout.image_bytes(), 0);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 7);
  StateDigests digests = DigestStateImage(layout, image.data());
  Result<RunOutput> output = RunOutput::Open(plan_);
  ASSERT_TRUE(output.ok());
  ASSERT_TRUE(output->Record(1, "2.5", std::string(64, 'a')).ok());
  EXPECT_EQ(output->Complete(layout, image.data(), {}, {}).code(), "TRAINING_INCOMPLETE");
  ASSERT_TRUE(output->Record(2, "2.25", digests.state).ok());
  ASSERT_TRUE(output->Complete(layout, image.data(), {{"platform", "cpu"}}, {3, 0}).ok());
  EXPECT_EQ(Listing(), (std::vector<std::string>{"metrics.jsonl", "rank-0.env.jsonl", "rank-0.jsonl",
                                                 "result.json", "state.safetensors"}));
  nlohmann::json result =
      nlohmann::json::parse(*ReadFileToString((directory_ / "result.json").string()));
  EXPECT_EQ(result["final_loss"], "2.25");
  EXPECT_EQ(result["params_sha256"], digests.state);
  EXPECT_EQ(result["final_params_sha256"], digests.params);
  EXPECT_EQ(result["final_opt_state_sha256"], digests.opt);
  EXPECT_EQ(result["rank_files"], nlohmann::json({"rank-0.jsonl", "rank-1.jsonl"}));
  EXPECT_EQ(result["complete"], true);
  EXPECT_EQ(result["confirmed_replays"], nlohmann::json({3, 0}));
  EXPECT_EQ(result["state_file"], "state.safetensors");
  Result<StateDigests> from_file = DigestStateFile((directory_ / "state.safetensors").string());
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(from_file->state, digests.state);
}

}  // namespace
}  // namespace dmlp
