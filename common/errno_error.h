// defines: ErrnoError
//
// The one way dmlp turns a failed system call into a Status: the caller's
// code (IO_ERROR, SPAWN_FAILED, COLLECTIVE_ERROR, ...: the contract of its
// program) and "<what>: <the C library's words for the errno>", e.g.
// "IO_ERROR: open /x/result.json: Permission denied". `what` names the call
// and its object, as the user would look for them.
#pragma once

#include <cerrno>
#include <string_view>

#include "common/status.h"

namespace dmlp {

/// `code` with the detail "`what`: strerror(`error`)".
/// REQUIRES: `error` is the errno of the failed call, read before anything
/// else could change it (the default reads errno when the call is made).
Status ErrnoError(std::string_view code, std::string_view what, int error = errno);

}  // namespace dmlp
