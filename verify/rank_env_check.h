// defines: kMaxEnvFileBytes, kDeviceDescriptionFields, EnvRecord, RankEnvironment, ReadEnvironments, StackSignature,
//          DescribeEnvironment, EnvironmentsToJson
//
// Where each rank ran (rank-<r>.env.jsonl, written by trainer/output/rank_env.h):
// one line per (re)start of the rank's process, with its host, boot id,
// device, libraries (the backend's fingerprint) and build. The receipts are
// the proof of a run; these files only say where it was computed, so nothing
// here ever fails a run on its own:
//   env.damaged        warning: a line is not a valid record (or the file is
//                      not a regular file, or too large); the line is skipped
//   env.stack_changed  warning: a rank's device, driver, libraries or build
//                      differ between two of its lines (restored elsewhere)
//   env.mixed_devices  info: the ranks' last lines name different devices
// Runs without env files (older runs, the reference's) give no finding.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "verify/findings.h"
#include "verify/run_dir.h"

namespace dmlp::verify {

/// An env file larger than this is not read (256 (re)starts of 4 KiB lines).
inline constexpr size_t kMaxEnvFileBytes = 1 << 20;

/// Fingerprint fields that older builds wrote and that describe one
/// GPU without deciding a bit (its PCI bus id, ordinal, memory size): never
/// compared, so runs on two GPUs of one model are comparable.
inline constexpr const char* kDeviceDescriptionFields[] = {
    "fingerprint.device.pci_bus_id", "fingerprint.device.ordinal",
    "fingerprint.device.memory_bytes"};

/// One valid line of an env file.
struct EnvRecord {
  int64_t line = 0;  // 1-based line number in its file
  std::string event;  // "start", "resume" or "restored"
  int64_t after_step = 0;
  std::string time, host, boot_id, why;
  nlohmann::json device, stack, build;
};

/// One rank's env file, as read.
struct RankEnvironment {
  int64_t rank = 0;
  std::string name;                // "rank-<r>.env.jsonl"
  std::vector<EnvRecord> records;  // its valid lines, in file order
  size_t damaged_lines = 0;
};

/// Reads the env files of `listing` (rank order), adding the findings above to `sink`.
Result<std::vector<RankEnvironment>> ReadEnvironments(const RunDir& dir, const DirListing& listing,
                                                      FindingSink& sink);

/// "section.key" -> JSON text of what decides a rank's bits in `record`: the
/// device's kind, name and driver ("device.*"), the libraries ("fingerprint.*",
/// named as in result.json) and the build ("build.*"). Leaves out what never
/// changes a bit or names one machine: the GPU's UUID and PCI bus id, BLAS
/// threads, the image id, and the collectives library (it only moves bytes
/// under the ordered reduction, and without result.json the reduction is unknown).
std::map<std::string, std::string> StackSignature(const EnvRecord& record);

/// One line for the reports: "host h1, cuda NVIDIA L4 GPU-8f3c (0000:3B:00.0), driver 12.8;
/// 2 (re)starts: start, restored after step 12 (boot id changed ...)" (raw text: escape it).
std::string DescribeEnvironment(const RankEnvironment& env);

/// The JSON report's "environments": [{rank, file, damaged_lines, lines: [{line,
/// event, after_step, time, host, boot_id, pid, why, device}]}].
nlohmann::json EnvironmentsToJson(const std::vector<RankEnvironment>& envs);

}  // namespace dmlp::verify
