// defines: DMLP_REQUIRE_GPU, ToDevice, ToHost, RandomFloats
//
// Helpers for the CUDA platform's unit tests. Every GPU test starts with
// DMLP_REQUIRE_GPU(), which skips it (GTEST_SKIP) on a machine without a GPU
// or driver; tests/gpu/run_gpu_checks.sh runs them where there is one.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/device_select.h"

/// Skips the test without a usable GPU; otherwise makes device 0 current.
#define DMLP_REQUIRE_GPU()                                                      \
  do {                                                                          \
    const auto dmlp_devices_ = ::dmlp::cuda::VisibleDeviceCount();              \
    if (!dmlp_devices_.ok()) GTEST_SKIP() << dmlp_devices_.status().ToString(); \
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);                                   \
  } while (0)

/// Asserts a Status is ok, printing it otherwise.
#define DMLP_ASSERT_OK(expr)                                             \
  do {                                                                   \
    const ::dmlp::Status dmlp_test_status_ = (expr);                     \
    ASSERT_TRUE(dmlp_test_status_.ok()) << dmlp_test_status_.ToString(); \
  } while (0)

namespace dmlp::testing {

/// A device copy of `values` (synchronous).
template <typename T>
cuda::DeviceBuffer<T> ToDevice(const std::vector<T>& values) {
  auto buffer = cuda::DeviceBuffer<T>::Create(values.size());
  EXPECT_TRUE(buffer.ok()) << buffer.status().ToString();
  if (!buffer.ok()) return {};
  EXPECT_EQ(
      cudaMemcpy(buffer->get(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice),
      cudaSuccess);
  return std::move(buffer).value();
}

/// A device buffer of `count` elements filled with the bytes 0xFF (NaN for
/// floats), so a kernel that skips an element is caught.
template <typename T>
cuda::DeviceBuffer<T> PoisonedDevice(size_t count) {
  auto buffer = cuda::DeviceBuffer<T>::Create(count);
  EXPECT_TRUE(buffer.ok()) << buffer.status().ToString();
  if (!buffer.ok()) return {};
  EXPECT_EQ(cudaMemset(buffer->get(), 0xFF, count * sizeof(T)), cudaSuccess);
  return std::move(buffer).value();
}

/// The device buffer's contents after all queued work finished.
template <typename T>
std::vector<T> ToHost(const T* device, size_t count) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<T> values(count);
  EXPECT_EQ(cudaMemcpy(values.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return values;
}

/// Normally distributed floats (fixed seed), scaled.
inline std::vector<float> RandomFloats(size_t count, uint32_t seed, float scale = 1.0f) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(count);
  for (float& value : values) value = normal(engine);
  return values;
}

/// True when the two float arrays hold the same bits.
inline bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace dmlp::testing
