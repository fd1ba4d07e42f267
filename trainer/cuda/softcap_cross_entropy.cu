// The fused classifier (one block per row) and the chunked head around it.
#include <algorithm>
#include <climits>
#include <cmath>

#include "trainer/cuda/classifier_kernels.cuh"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/kernel_util.cuh"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/mma_primitives.cuh"
#include "trainer/cuda/softcap_cross_entropy.h"

namespace ablate::cuda {
namespace {

using kernel::BlockSum;
using kernel::FromFloat;
using kernel::MergeMaxSum;

namespace ck = classifier_kernels;
using ck::Cap;
using ck::CapGrad;
using ck::DeviceCap;

constexpr int kRowThreads = 256;

// Block-wide merge of per-thread (max, sum) pairs; every thread gets the result.
__device__ __forceinline__ void BlockMaxSum(float* m, float* s, float* sh_m, float* sh_s) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int o = 16; o > 0; o >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffffu, *m, o), s2 = __shfl_xor_sync(0xffffffffu, *s, o);
    MergeMaxSum(m, s, m2, s2);
  }
  if (lane == 0) {
    sh_m[warp] = *m;
    sh_s[warp] = *s;
  }
  __syncthreads();
  *m = -INFINITY;
  *s = 0.f;
  for (int i = 0; i < warps; ++i) MergeMaxSum(m, s, sh_m[i], sh_s[i]);  // same order everywhere
}

__global__ void __launch_bounds__(kRowThreads)
    ClassifierKernel(float* losses, bf16* dlogits, const float* logits, const int32_t* targets,
                     int64_t v, DeviceCap cap, float dloss) {
  __shared__ float sh_m[32], sh_s[32];
  int64_t row = blockIdx.x;
  const float* z = logits + row * v;
  float m = -INFINITY, s = 0.f;
  for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
    float y = Cap(z[j], cap);
    if (y > m) {
      s = s * expf(m - y) + 1.f;  // m = −inf the first time: expf(−inf) = 0
      m = y;
    } else {
      s += expf(y - m);
    }
  }
  BlockMaxSum(&m, &s, sh_m, sh_s);
  float lse = m + logf(s);
  int64_t target = targets[row];
  if (threadIdx.x == 0) losses[row] = lse - Cap(z[target], cap);
  if (dlogits == nullptr) return;
  bf16* d = dlogits + row * v;
  for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
    float y = Cap(z[j], cap);
    float g = dloss * CapGrad(y, cap);
    float grad = g * expf(y - lse);
    if (j == target) grad -= g;
    d[j] = FromFloat<bf16>(grad);
  }
}

constexpr int kSumThreads = 1024;

// In double, as the CPU's mean (cpu::mean_loss): an fp32 sum of 65,536 losses near 10.8 is off
// by up to ~1e-3 of the reported loss.
__global__ void __launch_bounds__(kSumThreads)
    LossAccumulateKernel(double* acc, const float* losses, int64_t n, int64_t divisor) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += double(losses[i]);
  s = BlockSum(s, shared);
  if (threadIdx.x == 0) *acc += (s / double(n)) / double(divisor);
}

__global__ void LossMoveKernel(float* dst, double* acc) {
  *dst = float(*acc);
  *acc = 0.0;
}

Status CheckScratch(const LmHeadScratch& scratch, bool backward) {
  if (scratch.chunk_rows <= 0 || scratch.logits == nullptr ||
      (backward && (scratch.dlogits == nullptr || scratch.group_rows < scratch.chunk_rows))) {
    return Error{"lm_head: scratch has no room (chunk_rows " + std::to_string(scratch.chunk_rows) +
                     ", group_rows " + std::to_string(scratch.group_rows) + ")",
                 ""};
  }
  return {};
}

}  // namespace

