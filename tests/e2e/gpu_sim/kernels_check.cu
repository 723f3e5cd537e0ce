// dmlp's own CUDA kernels (trainer/cuda/*.cu, through their launchers) on the
// simulated GPU, each against dmlp's CPU code on small odd shapes: the cases of
// tests/unit/cuda_kernels_test.cc and cuda_data_init_test.cc, shrunk to the
// simulator's speed (a few million operations a second). One line a kernel:
//
//   kernels_check: <kernel>: <elements> elements, <n> mismatches
//
// Bit for bit wherever the kernel promises the CPU's bits. Softmax
// cross-entropy does not (CUDA's expf/logf against glibc's, softmax_xent.h):
// its line counts the elements whose bits differ from the CPU platform's loop
// as "differ (known: ...)", and its mismatches are those outside the unit
// test's tolerance or, for the loss sum, off the kernel's documented tree.
// Exit 0 and "RESULT PASS" when no kernel has a mismatch, 1 when one has, 2
// when a CUDA call or a launcher fails.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_or_exit.h"
#include "tests/unit/bias_grad_order.h"
#include "trainer/cpu/adam_cpu.h"
#include "trainer/cuda/adam_update.h"
#include "trainer/cuda/bias_grad.h"
#include "trainer/cuda/bias_relu.h"
#include "trainer/cuda/data_gen.h"
#include "trainer/cuda/fold.h"
#include "trainer/cuda/init_gen.h"
#include "trainer/cuda/softmax_xent.h"
#include "trainer/math/data.h"
#include "trainer/math/init.h"
#include "trainer/math/ordered_reduce.h"

namespace {

using dmlp::Status;
using dmlp::testing::BiasGradInCpuOrder;

int failed_kernels = 0;

void OkOrExit(const Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "kernels_check: %s: %s\n", what, status.ToString().c_str());
  std::exit(2);
}

template <typename T>
T* ToDevice(const std::vector<T>& host) {
  T* device = nullptr;
  CUDA_OR_EXIT(cudaMalloc(&device, host.size() * sizeof(T)));
  CUDA_OR_EXIT(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return device;
}

// 0xFF bytes (a NaN for floats): an element the kernel forgot to write shows.
template <typename T>
T* PoisonedDevice(size_t count) {
  T* device = nullptr;
  CUDA_OR_EXIT(cudaMalloc(&device, count * sizeof(T)));
  CUDA_OR_EXIT(cudaMemset(device, 0xFF, count * sizeof(T)));
  return device;
}

template <typename T>
std::vector<T> ToHost(const T* device, size_t count) {
  CUDA_OR_EXIT(cudaDeviceSynchronize());
  std::vector<T> host(count);
  CUDA_OR_EXIT(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

std::vector<float> RandomFloats(size_t count, uint32_t seed, float scale = 1.0f) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(count);
  for (float& value : values) value = normal(engine);
  return values;
}

/// Elements of `got` whose bits differ from `expected`'s (the sizes are equal).
template <typename T>
size_t BitMismatches(const std::vector<T>& got, const std::vector<T>& expected) {
  size_t mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &expected[i], sizeof(T)) != 0) ++mismatches;
  return mismatches;
}

/// A kernel's tally over all its cases; Print() writes its line.
struct Tally {
  const char* kernel;
  size_t elements = 0;
  size_t mismatches = 0;
  size_t known_differences = 0;
  const char* known_reason = nullptr;

  template <typename T>
  void AddBits(const std::vector<T>& got, const std::vector<T>& expected) {
    elements += expected.size();
    mismatches += got.size() == expected.size() ? BitMismatches(got, expected) : expected.size();
  }
  void Print() const {
    std::printf("kernels_check: %s: %zu elements, %zu mismatches", kernel, elements, mismatches);
    if (known_reason != nullptr)
      std::printf(", %zu differ from the CPU's bits (known: %s)", known_differences, known_reason);
    std::printf("\n");
    if (mismatches != 0) ++failed_kernels;
  }
};

