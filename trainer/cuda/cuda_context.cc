// Device probing and the context's resources.
#include "trainer/cuda/cuda_context.h"

#include <chrono>
#include <thread>

#include "trainer/cuda/cuda_check.h"

namespace ablate::cuda {

Result<DeviceInfo> ProbeDevice(int index) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return Error{std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" +
                     cudaGetErrorString(e) + ")",
                 ""};
  }
  if (count == 0) return Error{"no CUDA device: cudaGetDeviceCount found none", ""};
  if (index < 0 || index >= count) {
    return Error{"CUDA device " + std::to_string(index) + " does not exist (" +
                     std::to_string(count) + " found; indices follow CUDA_VISIBLE_DEVICES)",
                 "gpus"};
  }
  cudaDeviceProp p;
  ABLATE_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  DeviceInfo info;
  info.index = index;
  info.name = p.name;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  info.total_memory = int64_t(p.totalGlobalMem);
  info.max_shared_per_block = int64_t(p.sharedMemPerBlockOptin);
  return info;
}

Result<std::unique_ptr<CudaContext>> CudaContext::Create(int device,
                                                         const std::atomic<bool>* abort) {
  Result<DeviceInfo> info = ProbeDevice(device);
  if (!info.ok()) return info.error();
  std::unique_ptr<CudaContext> ctx(new CudaContext());
  ctx->info_ = *info;
  ctx->abort_ = abort;
  ABLATE_RETURN_IF_ERROR(ctx->MakeCurrent());
  ABLATE_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking));
  ABLATE_RETURN_IF_ERROR(ctx->drained_.Create());
  Result<const CublasLtLibrary*> lib = CublasLtLibrary::Shared();
  if (!lib.ok()) return lib.error();
  ctx->lib_ = *lib;
  ABLATE_CUBLAS_CHECK(ctx->lt().Create(&ctx->handle_));
  ABLATE_RETURN_IF_ERROR(ctx->workspace_.Allocate(kWorkspaceBytes, "the cuBLASLt workspace"));
  ABLATE_RETURN_IF_ERROR(ctx->scratch_.Allocate(kReduceScratch, "the reduction scratch"));
  return ctx;
}

CudaContext::~CudaContext() {
  // Teardown errors have no one to go to; the device is being released either way.
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  if (handle_ != nullptr) (void)lt().Destroy(handle_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Status CudaContext::MakeCurrent() const {
  ABLATE_CUDA_CHECK(cudaSetDevice(info_.index));
  return {};
}

Status CudaContext::Synchronize() {
  ABLATE_RETURN_IF_ERROR(drained_.Record(stream_));
  return Wait(drained_);
}

// Yields for the first ~millisecond (a short wait costs no sleep granularity), then sleeps in
// 50 µs steps: a waiting rank thread should not take a core from the data loaders.
Status CudaContext::Wait(const CudaEvent& event) const {
  for (int polls = 0;; ++polls) {
    cudaError_t e = cudaEventQuery(event.get());
    if (e == cudaSuccess) return {};
    if (e != cudaErrorNotReady) return CudaError(e, "cudaEventQuery", __FILE__, __LINE__);
    if (abort_ != nullptr && abort_->load(std::memory_order_relaxed)) {
      return Error{"stopped waiting for GPU " + std::to_string(info_.index) +
                       ": another rank of this run failed",
                   ""};
    }
    if (health_ && polls % 256 == 255) ABLATE_RETURN_IF_ERROR(health_());
    if (polls < 2000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

Status CudaContext::ToDevice(void* dst, const void* src, int64_t bytes) {
  if (bytes == 0) return {};
  ABLATE_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyHostToDevice, stream_));
  return {};
}

// dst is usually pageable, and such a copy returns only when it is done: the stream is drained
// first by a polled wait, so the copy itself cannot block on anything.
Status CudaContext::ToHost(void* dst, const void* src, int64_t bytes) {
  if (bytes == 0) return {};
  ABLATE_RETURN_IF_ERROR(Synchronize());
  ABLATE_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDeviceToHost, stream_));
  return Synchronize();
}

}  // namespace ablate::cuda
