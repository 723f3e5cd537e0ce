#include "trainer/output/termination_cleanup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "common/file_util.h"
#include "common/format/error_codes.h"

namespace dmlp {
namespace {

// A few files per rank at most: metrics.jsonl, rank-<r>.jsonl, dmlp.lock.
constexpr int kSlots = 8;

struct Slot {
  std::atomic<bool> active{false};
  uint64_t registered = 0;  // registration order: a later file is removed first
  int directory_fd = -1;
  int fd = -1;
  bool only_if_empty = false;
  char name[64] = {};
};

Slot slots[kSlots];
std::atomic<bool> claimed[kSlots];
std::atomic<uint64_t> registrations{0};

void RemoveIfStillOurs(const Slot& slot) {
  struct stat held {}, named {};
  if (::fstat(slot.fd, &held) != 0) return;
  if (slot.only_if_empty && held.st_size != 0) return;
  if (::fstatat(slot.directory_fd, slot.name, &named, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (named.st_dev != held.st_dev || named.st_ino != held.st_ino) return;
  ::unlinkat(slot.directory_fd, slot.name, 0);
}

// Newest first, the reverse of the start-up order (docs/verifier.md): the
// env file, rank-<r>.jsonl, metrics.jsonl, dmlp.lock last. A verifier looking
// meanwhile never sees rank-0.jsonl without metrics.jsonl, or receipt files
// without the lock file.
void RemoveRegistered() {
  bool removed[kSlots] = {};
  for (;;) {
    int newest = -1;
    for (int index = 0; index < kSlots; ++index)
      if (!removed[index] && slots[index].active.load() &&
          (newest < 0 || slots[index].registered > slots[newest].registered))
        newest = index;
    if (newest < 0) return;
    removed[newest] = true;
    RemoveIfStillOurs(slots[newest]);
  }
}

void OnTermination(int signal_number) {
  RemoveRegistered();
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

[[noreturn]] void OnTerminate() {
  // One report: a second thread that terminates meanwhile waits for the exit.
  static std::atomic<bool> ending{false};
  if (ending.exchange(true))
    for (;;) ::pause();
  RemoveRegistered();
  const Status status = TerminateMessage(std::current_exception());
  std::fprintf(stderr, "dmlp-train: error: %s\n", status.ToString().c_str());
  std::fflush(stderr);
  ::_exit(1);
}

}  // namespace

Status TerminateMessage(std::exception_ptr escaped) {
  std::string what = "std::terminate called with no exception in flight";
  if (escaped) {
    try {
      std::rethrow_exception(escaped);
    } catch (const std::exception& error) {
      what = error.what();
    } catch (...) {
      what = "an exception that is not a std::exception";
    }
  }
  // Gloo's words for a shortage are strerror's, after its own location;
  // ENFILE's text begins with EMFILE's.
  for (int error : {ENFILE, EMFILE}) {
    if (what.find(std::strerror(error)) != std::string::npos)
      return Status::Error(kResourceExhausted,
                           DescribeDescriptorShortage(error) + " in a library's thread: " + what);
  }
  return Status::Error(kInternal, "uncaught exception in a library's thread: " + what);
}

void InstallTerminationCleanup() {
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction action {};
    action.sa_handler = OnTermination;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal_number, &action, nullptr);
  }
  std::set_terminate(OnTerminate);
}

Result<TerminationCleanup> TerminationCleanup::Register(int directory_fd, const char* name, int fd,
                                                        bool only_if_empty) {
  if (std::strlen(name) >= sizeof(Slot::name))
    return Status::Error(kInternal, std::string("termination cleanup: name too long: ") + name);
  for (int index = 0; index < kSlots; ++index) {
    bool expected = false;
    if (!claimed[index].compare_exchange_strong(expected, true)) continue;
    TerminationCleanup cleanup(index);  // releases the slot on every return below
    Slot& slot = slots[index];
    slot.directory_fd = ::fcntl(directory_fd, F_DUPFD_CLOEXEC, 0);
    if (slot.directory_fd >= 0) slot.fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (slot.directory_fd < 0 || slot.fd < 0) {
      const int error = errno;
      return Status::Error(IsDescriptorShortage(error) ? kResourceExhausted : kIoError,
                           std::string("cannot keep ") + name + " removable on SIGTERM: " +
                               (IsDescriptorShortage(error) ? DescribeDescriptorShortage(error)
                                                            : std::strerror(error)));
    }
    slot.only_if_empty = only_if_empty;
    slot.registered = ++registrations;
    std::strcpy(slot.name, name);
    slot.active.store(true);
    return cleanup;
  }
  return Status::Error(kInternal, std::string("termination cleanup: no slot left for ") + name);
}

TerminationCleanup::TerminationCleanup(TerminationCleanup&& other) noexcept
    : slot_(std::exchange(other.slot_, -1)) {}

TerminationCleanup& TerminationCleanup::operator=(TerminationCleanup&& other) noexcept {
  if (this != &other) {
    Release();
    slot_ = std::exchange(other.slot_, -1);
  }
  return *this;
}

TerminationCleanup::~TerminationCleanup() { Release(); }

void TerminationCleanup::Release() {
  if (slot_ < 0) return;
  Slot& slot = slots[slot_];
  slot.active.store(false);
  if (slot.directory_fd >= 0) ::close(slot.directory_fd);
  if (slot.fd >= 0) ::close(slot.fd);
  slot.directory_fd = slot.fd = -1;
  claimed[slot_].store(false);
  slot_ = -1;
}

}  // namespace dmlp
