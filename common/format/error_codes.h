// defines: every status code's constant (kEnvMissing, kIoError, ...), ErrorCodeRow,
//          kErrorCodesPage, ErrorCodes, FindErrorCode, FormatErrorCodeTable
//
// THE list of dmlp's status codes: the stable first word of every error a
// program prints ("dmlp-train: error: ENV_MISSING: STEPS") and of every Status
// the libraries return. Code compares and builds codes only through these
// constants, so a code that users, tests and the launcher read cannot drift
// between its writer and its readers.
//
// To add a code: one constant below (in name order) and its row in
// ErrorCodes() (error_codes.cc), then the same line in the table of
// docs/troubleshooting.md between its codes markers: error_codes_test keeps
// constants, rows and that table equal, and says which line differs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dmlp {

// clang-format off
inline constexpr char kBench[] = "BENCH";
inline constexpr char kCheckpointDisagrees[] = "CHECKPOINT_DISAGREES";
inline constexpr char kCheckpointInvalid[] = "CHECKPOINT_INVALID";
inline constexpr char kCheckpointMismatch[] = "CHECKPOINT_MISMATCH";
inline constexpr char kCheckpointNotAgreed[] = "CHECKPOINT_NOT_AGREED";
inline constexpr char kCheckpointPlanMismatch[] = "CHECKPOINT_PLAN_MISMATCH";
inline constexpr char kCollectiveError[] = "COLLECTIVE_ERROR";
inline constexpr char kCommandNotExecutable[] = "COMMAND_NOT_EXECUTABLE";
inline constexpr char kCommandNotFound[] = "COMMAND_NOT_FOUND";
inline constexpr char kConfigInvalid[] = "CONFIG_INVALID";
inline constexpr char kConnectionClosed[] = "CONNECTION_CLOSED";
inline constexpr char kCoordinatorAddressInvalid[] = "COORDINATOR_ADDRESS_INVALID";
inline constexpr char kCoordinatorBindFailed[] = "COORDINATOR_BIND_FAILED";
inline constexpr char kCoordinatorPortInUse[] = "COORDINATOR_PORT_IN_USE";
inline constexpr char kCublasError[] = "CUBLAS_ERROR";
inline constexpr char kCudaError[] = "CUDA_ERROR";
inline constexpr char kCudaUnavailable[] = "CUDA_UNAVAILABLE";
inline constexpr char kDeviceLayoutInvalid[] = "DEVICE_LAYOUT_INVALID";
inline constexpr char kEnvConflict[] = "ENV_CONFLICT";
inline constexpr char kEnvEmpty[] = "ENV_EMPTY";
inline constexpr char kEnvInvalid[] = "ENV_INVALID";
inline constexpr char kEnvMissing[] = "ENV_MISSING";
inline constexpr char kExists[] = "EXISTS";
inline constexpr char kGemmInitFailed[] = "GEMM_INIT_FAILED";
inline constexpr char kInternal[] = "INTERNAL";
inline constexpr char kInvalidArgument[] = "INVALID_ARGUMENT";
inline constexpr char kIoError[] = "IO_ERROR";
inline constexpr char kJobMismatch[] = "JOB_MISMATCH";
inline constexpr char kLogDirFailed[] = "LOG_DIR_FAILED";
inline constexpr char kLossNonfinite[] = "LOSS_NONFINITE";
inline constexpr char kMetricStepNotContiguous[] = "METRIC_STEP_NOT_CONTIGUOUS";
inline constexpr char kModelInvalid[] = "MODEL_INVALID";
inline constexpr char kNcclError[] = "NCCL_ERROR";
inline constexpr char kNcclVersionMismatch[] = "NCCL_VERSION_MISMATCH";
inline constexpr char kNotADirectory[] = "NOT_A_DIRECTORY";
inline constexpr char kNotFound[] = "NOT_FOUND";
inline constexpr char kOptionInvalid[] = "OPTION_INVALID";
inline constexpr char kOutputAlreadyComplete[] = "OUTPUT_ALREADY_COMPLETE";
inline constexpr char kOutputDanglingLink[] = "OUTPUT_DANGLING_LINK";
inline constexpr char kOutputExists[] = "OUTPUT_EXISTS";
inline constexpr char kOutputLocked[] = "OUTPUT_LOCKED";
inline constexpr char kOutputNotRegular[] = "OUTPUT_NOT_REGULAR";
inline constexpr char kOutputWriteFailed[] = "OUTPUT_WRITE_FAILED";
inline constexpr char kOutOfMemory[] = "OUT_OF_MEMORY";
inline constexpr char kParentGone[] = "PARENT_GONE";
inline constexpr char kPeerLost[] = "PEER_LOST";
inline constexpr char kPlanMismatch[] = "PLAN_MISMATCH";
inline constexpr char kPlanTooLarge[] = "PLAN_TOO_LARGE";
inline constexpr char kPlatformUnavailable[] = "PLATFORM_UNAVAILABLE";
inline constexpr char kProtocolError[] = "PROTOCOL_ERROR";
inline constexpr char kRankDiverged[] = "RANK_DIVERGED";
inline constexpr char kReceiptsLost[] = "RECEIPTS_LOST";
inline constexpr char kReceiptInvalid[] = "RECEIPT_INVALID";
inline constexpr char kRendezvousClosed[] = "RENDEZVOUS_CLOSED";
inline constexpr char kRendezvousOptionsInvalid[] = "RENDEZVOUS_OPTIONS_INVALID";
inline constexpr char kRendezvousTimeout[] = "RENDEZVOUS_TIMEOUT";
inline constexpr char kReplayDiverged[] = "REPLAY_DIVERGED";
inline constexpr char kResourceExhausted[] = "RESOURCE_EXHAUSTED";
inline constexpr char kResumeInvalid[] = "RESUME_INVALID";
inline constexpr char kResumeReceiptsInvalid[] = "RESUME_RECEIPTS_INVALID";
inline constexpr char kShardAuditFailed[] = "SHARD_AUDIT_FAILED";
inline constexpr char kSocketError[] = "SOCKET_ERROR";
inline constexpr char kSpawnFailed[] = "SPAWN_FAILED";
inline constexpr char kStateFileInvalid[] = "STATE_FILE_INVALID";
inline constexpr char kTrainingIncomplete[] = "TRAINING_INCOMPLETE";
inline constexpr char kUnsupported[] = "UNSUPPORTED";
inline constexpr char kUsage[] = "USAGE";
inline constexpr char kUsageError[] = "USAGE_ERROR";
inline constexpr char kVendorLibraryAbsent[] = "VENDOR_LIBRARY_ABSENT";
// clang-format on

/// The docs/ page whose table lists every code: docs/troubleshooting.md.
inline constexpr char kErrorCodesPage[] = "troubleshooting.md";

/// One status code: who raises it, the exit code it ends with, where it is explained.
struct ErrorCodeRow {
  std::string_view code;
  std::string_view programs;  // space-separated; the first one's exit code is exit_code
  int exit_code;              // dmlp-verify exits 2 on any error; dmlp-launch 125 on any but its own
  std::string_view page;      // the docs/ page that explains it
  std::string_view meaning;   // one line, as the docs table gives it
};

/// Every code, in name order.
const std::vector<ErrorCodeRow>& ErrorCodes();
/// The row of `code`; nullptr for a code that is not one of dmlp's.
const ErrorCodeRow* FindErrorCode(std::string_view code);
/// The Markdown table docs/troubleshooting.md holds between its codes markers.
std::string FormatErrorCodeTable();

}  // namespace dmlp
