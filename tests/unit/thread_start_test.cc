// StartThread (common/thread_start.h): a thread the system refuses is a
// Status with a stable code, not a std::system_error that aborts the rank.
#include "common/thread_start.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <string>

namespace dmlp {
namespace {

// This process's address space in bytes (/proc/self/status VmSize), 0 if unknown.
rlim_t AddressSpaceInUse() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmSize:")) return static_cast<rlim_t>(std::stoll(line.substr(7))) * 1024;
  return 0;
}

TEST(ThreadStartTest, AThreadThatStartsRuns) {
  std::atomic<bool> ran = false;
  Result<std::thread> thread = StartThread("test", [&] { ran = true; });
  ASSERT_TRUE(thread.ok()) << thread.status().ToString();
  thread->join();
  EXPECT_TRUE(ran);
}

// In a forked child: the address-space limit is the whole process's. With 1 MiB
// left, no new 8 MiB thread stack fits, and pthread_create fails with EAGAIN.
TEST(ThreadStartTest, ARefusedThreadIsResourceExhausted) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlim_t in_use = AddressSpaceInUse();
    struct rlimit tight = {in_use + (rlim_t{1} << 20), in_use + (rlim_t{1} << 20)};
    if (in_use == 0 || setrlimit(RLIMIT_AS, &tight) != 0) _exit(3);
    // glibc reuses the stacks of threads that ended (the test above): those
    // start, and the first that needs a new stack does not.
    Result<std::thread> thread = Status::Error("NOT_RUN", "");
    for (int started = 0; started < 64; ++started) {
      thread = StartThread("digest hasher 1 of 64, DIGEST_THREADS", [] { ::pause(); });
      if (!thread.ok()) break;
      thread->detach();
    }
    if (thread.ok()) _exit(4);
    const bool named = thread.status().ToString() ==
                       "RESOURCE_EXHAUSTED: cannot start a thread (digest hasher 1 of 64, DIGEST_THREADS): "
                       "Resource temporarily unavailable";
    _exit(named ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: no limit set, 4: the thread started, 5: another message";
}

}  // namespace
}  // namespace dmlp
