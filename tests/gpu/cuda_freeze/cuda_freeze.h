// defines: CudaCheckpointApi, ProcessStateName, FreezeOptions, Freeze, Thaw
//
// Freezes and thaws the CUDA state of another process through the driver's
// checkpoint API (CUDA 12.8+, driver r570+: cuCheckpointProcess{Lock,
// Checkpoint,Restore,Unlock,GetState,GetRestoreThreadId}): freezing locks the
// process's CUDA calls, waits for its submitted work, copies its device memory
// to host memory and releases the GPU, so that CRIU can then dump the process;
// thawing (after CRIU's restore) reacquires the GPU, copies the memory back and
// unlocks. The GPU kit's freeze row drives it (tests/gpu/freeze_row.sh).
//
// libcuda is opened at run time (dlopen), not linked: the program loads on a
// machine without a driver and says so, and a driver older than the API is a
// refusal naming the missing function, never a loader error. Refusals (the
// machine cannot do this) have the code FREEZE_UNSUPPORTED, so a caller can
// tell "skip" from "failed" (CUDA_CHECKPOINT_FAILED).
#pragma once

#include <cuda.h>

#include <string>

#include "common/status.h"

namespace dmlp::freeze {

/// The driver's checkpoint entry points, resolved from libcuda.so.1.
class CudaCheckpointApi {
 public:
  /// FREEZE_UNSUPPORTED when libcuda cannot be opened, lacks a function
  /// (driver before r570) or cuInit fails (no GPU); the dynamic loader's or the
  /// driver's own words in the detail.
  static Result<CudaCheckpointApi> Load();

  Result<CUprocessState> State(int pid) const;
  Result<int> RestoreThreadId(int pid) const;
  /// RUNNING -> LOCKED; gives up after `timeout_ms` (0: waits as long as it takes).
  Status Lock(int pid, unsigned timeout_ms) const;
  Status Checkpoint(int pid) const;  // LOCKED -> CHECKPOINTED
  Status Restore(int pid) const;     // CHECKPOINTED -> LOCKED, on the same GPUs
  Status Unlock(int pid) const;      // LOCKED -> RUNNING

 private:
  // Which call, for what pid, and the driver's error name and text.
  Status Check(CUresult result, const char* call, int pid) const;

  void* library_ = nullptr;  // never closed: the process exits soon
  CUresult (*get_error_name_)(CUresult, const char**) = nullptr;
  CUresult (*get_error_string_)(CUresult, const char**) = nullptr;
  CUresult (*get_state_)(int, CUprocessState*) = nullptr;
  CUresult (*get_restore_tid_)(int, int*) = nullptr;
  CUresult (*lock_)(int, CUcheckpointLockArgs*) = nullptr;
  CUresult (*checkpoint_)(int, CUcheckpointCheckpointArgs*) = nullptr;
  CUresult (*restore_)(int, CUcheckpointRestoreArgs*) = nullptr;
  CUresult (*unlock_)(int, CUcheckpointUnlockArgs*) = nullptr;
};

/// "running", "locked", "checkpointed", "failed" (or "state N").
std::string ProcessStateName(CUprocessState state);

/// Lock (bounded by `lock_timeout_ms`) then checkpoint `pid`; a process left
/// locked by a failed checkpoint is unlocked again, so it runs on.
Status Freeze(const CudaCheckpointApi& api, int pid, unsigned lock_timeout_ms);

/// Restore then unlock `pid` (a process CRIU has restored, or one only frozen).
Status Thaw(const CudaCheckpointApi& api, int pid);

}  // namespace dmlp::freeze
