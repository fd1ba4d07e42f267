// Everything a CUDA op needs besides its tensors: the device, one stream, the cuBLASLt handle
// and workspace, a small scratch for deterministic reductions, and cached GEMM algorithms.
// Created once per model replica and injected into the model, optimizer and ops (no globals).
// Not thread-safe: one host thread drives a context (call MakeCurrent on that thread first).
#ifndef ABLATE_TRAINER_CUDA_CUDA_CONTEXT_H_
#define ABLATE_TRAINER_CUDA_CUDA_CONTEXT_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "trainer/config/result.h"
#include "trainer/cuda/cublaslt_library.h"
#include "trainer/cuda/cuda_event.h"
#include "trainer/cuda/device_buffer.h"

namespace ablate::cuda {

struct DeviceInfo {
  int index = 0;     // as CUDA numbers devices (after CUDA_VISIBLE_DEVICES)
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t total_memory = 0;          // bytes
  int64_t max_shared_per_block = 0;  // bytes, with the opt-in (cudaFuncSetAttribute)
};

// Device `index`'s properties. Errors: "no CUDA device: cudaGetDeviceCount: <CUDA's words>"
// when none is usable, "CUDA device 3 does not exist (2 found)".
Result<DeviceInfo> ProbeDevice(int index);

// A chosen cuBLASLt algorithm for one GEMM shape (see matmul.cc).
struct GemmAlgo {
  cublasLtMatmulAlgo_t algo;
  size_t workspace_bytes = 0;
};

class CudaContext {
 public:
  // Floats of reduce_scratch(): room for the partial sums of one two-pass reduction.
  static constexpr int64_t kReduceScratch = 4096;
  // cuBLASLt workspace (what Hopper's fastest kernels ask for).
  static constexpr int64_t kWorkspaceBytes = int64_t(32) << 20;

  // Makes `device` current on the calling thread, creates a non-blocking stream, loads
  // cuBLASLt and creates its handle, and allocates the workspace and scratch. abort (optional,
  // must outlive the context): once set, host waits give up with an error instead of waiting
  // for device work that may never finish (a peer rank's collective that will not come).
  static Result<std::unique_ptr<CudaContext>> Create(int device,
                                                     const std::atomic<bool>* abort = nullptr);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  // cudaSetDevice for the calling thread (the current device is per host thread).
  Status MakeCurrent() const;
  // Waits for all work queued on stream().
  Status Synchronize();
  // Waits on the host until `event`'s last record has completed. Every host wait of the
  // backend comes here: it polls, so a set abort flag or a failed health check ends it.
  Status Wait(const CudaEvent& event) const;
  // Called every few hundred polls of a wait that has not finished: an error ends the wait
  // (the engine passes NCCL's asynchronous error, so a dead peer on another node is noticed
  // while the compute stream waits on a collective that will never finish). Empty: none.
  void SetHealthCheck(std::function<Status()> check) { health_ = std::move(check); }

  const DeviceInfo& device() const { return info_; }
  cudaStream_t stream() const { return stream_; }
  const CublasLtApi& lt() const { return lib_->api(); }
  cublasLtHandle_t lt_handle() const { return handle_; }
  void* workspace() { return workspace_.get(); }
  float* reduce_scratch() { return scratch_.get(); }
  std::unordered_map<std::string, GemmAlgo>& gemm_algos() { return gemm_algos_; }

  // Stream-ordered copies. ToHost waits for the copy (and all earlier work) to finish. ToDevice
  // from pageable memory may wait for the stream; per-step inputs use pinned buffers instead.
  Status ToDevice(void* dst, const void* src, int64_t bytes);
  Status ToHost(void* dst, const void* src, int64_t bytes);

 private:
  CudaContext() = default;

  DeviceInfo info_;
  const std::atomic<bool>* abort_ = nullptr;
  std::function<Status()> health_;
  cudaStream_t stream_ = nullptr;
  CudaEvent drained_;  // Synchronize's mark
  const CublasLtLibrary* lib_ = nullptr;  // the process's (CublasLtLibrary::Shared)
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer<uint8_t> workspace_;
  DeviceBuffer<float> scratch_;
  std::unordered_map<std::string, GemmAlgo> gemm_algos_;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_CUDA_CONTEXT_H_
