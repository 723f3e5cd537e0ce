// defines: StartThread
//
// Every thread dmlp starts goes through StartThread: std::thread throws
// std::system_error when the system refuses one (EAGAIN: RLIMIT_NPROC, or no
// address space for its stack under RLIMIT_AS), and an exception that nothing
// catches aborts the rank without its cleanup (empty receipts and dmlp.lock
// left, the rerun OUTPUT_EXISTS). Here it becomes a Status, returned like any
// other failure, so the refused start unwinds and cleans up as it should.
#pragma once

#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "common/status.h"

namespace dmlp {

/// RESOURCE_EXHAUSTED: cannot start a thread (`what`): <reason>.
Status ThreadStartFailed(const std::string& what, const std::system_error& error);

/// Starts `body` on a new thread; `what` names it in the error.
template <typename Body>
Result<std::thread> StartThread(const std::string& what, Body&& body) {
  try {
    return std::thread(std::forward<Body>(body));
  } catch (const std::system_error& error) {
    return ThreadStartFailed(what, error);
  }
}

}  // namespace dmlp
