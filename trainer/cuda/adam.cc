// Device Adam, host side: state allocation and the per-step constants (as the CPU computes them).
#include "trainer/cuda/adam.h"

#include <cmath>
#include <utility>

#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/optim_kernels.h"

namespace ablate::cuda {

Adam::Adam(AdamConfig config, std::vector<AdamSpan> spans)
    : config_(config), spans_(std::move(spans)) {
  int64_t total = 0;
  for (const AdamSpan& s : spans_) {
    state_offsets_.push_back(total);
    total += s.numel;
  }
}

Status Adam::Init(CudaContext& ctx) {
  int64_t total = 0;
  for (const AdamSpan& s : spans_) total += s.numel;
  ABLATE_RETURN_IF_ERROR(m_.Allocate(total, "Adam's first moments"));
  ABLATE_RETURN_IF_ERROR(v_.Allocate(total, "Adam's second moments"));
  if (total > 0) {
    ABLATE_CUDA_CHECK(cudaMemsetAsync(m_.get(), 0, size_t(m_.bytes()), ctx.stream()));
    ABLATE_CUDA_CHECK(cudaMemsetAsync(v_.get(), 0, size_t(v_.bytes()), ctx.stream()));
  }
  return {};
}

Status Adam::Step(CudaContext& ctx, float* params, const float* grads, double lr_mult) {
  ++t_;
  double bc1 = 1 - std::pow(config_.beta1, double(t_));
  double bc2_sqrt = std::sqrt(1 - std::pow(config_.beta2, double(t_)));
  float b1 = float(config_.beta1), b2 = float(config_.beta2);
  for (size_t i = 0; i < spans_.size(); ++i) {
    const AdamSpan& s = spans_[i];
    AdamCoeffs k{b1,
                 1 - b1,
                 b2,
                 1 - b2,
                 float(s.lr * lr_mult / bc1),
                 float(1 / bc2_sqrt),
                 float(config_.eps)};
    ABLATE_RETURN_IF_ERROR(adam_update(ctx, params + s.offset, grads + s.offset,
                                       m_.get() + state_offsets_[i], v_.get() + state_offsets_[i],
                                       s.numel, k));
  }
  return {};
}

}  // namespace ablate::cuda
