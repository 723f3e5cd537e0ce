#include "launch/command_path.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace dmlp {
namespace {

class CommandPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dmlp-command-path-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    std::filesystem::create_directory(dir_ + "/a");
    std::filesystem::create_directory(dir_ + "/b");
    Write(dir_ + "/a/tool", 0644);  // found first but not executable
    Write(dir_ + "/b/tool", 0755);
    Write(dir_ + "/a/plain", 0644);
    std::filesystem::create_directory(dir_ + "/b/folder");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void Write(const std::string& path, mode_t mode) {
    std::ofstream(path) << "#!/bin/sh\n";
    chmod(path.c_str(), mode);
  }
  Environment Path() const { return Environment({{"PATH", dir_ + "/a:" + dir_ + "/b"}}); }
  std::string dir_;
};

TEST_F(CommandPathTest, SearchesPathLikeExecvp) {
  EXPECT_EQ(ResolveExecutable("tool", Path()).value(), dir_ + "/b/tool");
}

TEST_F(CommandPathTest, NotExecutableIsNotNotFound) {
  Result<std::string> plain = ResolveExecutable("plain", Path());
  EXPECT_EQ(plain.status().ToString(),
            "COMMAND_NOT_EXECUTABLE: " + dir_ + "/a/plain: Permission denied");
  Result<std::string> direct = ResolveExecutable(dir_ + "/a/plain", Path());
  EXPECT_EQ(direct.status().code(), "COMMAND_NOT_EXECUTABLE");
}

TEST_F(CommandPathTest, DirectoriesAndMissingNames) {
  EXPECT_EQ(ResolveExecutable(dir_ + "/b/folder", Path()).status().ToString(),
            "COMMAND_NOT_EXECUTABLE: " + dir_ + "/b/folder: is a directory");
  EXPECT_EQ(ResolveExecutable("no-such-tool-dmlp", Path()).status().ToString(),
            "COMMAND_NOT_FOUND: no-such-tool-dmlp: not found in PATH");
  EXPECT_EQ(ResolveExecutable(dir_ + "/missing", Path()).status().ToString(),
            "COMMAND_NOT_FOUND: " + dir_ + "/missing: No such file or directory");
}

TEST(DefaultCommand, IsBesideThisExecutable) {
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  EXPECT_EQ(DefaultCommand("argv0-is-not-needed", Environment(Environment::Map{})).value(),
            (self.parent_path() / "dmlp-train").string());
}

// Without /proc (a container or chroot that lacks it) the directory comes from argv[0].
TEST_F(CommandPathTest, WithoutProcTheDirectoryComesFromArgv0) {
  const std::string no_proc = dir_ + "/proc-self-exe-is-absent";
  const std::string real_dir = std::filesystem::canonical(dir_).string();
  EXPECT_EQ(DefaultCommand(dir_ + "/b/tool", Path(), no_proc).value(), real_dir + "/b/dmlp-train");
  // A bare name was found in PATH by the shell: the same search finds it again
  // (a/tool is not executable, so the shell could not have run it).
  EXPECT_EQ(DefaultCommand("tool", Path(), no_proc).value(), real_dir + "/b/dmlp-train");
  // A link to the launcher: the trainer is beside the file it links to, as /proc/self/exe says.
  std::filesystem::create_symlink(dir_ + "/b/tool", dir_ + "/a/link-to-tool");
  EXPECT_EQ(DefaultCommand(dir_ + "/a/link-to-tool", Path(), no_proc).value(),
            real_dir + "/b/dmlp-train");
}

TEST_F(CommandPathTest, WithoutProcOrArgv0TheErrorNamesTheWayOut) {
  const std::string no_proc = dir_ + "/proc-self-exe-is-absent";
  EXPECT_EQ(DefaultCommand("dmlp-launch-nowhere", Path(), no_proc).status().ToString(),
            "COMMAND_NOT_FOUND: dmlp-train: dmlp-launch cannot tell its own directory (" + no_proc +
                ": No such file or directory; argv[0] 'dmlp-launch-nowhere' is not found either); "
                "give the trainer as COMMAND: dmlp-launch [options] -- /path/to/dmlp-train");
}

}  // namespace
}  // namespace dmlp
