// defines: kEnvFilePrefix, kEnvFileSuffix, kEnvRank, kEnvEvent, kEnvAfterStep, kEnvTime, kEnvHost,
//          kEnvBootId, kEnvPid, kEnvDevice, kEnvStack, kEnvBuild, kEnvWhy, kEnvEventStart,
//          kEnvEventResume, kEnvEventRestored, kEnvDeviceKind, kEnvDeviceName, kEnvDeviceUuid,
//          kEnvDevicePciBusId, kEnvDeviceDriver, kEnvDeviceOrdinal, kEnvDeviceMemoryBytes
//
// The rank env file: OUT_DIR/rank-<r>.env.jsonl, where a rank ran, one compact
// JSON object per line and one line per (re)start of the rank's process.
// dmlp-train writes it (trainer/output/rank_env.cc); dmlp-verify reads it
// (verify/rank_env_check.cc, verify/run_dir.cc) with the strict JSON reader,
// so a key given twice is a damaged line. Every key of a line:
//   rank        integer, the file's rank
//   event       kEnvEventStart (a fresh job), kEnvEventResume (RESUME=1 from a
//               checkpoint) or kEnvEventRestored (another boot, host or clock)
//   why         string, only with kEnvEventRestored: what changed
//   after_step  integer >= 0, the last step this rank had recorded
//   time        "YYYY-MM-DDTHH:MM:SSZ"; host, boot_id: strings; pid: integer
//   device      object: kind, name, uuid, pci_bus_id, driver (strings), and
//               ordinal, memory_bytes (integers) on a GPU
//   stack       object: the libraries the rank computes with
//   build       object: the build of dmlp-train (common/build_info.h)
#pragma once

namespace dmlp {

inline constexpr char kEnvFilePrefix[] = "rank-";       // rank-<r>.env.jsonl
inline constexpr char kEnvFileSuffix[] = ".env.jsonl";

inline constexpr char kEnvRank[] = "rank";
inline constexpr char kEnvEvent[] = "event";
inline constexpr char kEnvAfterStep[] = "after_step";
inline constexpr char kEnvTime[] = "time";
inline constexpr char kEnvHost[] = "host";
inline constexpr char kEnvBootId[] = "boot_id";
inline constexpr char kEnvPid[] = "pid";
inline constexpr char kEnvDevice[] = "device";
inline constexpr char kEnvStack[] = "stack";
inline constexpr char kEnvBuild[] = "build";
inline constexpr char kEnvWhy[] = "why";

inline constexpr char kEnvEventStart[] = "start";
inline constexpr char kEnvEventResume[] = "resume";
inline constexpr char kEnvEventRestored[] = "restored";

// The keys of "device".
inline constexpr char kEnvDeviceKind[] = "kind";
inline constexpr char kEnvDeviceName[] = "name";
inline constexpr char kEnvDeviceUuid[] = "uuid";
inline constexpr char kEnvDevicePciBusId[] = "pci_bus_id";
inline constexpr char kEnvDeviceDriver[] = "driver";
inline constexpr char kEnvDeviceOrdinal[] = "ordinal";
inline constexpr char kEnvDeviceMemoryBytes[] = "memory_bytes";

}  // namespace dmlp
