// The ordered SGEMM on the simulated GPU (trainer/cuda/ordered_sgemm.cu,
// through OrderedSgemmCuda) against the CPU platform's OrderedSgemm
// (trainer/cpu/ordered_sgemm.h, its scalar kernel: every kernel there gives
// the same bits, tests/unit/ordered_sgemm_test.cc), bit for bit. Shapes off
// the block tile (64 x 64) and the k tile (16), every transpose pair, strided
// operands, C = S, alpha * S, alpha * S + beta * C, every epilogue, and inputs
// with -0, denormals, products below FLT_MIN, +-Inf and magnitudes that
// overflow, and chains of products that all round to signed zeros. One line:
//
//   ordered_sgemm_check: ordered_sgemm: <e> elements of C (and <p> of padding
//   and guard rows), <n> mismatches, <q> NaN on both
//
// All of C's buffer is compared: the padding columns and two guard rows past
// its end too, which neither side may write. A NaN on both sides
// counts as equal: the order rule promises no NaN payload (x86 and CUDA make
// different default NaNs). Exit 0 and "RESULT PASS" with no mismatch, 1 with
// one, 2 when a CUDA call or the launcher fails.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "cuda_or_exit.h"
#include "trainer/cpu/ordered_sgemm.h"
#include "trainer/cuda/ordered_sgemm.h"

