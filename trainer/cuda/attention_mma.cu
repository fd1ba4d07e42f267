// Launchers of the mma attention kernels (attention_mma_kernels.cuh) on the GPU's primitives.
#include <string>

#include "trainer/cuda/attention_mma.h"
#include "trainer/cuda/attention_mma_kernels.cuh"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/kernel_util.cuh"
#include "trainer/cuda/mma_primitives.cuh"

namespace ablate::cuda::mma_attention {
namespace {

using P = DevicePrimitives;

constexpr const char* kMmaKernels = "attention: the mma kernels";

dim3 Grid(int64_t b, int64_t t, int64_t nh) {
  return dim3(unsigned((t + kRows - 1) / kRows), unsigned(nh), unsigned(b));
}

template <int HD>
Status ForwardHd(CudaContext& ctx, bf16* out, float* lse, const bf16* q, const bf16* k,
                 const bf16* v, const int32_t* lo, int64_t b, int64_t t, int64_t nh, float scale) {
  constexpr int kBytes = kForwardBytes<HD>;
  ABLATE_RETURN_IF_ERROR(
      kernel::AllowDynamicSmem(ctx, MmaForwardKernel<HD, P>, kBytes, kMmaKernels));
  MmaForwardKernel<HD, P><<<Grid(b, t, nh), kThreads, kBytes, ctx.stream()>>>(
      out, lse, q, k, v, lo, t, nh, scale * kLog2e);
  ABLATE_CUDA_LAUNCH_CHECK("MmaForwardKernel");
  return {};
}

template <int HD>
Status BackwardHd(CudaContext& ctx, float* dq, float* dk, float* dv, const bf16* dout,
                  const bf16* q, const bf16* k, const bf16* v, const float* lse, const float* d,
                  const int32_t* lo, int64_t b, int64_t t, int64_t nh, float scale) {
  ABLATE_RETURN_IF_ERROR(
      kernel::AllowDynamicSmem(ctx, MmaBackwardDkvKernel<HD, P>, kDkvBytes<HD>, kMmaKernels));
  ABLATE_RETURN_IF_ERROR(
      kernel::AllowDynamicSmem(ctx, MmaBackwardDqKernel<HD, P>, kDqBytes<HD>, kMmaKernels));
  float scale2 = scale * kLog2e;
  MmaBackwardDkvKernel<HD, P><<<Grid(b, t, nh), kThreads, kDkvBytes<HD>, ctx.stream()>>>(
      dk, dv, dout, q, k, v, lse, d, lo, t, nh, scale, scale2);
  ABLATE_CUDA_LAUNCH_CHECK("MmaBackwardDkvKernel");
  MmaBackwardDqKernel<HD, P><<<Grid(b, t, nh), kThreads, kDqBytes<HD>, ctx.stream()>>>(
      dq, dout, q, k, v, lse, d, lo, t, nh, scale, scale2);
  ABLATE_CUDA_LAUNCH_CHECK("MmaBackwardDqKernel");
  return {};
}

}  // namespace

Status Forward(CudaContext& ctx, bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
               const int32_t* lo, int64_t b, int64_t t, int64_t nh, int64_t hd, float scale) {
  return hd == 64 ? ForwardHd<64>(ctx, out, lse, q, k, v, lo, b, t, nh, scale)
                  : ForwardHd<128>(ctx, out, lse, q, k, v, lo, b, t, nh, scale);
}

Status Backward(CudaContext& ctx, float* dq, float* dk, float* dv, const bf16* dout, const bf16* q,
                const bf16* k, const bf16* v, const float* lse, const float* d, const int32_t* lo,
                int64_t b, int64_t t, int64_t nh, int64_t hd, float scale) {
  return hd == 64 ? BackwardHd<64>(ctx, dq, dk, dv, dout, q, k, v, lse, d, lo, b, t, nh, scale)
                  : BackwardHd<128>(ctx, dq, dk, dv, dout, q, k, v, lse, d, lo, b, t, nh, scale);
}

}  // namespace ablate::cuda::mma_attention
