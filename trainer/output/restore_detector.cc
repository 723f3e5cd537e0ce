#include "trainer/output/restore_detector.h"

#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace dmlp {
namespace {

int64_t ClockMs(clockid_t clock) {
  struct timespec now {};
  ::clock_gettime(clock, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

std::string JumpText(int64_t jump_ms) {
  char text[64];
  std::snprintf(text, sizeof text, "clock jumped by %.1f s", static_cast<double>(jump_ms) / 1000.0);
  return text;
}

}  // namespace

std::string BootIdFile() {
  const char* override_path = std::getenv("DMLP_TEST_BOOT_ID_FILE");
  return override_path != nullptr && *override_path != '\0' ? override_path
                                                            : "/proc/sys/kernel/random/boot_id";
}

HostReading ReadHost(const std::string& boot_id_file) {
  HostReading reading;
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) == 0) reading.host = host;
  std::ifstream boot(boot_id_file);
  std::getline(boot, reading.boot_id);  // one line; "" when unreadable
  // Both clocks read back to back: the offset moves by microseconds, never seconds.
  reading.clock_offset_ms = ClockMs(CLOCK_REALTIME) - ClockMs(CLOCK_MONOTONIC);
  return reading;
}

std::optional<std::string> RestoreDetector::Check(const HostReading& now) {
  std::string why;
  auto add = [&why](const std::string& reason) { why += (why.empty() ? "" : "; ") + reason; };
  if (now.boot_id != baseline_.boot_id) add("boot id changed (" + baseline_.boot_id + " -> " + now.boot_id + ")");
  if (now.host != baseline_.host) add("host name changed (" + baseline_.host + " -> " + now.host + ")");
  const int64_t jump = now.clock_offset_ms - baseline_.clock_offset_ms;
  if (jump > kClockJumpToleranceMs || jump < -kClockJumpToleranceMs) add(JumpText(jump));
  if (why.empty()) return std::nullopt;
  baseline_ = now;
  return why;
}

}  // namespace dmlp
