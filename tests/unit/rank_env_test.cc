// rank-<r>.env.jsonl (trainer/output/rank_env.h) and the restore detector
// (trainer/output/restore_detector.h), with injected readings.
#include "trainer/output/rank_env.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/build_info.h"
#include "common/file_util.h"
#include "trainer/output/restore_detector.h"
#include "trainer/output/run_output.h"

namespace dmlp {
namespace {

namespace fs = std::filesystem;

HostReading Reading(std::string host, std::string boot_id, int64_t offset_ms) {
  return HostReading{std::move(host), std::move(boot_id), offset_ms};
}

TEST(RestoreDetectorTest, TheSameHostBootAndClockIsNoRestore) {
  RestoreDetector detector(Reading("h1", "b1", 1000000));
  // A SIGSTOP/SIGCONT pause moves both clocks: the offset stays within noise.
  EXPECT_EQ(detector.Check(Reading("h1", "b1", 1000000 + kClockJumpToleranceMs)), std::nullopt);
  EXPECT_EQ(detector.Check(Reading("h1", "b1", 1000000 - kClockJumpToleranceMs)), std::nullopt);
}

TEST(RestoreDetectorTest, EachReadingThatMovedIsNamed) {
  RestoreDetector detector(Reading("h1", "b1", 1000000));
  EXPECT_EQ(detector.Check(Reading("h1", "b2", 1000000)), "boot id changed (b1 -> b2)");
  EXPECT_EQ(detector.Check(Reading("h2", "b2", 1000000)), "host name changed (h1 -> h2)");
  EXPECT_EQ(detector.Check(Reading("h2", "b2", 1012500)), "clock jumped by 12.5 s");
  EXPECT_EQ(detector.Check(Reading("h3", "b3", 1000000)),
            "boot id changed (b2 -> b3); host name changed (h2 -> h3); clock jumped by -12.5 s");
}

TEST(RestoreDetectorTest, ARestoreIsReportedOnce) {
  RestoreDetector detector(Reading("h1", "b1", 0));
  ASSERT_TRUE(detector.Check(Reading("h1", "b2", 0)).has_value());
  EXPECT_EQ(detector.Check(Reading("h1", "b2", 0)), std::nullopt);
  EXPECT_EQ(detector.baseline().boot_id, "b2");
}

TEST(RestoreDetectorTest, ReadHostReadsTheBootIdFileAndTheHost) {
  const fs::path file = fs::path(::testing::TempDir()) / ("dmlp-boot-" + std::to_string(::getpid()));
  std::ofstream(file) << "fake-boot-id\n";
  HostReading reading = ReadHost(file.string());
  fs::remove(file);
  EXPECT_EQ(reading.boot_id, "fake-boot-id");
  EXPECT_FALSE(reading.host.empty());
  EXPECT_EQ(ReadHost("/nonexistent/boot_id").boot_id, "");
}

TEST(EnvLineTest, OneCompactObjectWithSortedKeys) {
  RankStack stack{DeviceDocument({"cpu", "Some CPU", "", "", ""}), {{"platform", "cpu"}}};
  nlohmann::json line = EnvLine(1, "restored", 12, "2026-12-01T11:00:00Z", Reading("h1", "b1", 0), 123,
                                std::string("boot id changed (b0 -> b1)"), stack, {{"version", "0.1.0"}});
  EXPECT_EQ(line.dump(),
            "{\"after_step\":12,\"boot_id\":\"b1\",\"build\":{\"version\":\"0.1.0\"},\"device\":"
            "{\"driver\":\"\",\"kind\":\"cpu\",\"name\":\"Some CPU\",\"pci_bus_id\":\"\",\"uuid\":\"\"},"
            "\"event\":\"restored\",\"host\":\"h1\",\"pid\":123,\"rank\":1,\"stack\":{\"platform\":\"cpu\"},"
            "\"time\":\"2026-12-01T11:00:00Z\",\"why\":\"boot id changed (b0 -> b1)\"}");
  EXPECT_FALSE(EnvLine(1, "start", 0, "t", Reading("h", "b", 0), 1, std::nullopt, stack, {}).contains("why"));
}

class EnvFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::path(::testing::TempDir()) / ("dmlp-env-" + std::to_string(::getpid()));
    fs::remove_all(directory_);
    fs::create_directories(directory_);
    plan_.out_dir = directory_.string();
    plan_.steps = 3;
    plan_.num_processes = 2;
    plan_.process_id = 1;
    plan_.model = {3, 4, 1, 2};
  }
  void TearDown() override {
    ::unsetenv("DMLP_TEST_BOOT_ID_FILE");
    ::unsetenv("DMLP_IMAGE_ID");
    fs::remove_all(directory_);
  }
  std::vector<nlohmann::json> Lines() const {
    std::vector<nlohmann::json> lines;
    std::ifstream file(directory_ / "rank-1.env.jsonl");
    for (std::string line; std::getline(file, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
  }
  static RankStack Stack() { return {DeviceDocument({"cpu", "CPU", "", "", ""}), {{"platform", "cpu"}}}; }

  fs::path directory_;
  Plan plan_;
};

TEST_F(EnvFileTest, AppendWritesAtTheEndWithoutOverwritingAndClosesATornLine) {
  const std::string path = (directory_ / "x.env.jsonl").string();
  std::ofstream(path) << "{\"torn\":";
  int fd = ::open(path.c_str(), O_RDWR);  // no O_APPEND: the offset comes from fstat
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(AppendEnvLine(fd, path, "{\"a\":1}").ok());
  ASSERT_TRUE(AppendEnvLine(fd, path, "{\"b\":2}").ok());
  ::close(fd);
  EXPECT_EQ(*ReadFileToString(path), "{\"torn\":\n{\"a\":1}\n{\"b\":2}\n");
}

TEST_F(EnvFileTest, AStartLineThenARestoredLineWhenTheBootIdChanges) {
  const fs::path boot = directory_ / "boot_id";
  std::ofstream(boot) << "boot-a\n";
  ::setenv("DMLP_TEST_BOOT_ID_FILE", boot.c_str(), 1);
  ::setenv("DMLP_IMAGE_ID", "sha256:abc", 1);
  Result<RunOutput> output = RunOutput::Open(plan_);
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  ASSERT_TRUE(output->BeginEnvironment("start", Stack).ok());
  const std::string hash(64, 'a');
  ASSERT_TRUE(output->Record(1, "2.5", hash).ok());
  std::ofstream(boot) << "boot-b\n";
  ASSERT_TRUE(output->Record(2, "2.5", hash).ok());
  ASSERT_TRUE(output->Record(3, "2.5", hash).ok());
  std::vector<nlohmann::json> lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["event"], "start");
  EXPECT_EQ(lines[0]["rank"], 1);
  EXPECT_EQ(lines[0]["after_step"], 0);
  EXPECT_EQ(lines[0]["boot_id"], "boot-a");
  EXPECT_EQ(lines[0]["pid"], ::getpid());
  EXPECT_EQ(lines[0]["build"], BuildDocument(ThisBuild(), "sha256:abc"));
  EXPECT_EQ(lines[0]["build"]["image_id"], "sha256:abc");
  EXPECT_EQ(lines[0]["device"]["name"], "CPU");
  EXPECT_FALSE(lines[0].contains("why"));
  EXPECT_EQ(lines[1]["event"], "restored");
  EXPECT_EQ(lines[1]["after_step"], 1);
  EXPECT_EQ(lines[1]["why"], "boot id changed (boot-a -> boot-b)");
  // The receipts are the same as without the restore.
  EXPECT_EQ(*ReadFileToString((directory_ / "rank-1.jsonl").string()),
            FormatReceiptLine({1, "2.5", hash, 1}) + FormatReceiptLine({2, "2.5", hash, 1}) +
                FormatReceiptLine({3, "2.5", hash, 1}));
}

TEST_F(EnvFileTest, AnExistingEnvFileIsOutputExistsAndNothingChanges) {
  std::ofstream(directory_ / "rank-1.env.jsonl") << "old\n";
  EXPECT_EQ(RunOutput::CheckAbsent(plan_).ToString(),
            "OUTPUT_EXISTS: " + (directory_ / "rank-1.env.jsonl").string());
  EXPECT_EQ(RunOutput::Open(plan_).status().code(), "OUTPUT_EXISTS");
  EXPECT_FALSE(fs::exists(directory_ / "rank-1.jsonl"));
  EXPECT_EQ(*ReadFileToString((directory_ / "rank-1.env.jsonl").string()), "old\n");
}

TEST_F(EnvFileTest, AStartThatFailsBeforeItsFirstStepRemovesItsEnvFileToo) {
  {
    Result<RunOutput> output = RunOutput::Open(plan_);
    ASSERT_TRUE(output.ok());
    ASSERT_TRUE(output->BeginEnvironment("start", Stack).ok());
    EXPECT_EQ(Lines().size(), 1u);
  }
  EXPECT_TRUE(fs::is_empty(directory_));
}

TEST_F(EnvFileTest, AnImageIdThatIsNotPlainIsRefused) {
  ::setenv("DMLP_IMAGE_ID", "two words", 1);
  EXPECT_EQ(RunOutput::Open(plan_).status().code(), "ENV_INVALID");
  EXPECT_TRUE(fs::is_empty(directory_));
  ::setenv("DMLP_IMAGE_ID", std::string(257, 'a').c_str(), 1);
  EXPECT_EQ(ImageIdFromEnvironment().status().ToString(),
            "ENV_INVALID: DMLP_IMAGE_ID must be at most 256 printable ASCII characters without "
            "spaces (an image id such as sha256:<hex>)");
  ::unsetenv("DMLP_IMAGE_ID");
  EXPECT_EQ(*ImageIdFromEnvironment(), "");
}

}  // namespace
}  // namespace dmlp
