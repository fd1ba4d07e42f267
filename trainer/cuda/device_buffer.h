// Owning handles to device memory (cudaMalloc) and page-locked host memory (cudaMallocHost).
// Move-only; memory is freed on destruction. Allocation happens on the calling thread's
// current device (CudaContext::MakeCurrent). Not thread-safe.
#ifndef ABLATE_TRAINER_CUDA_DEVICE_BUFFER_H_
#define ABLATE_TRAINER_CUDA_DEVICE_BUFFER_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <utility>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_check.h"

namespace ablate::cuda {

// n elements of T in device memory, uninitialised.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { Release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), n_(o.n_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      n_ = o.n_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Frees any previous memory, then allocates n elements (n = 0 leaves the buffer empty).
  // `what` names the tensor in the error ("cudaMalloc of 201.3 MB for blocks.3.x_out: ...").
  Status Allocate(int64_t n, const std::string& what) {
    Release();
    if (n <= 0) return {};
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, size_t(n) * sizeof(T));
    if (e != cudaSuccess) {
      std::string label = "cudaMalloc of " + MegaBytes(n) + " for " + what;
      return CudaError(e, label.c_str(), __FILE__, __LINE__);
    }
    ptr_ = static_cast<T*>(p);
    n_ = n;
    return {};
  }

  T* get() { return ptr_; }
  const T* get() const { return ptr_; }
  int64_t size() const { return n_; }
  int64_t bytes() const { return n_ * int64_t(sizeof(T)); }

 private:
  static std::string MegaBytes(int64_t n) {
    double mb = double(n) * double(sizeof(T)) / 1e6;
    return std::to_string(int64_t(mb * 10) / 10) + "." + std::to_string(int64_t(mb * 10) % 10) +
           " MB";
  }
  void Release() {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);  // nothing useful to do with a failed free
    ptr_ = nullptr;
    n_ = 0;
  }

  T* ptr_ = nullptr;
  int64_t n_ = 0;
};

// n elements of T in page-locked host memory (fast, truly asynchronous host-to-device copies).
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { Release(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), n_(o.n_) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      Release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      n_ = o.n_;
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  Status Allocate(int64_t n, const std::string& what) {
    Release();
    if (n <= 0) return {};
    void* p = nullptr;
    cudaError_t e = cudaMallocHost(&p, size_t(n) * sizeof(T));
    if (e != cudaSuccess) {
      std::string label = "cudaMallocHost for " + what;
      return CudaError(e, label.c_str(), __FILE__, __LINE__);
    }
    ptr_ = static_cast<T*>(p);
    n_ = n;
    return {};
  }

  T* get() { return ptr_; }
  const T* get() const { return ptr_; }
  int64_t size() const { return n_; }

 private:
  void Release() {
    if (ptr_ != nullptr) (void)cudaFreeHost(ptr_);
    ptr_ = nullptr;
    n_ = 0;
  }

  T* ptr_ = nullptr;
  int64_t n_ = 0;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_DEVICE_BUFFER_H_
