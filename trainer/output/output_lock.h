// defines: kLockFile, OutputLock
//
// One job per OUT_DIR. Rank 0 takes an exclusive flock on OUT_DIR/dmlp.lock
// after the rendezvous and before any rank creates a file there, and holds it
// for the job's life; the other ranks create theirs only once rank 0 said so
// through the coordinator (trainer/output/start.h), so a second job into the
// same OUT_DIR is refused (OUTPUT_LOCKED, naming the holder's pid, read from
// /proc/locks) before it writes anything. The file stays empty: taking the
// lock never changes a byte in OUT_DIR. The kernel drops the lock when rank 0 exits, however it
// exits, so a killed job never leaves OUT_DIR locked.
//
// The file is removed when the job ends (success, or a failure of the job
// that created it), so a finished run directory holds only the run's files.
// Removing a lock file is safe only because every taker checks, once it holds
// the lock, that the name still refers to the file it locked, and starts over
// otherwise. flock works across hosts on NFSv4 (Linux maps it to a POSIX lock,
// which is why the file is opened read-write though nothing is written).
#pragma once

#include "common/out_dir.h"
#include "common/status.h"
#include "trainer/output/termination_cleanup.h"

namespace dmlp {

inline constexpr char kLockFile[] = "dmlp.lock";

class OutputLock {
 public:
  /// Takes the lock of `out` (creating the empty dmlp.lock without following
  /// links). OUTPUT_LOCKED when another process holds it.
  static Result<OutputLock> Acquire(const OutDir& out);
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&&) = delete;
  OutputLock(const OutputLock&) = delete;
  /// Releases the lock; removes the file when this lock created it or Finish() was called.
  ~OutputLock();

  /// The job completed: the file goes when the lock is released, even a stale one found at start.
  void Finish() { remove_on_release_ = true; }

 private:
  OutputLock(int directory_fd, int fd, bool created, TerminationCleanup cleanup);

  int directory_fd_ = -1;  // a dup of the OutDir's descriptor
  int fd_ = -1;
  bool remove_on_release_ = false;
  TerminationCleanup cleanup_;  // a SIGTERM removes the file this lock created, too
};

}  // namespace dmlp
