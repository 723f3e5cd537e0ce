// The CPU platform's SGEMM: dmlp's own (ordered_sgemm.h), or BLIS with a pinned
// sub-configuration and thread count for comparison; see gemm_cpu.h.
//
// Why dmlp's own: BLIS gives the same bits on every x86-64 only
// with one pinned kernel (skx), which a CPU without AVX-512 cannot run and
// which is not tuned for every CPU that can; dmlp's order rule gives the same
// bits with any kernel, so each CPU runs its fastest.
//
// Why BLIS was chosen before (bench/gemm_select on the 2-core AVX-512 Xeon):
// it is the one candidate whose bits did not change with the thread count on any
// shape; OpenBLAS 0.3.21 (SkylakeX and Haswell kernels, and its default "Prescott"
// guess for this CPU) and oneDNN 2.6 changed bits between 1 and 2 threads, so
// they could only run with a thread count frozen for every NUM_PROCESSES.
//
// Why dlopen of the exact file instead of linking: a link records only the
// soname libblis.so.4, which the loader resolves through Debian's alternatives
// symlink (the pthread or serial BLIS build, or another version, could answer);
// dlopen by absolute path loads exactly the file CMake found, and RTLD_LOCAL
// keeps its BLAS symbols from interposing on anything else in the process.
// A relocatable build (the GPU kit, tests/gpu/make_kit.sh) names the file
// relative to the executable instead (DMLP_BLIS_BESIDE_EXECUTABLE): still one
// exact file, found wherever the kit was unpacked, never through a search path.
#include "trainer/cpu/gemm_cpu.h"

#include "common/errno_error.h"
#include "trainer/cpu/ordered_sgemm.h"

#include <dlfcn.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>

