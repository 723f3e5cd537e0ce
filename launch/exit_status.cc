#include "launch/exit_status.h"

#include <signal.h>
#include <sys/wait.h>

namespace dmlp {

ExitStatus ExitStatus::Exited(int code) {
  ExitStatus status;
  status.value_ = code;
  return status;
}

ExitStatus ExitStatus::Signaled(int signal, bool core_dumped) {
  ExitStatus status;
  status.signaled_ = true;
  status.value_ = signal;
  status.core_dumped_ = core_dumped;
  return status;
}

ExitStatus ExitStatus::FromWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) return Signaled(WTERMSIG(wait_status), WCOREDUMP(wait_status));
  return Exited(WEXITSTATUS(wait_status));
}

std::string ExitStatus::ReportField() const {
  if (signaled_) return "signal=" + SignalName(value_);
  return "rc=" + std::to_string(value_);
}

std::string ExitStatus::ToString() const {
  if (!signaled_) return "exited with code " + std::to_string(value_);
  return "killed by signal " + SignalName(value_) + (core_dumped_ ? " (core dumped)" : "");
}

std::string SignalName(int signal) {
  // Spelled out with the macros rather than a table indexed by number: several
  // numbers differ between architectures (SIGBUS, SIGUSR1, SIGSTKFLT ...).
  switch (signal) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
#ifdef SIGSTKFLT
    case SIGSTKFLT: return "SIGSTKFLT";
#endif
    case SIGCHLD: return "SIGCHLD";
    case SIGCONT: return "SIGCONT";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    case SIGTTIN: return "SIGTTIN";
    case SIGTTOU: return "SIGTTOU";
    case SIGURG: return "SIGURG";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGVTALRM: return "SIGVTALRM";
    case SIGPROF: return "SIGPROF";
    case SIGWINCH: return "SIGWINCH";
    case SIGIO: return "SIGIO";
#ifdef SIGPWR
    case SIGPWR: return "SIGPWR";
#endif
    case SIGSYS: return "SIGSYS";
    default: break;
  }
  if (signal >= SIGRTMIN && signal <= SIGRTMAX) {
    if (signal == SIGRTMIN) return "SIGRTMIN";
    return "SIGRTMIN+" + std::to_string(signal - SIGRTMIN);
  }
  return "SIG" + std::to_string(signal);
}

}  // namespace dmlp
