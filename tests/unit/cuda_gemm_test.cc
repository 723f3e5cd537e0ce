// CublasGemm's row-major mapping onto column-major cuBLAS, at both precisions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda_test_util.h"
#include "trainer/cuda/gemm_cublas.h"

namespace dmlp {
namespace {

using testing::PoisonedDevice;
using testing::RandomFloats;
using testing::SameBits;
using testing::ToDevice;
using testing::ToHost;

// Row-major op(A) op(B) in double: A is m x k (k x m stored when transposed), B k x n.
std::vector<double> Reference(bool ta, bool tb, int m, int n, int k, const std::vector<float>& a,
                              const std::vector<float>& b) {
  std::vector<double> c(size_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p)
        sum += double(ta ? a[size_t(p) * m + i] : a[size_t(i) * k + p]) *
               double(tb ? b[size_t(j) * k + p] : b[size_t(p) * n + j]);
      c[size_t(i) * n + j] = sum;
    }
  return c;
}

// Tolerance per element, relative to sqrt(k) * rms(a) * rms(b) (the size of a
// dot product of k random terms): fp32 2e-5 (fp32 accumulation), tf32 1e-2
// (10-bit mantissa inputs). A wrong transpose or stride is off by O(1).
TEST(CublasGemm, RowMajorMappingAllTransposes) {
  DMLP_REQUIRE_GPU();
  const int m = 67, n = 45, k = 129;
  for (bool tf32 : {false, true}) {
    auto gemm = cuda::CublasGemm::Create(nullptr, tf32);
    ASSERT_TRUE(gemm.ok()) << gemm.status().ToString();
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const std::vector<float> a = RandomFloats(size_t(m) * k, 21);
        const std::vector<float> b = RandomFloats(size_t(k) * n, 22);
        auto device_a = ToDevice(a);
        auto device_b = ToDevice(b);
        auto device_c = PoisonedDevice<float>(size_t(m) * n);
        DMLP_ASSERT_OK(gemm->Sgemm(ta, tb, m, n, k, device_a.get(), ta ? m : k, device_b.get(),
                                   tb ? k : n, device_c.get(), n));
        const std::vector<float> got = ToHost(device_c.get(), size_t(m) * n);
        const std::vector<double> expected = Reference(ta, tb, m, n, k, a, b);
        const double scale = std::sqrt(double(k));
        for (size_t e = 0; e < got.size(); ++e)
          ASSERT_NEAR(got[e], expected[e], (tf32 ? 1e-2 : 2e-5) * scale)
              << "tf32=" << tf32 << " ta=" << ta << " tb=" << tb << " element " << e;
        // Same call, same bits.
        DMLP_ASSERT_OK(gemm->Sgemm(ta, tb, m, n, k, device_a.get(), ta ? m : k, device_b.get(),
                                   tb ? k : n, device_c.get(), n));
        EXPECT_TRUE(SameBits(ToHost(device_c.get(), size_t(m) * n), got));
      }
    }
    EXPECT_STREQ(gemm->compute_type_name(),
                 tf32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F");
  }
}

TEST(CublasGemm, LibraryVersionIsDotted) {
  DMLP_REQUIRE_GPU();
  auto version = cuda::CublasGemm::LibraryVersion();
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(std::count(version->begin(), version->end(), '.'), 2) << *version;
}

}  // namespace
}  // namespace dmlp
