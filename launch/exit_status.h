// defines: ExitStatus, SignalName
//
// How a process ended, kept as one of two different things: it exited with a
// code, or it was killed by a signal. Shells fold both into one number
// (128+signal); dmlp-launch reports them apart and folds only for its own exit
// code, so "rc=137" never hides that a rank was SIGKILLed.
#pragma once

#include <string>

namespace dmlp {

class ExitStatus {
 public:
  /// An exit with `code` (0..255).
  static ExitStatus Exited(int code);
  /// A death by `signal`; `core_dumped` as the kernel reported it.
  static ExitStatus Signaled(int signal, bool core_dumped = false);
  /// Decodes a waitpid() status. REQUIRES: WIFEXITED or WIFSIGNALED holds.
  static ExitStatus FromWaitStatus(int wait_status);

  bool exited() const { return !signaled_; }
  bool signaled() const { return signaled_; }
  /// Exit code; 0 when signaled.
  int code() const { return signaled_ ? 0 : value_; }
  /// Signal number; 0 when exited.
  int signal() const { return signaled_ ? value_ : 0; }
  bool core_dumped() const { return core_dumped_; }
  /// True only for an exit with code 0.
  bool success() const { return !signaled_ && value_ == 0; }
  /// The shell's number for it: the code, or 128+signal.
  int ShellCode() const { return signaled_ ? 128 + value_ : value_; }
  /// The RANK_EXIT_NONZERO field: "rc=3" or "signal=SIGSEGV".
  std::string ReportField() const;
  /// For humans: "exited with code 3", "killed by signal SIGSEGV (core dumped)".
  std::string ToString() const;

  friend bool operator==(const ExitStatus&, const ExitStatus&) = default;

 private:
  bool signaled_ = false;
  int value_ = 0;
  bool core_dumped_ = false;
};

/// "SIGSEGV", "SIGRTMIN+2"; "SIG<n>" for a number with no name.
std::string SignalName(int signal);

}  // namespace dmlp
