// defines: EnvFileName, RankStack, DeviceDocument, EnvLine, AppendEnvLine, RankEnvRecorder
//
// Where a rank ran: OUT_DIR/rank-<r>.env.jsonl, one compact JSON object per
// line (keys sorted), one line per (re)start of the rank's process:
//   {"after_step":0,"boot_id":"…","build":{…},"device":{"driver":"","kind":"cpu",
//    "name":"…","pci_bus_id":"","uuid":""},"event":"start","host":"h1","pid":123,
//    "rank":1,"stack":{…},"time":"2026-12-01T11:00:00Z"}
//   event       "start" (a fresh job), "resume" (RESUME=1 from a checkpoint) or
//               "restored" (this process found itself on another boot, host or
//               monotonic clock: restore_detector.h), with "why" saying which
//   after_step  the last step this rank had recorded (0 before the first)
//   device      Backend::Device(); stack: Backend::Fingerprint() (libraries);
//   build       BuildDocument(ThisBuild()) plus image_id (DMLP_IMAGE_ID) when set
// The file is created exclusively with the receipt files (run_output.h) and
// written like them, never with O_APPEND: each line goes out with pwrite at
// the file's current end (fstat), so a process restored onto newer files adds
// its line after what is there and never overwrites a byte. The receipts
// remain the proof; this file only says where they were computed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "trainer/backend.h"
#include "trainer/output/restore_detector.h"

namespace dmlp {

/// "rank-<r>.env.jsonl"
std::string EnvFileName(int64_t rank);

/// What a rank computes with, asked again at every line (a restore may change it).
struct RankStack {
  nlohmann::json device;  // DeviceDocument(Backend::Device())
  nlohmann::json stack;   // Backend::Fingerprint()
};

/// {"driver","kind","name","pci_bus_id","uuid"}
nlohmann::json DeviceDocument(const DeviceIdentity& device);

/// One line's object (see the format above). `why` only for "restored";
/// `time` as "YYYY-MM-DDTHH:MM:SSZ".
nlohmann::json EnvLine(int64_t rank, const std::string& event, int64_t after_step,
                       const std::string& time, const HostReading& host, int64_t pid,
                       const std::optional<std::string>& why, const RankStack& stack,
                       const nlohmann::json& build);

/// Writes `line` (without its newline) at the end of the file open as `fd`,
/// found with fstat; a file that ends inside a line (a torn write) gets a
/// newline first so the new line stands alone. IO_ERROR naming `path`.
Status AppendEnvLine(int fd, const std::string& path, const std::string& line);

/// One rank's env file writer and restore check (RunOutput owns one).
class RankEnvRecorder {
 public:
  RankEnvRecorder() = default;
  /// `fd` is open for reading and writing (not owned); `build`: the build section.
  RankEnvRecorder(int fd, std::string path, int64_t rank, nlohmann::json build)
      : fd_(fd), path_(std::move(path)), rank_(rank), build_(std::move(build)) {}

  /// Writes the first line ("start" or "resume") and starts watching for restores.
  Status Begin(const std::string& event, int64_t after_step, std::function<RankStack()> describe);
  /// Adds a "restored" line when the host readings say so (restore_detector.h).
  /// Cheap enough per step: one small file read, gethostname, two clock reads.
  Status CheckRestored(int64_t after_step);
  bool begun() const { return detector_.has_value(); }

 private:
  Status Write(const std::string& event, int64_t after_step, const HostReading& host,
               const std::optional<std::string>& why);

  int fd_ = -1;
  std::string path_;
  int64_t rank_ = 0;
  nlohmann::json build_;
  std::string boot_id_file_;
  std::function<RankStack()> describe_;
  std::optional<RestoreDetector> detector_;
};

}  // namespace dmlp
