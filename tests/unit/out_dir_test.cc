#include "common/out_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/file_util.h"

namespace dmlp {
namespace {

namespace fs = std::filesystem;

class OutDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("dmlp-out-dir-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "outside");
    outside_ = root_ / "outside" / "victim";
    std::ofstream(outside_) << "keep\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Outside() const { return *ReadFileToString(outside_.string()); }

  fs::path root_, outside_;
};

// mkdir -p of a dangling link used to say only "File exists".
TEST_F(OutDirTest, ADanglingLinkIsNamedWithItsMissingTarget) {
  fs::create_symlink(root_ / "gone", root_ / "run");
  const std::string run = (root_ / "run").string();
  const std::string expected = "OUTPUT_DANGLING_LINK: OUT_DIR " + run + " is a symbolic link to '" +
                               (root_ / "gone").string() +
                               "', which does not exist (create it, or point the link elsewhere)";
  EXPECT_EQ(OutDir::Create(run).status().ToString(), expected);
  EXPECT_EQ(OutDir::CheckNoDanglingLink(run).ToString(), expected);
  EXPECT_EQ(OutDir::CheckNoDanglingLink(run + "/sub/dir").ToString(),
            "OUTPUT_DANGLING_LINK: OUT_DIR " + run + "/sub/dir: " + run + " is a symbolic link to '" +
                (root_ / "gone").string() + "', which does not exist (create it, or point the link elsewhere)");
  EXPECT_FALSE(fs::exists(root_ / "gone"));  // nothing created
  fs::create_directory(root_ / "gone");       // the link resolves now
  EXPECT_TRUE(OutDir::CheckNoDanglingLink(run + "/sub").ok());
  EXPECT_TRUE(OutDir::Create(run + "/sub").ok());
  EXPECT_TRUE(OutDir::CheckNoDanglingLink((root_ / "absent" / "deeper").string()).ok());
}

TEST_F(OutDirTest, CreateFileNeverFollowsALink) {
  OutDir out = std::move(OutDir::Create((root_ / "run").string()).value());
  fs::create_symlink(outside_, root_ / "run" / "rank-0.jsonl");
  Result<int> fd = out.CreateFile("rank-0.jsonl", "OUTPUT_EXISTS");
  EXPECT_EQ(fd.status().ToString(),
            "OUTPUT_NOT_REGULAR: " + (root_ / "run" / "rank-0.jsonl").string() +
                " is a symbolic link, not a regular file (dmlp never writes through links)");
  std::ofstream(root_ / "run" / "metrics.jsonl") << "old\n";
  EXPECT_EQ(out.CreateFile("metrics.jsonl", "OUTPUT_EXISTS").status().code(), "OUTPUT_EXISTS");
  EXPECT_EQ(Outside(), "keep\n");
}

TEST_F(OutDirTest, AtomicWriteRefusesALinkedTemporaryAndReplacesAStaleFile) {
  const fs::path run = root_ / "run";
  OutDir out = std::move(OutDir::Create(run.string()).value());
  fs::create_symlink(outside_, run / "result.json.tmp");
  Status linked = WriteFileAtomically((run / "result.json").string(), "new\n");
  EXPECT_EQ(linked.ToString(), "OUTPUT_NOT_REGULAR: " + (run / "result.json.tmp").string() +
                                   " is a symbolic link, not a regular file (a stale temporary)"
                                   " (dmlp never writes through links)");
  EXPECT_EQ(Outside(), "keep\n");
  EXPECT_FALSE(fs::exists(run / "result.json"));
  fs::remove(run / "result.json.tmp");
  ::mkfifo((run / "result.json.tmp").c_str(), 0600);
  EXPECT_EQ(out.WriteAtomically("result.json", {"new\n"}).code(), "OUTPUT_NOT_REGULAR");
  fs::remove(run / "result.json.tmp");
  std::ofstream(run / "result.json.tmp") << "torn";
  ASSERT_TRUE(out.WriteAtomically("result.json", {"ne", "w\n"}).ok());
  EXPECT_EQ(*ReadFileToString((run / "result.json").string()), "new\n");
  EXPECT_FALSE(fs::exists(run / "result.json.tmp"));
}

TEST_F(OutDirTest, AtomicWriteReplacesALinkAtTheFinalNameWithoutWritingItsTarget) {
  const fs::path run = root_ / "run";
  OutDir out = std::move(OutDir::Create(run.string()).value());
  fs::create_symlink(outside_, run / "state.safetensors");
  ASSERT_TRUE(out.WriteAtomically("state.safetensors", {"state"}).ok());
  EXPECT_FALSE(fs::is_symlink(run / "state.safetensors"));
  EXPECT_EQ(Outside(), "keep\n");
}

// A directory others write too (dmlp-verify's reports): a temporary of this
// process's own, nothing under another name touched, nothing under its name
// replaced or followed.
TEST_F(OutDirTest, APerProcessTemporaryIsNeverAnotherWritersOrAPlant) {
  const fs::path run = root_ / "run";
  OutDir out = std::move(OutDir::Create(run.string()).value());
  std::ofstream(run / "report.json.tmp") << "another writer's";
  AtomicWriteOptions options;
  options.temporary_per_process = true;
  ASSERT_TRUE(out.WriteAtomically("report.json", {"new\n"}, options).ok());
  EXPECT_EQ(*ReadFileToString((run / "report.json").string()), "new\n");
  EXPECT_EQ(*ReadFileToString((run / "report.json.tmp").string()), "another writer's");
  const fs::path own = run / ("report.json.tmp-" + std::to_string(::getpid()));
  EXPECT_FALSE(fs::exists(own));
  fs::create_symlink(outside_, own);
  EXPECT_EQ(out.WriteAtomically("report.json", {"newer\n"}, options).ToString(),
            "IO_ERROR: create " + own.string() + ": File exists");
  EXPECT_EQ(*ReadFileToString((run / "report.json").string()), "new\n");
  EXPECT_EQ(Outside(), "keep\n");
}

TEST_F(OutDirTest, AnErrorBeforeTheRenameLeavesTheFileAndNoTemporary) {
  const fs::path run = root_ / "run";
  OutDir out = std::move(OutDir::Create(run.string()).value());
  std::ofstream(run / "result.json") << "old\n";
  AtomicWriteOptions options;
  bool temporary_was_complete = false;
  options.before_rename = [&] {
    temporary_was_complete = *ReadFileToString((run / "result.json.tmp").string()) == "new\n";
    return Status::Error("IO_ERROR", "changed meanwhile");
  };
  EXPECT_EQ(out.WriteAtomically("result.json", {"new\n"}, options).ToString(), "IO_ERROR: changed meanwhile");
  EXPECT_TRUE(temporary_was_complete);
  EXPECT_EQ(*ReadFileToString((run / "result.json").string()), "old\n");
  EXPECT_FALSE(fs::exists(run / "result.json.tmp"));
}

TEST_F(OutDirTest, SubdirectoriesAreNeverReachedThroughALink) {
  OutDir out = std::move(OutDir::Create((root_ / "run").string()).value());
  fs::create_directory_symlink(root_ / "outside", root_ / "run" / "superseded");
  Result<OutDir> sub = out.OpenSubdir("superseded", true);
  EXPECT_EQ(sub.status().ToString(),
            "OUTPUT_NOT_REGULAR: " + (root_ / "run" / "superseded").string() +
                " is a symbolic link, not a directory (dmlp never writes through links)");
  EXPECT_EQ(out.OpenSubdir("absent", false).status().code(), "NOT_FOUND");
  Result<OutDir> made = out.OpenSubdir("made", true);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(out.MakeSubdir("made", "EXISTS").code(), "EXISTS");
}

TEST_F(OutDirTest, ReadingRefusesLinksAndMovingMovesTheLinkItself) {
  OutDir out = std::move(OutDir::Create((root_ / "run").string()).value());
  fs::create_symlink(outside_, root_ / "run" / "rank-1.jsonl");
  EXPECT_EQ(out.OpenForReading("rank-1.jsonl").status().code(), "OUTPUT_NOT_REGULAR");
  EXPECT_EQ(out.OpenForReading("absent").status().code(), "NOT_FOUND");
  Result<OutDir> aside = out.OpenSubdir("aside", true);
  ASSERT_TRUE(aside.ok());
  ASSERT_TRUE(out.MoveTo("rank-1.jsonl", *aside, "rank-1.jsonl").ok());
  EXPECT_TRUE(fs::is_symlink(root_ / "run" / "aside" / "rank-1.jsonl"));
  EXPECT_EQ(Outside(), "keep\n");
  EXPECT_EQ(*out.List(), std::vector<std::string>{"aside"});
}

}  // namespace
}  // namespace dmlp