namespace dmlp {
namespace {

// Fortran BLAS sgemm_ (32-bit integers: checked at load with bli_info_get_blas_int_type_size).
using FortranSgemm = void (*)(const char*, const char*, const int*, const int*, const int*,
                              const float*, const float*, const int*, const float*, const int*,
                              const float*, float*, const int*);

// The BLIS entry points dmlp uses. gint_t/dim_t are int64_t; arch_t is an enum (int).
struct Blis {
  void (*init)() = nullptr;
  const char* (*arch_string)(int) = nullptr;
  int (*arch_query_id)() = nullptr;
  void (*set_num_threads)(int64_t) = nullptr;
  int64_t (*get_num_threads)() = nullptr;
  const char* (*version)() = nullptr;
  int64_t (*blas_int_type_size)() = nullptr;
  int64_t (*enable_openmp)() = nullptr;
  FortranSgemm sgemm = nullptr;
};

struct State {
  Blis blis;
  bool blis_loaded = false;
  CpuGemmInfo blis_info;  // what BLIS was pinned to, once loaded
  CpuGemm choice = CpuGemm::kAuto;
  GemmIsa isa = GemmIsa::kScalar;  // dmlp's kernel, when choice is not blis
  CpuGemmInfo info;
  bool ready = false;
};

State& GlobalState() {
  static State state;
  return state;
}

Status InitFailed(const std::string& detail) { return Status::Error("GEMM_INIT_FAILED", detail); }

// The sub-configuration dmlp pins for this CPU. BLIS's own choice depends on a
// table of CPU models (on this Xeon it guesses "haswell": "number of FMA units
// unknown"), so a CPU it has not heard of would silently change the kernel and
// the bits; here the choice follows the instruction sets alone.
const char* PinnedArch() {
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    return "skx";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "haswell";
  return "generic";
}

// The BLIS file this build loads, as a real path (what the fingerprint records).
Result<std::string> BlisFile() {
#ifdef DMLP_BLIS_BESIDE_EXECUTABLE
  char executable[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
  if (length <= 0) return InitFailed("cannot read /proc/self/exe to find BLIS beside the program");
  executable[length] = '\0';
  const std::string wanted = BlisPathBesideExecutable(executable, DMLP_BLIS_BESIDE_EXECUTABLE);
#else
  const std::string wanted = DMLP_BLIS_SO;
#endif
  char resolved[PATH_MAX];
  if (realpath(wanted.c_str(), resolved) == nullptr) {
    return ErrnoError("GEMM_INIT_FAILED", "BLIS not found at " + wanted);
  }
  return std::string(resolved);
}

template <typename F>
Status Bind(void* handle, const std::string& file, const char* name, F& target) {
  target = reinterpret_cast<F>(dlsym(handle, name));
  if (target == nullptr) return InitFailed(std::string("missing symbol ") + name + " in " + file);
  return Status::Ok();
}

Status Load(const std::string& file, Blis& blis) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return InitFailed(std::string("dlopen: ") + dlerror());
  DMLP_RETURN_IF_ERROR(Bind(handle, file, "bli_init", blis.init));
  DMLP_RETURN_IF_ERROR(Bind(handle, file, "bli_arch_string", blis.arch_string));
  DMLP_RETURN_IF_ERROR(Bind(handle, file, "bli_arch_query_id", blis.arch_query_id));
  DMLP_RETURN_IF_ERROR(Bind(handle, file, "bli_thread_set_num_threads", blis.set_num_threads));
  DMLP_RETURN_IF_ERROR(Bind(handle, file, "bli_thread_get_num_threads", blis.get_num_threads));
  DMLP_RETURN_IF_ERROR(Bind(handle, file, "bli_info_get_version_str", blis.version));
  DMLP_RETURN_IF_ERROR(Bind(handle, file, "bli_info_get_blas_int_type_size", blis.blas_int_type_size));
  DMLP_RETURN_IF_ERROR(Bind(handle, file, "bli_info_get_enable_openmp", blis.enable_openmp));
  return Bind(handle, file, "sgemm_", blis.sgemm);
}

// BLIS_ARCH_TYPE takes an arch_t index, whose numbering differs between BLIS
// versions; look the name up in the library's own table ("generic" is always
// its last entry, so the scan stays inside it).
std::optional<int> ArchId(const Blis& blis, const std::string& name) {
  for (int id = 0; id < 256; ++id) {
    const char* entry = blis.arch_string(id);
    if (entry == nullptr) return std::nullopt;
    if (name == entry) return id;
    if (std::strcmp(entry, "generic") == 0) return std::nullopt;
  }
  return std::nullopt;
}

// Sets an environment variable for the lifetime of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Selects and checks the sub-configuration. BLIS reads BLIS_ARCH_TYPE once, in
// bli_init(); if BLIS was already initialized in this process the variable is
// ignored, and the query below catches it.
Status PinArch(const Blis& blis, const std::string& file, const std::string& arch) {
  std::optional<int> id = ArchId(blis, arch);
  if (!id) return InitFailed("BLIS at " + file + " has no sub-configuration " + arch);
  {
    ScopedEnv arch_type("BLIS_ARCH_TYPE", std::to_string(*id));
    blis.init();
  }
  const char* active = blis.arch_string(blis.arch_query_id());
  if (arch != active) {
    return InitFailed("BLIS runs sub-configuration " + std::string(active) + ", dmlp pins " + arch +
                      " (was BLIS initialized before InitCpuGemm?)");
  }
  return Status::Ok();
}

Status SetBlisThreads(const Blis& blis, int threads) {
  blis.set_num_threads(threads);
  int64_t active = blis.get_num_threads();
  if (active != threads) {
    return InitFailed("BLIS runs " + std::to_string(active) + " threads, asked for " +
                      std::to_string(threads));
  }
  return Status::Ok();
}

Status LoadBlis(State& state) {
  DMLP_ASSIGN_OR_RETURN(const std::string file, BlisFile());
  Blis blis;
  DMLP_RETURN_IF_ERROR(Load(file, blis));
  if (blis.blas_int_type_size() != 32) {
    return InitFailed("BLIS BLAS integers are " + std::to_string(blis.blas_int_type_size()) +
                      " bits, dmlp passes 32-bit int");
  }
  const std::string arch = PinnedArch();
  DMLP_RETURN_IF_ERROR(PinArch(blis, file, arch));
  state.blis = blis;
  state.blis_loaded = true;
  state.blis_info.file = file;
  state.blis_info.library = std::string("blis ") + blis.version() +
                            (blis.enable_openmp() ? " openmp" : " single-threaded");
  state.blis_info.kernel = arch;
  state.blis_info.isa = arch;
  return Status::Ok();
}

// The fastest of dmlp's kernels this CPU runs.
GemmIsa FastestIsa() {
  for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2})
    if (GemmIsaSupported(isa)) return isa;
  return GemmIsa::kScalar;
}

