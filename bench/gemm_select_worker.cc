// One library, one kernel, one thread count, every shape: see gemm_select_worker.h.
#include "bench/gemm_select_worker.h"

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/median.h"

namespace dmlp::bench {
namespace {

// The Fortran BLAS entry (32-bit integers in both Debian builds), called the
// way trainer/cpu/gemm_cpu.cc calls it, so the figures are those of the shipped path.
using FortranSgemm = void (*)(const char*, const char*, const int*, const int*, const int*,
                              const float*, const float*, const int*, const float*, const int*,
                              const float*, float*, const int*);
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);

// Row-major C = op(A) op(B) with alpha 1, beta 0; lda/ldb/ldc are row strides.
using GemmCall = std::function<void(const GemmShape&, const float*, int, const float*, int, float*,
                                    int)>;

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;

// 64-byte aligned, plus `offset` floats so the "misaligned" variant starts off a cache line.
Buffer Allocate(size_t floats) {
  size_t bytes = ((floats * sizeof(float) + 63) / 64) * 64 + 64;
  return Buffer(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

// Deterministic inputs in [-1, 1) with 24 significant bits: identical in every worker.
void Fill(float* data, size_t count, uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < count; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    data[i] = static_cast<float>(static_cast<int32_t>(state >> 40) - (1 << 23)) / (1 << 23);
  }
}

// Hash of the logical m x n result stored with row stride ldc.
std::string HashRows(const float* c, int m, int n, int ldc) {
  uint64_t hash = 1469598103934665603ull;
  for (int i = 0; i < m; ++i) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(c + static_cast<size_t>(i) * ldc);
    for (size_t b = 0; b < static_cast<size_t>(n) * sizeof(float); ++b) {
      hash = (hash ^ bytes[b]) * 1099511628211ull;
    }
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

// Stored (row-major) dimensions of op(A) and op(B).
int RowsA(const GemmShape& s) { return s.transpose_a ? s.k : s.m; }
int ColsA(const GemmShape& s) { return s.transpose_a ? s.m : s.k; }
int RowsB(const GemmShape& s) { return s.transpose_b ? s.n : s.k; }
int ColsB(const GemmShape& s) { return s.transpose_b ? s.k : s.n; }

// Copies a rows x cols matrix from stride `from_ld` into stride `to_ld`.
void CopyRows(const float* from, int from_ld, float* to, int to_ld, int rows, int cols) {
  for (int i = 0; i < rows; ++i) {
    std::memcpy(to + static_cast<size_t>(i) * to_ld, from + static_cast<size_t>(i) * from_ld,
                static_cast<size_t>(cols) * sizeof(float));
  }
}

// CPU time of every thread of the process: with one thread it is the time the
// GEMM actually ran, whatever else the machine was doing meanwhile.
double ProcessCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9;
}

ShapeResult Measure(const GemmShape& s, int index, const GemmCall& gemm) {
  const int lda = ColsA(s), ldb = ColsB(s), ldc = s.n;
  Buffer a = Allocate(static_cast<size_t>(RowsA(s)) * lda);
  Buffer b = Allocate(static_cast<size_t>(RowsB(s)) * ldb);
  Buffer c = Allocate(static_cast<size_t>(s.m) * ldc);
  Fill(a.get(), static_cast<size_t>(RowsA(s)) * lda, 2 * index + 1);
  Fill(b.get(), static_cast<size_t>(RowsB(s)) * ldb, 2 * index + 2);

  ShapeResult result;
  gemm(s, a.get(), lda, b.get(), ldb, c.get(), ldc);  // warm-up: thread pools, packing buffers
  result.hash = HashRows(c.get(), s.m, s.n, ldc);
  result.repeat_ok = true;
  std::vector<double> seconds, cpu_seconds;
  const double min_total = s.speed ? 0.08 : 0.0;
  double total = 0;
  while (seconds.size() < 3 || total < min_total) {
    std::memset(c.get(), 0xFF, static_cast<size_t>(s.m) * ldc * sizeof(float));  // NaN: beta 0 must not read C
    const double cpu_start = ProcessCpuSeconds();
    auto start = std::chrono::steady_clock::now();
    gemm(s, a.get(), lda, b.get(), ldb, c.get(), ldc);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    cpu_seconds.push_back(ProcessCpuSeconds() - cpu_start);
    seconds.push_back(took.count());
    total += took.count();
    if (HashRows(c.get(), s.m, s.n, ldc) != result.hash) result.repeat_ok = false;
  }
  const double flops = 2.0 * s.m * s.n * s.k;
  result.gflops = flops / Median(seconds) / 1e9;
  result.cpu_gflops = flops / Median(cpu_seconds) / 1e9;

  // Same logical inputs, buffers one float past a cache line and leading dims padded by 3.
  const int lda2 = lda + 3, ldb2 = ldb + 3, ldc2 = ldc + 3;
  Buffer a2 = Allocate(static_cast<size_t>(RowsA(s)) * lda2 + 1);
  Buffer b2 = Allocate(static_cast<size_t>(RowsB(s)) * ldb2 + 1);
  Buffer c2 = Allocate(static_cast<size_t>(s.m) * ldc2 + 1);
  CopyRows(a.get(), lda, a2.get() + 1, lda2, RowsA(s), lda);
  CopyRows(b.get(), ldb, b2.get() + 1, ldb2, RowsB(s), ldb);
  gemm(s, a2.get() + 1, lda2, b2.get() + 1, ldb2, c2.get() + 1, ldc2);
  result.layout_ok = HashRows(c2.get() + 1, s.m, s.n, ldc2) == result.hash;
  return result;
}

// Keeps the dlopen handle alive for the process: worker processes are short-lived.
void* Open(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) std::fprintf(stderr, "gemm_select: dlopen %s: %s\n", path, dlerror());
  return handle;
}

template <typename F>
F Symbol(void* handle, const char* name) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) std::fprintf(stderr, "gemm_select: missing symbol %s\n", name);
  return reinterpret_cast<F>(symbol);
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
GemmCall FortranCall(FortranSgemm sgemm) {
  return [sgemm](const GemmShape& s, const float* a, int lda, const float* b, int ldb, float* c,
                 int ldc) {
    const char trans_a = s.transpose_a ? 'T' : 'N', trans_b = s.transpose_b ? 'T' : 'N';
    const float one = 1.0f, zero = 0.0f;
    sgemm(&trans_b, &trans_a, &s.n, &s.m, &s.k, &one, b, &ldb, a, &lda, &zero, c, &ldc);
  };
}

