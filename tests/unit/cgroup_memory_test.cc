// The memory cgroup reader (trainer/cgroup_memory.h) on fake trees laid out
// as the kernel shows them: cgroup v2, v1, a hybrid host, a container whose
// own cgroup is the mount's root, and limits set on an ancestor.
#include "trainer/cgroup_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace dmlp {
namespace {

namespace fs = std::filesystem;

class CgroupMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("dmlp-cgroup-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc/self");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  // A cgroup2 mount at /sys/fs/cgroup of the hierarchy's `mounted` directory.
  static std::string V2Mount(const std::string& mounted = "/") {
    return "30 23 0:27 " + mounted + " /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
  }
  static std::string V1MemoryMount(const std::string& mounted = "/") {
    return "35 31 0:32 " + mounted + " /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n";
  }
  // One cgroup directory's limit and use, v2's files or v1's.
  void V2Level(const std::string& directory, const std::string& max, const std::string& current) {
    Write(directory + "/memory.max", max + "\n");
    Write(directory + "/memory.current", current + "\n");
  }
  void V1Level(const std::string& directory, const std::string& limit, const std::string& usage) {
    Write(directory + "/memory.limit_in_bytes", limit + "\n");
    Write(directory + "/memory.usage_in_bytes", usage + "\n");
  }
  std::optional<CgroupMemory> Read() { return ReadCgroupMemory(root_.string()); }

  fs::path root_;
};

TEST_F(CgroupMemoryTest, V2LimitLessWhatIsInUse) {
  Write("proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n" + V2Mount());
  Write("proc/self/cgroup", "0::/job\n");
  V2Level("sys/fs/cgroup/job", "67108864", "10485760");
  // Inactive page cache is reclaimed before an OOM kill: not in use.
  Write("sys/fs/cgroup/job/memory.stat", "anon 1048576\nfile 9437184\ninactive_file 4194304\n");
  std::optional<CgroupMemory> memory = Read();
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->limit, 67108864u);
  EXPECT_EQ(memory->in_use, 10485760u - 4194304u);
  EXPECT_EQ(memory->available, 67108864u - 6291456u);
  EXPECT_EQ(memory->cgroup, "/job");
  EXPECT_EQ(memory->limit_file, "memory.max");
}

TEST_F(CgroupMemoryTest, TheTightestAncestorWins) {
  Write("proc/self/mountinfo", V2Mount());
  Write("proc/self/cgroup", "0::/a/b/c\n");
  V2Level("sys/fs/cgroup/a", "1000", "900");
  V2Level("sys/fs/cgroup/a/b", "max", "500");
  V2Level("sys/fs/cgroup/a/b/c", "800", "400");
  std::optional<CgroupMemory> memory = Read();
  ASSERT_TRUE(memory);
  // c leaves 400, but a, shared with other groups, leaves only 100.
  EXPECT_EQ(memory->available, 100u);
  EXPECT_EQ(memory->cgroup, "/a");
  EXPECT_EQ(memory->limit, 1000u);
}

TEST_F(CgroupMemoryTest, NoLimitAnywhereIsNothing) {
  Write("proc/self/mountinfo", V2Mount());
  Write("proc/self/cgroup", "0::/a\n");
  V2Level("sys/fs/cgroup/a", "max", "500");
  EXPECT_FALSE(Read());
  // No cgroup file system at all (a fake tree without /proc either).
  fs::remove_all(root_ / "proc");
  EXPECT_FALSE(Read());
}

TEST_F(CgroupMemoryTest, V1MemoryController) {
  Write("proc/self/mountinfo", "31 23 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
                               "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n" +
                                   V1MemoryMount() +
                                   "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  Write("proc/self/cgroup", "8:pids:/\n4:memory:/docker/abc\n1:cpu:/\n0::/\n");
  Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
  Write("sys/fs/cgroup/memory/docker/memory.limit_in_bytes", "9223372036854771712\n");
  V1Level("sys/fs/cgroup/memory/docker/abc", "268435456", "16777216");
  Write("sys/fs/cgroup/memory/docker/abc/memory.stat", "cache 8388608\ntotal_inactive_file 8388608\n");
  std::optional<CgroupMemory> memory = Read();
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->available, 268435456u - 8388608u);
  EXPECT_EQ(memory->cgroup, "/docker/abc");
  EXPECT_EQ(memory->limit_file, "memory.limit_in_bytes");
}

TEST_F(CgroupMemoryTest, AContainersOwnCgroupMountedAsTheRoot) {
  // Docker without a cgroup namespace: /proc/self/cgroup names the host's
  // path, the mount shows that directory at the mount point.
  Write("proc/self/mountinfo", V1MemoryMount("/docker/abc"));
  Write("proc/self/cgroup", "4:memory:/docker/abc\n");
  V1Level("sys/fs/cgroup/memory", "134217728", "0");
  std::optional<CgroupMemory> memory = Read();
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->available, 134217728u);
  EXPECT_EQ(memory->cgroup, "/docker/abc");
}

TEST_F(CgroupMemoryTest, APathOutsideTheNamespaceIsTheMountItself) {
  // A process moved out of this cgroup namespace shows "/.." paths; nothing
  // above the mount may be read for it.
  Write("proc/self/mountinfo", V2Mount());
  Write("proc/self/cgroup", "0::/../elsewhere\n");
  V2Level("sys/fs/cgroup", "4096", "96");
  V2Level("sys/fs", "100", "0");
  std::optional<CgroupMemory> memory = Read();
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->available, 4000u);
  EXPECT_EQ(memory->cgroup, "/");
}

TEST_F(CgroupMemoryTest, HybridHostTakesTheTighterOfBoth) {
  // The unified hierarchy beside v1's, with the memory controller on both.
  Write("proc/self/mountinfo", V1MemoryMount() + "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  Write("proc/self/cgroup", "4:memory:/v1\n0::/v2\n");
  V1Level("sys/fs/cgroup/memory/v1", "5000", "1000");
  V2Level("sys/fs/cgroup/unified/v2", "3000", "1000");
  std::optional<CgroupMemory> memory = Read();
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->available, 2000u);
  EXPECT_EQ(memory->limit_file, "memory.max");
}

TEST_F(CgroupMemoryTest, UseAboveTheLimitLeavesNothing) {
  Write("proc/self/mountinfo", V2Mount());
  Write("proc/self/cgroup", "0::/full\n");
  V2Level("sys/fs/cgroup/full", "4096", "8192");
  std::optional<CgroupMemory> memory = Read();
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->available, 0u);
}

TEST_F(CgroupMemoryTest, EscapedMountPoint) {
  Write("proc/self/mountinfo", "30 23 0:27 / /cg\\040root rw - cgroup2 cgroup2 rw\n");
  Write("proc/self/cgroup", "0::/j\n");
  V2Level("cg root/j", "2048", "48");
  std::optional<CgroupMemory> memory = Read();
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->available, 2000u);
}

}  // namespace
}  // namespace dmlp
