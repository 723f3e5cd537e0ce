// OrderedSgemmCuda (trainer/cuda/ordered_sgemm.h) against the CPU platform's
// OrderedSgemm, bit for bit, on a real GPU: the MLP's calls at the image's
// shapes (spec.json: FEATURES 512, WIDTH 2048, CLASSES 10, BATCH 4096 over 8
// ranks, 512 rows a rank), with the epilogues the MLP fuses, then odd shapes
// off the kernel's tiles with every transpose pair, alpha and beta, and -0,
// denormals and infinities among the inputs. The simulator runs the same
// comparison on small shapes (tests/e2e/gpu_sim/ordered_sgemm_check.cu); this
// one holds at full size, on the hardware's own FMA units.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "trainer/cpu/ordered_sgemm.h"
#include "trainer/cuda/ordered_sgemm.h"

namespace dmlp {
namespace {

using Kind = GemmEpilogue::Kind;
using testing::RandomFloats;
using testing::ToDevice;
using testing::ToHost;

struct Call {
  bool ta, tb;
  int m, n, k;
  float alpha, beta;
  Kind kind;
};

// The fastest CPU kernel here: every one gives the same bits (ordered_sgemm_test.cc).
GemmIsa FastestIsa() {
  for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2})
    if (GemmIsaSupported(isa)) return isa;
  return GemmIsa::kScalar;
}

// Some -0, denormals and (with `infinities`) a rare +-Inf among normal values.
std::vector<float> Operand(size_t count, uint32_t seed, bool infinities) {
  std::vector<float> values = RandomFloats(count, seed);
  for (size_t e = 0; e < count; e += 97) values[e] = -0.0f;
  for (size_t e = 13; e < count; e += 101) values[e] *= 1e-39f;
  if (infinities)
    for (size_t e = 29; e < count; e += 1009) values[e] = e % 2 ? std::numeric_limits<float>::infinity()
                                                                : -std::numeric_limits<float>::infinity();
  return values;
}

// Bitwise, except that a NaN matches any NaN (the order rule promises no payload);
// the first differing element is named.
::testing::AssertionResult SameBitsOrBothNaN(const std::vector<float>& want, const std::vector<float>& got) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t e = 0; e < want.size(); ++e) {
    if (std::isnan(want[e]) && std::isnan(got[e])) continue;
    if (std::memcmp(&want[e], &got[e], sizeof(float)) != 0)
      return ::testing::AssertionFailure() << "element " << e << ": cpu " << want[e] << ", gpu " << got[e];
  }
  return ::testing::AssertionSuccess();
}

// One call on both platforms, packed operands (strides = stored columns), A
// and B scaled by 2^exponent.
void ExpectCpuBits(const Call& call, bool infinities, int exponent = 0) {
  SCOPED_TRACE("ta=" + std::to_string(call.ta) + " tb=" + std::to_string(call.tb) + " m=" + std::to_string(call.m) +
               " n=" + std::to_string(call.n) + " k=" + std::to_string(call.k) + " epilogue=" +
               std::to_string(static_cast<int>(call.kind)));
  const size_t lda = call.ta ? call.m : call.k, ldb = call.tb ? call.k : call.n, ldc = call.n;
  std::vector<float> a = Operand(size_t(call.m) * call.k, 1, infinities);
  std::vector<float> b = Operand(size_t(call.k) * call.n, 2, infinities);
  for (std::vector<float>* operand : {&a, &b})
    for (float& value : *operand) value = std::ldexp(value, exponent);
  const std::vector<float> c = Operand(size_t(call.m) * call.n, 3, false);
  const std::vector<float> bias = Operand(call.n, 4, false);
  const std::vector<float> mask = Operand(size_t(call.m) * call.n, 5, false);
  std::vector<float> want = c;
  OrderedSgemm(FastestIsa(), 4, call.ta, call.tb, call.m, call.n, call.k, call.alpha, a.data(), lda, b.data(), ldb,
               call.beta, want.data(), ldc, GemmEpilogue{call.kind, bias.data(), mask.data(), ldc});
  auto device_a = ToDevice(a);
  auto device_b = ToDevice(b);
  auto device_c = ToDevice(c);
  auto device_bias = ToDevice(bias);
  auto device_mask = ToDevice(mask);
  DMLP_ASSERT_OK(cuda::OrderedSgemmCuda(call.ta, call.tb, call.m, call.n, call.k, call.alpha, device_a.get(), lda,
                                        device_b.get(), ldb, call.beta, device_c.get(), ldc,
                                        GemmEpilogue{call.kind, device_bias.get(), device_mask.get(), ldc}, nullptr));
  EXPECT_TRUE(SameBitsOrBothNaN(want, ToHost(device_c.get(), c.size())));
}

