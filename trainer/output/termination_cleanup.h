// defines: InstallTerminationCleanup, TerminationCleanup, TerminateMessage
//
// A job that started but is stopped before its first step (dmlp-launch tears
// every rank down with SIGTERM when one rank fails) must not leave 0-byte
// receipt files behind: the rerun would be OUTPUT_EXISTS. Destructors do not
// run when a signal kills the process, so the files this rank created are
// registered here, and a handler for SIGTERM, SIGINT and SIGHUP removes each
// one that is still the same file (same inode under its name) and, for
// receipts, still empty, then lets the signal kill the process as before.
// The handler only calls async-signal-safe functions (fstat, fstatat,
// unlinkat, signal, raise) on descriptors duplicated at registration; when
// they cannot be duplicated (no descriptor left) registration fails, and the
// caller removes the file and fails too: a file no signal could remove is
// never kept.
//
// std::terminate ends the rank the same way: an exception that escapes a
// thread dmlp does not own (Gloo's device loop throws gloo::EnforceNotMet
// from its own thread when accept() gets EMFILE: the image rehearsal's
// podman build, RLIMIT_NOFILE=30) would abort() and leave dmlp.lock and the
// empty receipts behind. The handler removes the registered files, says what
// escaped (RESOURCE_EXHAUSTED naming RLIMIT_NOFILE for a descriptor
// shortage, else INTERNAL) and exits 1, as a failure the trainer reports.
#pragma once

#include <exception>
#include <string>

#include "common/status.h"

namespace dmlp {

/// main: installs the handlers (once, before anything is created): SIGTERM,
/// SIGINT, SIGHUP and std::terminate.
void InstallTerminationCleanup();

/// The error std::terminate's handler reports for `escaped` (null: terminate
/// called with no exception in flight).
Status TerminateMessage(std::exception_ptr escaped);

/// One registered file; unregisters (and closes its duplicates) when destroyed.
class TerminationCleanup {
 public:
  TerminationCleanup() = default;
  /// Registers `name` in the directory `directory_fd`, open here as `fd`.
  /// `only_if_empty`: removed only while it has no byte (a receipt file).
  /// RESOURCE_EXHAUSTED when the descriptors cannot be duplicated (naming
  /// RLIMIT_NOFILE); INTERNAL when every slot is taken or the name is too long.
  static Result<TerminationCleanup> Register(int directory_fd, const char* name, int fd,
                                             bool only_if_empty);
  TerminationCleanup(TerminationCleanup&& other) noexcept;
  TerminationCleanup& operator=(TerminationCleanup&& other) noexcept;
  TerminationCleanup(const TerminationCleanup&) = delete;
  ~TerminationCleanup();

 private:
  explicit TerminationCleanup(int slot) : slot_(slot) {}
  void Release();
  int slot_ = -1;
};

}  // namespace dmlp