GemmIsa IsaOf(CpuGemm choice) {
  switch (choice) {
    case CpuGemm::kAvx512: return GemmIsa::kAvx512;
    case CpuGemm::kAvx2: return GemmIsa::kAvx2;
    case CpuGemm::kScalar: return GemmIsa::kScalar;
    case CpuGemm::kAuto:
    case CpuGemm::kBlis: break;
  }
  return FastestIsa();
}

int AvailableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

// Programming errors (bad shapes) abort: BLIS's xerbla would only print and
// return, leaving C unwritten.
void RequireShape(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

Result<CpuGemm> ParseCpuGemm(const std::string& text) {
  std::string allowed;
  for (size_t i = 0; i < std::size(kCpuGemmChoices); ++i) {
    allowed += (allowed.empty() ? "" : " or ") + std::string(kCpuGemmChoices[i]);
    if (text != kCpuGemmChoices[i]) continue;
    const CpuGemm choice = static_cast<CpuGemm>(i);
    if (choice != CpuGemm::kAuto && choice != CpuGemm::kBlis && !GemmIsaSupported(IsaOf(choice)))
      return Status::Error("ENV_INVALID", "DMLP_CPU_GEMM=" + text + ": this CPU cannot run the " + text +
                                              " kernel (" + (choice == CpuGemm::kAvx512 ? "AVX-512F" : "AVX2 and FMA") +
                                              " missing); auto picks the fastest it can");
    return choice;
  }
  return Status::Error("ENV_INVALID", "DMLP_CPU_GEMM='" + text + "' must be " + allowed);
}

std::string CpuGemmOrder(CpuGemm choice) {
  return choice == CpuGemm::kBlis ? std::string(PinnedArch()) : std::string(kGemmOrder);
}

Status InitCpuGemm(int threads, CpuGemm choice) {
  // Ranks run as threads of one process (the tests) each initialize, with the
  // same settings: the first sets them, the others find them set and write
  // nothing (a string assigned from two threads at once leaked or worse).
  static std::mutex init_mutex;
  const std::lock_guard<std::mutex> lock(init_mutex);
  State& state = GlobalState();
  if (threads <= 0) threads = AvailableCpus();
  if (state.ready && state.choice == choice && state.info.threads == threads) return Status::Ok();
  if (choice == CpuGemm::kBlis) {
    if (!state.blis_loaded) DMLP_RETURN_IF_ERROR(LoadBlis(state));
    DMLP_RETURN_IF_ERROR(SetBlisThreads(state.blis, threads));
    state.info = state.blis_info;
  } else {
    state.isa = IsaOf(choice);
    if (!GemmIsaSupported(state.isa))
      return InitFailed(std::string("this CPU cannot run the ") + GemmIsaName(state.isa) + " kernel");
    state.info = CpuGemmInfo{"dmlp ordered sgemm", kGemmOrder, GemmIsaName(state.isa), threads, ""};
  }
  state.info.threads = threads;
  state.choice = choice;
  state.ready = true;
  return Status::Ok();
}

const CpuGemmInfo& CpuGemmDescription() { return GlobalState().info; }

std::string BlisPathBesideExecutable(const std::string& executable, const std::string& relative) {
  if (!relative.empty() && relative.front() == '/') return relative;
  const size_t slash = executable.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : executable.substr(0, slash);
  return (folder.empty() ? "/" : folder + "/") + relative;
}

void Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
           const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc,
           const GemmEpilogue& epilogue) {
  const State& state = GlobalState();
  RequireShape(state.ready && m >= 0 && n >= 0 && k >= 0);
  RequireShape(lda >= std::max(1, transpose_a ? m : k) && ldb >= std::max(1, transpose_b ? k : n) &&
               ldc >= std::max(1, n));
  if (state.choice != CpuGemm::kBlis) {
    OrderedSgemm(state.isa, state.info.threads, transpose_a, transpose_b, m, n, k, alpha, a,
                 static_cast<size_t>(lda), b, static_cast<size_t>(ldb), beta, c, static_cast<size_t>(ldc),
                 epilogue);
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same
  // buffers read as column-major are the transposes, so swap the operands.
  const char trans_a = transpose_a ? 'T' : 'N';
  const char trans_b = transpose_b ? 'T' : 'N';
  state.blis.sgemm(&trans_b, &trans_a, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc);
  if (m > 0 && n > 0) ApplyGemmEpilogue(epilogue, m, n, c, static_cast<size_t>(ldc));
}

}  // namespace dmlp
