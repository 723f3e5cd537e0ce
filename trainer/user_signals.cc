#include "trainer/user_signals.h"

#include <signal.h>

#include <ctime>

namespace dmlp {
namespace {

sigset_t UserSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  return set;
}

}  // namespace

void BlockUserSignals() {
  const sigset_t set = UserSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void ReportUserSignals(std::FILE* stream) {
  const sigset_t set = UserSignals();
  const timespec no_wait{0, 0};
  siginfo_t info{};
  // Standard signals coalesce: each record is one or more of the same signal.
  for (;;) {
    const int number = sigtimedwait(&set, &info, &no_wait);
    if (number < 0) return;  // EAGAIN: none pending (EINTR: look again next step)
    std::fprintf(stream, "dmlp-train: %s received from pid %ld; ignored, the job goes on\n",
                 number == SIGUSR1 ? "SIGUSR1" : "SIGUSR2", static_cast<long>(info.si_pid));
    std::fflush(stream);
  }
}

}  // namespace dmlp
