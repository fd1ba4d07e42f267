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

// Where a CudaBuffer's memory lives: the allocation call, its name for errors, and the free.
struct OnDevice {
  static constexpr const char* kCall = "cudaMalloc";
  static cudaError_t Allocate(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
  static void Free(void* p) { (void)cudaFree(p); }  // nothing useful to do with a failed free
};
// Page-locked host memory: fast, truly asynchronous copies to and from the device.
struct OnPinnedHost {
  static constexpr const char* kCall = "cudaMallocHost";
  static cudaError_t Allocate(void** p, size_t bytes) { return cudaMallocHost(p, bytes); }
  static void Free(void* p) { (void)cudaFreeHost(p); }
};

// n elements of T in Memory, uninitialised.
template <class T, class Memory>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  ~CudaBuffer() { Release(); }
  CudaBuffer(CudaBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), n_(o.n_) {}
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    if (this != &o) {
      Release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      n_ = o.n_;
    }
    return *this;
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  // Frees any previous memory, then allocates n elements (n = 0 leaves the buffer empty).
  // `what` names the tensor in the error ("cudaMalloc of 201.3 MB for blocks.3.x_out: ...").
  Status Allocate(int64_t n, const std::string& what) {
    Release();
    if (n <= 0) return {};
    void* p = nullptr;
    cudaError_t e = Memory::Allocate(&p, size_t(n) * sizeof(T));
    if (e != cudaSuccess) {
      std::string label = std::string(Memory::kCall) + " of " + MegaBytes(n) + " for " + what;
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
    if (ptr_ != nullptr) Memory::Free(ptr_);
    ptr_ = nullptr;
    n_ = 0;
  }

  T* ptr_ = nullptr;
  int64_t n_ = 0;
};

template <class T>
using DeviceBuffer = CudaBuffer<T, OnDevice>;
template <class T>
using PinnedBuffer = CudaBuffer<T, OnPinnedHost>;

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_DEVICE_BUFFER_H_