void CheckBiasReluForward() {
  Tally tally{"bias_relu_forward"};
  const int64_t rows = 37, cols = 70;
  std::vector<float> y = RandomFloats(rows * cols, 1);
  const std::vector<float> bias = RandomFloats(cols, 2);
  y[0] = std::numeric_limits<float>::quiet_NaN();  // NaN passes through ReLU
                                                   // (jax.nn.relu)
  y[1] = -bias[1];                                 // exact zero
  y[2] = -0.0f;
  for (bool relu : {false, true}) {
    // The CPU platform's epilogue (trainer/cpu/gemm_epilogue.h): one add, then
    // the select.
    std::vector<float> expected = y;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        float value = expected[i * cols + j] + bias[j];
        if (relu && !(value > 0.0f || value != value)) value = 0.0f;
        expected[i * cols + j] = value;
      }
    }
    float* device_y = ToDevice(y);
    float* device_bias = ToDevice(bias);
    OkOrExit(dmlp::cuda::BiasReluForward(device_y, device_bias, rows, cols, relu, nullptr),
             "BiasReluForward");
    tally.AddBits(ToHost(device_y, y.size()), expected);
    CUDA_OR_EXIT(cudaFree(device_y));
    CUDA_OR_EXIT(cudaFree(device_bias));
  }
  tally.Print();
}

void CheckReluBackward() {
  Tally tally{"relu_backward"};
  const std::vector<float> delta = RandomFloats(37 * 70, 3);
  std::vector<float> activation = RandomFloats(delta.size(), 4);
  activation[5] = 0.0f;
  activation[6] = std::numeric_limits<float>::quiet_NaN();
  activation[7] = -0.0f;
  std::vector<float> expected = delta;
  for (size_t e = 0; e < delta.size(); ++e)
    if (!(activation[e] > 0.0f)) expected[e] = 0.0f;
  float* device_delta = ToDevice(delta);
  float* device_activation = ToDevice(activation);
  OkOrExit(dmlp::cuda::ReluBackward(device_delta, device_activation,
                                    static_cast<int64_t>(delta.size()), nullptr),
           "ReluBackward");
  tally.AddBits(ToHost(device_delta, delta.size()), expected);
  CUDA_OR_EXIT(cudaFree(device_delta));
  CUDA_OR_EXIT(cudaFree(device_activation));
  tally.Print();
}

// The loss sum's documented order (softmax_xent.cu): 256 strided partial sums,
// then a tree.
float LossSumInKernelOrder(const std::vector<float>& row_loss) {
  std::vector<float> partial(dmlp::cuda::kLossSumThreads, 0.0f);
  for (size_t t = 0; t < partial.size(); ++t)
    for (size_t row = t; row < row_loss.size(); row += partial.size()) partial[t] += row_loss[row];
  for (size_t stride = partial.size() / 2; stride > 0; stride /= 2)
    for (size_t t = 0; t < stride; ++t) partial[t] += partial[t + stride];
  return partial[0];
}

// Not bit-equal by design (softmax_xent.h): CUDA's expf/logf against glibc's;
// in the simulator, moreover, the approximate instructions inside CUDA's expf
// and logf (ex2.approx, lg2.approx) are GPGPU-Sim's host emulation, not the
// hardware's, so these bits need not be a GPU's either. Mismatches: outside
// the unit test's tolerance (1e-5 relative to a double reference), or a loss
// sum off the kernel's tree.
// Differences from the CPU platform's float loop (trainer/cpu/mlp_cpu.cc) are
// counted and shown, not failed.
void CheckSoftmaxXent() {
  Tally tally{"softmax_xent", 0, 0, 0, "CUDA expf/logf vs glibc, softmax_xent.h"};
  for (int64_t classes : {1, 10}) {
    const int64_t rows = 37, batch = 148;
    const std::vector<float> logits = RandomFloats(rows * classes, 5, 3.0f);
    std::vector<int32_t> labels(rows);
    for (int64_t i = 0; i < rows; ++i) labels[i] = static_cast<int32_t>((i * 7919) % classes);
    std::vector<double> expected_d(rows * classes), expected_loss(rows);
    std::vector<float> cpu_d(rows * classes), cpu_loss(rows);
    for (int64_t i = 0; i < rows; ++i) {
      const float* z = &logits[i * classes];
      double row_max = z[0];
      float row_max_f = z[0];
      for (int64_t j = 1; j < classes; ++j) {
        row_max = std::max<double>(row_max, z[j]);
        if (z[j] > row_max_f) row_max_f = z[j];
      }
      double sum = 0;
      float sum_f = 0.0f;
      for (int64_t j = 0; j < classes; ++j) {
        sum += std::exp(z[j] - row_max);
        cpu_d[i * classes + j] = std::exp(z[j] - row_max_f);
        sum_f += cpu_d[i * classes + j];
      }
      expected_loss[i] = std::log(sum) - (z[labels[i]] - row_max);
      cpu_loss[i] = std::log(sum_f) - (z[labels[i]] - row_max_f);
      for (int64_t j = 0; j < classes; ++j) {
        expected_d[i * classes + j] =
            (std::exp(z[j] - row_max) / sum - (j == labels[i] ? 1.0 : 0.0)) / batch;
        cpu_d[i * classes + j] =
            (cpu_d[i * classes + j] / sum_f - (j == labels[i] ? 1.0f : 0.0f)) / float(batch);
      }
    }
    float* device_logits = ToDevice(logits);
    int32_t* device_labels = ToDevice(labels);
    float* dlogits = PoisonedDevice<float>(logits.size());
    float* row_loss = PoisonedDevice<float>(rows);
    float* loss_sum = PoisonedDevice<float>(1);
    OkOrExit(dmlp::cuda::SoftmaxCrossEntropy(device_logits, device_labels, rows, classes, batch,
                                             dlogits, row_loss, loss_sum, nullptr),
             "SoftmaxCrossEntropy");
    const std::vector<float> got_d = ToHost(dlogits, logits.size());
    const std::vector<float> got_rows = ToHost(row_loss, rows);
    const std::vector<float> got_sum = ToHost(loss_sum, 1);
    for (int64_t i = 0; i < rows * classes; ++i)
      if (!(std::abs(got_d[i] - expected_d[i]) <= 1e-5 / batch + 1e-5 * std::abs(expected_d[i])))
        ++tally.mismatches;
    for (int64_t i = 0; i < rows; ++i)
      if (!(std::abs(got_rows[i] - expected_loss[i]) <= 1e-5 * std::abs(expected_loss[i]) + 1e-6))
        ++tally.mismatches;
    const std::vector<float> tree_sum{LossSumInKernelOrder(got_rows)};
    tally.mismatches += BitMismatches(got_sum, tree_sum);
    tally.elements += got_d.size() + got_rows.size() + 1;
    tally.known_differences += BitMismatches(got_d, cpu_d) + BitMismatches(got_rows, cpu_loss);
    for (void* pointer :
         {static_cast<void*>(device_logits), static_cast<void*>(device_labels),
          static_cast<void*>(dlogits), static_cast<void*>(row_loss), static_cast<void*>(loss_sum)})
      CUDA_OR_EXIT(cudaFree(pointer));
  }
  tally.Print();
}

