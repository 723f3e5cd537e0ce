#include "launch/exit_status.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dmlp {
namespace {

// The wait status of a real child that ran `body`.
template <typename Body>
int WaitStatusOf(Body body) {
  pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(ExitStatus, ExitCodeIsKeptApartFromSignal) {
  ExitStatus exited = ExitStatus::Exited(137);
  ExitStatus killed = ExitStatus::Signaled(SIGKILL);
  EXPECT_TRUE(exited.exited());
  EXPECT_FALSE(exited.signaled());
  EXPECT_TRUE(killed.signaled());
  EXPECT_EQ(exited.ShellCode(), killed.ShellCode());  // the shell cannot tell them apart
  EXPECT_NE(exited, killed);                          // we can
  EXPECT_EQ(exited.ToString(), "exited with code 137");
  EXPECT_EQ(killed.ToString(), "killed by signal SIGKILL");
  EXPECT_EQ(exited.ReportField(), "rc=137");
  EXPECT_EQ(killed.ReportField(), "signal=SIGKILL");
}

TEST(ExitStatus, Success) {
  EXPECT_TRUE(ExitStatus::Exited(0).success());
  EXPECT_FALSE(ExitStatus::Exited(1).success());
  EXPECT_FALSE(ExitStatus::Signaled(SIGTERM).success());
  EXPECT_EQ(ExitStatus::Exited(0).ShellCode(), 0);
  EXPECT_EQ(ExitStatus::Signaled(SIGSEGV).ShellCode(), 139);
  EXPECT_EQ(ExitStatus::Signaled(SIGSEGV, true).ToString(),
            "killed by signal SIGSEGV (core dumped)");
}

TEST(ExitStatus, DecodesRealWaitStatuses) {
  EXPECT_EQ(ExitStatus::FromWaitStatus(WaitStatusOf([] { _exit(3); })), ExitStatus::Exited(3));
  EXPECT_EQ(ExitStatus::FromWaitStatus(WaitStatusOf([] { raise(SIGKILL); })),
            ExitStatus::Signaled(SIGKILL));
  ExitStatus terminated = ExitStatus::FromWaitStatus(WaitStatusOf([] { raise(SIGTERM); }));
  EXPECT_EQ(terminated.signal(), SIGTERM);
  EXPECT_EQ(terminated.code(), 0);
}

TEST(SignalName, NamesTheSignalsRanksDieOf) {
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGINT), "SIGINT");
  EXPECT_EQ(SignalName(SIGABRT), "SIGABRT");
  EXPECT_EQ(SignalName(SIGBUS), "SIGBUS");
  EXPECT_EQ(SignalName(SIGUSR1), "SIGUSR1");
  EXPECT_EQ(SignalName(SIGRTMIN), "SIGRTMIN");
  EXPECT_EQ(SignalName(SIGRTMIN + 2), "SIGRTMIN+2");
  EXPECT_EQ(SignalName(0), "SIG0");
  EXPECT_EQ(SignalName(200), "SIG200");
}

}  // namespace
}  // namespace dmlp
