#include "trainer/output/termination_cleanup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <thread>

#include "common/file_util.h"

namespace dmlp {
namespace {

namespace fs = std::filesystem;

// Gloo's words when its listener thread's accept() got EMFILE (the image
// rehearsal's podman build, RLIMIT_NOFILE=30).
constexpr const char* kGlooAcceptError =
    "[enforce fail at ./gloo/transport/tcp/listener.cc:53] false. accept: Too many open files";

template <typename Error>
std::exception_ptr Thrown(const Error& error) {
  return std::make_exception_ptr(error);
}

TEST(TerminateMessage, ADescriptorShortageIsResourceExhaustedNamingTheLimit) {
  struct rlimit limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const Status status = TerminateMessage(Thrown(std::runtime_error(kGlooAcceptError)));
  EXPECT_EQ(status.ToString(), "RESOURCE_EXHAUSTED: too many open files (RLIMIT_NOFILE=" +
                                   std::to_string(limit.rlim_cur) + ") in a library's thread: " +
                                   kGlooAcceptError);
}

TEST(TerminateMessage, TheSystemsFullTableIsNamedAsSuch) {
  const Status status = TerminateMessage(Thrown(std::runtime_error("accept: Too many open files in system")));
  EXPECT_EQ(status.code(), "RESOURCE_EXHAUSTED");
  EXPECT_NE(status.detail().find("ENFILE, fs.file-max"), std::string::npos) << status.ToString();
}

TEST(TerminateMessage, AnyOtherExceptionIsInternalWithItsWords) {
  EXPECT_EQ(TerminateMessage(Thrown(std::logic_error("getpeername: Transport endpoint is not connected")))
                .ToString(),
            "INTERNAL: uncaught exception in a library's thread: getpeername: Transport endpoint is not "
            "connected");
  EXPECT_EQ(TerminateMessage(nullptr).ToString(),
            "INTERNAL: uncaught exception in a library's thread: std::terminate called with no "
            "exception in flight");
}

// Was: std::terminate's abort(), SIGABRT, and dmlp.lock and the empty
// receipts left in OUT_DIR, so the rerun was refused (OUTPUT_EXISTS).
TEST(TerminationCleanupDeathTest, AnExceptionEscapingALibrarysThreadRemovesTheFilesAndExitsOne) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const fs::path directory = fs::path(::testing::TempDir()) / ("dmlp-terminate-" + std::to_string(::getpid()));
  fs::remove_all(directory);
  fs::create_directories(directory);
  EXPECT_EXIT(
      {
        InstallTerminationCleanup();
        const int directory_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        const int fd = ::openat(directory_fd, "dmlp.lock", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        Result<TerminationCleanup> cleanup = TerminationCleanup::Register(directory_fd, "dmlp.lock", fd, false);
        if (!cleanup.ok()) ::_exit(90);
        std::thread library([] { throw std::runtime_error(kGlooAcceptError); });
        library.join();
        ::_exit(91);  // not reached: the thread's exception ends the process
      },
      ::testing::ExitedWithCode(1),
      "^dmlp-train: error: RESOURCE_EXHAUSTED: too many open files \\(RLIMIT_NOFILE=[0-9]+\\) in a "
      "library's thread: \\[enforce fail at \\./gloo/transport/tcp/listener\\.cc:53\\] false\\. accept: "
      "Too many open files\n$");
  EXPECT_FALSE(fs::exists(directory / "dmlp.lock"));
  fs::remove_all(directory);
}

}  // namespace
}  // namespace dmlp