void CheckBiasGrad() {
  Tally tally{"bias_grad"};
  // One row, more columns than a block, a chain longer than a block. (Named
  // arrays, not braced lists: nvcc 11.8 cannot deduce those in a range-for.)
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {37, 70}, {300, 33}};
  for (auto [rows, cols] : shapes) {
    const std::vector<float> delta = RandomFloats(rows * cols, 6);
    float* device_delta = ToDevice(delta);
    float* out = PoisonedDevice<float>(cols);
    OkOrExit(dmlp::cuda::BiasGradient(device_delta, rows, cols, out, nullptr), "BiasGradient");
    tally.AddBits(ToHost(out, cols), BiasGradInCpuOrder(delta, rows, cols));
    CUDA_OR_EXIT(cudaFree(device_delta));
    CUDA_OR_EXIT(cudaFree(out));
  }
  tally.Print();
}

// Values of very different magnitudes make any other order visible.
void CheckFold() {
  Tally tally{"fold"};
  const std::tuple<size_t, size_t, size_t> shapes[] = {{1, 10, 10}, {3, 1000, 999}, {8, 301, 297}};
  for (auto [shards, stride, length] : shapes) {
    std::vector<float> partials = RandomFloats(shards * stride, 7);
    for (size_t e = 0; e < partials.size(); e += 3) partials[e] *= 1e7f;
    std::vector<float> expected(length);
    dmlp::FoldShardsInOrder(partials.data(), shards, stride, length, expected.data());
    float* device_partials = ToDevice(partials);
    float* out = PoisonedDevice<float>(length);
    OkOrExit(dmlp::cuda::FoldShardsOnDevice(device_partials, shards, stride, length, out, nullptr),
             "FoldShardsOnDevice");
    tally.AddBits(ToHost(out, length), expected);
    CUDA_OR_EXIT(cudaFree(device_partials));
    CUDA_OR_EXIT(cudaFree(out));
  }
  tally.Print();
}

