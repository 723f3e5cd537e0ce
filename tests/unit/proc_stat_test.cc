#include "launch/proc_stat.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

namespace dmlp {
namespace {

TEST(ProcStat, ParsesACommandNameWithSpacesAndParentheses) {
  std::optional<ProcStat> stat = ParseProcStat(
      "4242 (a (b) c) D 1 4240 4240 0 -1 4194560 100 0 0 0 17 5 0 3 20 0 1 0 100 1000 10\n");
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->pid, 4242);
  EXPECT_EQ(stat->comm, "a (b) c");
  EXPECT_EQ(stat->state, 'D');
  EXPECT_EQ(stat->ppid, 1);
  EXPECT_EQ(stat->pgrp, 4240);
  EXPECT_EQ(stat->utime_ticks, 17);
  EXPECT_EQ(stat->stime_ticks, 5);
  EXPECT_EQ(stat->children_utime_ticks, 0);
  EXPECT_EQ(stat->children_stime_ticks, 3);
}

TEST(ProcStat, RejectsDamagedText) {
  EXPECT_FALSE(ParseProcStat("").has_value());
  EXPECT_FALSE(ParseProcStat("12 (cut").has_value());
  EXPECT_FALSE(ParseProcStat("12 (x) S 1 2").has_value());  // truncated
  EXPECT_FALSE(
      ParseProcStat("12 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13").has_value());  // no cutime/cstime
  EXPECT_FALSE(ParseProcStat("12 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15").has_value());
}

TEST(ProcStat, ReadsItself) {
  std::optional<ProcStat> self = ReadProcStat(getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->pid, getpid());
  EXPECT_EQ(self->ppid, getppid());
  EXPECT_EQ(self->pgrp, getpgrp());
  EXPECT_EQ(self->state, 'R');
  bool found = false;
  for (const ProcStat& member : ProcessGroupMembers(getpgrp()))
    found = found || member.pid == getpid();
  EXPECT_TRUE(found);
}

// The event behind a flaky SupervisorRestarts test: a scan of /proc
// opens a process's stat, the process ends and is reaped, the read fails with
// ESRCH. That must read as "gone", never throw (it escaped the launcher).
TEST(ProcStat, AProcessReapedBetweenOpenAndReadIsGoneNotAnException) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  const std::string path = "/proc/" + std::to_string(child) + "/stat";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  std::ifstream stream(path);  // the way ReadProcStat read before the fix
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(stream.good());
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(ReadProcStatFrom(fd).has_value());
  close(fd);
#if defined(__GLIBCXX__)
  // What the launcher met: libstdc++'s istreambuf_iterator throws on ESRCH.
  EXPECT_ANY_THROW(std::string((std::istreambuf_iterator<char>(stream)),
                               std::istreambuf_iterator<char>()));
#endif
  EXPECT_FALSE(ReadProcStat(child).has_value());
}

TEST(ProcStat, StateNames) {
  EXPECT_EQ(ProcessStateName('D'), "uninterruptible sleep");
  EXPECT_EQ(ProcessStateName('Z'), "zombie");
  EXPECT_EQ(ProcessStateName('?'), "state ?");
}

}  // namespace
}  // namespace dmlp
