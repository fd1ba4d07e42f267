// Where each parameter lives in the CUDA backend's flat buffers (master weights, gradients, bf16
// copies): the CPU layout's order (trainer/model/param_layout.h), but every tensor starts at a
// multiple of 64 elements, so each weight and gradient a GEMM touches is 256-byte aligned;
// except that separate k and v weights follow q directly (one (3d, d) product reads all three).
// Host-side only; the copies between the two layouts go tensor by tensor.
#ifndef ABLATE_TRAINER_CUDA_DEVICE_LAYOUT_H_
#define ABLATE_TRAINER_CUDA_DEVICE_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/model/param_layout.h"

namespace ablate::cuda {

class DeviceLayout {
 public:
  static constexpr int64_t kAlign = 64;  // elements

  explicit DeviceLayout(const ParamLayout& host);

  const ParamLayout& host() const { return host_; }
  // Device offset of a host-layout offset (a tensor's start or any element inside it).
  // REQUIRES: 0 <= host_offset < host().total().
  int64_t Map(int64_t host_offset) const;
  // Elements of a device buffer, padding included.
  int64_t total() const { return total_; }
  // (n_layer + 1) boundaries: block i's tensors lie in [starts[i], starts[i + 1]) of a device
  // buffer, the global tensors (embeddings, head, skip weights: they come first) in
  // [0, starts[0]), and starts[n_layer] = total(). The gradient all-reduce goes by these ranges.
  std::vector<int64_t> BlockStarts(int64_t n_layer) const;

  // device (total()) ← host (host().total()), tensor by tensor; the padding is left as is.
  Status Upload(CudaContext& ctx, float* device, const float* host) const;
  // host (host().total()) ← device (total()).
  Status Download(CudaContext& ctx, float* host, const float* device) const;

 private:
  ParamLayout host_;
  std::vector<int64_t> device_offsets_;  // per host().params() entry
  int64_t total_ = 0;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_DEVICE_LAYOUT_H_
