// Device Adam, host side: state allocation and the per-step constants (as the CPU computes them).
#include "trainer/cuda/adam.h"

#include <cmath>
#include <utility>

#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/optim_kernels.h"

namespace ablate::cuda {

Adam::Adam(AdamConfig config, std::vector<AdamSpan> spans)
    : config_(config), spans_(std::move(spans)) {
  int64_t total[2] = {0, 0};  // fp32, bf16
  for (const AdamSpan& s : spans_) {
    state_offsets_.push_back(total[s.bf16]);
    total[s.bf16] += s.numel;
  }
}

Status Adam::Init(CudaContext& ctx) {
  int64_t total[2] = {0, 0};
  for (const AdamSpan& s : spans_) total[s.bf16] += s.numel;
  ABLATE_RETURN_IF_ERROR(m_.Allocate(total[0], "Adam's first moments"));
  ABLATE_RETURN_IF_ERROR(v_.Allocate(total[0], "Adam's second moments"));
  ABLATE_RETURN_IF_ERROR(m16_.Allocate(total[1], "Adam's bf16 first moments"));
  ABLATE_RETURN_IF_ERROR(v16_.Allocate(total[1], "Adam's bf16 second moments"));
  for (void* p : {static_cast<void*>(m_.get()), static_cast<void*>(v_.get())}) {
    if (total[0] > 0) ABLATE_CUDA_CHECK(cudaMemsetAsync(p, 0, size_t(m_.bytes()), ctx.stream()));
  }
  for (void* p : {static_cast<void*>(m16_.get()), static_cast<void*>(v16_.get())}) {
    if (total[1] > 0) ABLATE_CUDA_CHECK(cudaMemsetAsync(p, 0, size_t(m16_.bytes()), ctx.stream()));
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
    int64_t at = state_offsets_[i];
    ABLATE_RETURN_IF_ERROR(
        s.bf16 ? adam_update_bf16(ctx, params + s.offset, grads + s.offset, m16_.get() + at,
                                  v16_.get() + at, s.numel, k)
               : adam_update(ctx, params + s.offset, grads + s.offset, m_.get() + at,
                             v_.get() + at, s.numel, k));
  }
  return {};
}

int64_t Adam::StateSize() const {
  int64_t n = 0;
  for (const AdamSpan& s : spans_) n += s.numel;
  return n;
}

// One moment buffer pair (fp32 part, bf16 part) → the flat fp32 host layout, span by span.
static Status DownloadMoment(CudaContext& ctx, const std::vector<AdamSpan>& spans,
                             const std::vector<int64_t>& offsets, const DeviceBuffer<float>& f32,
                             const DeviceBuffer<bf16>& b16, std::vector<float>& out) {
  std::vector<float> wide(size_t(f32.size()));
  std::vector<bf16> narrow(size_t(b16.size()));
  if (f32.size() > 0) ABLATE_RETURN_IF_ERROR(ctx.ToHost(wide.data(), f32.get(), f32.bytes()));
  if (b16.size() > 0) ABLATE_RETURN_IF_ERROR(ctx.ToHost(narrow.data(), b16.get(), b16.bytes()));
  out.clear();
  for (size_t i = 0; i < spans.size(); ++i) {
    for (int64_t j = 0; j < spans[i].numel; ++j) {
      size_t at = size_t(offsets[i] + j);
      out.push_back(spans[i].bf16 ? __bfloat162float(narrow[at]) : wide[at]);
    }
  }
  return {};
}

static Status UploadMoment(CudaContext& ctx, const std::vector<AdamSpan>& spans,
                           const std::vector<int64_t>& offsets, DeviceBuffer<float>& f32,
                           DeviceBuffer<bf16>& b16, const std::vector<float>& in) {
  std::vector<float> wide(size_t(f32.size()));
  std::vector<bf16> narrow(size_t(b16.size()));
  int64_t at = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    for (int64_t j = 0; j < spans[i].numel; ++j, ++at) {
      size_t to = size_t(offsets[i] + j);
      if (spans[i].bf16) {
        narrow[to] = __float2bfloat16(in[size_t(at)]);
      } else {
        wide[to] = in[size_t(at)];
      }
    }
  }
  if (f32.size() > 0) ABLATE_RETURN_IF_ERROR(ctx.ToDevice(f32.get(), wide.data(), f32.bytes()));
  if (b16.size() > 0) ABLATE_RETURN_IF_ERROR(ctx.ToDevice(b16.get(), narrow.data(), b16.bytes()));
  return ctx.Synchronize();  // the host vectors go out of scope
}

Status Adam::GetState(CudaContext& ctx, int64_t& steps, std::vector<float>& m,
                      std::vector<float>& v) {
  steps = t_;
  ABLATE_RETURN_IF_ERROR(DownloadMoment(ctx, spans_, state_offsets_, m_, m16_, m));
  return DownloadMoment(ctx, spans_, state_offsets_, v_, v16_, v);
}

Status Adam::SetState(CudaContext& ctx, int64_t steps, const std::vector<float>& m,
                      const std::vector<float>& v) {
  t_ = steps;
  ABLATE_RETURN_IF_ERROR(UploadMoment(ctx, spans_, state_offsets_, m_, m16_, m));
  return UploadMoment(ctx, spans_, state_offsets_, v_, v16_, v);
}

}  // namespace ablate::cuda
