// defines: HostReading, ReadHost, RestoreDetector, kClockJumpToleranceMs
//
// Whether this process still runs where it started. A process can be frozen
// and restored (CRIU, a VM snapshot, cuda-checkpoint) onto another host or
// after a reboot; nothing in it notices, but three readings do:
//   - the boot id (/proc/sys/kernel/random/boot_id): new at every boot;
//   - the host name;
//   - CLOCK_REALTIME - CLOCK_MONOTONIC: constant while the monotonic clock is
//     the one this process started on (a SIGSTOP/SIGCONT pause moves both
//     clocks alike). A restore elsewhere or across a reboot brings another
//     monotonic clock, and the offset jumps. So does a manual step of the
//     wall clock or a machine suspend (the monotonic clock stops): those are
//     reported too, with the same "why", since they are just as worth knowing.
// The decision is pure (RestoreDetector over injected readings) so it is
// tested without a restore; ReadHost takes the readings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dmlp {

/// A jump of the realtime - monotonic offset above this is a restore, not noise:
/// NTP's slewing adjusts both clocks alike, so only a step of the wall clock,
/// a suspend or another monotonic clock moves the offset, and by seconds.
inline constexpr int64_t kClockJumpToleranceMs = 5000;

struct HostReading {
  std::string host;     // gethostname()
  std::string boot_id;  // the boot id, without its newline; "" when unreadable
  int64_t clock_offset_ms = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC, in milliseconds
};

/// Reads this process's host now. `boot_id_file`: where the boot id is read
/// (the test override DMLP_TEST_BOOT_ID_FILE, else /proc/sys/kernel/random/boot_id).
HostReading ReadHost(const std::string& boot_id_file);
/// The boot id file this process reads: DMLP_TEST_BOOT_ID_FILE when set (tests
/// simulate a restore by rewriting it), else /proc/sys/kernel/random/boot_id.
std::string BootIdFile();

class RestoreDetector {
 public:
  explicit RestoreDetector(HostReading baseline) : baseline_(std::move(baseline)) {}

  /// Compares `now` with the last reading: why this looks like a restore
  /// ("boot id changed (a -> b); clock jumped by 12.5 s"), or nullopt. After a
  /// detection `now` becomes the baseline, so one restore is reported once.
  std::optional<std::string> Check(const HostReading& now);

  const HostReading& baseline() const { return baseline_; }

 private:
  HostReading baseline_;
};

}  // namespace dmlp