// OpenBLAS reads OPENBLAS_CORETYPE and OPENBLAS_NUM_THREADS while loading.
GemmCall LoadOpenBlas(const std::string& kernel, int threads) {
  if (kernel != "auto") setenv("OPENBLAS_CORETYPE", kernel.c_str(), 1);
  setenv("OPENBLAS_NUM_THREADS", std::to_string(threads).c_str(), 1);
  void* h = Open(DMLP_OPENBLAS_SO);
  if (h == nullptr) return nullptr;
  Symbol<void (*)(int)>(h, "openblas_set_num_threads")(threads);
  std::printf("library %s\n", Symbol<char* (*)()>(h, "openblas_get_config")());
  std::printf("kernel %s\n", Symbol<char* (*)()>(h, "openblas_get_corename")());
  std::printf("threads %d\n", Symbol<int (*)()>(h, "openblas_get_num_threads")());
  return FortranCall(Symbol<FortranSgemm>(h, "sgemm_"));
}

// BLIS reads BLIS_ARCH_TYPE (an arch_t index) in bli_init(), not at load time.
GemmCall LoadBlis(const std::string& kernel, int threads) {
  void* h = Open(DMLP_BLIS_SO);
  if (h == nullptr) return nullptr;
  auto arch_string = Symbol<char* (*)(int)>(h, "bli_arch_string");
  if (kernel != "auto") {
    int id = 0;
    // "generic" is always the last arch_t, so the scan stays inside the name table.
    while (kernel != arch_string(id) && std::strcmp(arch_string(id), "generic") != 0) ++id;
    if (kernel != arch_string(id)) return nullptr;
    setenv("BLIS_ARCH_TYPE", std::to_string(id).c_str(), 1);
  }
  Symbol<void (*)()>(h, "bli_init")();
  Symbol<void (*)(int64_t)>(h, "bli_thread_set_num_threads")(threads);
  std::printf("library blis %s\n", Symbol<char* (*)()>(h, "bli_info_get_version_str")());
  std::printf("kernel %s\n", arch_string(Symbol<int (*)()>(h, "bli_arch_query_id")()));
  std::printf("threads %lld\n",
              static_cast<long long>(Symbol<int64_t (*)()>(h, "bli_thread_get_num_threads")()));
  return FortranCall(Symbol<FortranSgemm>(h, "sgemm_"));
}

