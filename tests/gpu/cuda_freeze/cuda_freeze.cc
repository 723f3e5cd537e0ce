#include "tests/gpu/cuda_freeze/cuda_freeze.h"

#include <dlfcn.h>

namespace dmlp::freeze {
namespace {

Status Unsupported(const std::string& detail) {
  return Status::Error("FREEZE_UNSUPPORTED", detail);
}

// Resolves `name` into `function`; false when the driver lacks it.
template <typename Function>
bool Resolve(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  return function != nullptr;
}

}  // namespace

Result<CudaCheckpointApi> CudaCheckpointApi::Load() {
  CudaCheckpointApi api;
  api.library_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api.library_ == nullptr) {
    const char* why = dlerror();
    return Unsupported(std::string("no CUDA driver: ") + (why != nullptr ? why : "dlopen failed"));
  }
  CUresult (*init)(unsigned) = nullptr;
  if (!Resolve(api.library_, "cuInit", init) ||
      !Resolve(api.library_, "cuGetErrorName", api.get_error_name_) ||
      !Resolve(api.library_, "cuGetErrorString", api.get_error_string_))
    return Unsupported("libcuda.so.1 lacks cuInit/cuGetErrorName");
  std::string missing;  // the first checkpoint function the driver lacks
  auto need = [&](const char* name, auto& function) {
    if (!Resolve(api.library_, name, function) && missing.empty()) missing = name;
  };
  need("cuCheckpointProcessGetState", api.get_state_);
  need("cuCheckpointProcessGetRestoreThreadId", api.get_restore_tid_);
  need("cuCheckpointProcessLock", api.lock_);
  need("cuCheckpointProcessCheckpoint", api.checkpoint_);
  need("cuCheckpointProcessRestore", api.restore_);
  need("cuCheckpointProcessUnlock", api.unlock_);
  if (!missing.empty())
    return Unsupported("the driver's libcuda.so.1 lacks " + missing +
                       " (the checkpoint API needs driver r570 or newer)");
  // Restore needs an initialized driver in the calling process (or persistence mode).
  if (const CUresult result = init(0); result != CUDA_SUCCESS)
    return Unsupported(api.Check(result, "cuInit(0)", 0).detail());
  return api;
}

Status CudaCheckpointApi::Check(CUresult result, const char* call, int pid) const {
  if (result == CUDA_SUCCESS) return Status::Ok();
  const char* name = "?";
  const char* text = "?";
  (void)get_error_name_(result, &name);
  (void)get_error_string_(result, &text);
  const std::string detail = std::string(call) + (pid > 0 ? " pid " + std::to_string(pid) : "") +
                             ": " + name + " (" + text + ")";
  // The machine says it cannot: a refusal, not a failure of the job.
  if (result == CUDA_ERROR_NOT_SUPPORTED || result == CUDA_ERROR_NO_DEVICE ||
      result == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || result == CUDA_ERROR_NOT_PERMITTED)
    return Unsupported(detail);
  return Status::Error("CUDA_CHECKPOINT_FAILED", detail);
}

Result<CUprocessState> CudaCheckpointApi::State(int pid) const {
  CUprocessState state = CU_PROCESS_STATE_RUNNING;
  DMLP_RETURN_IF_ERROR(Check(get_state_(pid, &state), "cuCheckpointProcessGetState", pid));
  return state;
}

Result<int> CudaCheckpointApi::RestoreThreadId(int pid) const {
  int tid = 0;
  DMLP_RETURN_IF_ERROR(
      Check(get_restore_tid_(pid, &tid), "cuCheckpointProcessGetRestoreThreadId", pid));
  return tid;
}

Status CudaCheckpointApi::Lock(int pid, unsigned timeout_ms) const {
  CUcheckpointLockArgs args{};  // reserved fields must be zero
  args.timeoutMs = timeout_ms;
  return Check(lock_(pid, &args), "cuCheckpointProcessLock", pid);
}

Status CudaCheckpointApi::Checkpoint(int pid) const {
  CUcheckpointCheckpointArgs args{};
  return Check(checkpoint_(pid, &args), "cuCheckpointProcessCheckpoint", pid);
}

Status CudaCheckpointApi::Restore(int pid) const {
  CUcheckpointRestoreArgs args{};  // no GPU remapping: the same GPUs
  return Check(restore_(pid, &args), "cuCheckpointProcessRestore", pid);
}

Status CudaCheckpointApi::Unlock(int pid) const {
  CUcheckpointUnlockArgs args{};
  return Check(unlock_(pid, &args), "cuCheckpointProcessUnlock", pid);
}

std::string ProcessStateName(CUprocessState state) {
  switch (state) {
    case CU_PROCESS_STATE_RUNNING:
      return "running";
    case CU_PROCESS_STATE_LOCKED:
      return "locked";
    case CU_PROCESS_STATE_CHECKPOINTED:
      return "checkpointed";
    case CU_PROCESS_STATE_FAILED:
      return "failed";
  }
  return "state " + std::to_string(static_cast<int>(state));
}

Status Freeze(const CudaCheckpointApi& api, int pid, unsigned lock_timeout_ms) {
  DMLP_RETURN_IF_ERROR(api.Lock(pid, lock_timeout_ms));
  Status checkpointed = api.Checkpoint(pid);
  if (!checkpointed.ok()) (void)api.Unlock(pid);  // let it run on rather than hang locked
  return checkpointed;
}

Status Thaw(const CudaCheckpointApi& api, int pid) {
  DMLP_ASSIGN_OR_RETURN(const CUprocessState state, api.State(pid));
  if (state == CU_PROCESS_STATE_CHECKPOINTED) DMLP_RETURN_IF_ERROR(api.Restore(pid));
  return api.Unlock(pid);
}

}  // namespace dmlp::freeze