// Four updates, one with another learning rate and one at the saturated count.
void CheckAdam() {
  Tally tally{"adam_update"};
  const size_t count = 1001;
  std::vector<float> params = RandomFloats(count, 8);
  std::vector<float> mu = RandomFloats(count, 9, 1e-3f);
  std::vector<float> nu = RandomFloats(count, 10, 1e-3f);
  for (float& value : nu) value = value * value;
  float* device_params = ToDevice(params);
  float* device_mu = ToDevice(mu);
  float* device_nu = ToDevice(nu);
  int32_t* count_slot = PoisonedDevice<int32_t>(1);
  int32_t adam_count = 0;
  for (int update = 0; update < 4; ++update) {
    std::vector<float> grad = RandomFloats(count, 11 + update, 1e-2f);
    grad[0] = 0.0f;
    grad[1] = -0.0f;
    grad[2] = 1e-30f;
    adam_count = update == 3 ? INT32_MAX : dmlp::AdamNextCount(adam_count);
    const dmlp::AdamScalars scalars = dmlp::MakeAdamScalars(adam_count, update == 2 ? 0.1 : 1e-3);
    dmlp::AdamUpdate(scalars, grad.data(), params.data(), mu.data(), nu.data(), count);
    float* device_grad = ToDevice(grad);
    OkOrExit(dmlp::cuda::AdamUpdateOnDevice(scalars, device_grad, device_params, device_mu,
                                            device_nu, count, count_slot, adam_count, nullptr),
             "AdamUpdateOnDevice");
    tally.AddBits(ToHost(device_params, count), params);
    tally.AddBits(ToHost(device_mu, count), mu);
    tally.AddBits(ToHost(device_nu, count), nu);
    tally.AddBits(ToHost(count_slot, 1), std::vector<int32_t>{adam_count});
    CUDA_OR_EXIT(cudaFree(device_grad));
  }
  for (void* pointer : {static_cast<void*>(device_params), static_cast<void*>(device_mu),
                        static_cast<void*>(device_nu), static_cast<void*>(count_slot)})
    CUDA_OR_EXIT(cudaFree(pointer));
  tally.Print();
}

void CheckDataGen() {
  Tally tally{"data_gen"};
  struct Case {
    dmlp::SampleSpec spec;
    int64_t step, microbatch, begin, end;
  };
  // Odd feature counts (the host's vector lanes' remainders), one class, a
  // range not at 0, the largest seed and a step above 2^31.
  for (const Case& c : {Case{{42, 70, 10}, 1, 0, 0, 37}, Case{{0, 7, 1}, 3, 7, 100, 131},
                        Case{{0xFFFFFFFFu, 9, 1000}, 4000000000, 1, 4096, 4103}}) {
    const size_t rows = static_cast<size_t>(c.end - c.begin);
    std::vector<float> cpu_inputs(rows * c.spec.features);
    std::vector<int32_t> cpu_labels(rows);
    dmlp::GenerateSamples(c.spec, c.step, c.microbatch, c.begin, c.end, cpu_inputs.data(),
                          cpu_labels.data());
    float* inputs = PoisonedDevice<float>(cpu_inputs.size());
    int32_t* labels = PoisonedDevice<int32_t>(rows);
    OkOrExit(dmlp::cuda::GenerateSamplesOnDevice(c.spec, c.step, c.microbatch, c.begin, c.end,
                                                 inputs, labels, nullptr),
             "GenerateSamplesOnDevice");
    tally.AddBits(ToHost(inputs, cpu_inputs.size()), cpu_inputs);
    tally.AddBits(ToHost(labels, rows), cpu_labels);
    CUDA_OR_EXIT(cudaFree(inputs));
    CUDA_OR_EXIT(cudaFree(labels));
  }
  tally.Print();
}

void CheckInitGen() {
  Tally tally{"init_gen"};
  // 11 Dense layers in the second shape, so "Dense_10" sorts before "Dense_2".
  for (const dmlp::ModelShape& shape :
       {dmlp::ModelShape{13, 37, 1, 10}, dmlp::ModelShape{3, 4, 10, 2}}) {
    auto layout = dmlp::StateLayout::Create(shape);
    OkOrExit(layout.status(), "StateLayout::Create");
    const size_t count = layout->parameter_count();
    for (uint32_t seed : {0u, 0xFFFFFFFFu}) {
      std::vector<float> cpu(count);
      OkOrExit(dmlp::InitParams(*layout, seed, cpu.data()), "InitParams");
      float* params = PoisonedDevice<float>(count);
      OkOrExit(dmlp::cuda::InitParamsOnDevice(*layout, seed, params, nullptr),
               "InitParamsOnDevice");
      tally.AddBits(ToHost(params, count), cpu);
      CUDA_OR_EXIT(cudaFree(params));
    }
  }
  tally.Print();
}

}  // namespace

int main() {
  CheckBiasReluForward();
  CheckReluBackward();
  CheckSoftmaxXent();
  CheckBiasGrad();
  CheckFold();
  CheckAdam();
  CheckDataGen();
  CheckInitGen();
  std::printf("kernels_check: RESULT %s\n", failed_kernels == 0 ? "PASS" : "FAIL");
  return failed_kernels == 0 ? 0 : 1;
}