// oneDNN threads through OpenMP (libgomp reads OMP_NUM_THREADS when dlopen loads it).
GemmCall LoadOneDnn(const std::string& kernel, int threads) {
  setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
  void* h = Open(DMLP_DNNL_SO);
  if (h == nullptr) return nullptr;
  constexpr unsigned kAvx2 = 0x7, kAvx512Core = 0x27;  // dnnl_cpu_isa_t values (dnnl_types.h)
  if (kernel == "avx2") Symbol<int (*)(unsigned)>(h, "dnnl_set_max_cpu_isa")(kAvx2);
  if (kernel == "avx512_core") Symbol<int (*)(unsigned)>(h, "dnnl_set_max_cpu_isa")(kAvx512Core);
  struct Version {
    int major, minor, patch;
    const char* hash;
    unsigned cpu_runtime, gpu_runtime;
  };
  const auto* version = Symbol<const Version* (*)()>(h, "dnnl_version")();
  std::printf("library onednn %d.%d.%d\n", version->major, version->minor, version->patch);
  std::printf("kernel isa-0x%x\n", Symbol<unsigned (*)()>(h, "dnnl_get_effective_cpu_isa")());
  std::printf("threads %d\n", Symbol<int (*)()>(h, "omp_get_max_threads")());
  auto sgemm = Symbol<DnnlSgemm>(h, "dnnl_sgemm");
  return [sgemm](const GemmShape& s, const float* a, int lda, const float* b, int ldb, float* c,
                 int ldc) {
    sgemm(s.transpose_a ? 'T' : 'N', s.transpose_b ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a, lda, b,
          ldb, 0.0f, c, ldc);
  };
}

}  // namespace

std::vector<GemmShape> MlpGemmShapes() {
  constexpr int kFeatures = 512, kClasses = 10;
  std::vector<GemmShape> shapes;
  for (int batch : {64, 512}) {
    for (int width : {1024, 2048}) {
      struct Layer {
        const char* name;
        int in, out;
      };
      for (Layer layer : {Layer{"in", kFeatures, width}, Layer{"hid", width, width},
                          Layer{"out", width, kClasses}}) {
        std::string prefix = "n" + std::to_string(batch) + " W" + std::to_string(width) + " " +
                             layer.name;
        // y = x W, dx = dy W^T, dW = x^T dy (W stored [in][out] row-major, as the state file).
        shapes.push_back({prefix + " fwd", batch, layer.out, layer.in, false, false});
        shapes.push_back({prefix + " dX", batch, layer.in, layer.out, false, true});
        shapes.push_back({prefix + " dW", layer.in, layer.out, batch, true, false});
      }
    }
  }
  // Odd sizes: edge micro-tiles and k blocks that do not divide evenly, every transpose pair.
  shapes.push_back({"odd 61x1000x515 NN", 61, 1000, 515, false, false, false});
  shapes.push_back({"odd 333x777x1001 NT", 333, 777, 1001, false, true, false});
  shapes.push_back({"odd 515x1023x67 TN", 515, 1023, 67, true, false, false});
  shapes.push_back({"odd 17x2051x2049 TT", 17, 2051, 2049, true, true, false});
  shapes.push_back({"odd 1031x1029x771 NN", 1031, 1029, 771, false, false, false});
  return shapes;
}

int RunGemmWorker(const std::string& library, const std::string& kernel, int threads) {
  GemmCall gemm;
  if (library == "openblas") gemm = LoadOpenBlas(kernel, threads);
  if (library == "blis") gemm = LoadBlis(kernel, threads);
  if (library == "onednn") gemm = LoadOneDnn(kernel, threads);
  if (!gemm) {
    std::fprintf(stderr, "gemm_select: cannot load %s/%s\n", library.c_str(), kernel.c_str());
    return 1;
  }
  std::vector<GemmShape> shapes = MlpGemmShapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    ShapeResult r = Measure(shapes[i], static_cast<int>(i), gemm);
    std::printf("shape %zu %.3f %.3f %s %d %d\n", i, r.gflops, r.cpu_gflops, r.hash.c_str(),
                r.repeat_ok, r.layout_ok);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace dmlp::bench