Status softcap_cross_entropy_forward(CudaContext& ctx, float* losses, bf16* dlogits,
                                     const float* logits, const int32_t* targets, int64_t n,
                                     int64_t v, Softcap cap, float dloss, ClassifierImpl impl) {
  if (n == 0) return {};
  if (n > int64_t(INT32_MAX)) return Error{"softcap_cross_entropy: too many rows", ""};
  DeviceCap dc{cap.kind, float(cap.cap)};
  int per = impl == ClassifierImpl::kRowInRegisters ? ck::RowKernelPer(v) : 0;
  if (per == 0) {
    ClassifierKernel<<<unsigned(n), kRowThreads, 0, ctx.stream()>>>(losses, dlogits, logits,
                                                                    targets, v, dc, dloss);
    ABLATE_CUDA_LAUNCH_CHECK("ClassifierKernel");
    return {};
  }
  ck::ClassifierArgs args{losses, dlogits, logits, targets, v, dc, dloss};
  auto launch = [&](auto kernel) {
    kernel<<<unsigned(n), ck::kThreads, ck::kSmemBytes, ctx.stream()>>>(args);
  };
  switch (per) {
    case ck::kPerCounts[0]:
      launch(ck::ClassifierRowKernel<DevicePrimitives, ck::kPerCounts[0]>);
      break;
    case ck::kPerCounts[1]:
      launch(ck::ClassifierRowKernel<DevicePrimitives, ck::kPerCounts[1]>);
      break;
    case ck::kPerCounts[2]:
      launch(ck::ClassifierRowKernel<DevicePrimitives, ck::kPerCounts[2]>);
      break;
    default:
      launch(ck::ClassifierRowKernel<DevicePrimitives, ck::kPerCounts[3]>);
      break;
  }
  ABLATE_CUDA_LAUNCH_CHECK("ClassifierRowKernel");
  return {};
}

Status loss_accumulate(CudaContext& ctx, double* acc, const float* losses, int64_t n,
                       int64_t divisor) {
  if (n == 0) return {};
  LossAccumulateKernel<<<1, kSumThreads, 0, ctx.stream()>>>(acc, losses, n, divisor);
  ABLATE_CUDA_LAUNCH_CHECK("LossAccumulateKernel");
  return {};
}

Status loss_move(CudaContext& ctx, float* dst, double* acc) {
  LossMoveKernel<<<1, 1, 0, ctx.stream()>>>(dst, acc);
  ABLATE_CUDA_LAUNCH_CHECK("LossMoveKernel");
  return {};
}

Status lm_head_forward(CudaContext& ctx, float* losses, const bf16* x, const bf16* w,
                       const int32_t* targets, int64_t n, int64_t c, int64_t v, Softcap cap,
                       const LmHeadScratch& scratch) {
  ABLATE_RETURN_IF_ERROR(CheckScratch(scratch, false));
  for (int64_t r0 = 0; r0 < n; r0 += scratch.chunk_rows) {
    int64_t rows = std::min(scratch.chunk_rows, n - r0);
    ABLATE_RETURN_IF_ERROR(matmul_forward<float>(ctx, scratch.logits, x + r0 * c, w, rows, c, v));
    ABLATE_RETURN_IF_ERROR(softcap_cross_entropy_forward(ctx, losses + r0, nullptr, scratch.logits,
                                                         targets + r0, rows, v, cap, 0.f));
  }
  return {};
}

Status lm_head_forward_backward(CudaContext& ctx, float* losses, float* dx, float* dw,
                                const bf16* x, const bf16* w, const int32_t* targets, int64_t n,
                                int64_t c, int64_t v, Softcap cap, float dloss,
                                const LmHeadScratch& scratch) {
  ABLATE_RETURN_IF_ERROR(CheckScratch(scratch, true));
  for (int64_t g0 = 0; g0 < n; g0 += scratch.group_rows) {
    int64_t group = std::min(scratch.group_rows, n - g0);
    for (int64_t r0 = g0; r0 < g0 + group; r0 += scratch.chunk_rows) {
      int64_t rows = std::min(scratch.chunk_rows, g0 + group - r0);
      ABLATE_RETURN_IF_ERROR(matmul_forward<float>(ctx, scratch.logits, x + r0 * c, w, rows, c, v));
      ABLATE_RETURN_IF_ERROR(
          softcap_cross_entropy_forward(ctx, losses + r0, scratch.dlogits + (r0 - g0) * v,
                                        scratch.logits, targets + r0, rows, v, cap, dloss));
    }
    // dx rows = dlogits · w; dw += dlogitsᵀ · x rows, one read and write of dw per group.
    ABLATE_RETURN_IF_ERROR(matmul_backward<float>(ctx, dx + g0 * c, dw, scratch.dlogits, x + g0 * c,
                                                  w, group, c, v, Output::kOverwrite));
  }
  return {};
}

}  // namespace ablate::cuda
