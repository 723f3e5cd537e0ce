// The one errno-to-Status wording of every program.
#include "common/errno_error.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace dmlp {
namespace {

TEST(ErrnoErrorTest, NamesTheCallThenTheCLibrarysWords) {
  EXPECT_EQ(ErrnoError("IO_ERROR", "open /x/result.json", ENOENT).ToString(),
            "IO_ERROR: open /x/result.json: No such file or directory");
  EXPECT_EQ(ErrnoError("SPAWN_FAILED", "fork", EAGAIN).ToString(),
            "SPAWN_FAILED: fork: Resource temporarily unavailable");
}

TEST(ErrnoErrorTest, ReadsErrnoWhenNoneIsGiven) {
  errno = EACCES;
  const Status status = ErrnoError("IO_ERROR", "create out/x.tmp");
  EXPECT_EQ(status.code(), "IO_ERROR");
  EXPECT_EQ(status.detail(), "create out/x.tmp: Permission denied");
}

}  // namespace
}  // namespace dmlp
