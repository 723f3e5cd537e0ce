#include "launch/signal_forwarder.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>

#include "common/errno_error.h"
#include "launch/launch_errors.h"

namespace dmlp {

Result<std::unique_ptr<SignalForwarder>> SignalForwarder::Create(const std::vector<int>& signals) {
  std::unique_ptr<SignalForwarder> forwarder(new SignalForwarder());
  sigset_t set;
  sigemptyset(&set);
  for (int signal : signals) sigaddset(&set, signal);
  // A parent that set SIGCHLD to SIG_IGN would make the kernel reap our ranks
  // for us and waitpid() fail; the default disposition is required.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(SIGCHLD, &default_action, nullptr);
  if (sigprocmask(SIG_BLOCK, &set, &forwarder->old_mask_) != 0)
    return ErrnoError(kInternal, "sigprocmask");
  int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    sigprocmask(SIG_SETMASK, &forwarder->old_mask_, nullptr);
    return ErrnoError(kInternal, "signalfd", error);
  }
  forwarder->fd_.Reset(fd);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &forwarder->old_sigpipe_);
  return forwarder;
}

SignalForwarder::~SignalForwarder() {
  fd_.Reset();
  sigaction(SIGPIPE, &old_sigpipe_, nullptr);
  sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

Result<std::vector<ReceivedSignal>> SignalForwarder::ReadPending() {
  std::vector<ReceivedSignal> received;
  signalfd_siginfo records[16];
  for (;;) {
    ssize_t got = read(fd_.get(), records, sizeof(records));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) break;
    if (got < 0) return ErrnoError(kInternal, "read signalfd");
    for (size_t i = 0; i < static_cast<size_t>(got) / sizeof(records[0]); ++i)
      received.push_back(
          {static_cast<int>(records[i].ssi_signo), static_cast<pid_t>(records[i].ssi_pid)});
  }
  return received;
}

int SignalForwarder::SendToGroups(int signal, const std::vector<pid_t>& groups) {
  int reached = 0;
  for (pid_t group : groups) {
    if (group > 1 && kill(-group, signal) == 0) ++reached;
  }
  return reached;
}

bool IsTerminationSignal(int signal) {
  return std::find(std::begin(kTerminationSignals), std::end(kTerminationSignals), signal) !=
         std::end(kTerminationSignals);
}

}  // namespace dmlp