// mlp_cuda.cc's calls per rank: forward y = x W (+ bias, ReLU in the hidden
// layers), the weight gradient x^T delta, the delta below delta W^T (masked
// by the ReLU's output).
TEST(CudaOrderedSgemm, TheMlpCallsAtTheImageShapesGiveTheCpuBits) {
  DMLP_REQUIRE_GPU();
  const int rows = 512, features = 512, width = 2048, classes = 10;
  const Call calls[] = {
      {false, false, rows, width, features, 1, 0, Kind::kAddBiasRelu},
      {false, false, rows, width, width, 1, 0, Kind::kAddBiasRelu},
      {false, false, rows, classes, width, 1, 0, Kind::kAddBias},
      {true, false, width, classes, rows, 1, 0, Kind::kNone},
      {true, false, width, width, rows, 1, 0, Kind::kNone},
      {true, false, features, width, rows, 1, 0, Kind::kNone},
      {false, true, rows, width, classes, 1, 0, Kind::kMaskByPositive},
      {false, true, rows, width, width, 1, 0, Kind::kMaskByPositive},
  };
  for (const Call& call : calls) ExpectCpuBits(call, false);
}

// Off the 64 x 64 block and the 16-deep k tile, every transpose pair, C = S,
// alpha * S, alpha * S + beta * C, every epilogue, infinities among the inputs.
TEST(CudaOrderedSgemm, OddShapesEveryTransposeAlphaBetaAndEpilogueGiveTheCpuBits) {
  DMLP_REQUIRE_GPU();
  const int shapes[][3] = {{1, 1, 1}, {37, 70, 130}, {130, 7, 33}, {65, 129, 1000}, {300, 200, 17}};
  const Kind kinds[] = {Kind::kNone, Kind::kAddBias, Kind::kAddBiasRelu, Kind::kMaskByPositive};
  int turn = 0;
  for (const auto& shape : shapes) {
    for (int transposes = 0; transposes < 4; ++transposes, ++turn) {
      const bool ta = transposes & 1, tb = transposes & 2;
      ExpectCpuBits({ta, tb, shape[0], shape[1], shape[2], 1.0f, 0.0f, kinds[turn % 4]}, true);
      ExpectCpuBits({ta, tb, shape[0], shape[1], shape[2], -0.75f, 0.0f, kinds[(turn + 1) % 4]}, true);
      ExpectCpuBits({ta, tb, shape[0], shape[1], shape[2], 1.5f, -0.5f, kinds[(turn + 2) % 4]}, true);
    }
  }
}

// Every product rounds to a zero of its own sign (A and B scaled by 2^-80), so
// each chain ends at -0 or +0 by its last product: a chain step on padding,
// fma(0, 0, -0) = +0, or one out of order shows.
TEST(CudaOrderedSgemm, ChainsOfUnderflowingProductsKeepTheSignOfTheirLastZero) {
  DMLP_REQUIRE_GPU();
  for (int transposes = 0; transposes < 4; ++transposes)
    ExpectCpuBits({bool(transposes & 1), bool(transposes & 2), 37, 70, 130, 1.0f, 0.0f, Kind::kNone}, false, -80);
}

// k = 0: every chain is its start, +0, then alpha, beta and the epilogue.
TEST(CudaOrderedSgemm, ZeroDepthGivesTheChainStartThroughAlphaBetaAndTheEpilogue) {
  DMLP_REQUIRE_GPU();
  ExpectCpuBits({false, false, 33, 70, 0, 1.0f, 0.0f, Kind::kAddBiasRelu}, false);
  ExpectCpuBits({false, false, 33, 70, 0, -2.0f, 0.0f, Kind::kNone}, false);
  ExpectCpuBits({true, true, 33, 70, 0, 1.0f, 0.5f, Kind::kMaskByPositive}, false);
}

// The launcher's refusals: errors as values, nothing launched.
TEST(CudaOrderedSgemm, RefusesNegativeSizesShortStridesAndAnEpilogueWithoutItsData) {
  const float* none = nullptr;
  EXPECT_EQ(cuda::OrderedSgemmCuda(false, false, -1, 1, 1, 1, none, 1, none, 1, 0, nullptr, 1, {}, nullptr)
                .ToString(),
            "INTERNAL: OrderedSgemmCuda: negative size");
  EXPECT_EQ(cuda::OrderedSgemmCuda(false, false, 4, 4, 8, 1, none, 7, none, 4, 0, nullptr, 4, {}, nullptr)
                .ToString(),
            "INTERNAL: OrderedSgemmCuda: a row stride shorter than its row");
  EXPECT_EQ(cuda::OrderedSgemmCuda(false, false, 4, 4, 8, 1, none, 8, none, 4, 0, nullptr, 4,
                                   GemmEpilogue::AddBias(nullptr), nullptr)
                .ToString(),
            "INTERNAL: OrderedSgemmCuda: an epilogue without its bias or mask");
}

}  // namespace
}  // namespace dmlp