namespace {

using dmlp::GemmEpilogue;

struct Shape {
  int m, n, k;
};

// Off the 64 x 64 block tile and the 16-deep k tile in every direction: one
// element, a partial k tile only, k past several tiles and off them, m and n
// crossing a block (70, 130).
constexpr Shape kShapes[] = {{1, 1, 1}, {7, 33, 37}, {37, 70, 50}, {70, 7, 33}, {130, 37, 7}, {33, 130, 21}};

uint64_t state = 0x9E3779B97F4A7C15ull;
uint32_t Next() {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<uint32_t>(state >> 32);
}

// What the operands hold besides values in [-1, 1).
enum class Inputs {
  kPlain,
  kSpecial,  // some -0, denormals, values whose products fall below FLT_MIN,
             // magnitudes whose products and sums overflow, and a rare +-Inf
             // (rare, so that most chains stay finite and keep their bits)
  kTiny,     // all scaled by 2^-80: every product rounds to a zero of its own
             // sign, so each chain ends at -0 or +0 by its last product, and a
             // padded step fma(0, 0, -0) = +0 would show
};

std::vector<float> Values(size_t count, Inputs inputs) {
  std::vector<float> values(count);
  for (float& v : values) {
    const uint32_t r = Next();
    v = static_cast<float>(static_cast<int32_t>(r >> 8) - (1 << 23)) / (1 << 23);
    if (inputs == Inputs::kTiny) v = std::ldexp(v, -80);
    if (inputs != Inputs::kSpecial) continue;
    switch (r % 16) {
      case 0: v = -0.0f; break;
      case 1: v *= 1e-38f; break;  // denormal (or near it)
      case 2: v *= 1e-20f; break;  // products below FLT_MIN
      case 3: v *= 1e30f; break;   // products overflow, sums may too
      case 4: if (r % 512 == 4) v = r & 256 ? std::numeric_limits<float>::infinity()
                                            : -std::numeric_limits<float>::infinity(); break;
      default: break;
    }
  }
  return values;
}

float* ToDevice(const std::vector<float>& host) {
  float* device = nullptr;
  CUDA_OR_EXIT(cudaMalloc(&device, host.size() * sizeof(float)));
  CUDA_OR_EXIT(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return device;
}

struct Tally {
  size_t elements = 0, outside = 0, mismatches = 0, nan_on_both = 0;
  void Add(const std::vector<float>& got, const std::vector<float>& want, const Shape& s, size_t ldc,
           const char* what) {
    for (size_t e = 0; e < want.size(); ++e) {
      if (e / ldc < static_cast<size_t>(s.m) && e % ldc < static_cast<size_t>(s.n)) {
        ++elements;
      } else {
        ++outside;
      }
      if (std::isnan(got[e]) && std::isnan(want[e])) {
        ++nan_on_both;
        continue;
      }
      if (std::memcmp(&got[e], &want[e], sizeof(float)) == 0) continue;
      if (++mismatches <= 5)
        std::printf("ordered_sgemm_check: mismatch %s element %zu: gpu %a, cpu %a\n", what, e, got[e], want[e]);
    }
  }
};

// One call on both platforms, the same operands, C's buffer compared whole.
void RunCase(const Shape& s, bool ta, bool tb, float alpha, float beta, GemmEpilogue::Kind kind, Inputs inputs,
             Tally& tally) {
  const int pad = 3;
  const size_t lda = (ta ? s.m : s.k) + pad, ldb = (tb ? s.k : s.n) + pad, ldc = s.n + pad;
  const std::vector<float> a = Values((ta ? s.k : s.m) * lda, inputs);
  const std::vector<float> b = Values((tb ? s.n : s.k) * ldb, inputs);
  std::vector<float> c = Values((s.m + 2) * ldc, Inputs::kSpecial);  // two guard rows
  // beta = 0 never reads C: NaN there shows a kernel that does.
  if (beta == 0.0f) for (size_t e = 0; e < s.m * ldc; ++e) c[e] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> bias = Values(s.n, Inputs::kSpecial), mask = Values(s.m * ldc, Inputs::kSpecial);
  for (size_t j = 0; j < bias.size(); j += 4) bias[j] = -0.0f;  // -0 + -0 = -0, which ReLU makes +0
  mask[0] = std::numeric_limits<float>::quiet_NaN();
  const GemmEpilogue host_epilogue{kind, bias.data(), mask.data(), ldc};
  std::vector<float> want = c;
  dmlp::OrderedSgemm(dmlp::GemmIsa::kScalar, 1, ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta,
                     want.data(), ldc, host_epilogue);
  float *da = ToDevice(a), *db = ToDevice(b), *dc = ToDevice(c), *dbias = ToDevice(bias), *dmask = ToDevice(mask);
  const GemmEpilogue device_epilogue{kind, dbias, dmask, ldc};
  const dmlp::Status status = dmlp::cuda::OrderedSgemmCuda(ta, tb, s.m, s.n, s.k, alpha, da, lda, db, ldb, beta, dc,
                                                           ldc, device_epilogue, nullptr);
  if (!status.ok()) {
    std::fprintf(stderr, "ordered_sgemm_check: OrderedSgemmCuda: %s\n", status.ToString().c_str());
    std::exit(2);
  }
  CUDA_OR_EXIT(cudaDeviceSynchronize());
  std::vector<float> got(c.size());
  CUDA_OR_EXIT(cudaMemcpy(got.data(), dc, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (float* device : {da, db, dc, dbias, dmask}) CUDA_OR_EXIT(cudaFree(device));
  char what[128];
  std::snprintf(what, sizeof what, "m=%d n=%d k=%d ta=%d tb=%d alpha=%g beta=%g epilogue=%d inputs=%d", s.m, s.n,
                s.k, ta, tb, alpha, beta, static_cast<int>(kind), static_cast<int>(inputs));
  tally.Add(got, want, s, ldc, what);
}

}  // namespace

int main() {
  using Kind = GemmEpilogue::Kind;
  constexpr Kind kKinds[] = {Kind::kNone, Kind::kAddBias, Kind::kAddBiasRelu, Kind::kMaskByPositive};
  Tally tally;
  int turn = 0;
  for (const Shape& s : kShapes) {
    for (int transposes = 0; transposes < 4; ++transposes) {
      const bool ta = transposes & 1, tb = transposes & 2;
      // C = S (the MLP's calls), alpha * S (beta = 0, C never read), alpha * S + beta * C;
      // the epilogues in turn, each meeting every shape and every pair of transposes;
      // then the signs of zero chains, bare or through the ReLU.
      const Inputs first = turn % 2 == 0 ? Inputs::kSpecial : Inputs::kPlain;
      const Inputs second = turn % 2 == 0 ? Inputs::kPlain : Inputs::kSpecial;
      RunCase(s, ta, tb, 1.0f, 0.0f, kKinds[turn % 4], first, tally);
      RunCase(s, ta, tb, -0.75f, 0.0f, kKinds[(turn + 1) % 4], second, tally);
      RunCase(s, ta, tb, 1.5f, -0.5f, kKinds[(turn + 2) % 4], Inputs::kSpecial, tally);
      RunCase(s, ta, tb, 1.0f, 0.0f, turn % 2 == 0 ? Kind::kNone : Kind::kAddBiasRelu, Inputs::kTiny, tally);
      ++turn;
    }
  }
  std::printf(
      "ordered_sgemm_check: ordered_sgemm: %zu elements of C (and %zu of padding and guard rows), %zu mismatches, "
      "%zu NaN on both\n",
      tally.elements, tally.outside, tally.mismatches, tally.nan_on_both);
  std::printf("ordered_sgemm_check: RESULT %s\n", tally.mismatches == 0 ? "PASS" : "FAIL");
  return tally.mismatches == 0 ? 0 : 1;
}
