// defines: DeviceBuffer, CudaStream, CudaEvent
//
// RAII owners of device memory, streams and events. Creation returns a Result
// (every call checked, cuda_check.h); destruction ignores errors, since a
// destructor cannot report them and the first real error has already been
// returned by whatever call met it. No managed memory and no IPC handles: both
// break freeze/restore (cuda-checkpoint + CRIU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "common/status.h"
#include "trainer/cuda/cuda_check.h"

namespace dmlp::cuda {

/// `count` elements of T in device memory (cudaMalloc: 256-byte aligned).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `count` elements (count 0 gives an empty buffer); optionally zeroed.
  static Result<DeviceBuffer> Create(size_t count, bool zeroed = false) {
    DeviceBuffer buffer;
    if (count == 0) return Result<DeviceBuffer>(std::move(buffer));
    void* data = nullptr;
    CUDA_CHECK(cudaMalloc(&data, count * sizeof(T)));
    buffer.data_ = static_cast<T*>(data);
    buffer.count_ = count;
    if (zeroed) {
      // cudaMemset runs on the legacy default stream, which the platform's
      // non-blocking streams do not wait for: finish it here.
      CUDA_CHECK(cudaMemset(buffer.data_, 0, count * sizeof(T)));
      CUDA_CHECK(cudaStreamSynchronize(nullptr));
    }
    return Result<DeviceBuffer>(std::move(buffer));
  }
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return data_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  void Reset() {
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  size_t count_ = 0;
};

/// A non-blocking stream (no implicit synchronization with the legacy default stream).
class CudaStream {
 public:
  CudaStream() = default;
  static Result<CudaStream> Create() {
    CudaStream stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream.stream_, cudaStreamNonBlocking));
    return Result<CudaStream>(std::move(stream));  // explicit: nvcc's front end needs the move
  }
  ~CudaStream() {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// An event; without `timing` it is the cheap cudaEventDisableTiming kind.
class CudaEvent {
 public:
  CudaEvent() = default;
  static Result<CudaEvent> Create(bool timing = false) {
    CudaEvent event;
    CUDA_CHECK(cudaEventCreateWithFlags(&event.event_,
                                        timing ? cudaEventDefault : cudaEventDisableTiming));
    return Result<CudaEvent>(std::move(event));
  }
  ~CudaEvent() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
  }
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace dmlp::cuda
