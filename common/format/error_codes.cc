#include "common/format/error_codes.h"

#include <algorithm>

#include "common/format/failure_line.h"

namespace dmlp {

const std::vector<ErrorCodeRow>& ErrorCodes() {
  // clang-format off
  static const std::vector<ErrorCodeRow> kRows = {
      {kBench, "benchmarks", 1, kErrorCodesPage,
       "a benchmark program could not measure (its detail says what failed)"},
      {kCheckpointDisagrees, "dmlp-train", 1, "freezing-and-restoring.md",
       "a checkpoint's digest is not the one every rank recorded at its step; the next older one is tried"},
      {kCheckpointInvalid, "dmlp-train", 1, "freezing-and-restoring.md",
       "a checkpoint file is damaged (its metadata or digest does not match its state)"},
      {kCheckpointMismatch, "dmlp-train", 1, kErrorCodesPage,
       "after a resume, this rank's restored state differs from the state the checkpoint recorded"},
      {kCheckpointNotAgreed, "dmlp-train", 1, kErrorCodesPage,
       "no checkpoint holds a state that every rank recorded"},
      {kCheckpointPlanMismatch, "dmlp-train", 1, kErrorCodesPage,
       "the checkpoint is another plan's; a resume was refused"},
      {kCollectiveError, "dmlp-train", 1, kErrorCodesPage,
       "a collective (Gloo, or the shared memory transport) failed"},
      {kCommandNotExecutable, "dmlp-launch", 126, kErrorCodesPage,
       "the rank command is not executable"},
      {kCommandNotFound, "dmlp-launch", 127, kErrorCodesPage,
       "the rank command is not found"},
      {kConfigInvalid, "dmlp-train dmlp-launch", 2, kErrorCodesPage,
       "the --config file, or options that contradict each other"},
      {kConnectionClosed, "dmlp-train", 1, kErrorCodesPage,
       "a rendezvous peer closed its connection (reported as PEER_LOST)"},
      {kCoordinatorAddressInvalid, "dmlp-train", 1, kErrorCodesPage,
       "COORDINATOR_ADDRESS does not resolve"},
      {kCoordinatorBindFailed, "dmlp-train", 1, "several-hosts.md",
       "rank 0 cannot listen on COORDINATOR_ADDRESS"},
      {kCoordinatorPortInUse, "dmlp-train", 1, kErrorCodesPage,
       "another process listens on COORDINATOR_PORT"},
      {kCublasError, "dmlp-train", 1, kErrorCodesPage,
       "a cuBLAS call failed (the call, file:line and rank are named)"},
      {kCudaError, "dmlp-train", 1, kErrorCodesPage,
       "a CUDA runtime call failed (the call, file:line and rank are named)"},
      {kCudaUnavailable, "dmlp-train", 1, kErrorCodesPage,
       "PLATFORM=cuda but no CUDA device is visible"},
      {kDeviceLayoutInvalid, "dmlp-train", 1, kErrorCodesPage,
       "more ranks on a host than visible GPUs"},
      {kEnvConflict, "dmlp-train", 2, kErrorCodesPage,
       "two sources of a rank's place disagree"},
      {kEnvEmpty, "dmlp-train dmlp-launch", 2, kErrorCodesPage,
       "a variable is set but empty"},
      {kEnvInvalid, "dmlp-train dmlp-launch", 2, kErrorCodesPage,
       "a variable's value is invalid"},
      {kEnvMissing, "dmlp-train dmlp-launch", 2, kErrorCodesPage,
       "a required variable is not set"},
      {kExists, "dmlp-train", 1, kErrorCodesPage,
       "a folder for superseded receipts already exists (the next name is tried; never reported)"},
      {kGemmInitFailed, "dmlp-train", 1, kErrorCodesPage,
       "the CPU GEMM library could not be set up"},
      {kInternal, "dmlp-train dmlp-launch dmlp-verify", 1, kErrorCodesPage,
       "a bug or an exception that escaped; dmlp-launch exits 125 on it"},
      {kInvalidArgument, "dmlp-train", 1, kErrorCodesPage,
       "an internal call got an argument out of range"},
      {kIoError, "dmlp-train dmlp-verify", 1, kErrorCodesPage,
       "a file could not be read or written (the call and errno are named)"},
      {kJobMismatch, "dmlp-train", 1, kErrorCodesPage,
       "this rank reached a coordinator that serves another job"},
      {kLogDirFailed, "dmlp-launch", 2, kErrorCodesPage,
       "--log-dir cannot be created or written"},
      {kLossNonfinite, "dmlp-train", 1, kErrorCodesPage,
       "the loss became NaN or infinite at a step"},
      {kMetricStepNotContiguous, "dmlp-train", 1, kErrorCodesPage,
       "a step's metrics came out of order (a bug)"},
      {kModelInvalid, "dmlp-train", 1, kErrorCodesPage,
       "the model's shape cannot be built on the device"},
      {kNcclError, "dmlp-train", 1, kErrorCodesPage,
       "an NCCL call failed"},
      {kNcclVersionMismatch, "dmlp-train", 1, "developing.md",
       "the NCCL library loaded is not the one dmlp was built with"},
      {kNotADirectory, "dmlp-verify", 2, kErrorCodesPage,
       "RUN_DIR is not a directory"},
      {kNotFound, "dmlp-train dmlp-verify", 1, kErrorCodesPage,
       "a file or directory that must exist does not"},
      {kOptionInvalid, "dmlp-launch", 2, kErrorCodesPage,
       "an option's value is invalid (--grace=x, --nnodes=0, ...)"},
      {kOutputAlreadyComplete, "dmlp-train", 1, kErrorCodesPage,
       "OUT_DIR holds a finished run"},
      {kOutputDanglingLink, "dmlp-train", 1, kErrorCodesPage,
       "OUT_DIR is a link to nothing"},
      {kOutputExists, "dmlp-train", 1, kErrorCodesPage,
       "OUT_DIR holds receipts of a partial run"},
      {kOutputLocked, "dmlp-train", 1, kErrorCodesPage,
       "another job is running into OUT_DIR"},
      {kOutputNotRegular, "dmlp-train", 1, kErrorCodesPage,
       "a link, FIFO or directory stands where dmlp writes a file"},
      {kOutputWriteFailed, "dmlp-launch", 125, kErrorCodesPage,
       "the launcher's own stdout or stderr failed"},
      {kOutOfMemory, "dmlp-train dmlp-launch dmlp-verify", 1, kErrorCodesPage,
       "an allocation failed; dmlp-launch exits 125 on it"},
      {kParentGone, "dmlp-launch", 125, kErrorCodesPage,
       "--stop-with-parent names a process that is not the launcher's parent"},
      {kPeerLost, "dmlp-train", 1, kErrorCodesPage,
       "another rank stopped answering or left"},
      {kPlanMismatch, "dmlp-train", 1, kErrorCodesPage,
       "ranks were started with different settings"},
      {kPlanTooLarge, "dmlp-train", 1, kErrorCodesPage,
       "the plan's buffers do not fit in memory"},
      {kPlatformUnavailable, "dmlp-train", 1, kErrorCodesPage,
       "PLATFORM=cuda with programs built without CUDA"},
      {kProtocolError, "dmlp-train", 1, kErrorCodesPage,
       "a rendezvous message was malformed"},
      {kRankDiverged, "dmlp-train", kRankDivergedExit, kErrorCodesPage,
       "the ranks' states differed at a step"},
      {kReceiptsLost, "dmlp-train", 1, kErrorCodesPage,
       "receipt files are older than the restored image"},
      {kReceiptInvalid, "dmlp-train", 1, kErrorCodesPage,
       "an earlier receipt line cannot be read (its defect is named)"},
      {kRendezvousClosed, "dmlp-train", 1, kErrorCodesPage,
       "the rendezvous was used after it closed"},
      {kRendezvousOptionsInvalid, "dmlp-train", 1, kErrorCodesPage,
       "the rank is outside the job's size"},
      {kRendezvousTimeout, "dmlp-train", 1, kErrorCodesPage,
       "a rank did not reach rank 0 or a barrier in time"},
      {kReplayDiverged, "dmlp-train", 1, kErrorCodesPage,
       "a replay did not reproduce the receipts already written"},
      {kResourceExhausted, "dmlp-train", 1, kErrorCodesPage,
       "out of file descriptors or threads"},
      {kResumeInvalid, "dmlp-train", 1, kErrorCodesPage,
       "the newest checkpoint is past STEPS"},
      {kResumeReceiptsInvalid, "dmlp-train", 1, kErrorCodesPage,
       "the earlier receipts do not reach or match the checkpoint"},
      {kShardAuditFailed, "dmlp-train", kShardAuditFailedExit, kErrorCodesPage,
       "two ranks computed the same shard differently"},
      {kSocketError, "dmlp-train", 1, kErrorCodesPage,
       "a rendezvous socket failed (send or recv)"},
      {kSpawnFailed, "dmlp-launch", 125, kErrorCodesPage,
       "the launcher could not start a rank (fork, pipe, epoll ...)"},
      {kStateFileInvalid, "dmlp-train dmlp-verify", 1, kErrorCodesPage,
       "a state file is damaged"},
      {kTrainingIncomplete, "dmlp-train", 1, kErrorCodesPage,
       "the job ended before its last step (a bug)"},
      {kUnsupported, "dmlp-train", 1, kErrorCodesPage,
       "the backend cannot do what a test fault asked"},
      {kUsage, "dmlp-train dmlp-launch", 2, kErrorCodesPage,
       "an unknown option or argument"},
      {kUsageError, "dmlp-verify", 2, "verifier.md",
       "options that contradict each other"},
      {kVendorLibraryAbsent, "dmlp-train", 1, kErrorCodesPage,
       "GEMM=cublas or NCCL with a build that has no cuBLAS/NCCL"},
  };
  // clang-format on
  return kRows;
}

const ErrorCodeRow* FindErrorCode(std::string_view code) {
  const std::vector<ErrorCodeRow>& rows = ErrorCodes();
  auto row = std::find_if(rows.begin(), rows.end(), [&](const ErrorCodeRow& r) { return r.code == code; });
  return row == rows.end() ? nullptr : &*row;
}

std::string FormatErrorCodeTable() {
  std::string table = "| code | raised by | exit | meaning | explained in |\n|---|---|---|---|---|\n";
  for (const ErrorCodeRow& row : ErrorCodes()) {
    std::string programs;
    for (size_t start = 0; start < row.programs.size();) {
      size_t end = std::min(row.programs.find(' ', start), row.programs.size());
      programs += (programs.empty() ? "`" : ", `") + std::string(row.programs.substr(start, end - start)) + "`";
      start = end + 1;
    }
    const std::string page(row.page);
    const std::string explained = page == kErrorCodesPage ? "this page" : "[" + page + "](" + page + ")";
    table += "| `" + std::string(row.code) + "` | " + programs + " | " + std::to_string(row.exit_code) + " | " +
             std::string(row.meaning) + " | " + explained + " |\n";
  }
  return table;
}

}  // namespace dmlp
